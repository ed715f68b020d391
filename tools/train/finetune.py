#!/usr/bin/python3
"""Phase 2: longer context and the chat format, starting from the finished phase-1 checkpoint.

Phase 1 (train.py) trains on 256-token windows of plain text, which leaves a model that has never
seen position 256 or a `<|im_start|>assistant` turn: a chat in the app would run out of context
after two turns and get noise as answers. Phase 2 continues from STATE/ckpt/last.pt with
512-token windows (same 4096 tokens per step) mixing plain text (same domain weights as phase 1)
and ChatML conversations made from the training documents by chat_data.py, at a low learning
rate (cosine from --lr to a tenth of it). Resumable and deterministic like train.py.
(1024-token windows were tried first: 320-410 tokens/s on one thread, against ~1,100 at 512,
because the attention's [batch, heads, T, T] tensors no longer fit the cache at T = 1024.)

  /usr/bin/python3 tools/train/finetune.py --state /work/train-state [--resume]

Writes STATE/ckpt/phase2.pt and STATE/log_phase2.csv: the phase-1 metrics (bits per byte on the
same fixed 256-token held-out windows, so the curve continues), bits per byte on --seq-token
held-out windows, and the loss on held-out conversations' assistant tokens.
"""
import argparse
import math
import os
import signal
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from chat_data import build  # noqa: E402
from model import ModelArgs, MoEModel  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402
from train import (DOMAINS, append_log, domain_weights, eval_windows, evaluate,  # noqa: E402
                   load_tokens, save_ckpt, trim_log)

KEYS = ("seed", "seq", "batch", "lr", "warmup", "chat_frac", "tokens_total", "chat_uniform")


def chat_row(convs, probs, T, rng, eot):
    """T+1 tokens of conversations from domains drawn by `probs`, each preceded by eot."""
    out = []
    while len(out) < T + 1:
        d = DOMAINS[rng.choice(len(DOMAINS), p=probs)]
        ids, _ = convs[d][int(rng.integers(len(convs[d])))]
        out.append(eot)
        out.extend(ids.tolist())
    return out[:T + 1]


def text_row(train, probs, T, rng):
    a = train[DOMAINS[rng.choice(len(DOMAINS), p=probs)]]
    s = int(rng.integers(0, len(a) - T - 1))
    return a[s:s + T + 1].tolist()


@torch.no_grad()
def chat_loss(model, convs, n_per_domain=24):
    """Mean cross-entropy (nats per token) of the assistant answers (text and `<|im_end|>`) of
    the first n_per_domain held-out conversations of each domain."""
    model.eval()
    nll, n = 0.0, 0
    for d in DOMAINS:
        for ids, answer in convs[d][:n_per_domain]:
            ids, answer = ids[:model.args.max_seq + 1], answer[:model.args.max_seq + 1]
            x = torch.from_numpy(ids[:-1].astype(np.int64))[None]
            y = torch.from_numpy(ids[1:].astype(np.int64))
            logits, _, _ = model(x)
            ce = F.cross_entropy(logits[0], y, reduction="none")
            mask = torch.from_numpy(answer[1:])
            nll += float(ce[mask].sum())
            n += int(mask.sum())
    model.train()
    return nll / max(n, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--state", default="/work/train-state")
    ap.add_argument("--data", default="/work/train-state/data")
    ap.add_argument("--from-ckpt", default=None, help="default STATE/ckpt/last.pt (phase 1)")
    ap.add_argument("--resume", action="store_true", help="continue STATE/ckpt/phase2.pt")
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--chat-frac", type=float, default=0.35, help="share of chat rows")
    ap.add_argument("--tokens-total", type=float, default=1.2e6)
    ap.add_argument("--name", default="phase2",
                    help="output: STATE/ckpt/NAME.pt and STATE/log_NAME.csv")
    ap.add_argument("--chat-uniform", action="store_true",
                    help="draw chat rows' domains uniformly (not by the text weights)")
    ap.add_argument("--hours", type=float, default=0)
    ap.add_argument("--ckpt-minutes", type=float, default=5)
    ap.add_argument("--eval-minutes", type=float, default=5)
    ap.add_argument("--print-every", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(1)
    ckpt_path = os.path.join(a.state, "ckpt", a.name + ".pt")
    log_path = os.path.join(a.state, f"log_{a.name}.csv")
    if a.resume:
        ck = torch.load(ckpt_path)
        for k in KEYS:
            setattr(a, k, ck["args"][k])
    else:
        ck = torch.load(a.from_ckpt or os.path.join(a.state, "ckpt", "last.pt"))
        if os.path.exists(ckpt_path):
            sys.exit(f"finetune: {ckpt_path} exists; use --resume")
    if a.resume:
        p1 = ck["phase1"]
    elif "phase1" in ck:  # continuing a finished fine-tune: everything before it counts as before
        p1 = {"step": ck["phase1"]["step"] + ck["step"],
              "tokens": ck["phase1"]["tokens"] + ck["tokens"],
              "elapsed": ck["phase1"]["elapsed"] + ck["elapsed"], "args": ck["phase1"]["args"]}
    else:
        p1 = {k: ck[k] for k in ("step", "tokens", "elapsed", "args")}

    meta, train, held = load_tokens(a.data)
    tok = Tokenizer(meta["tokenizer"])
    eot = tok.eot
    # The context only grows: a later, shorter-window fine-tune keeps the longer trained context.
    margs = ModelArgs(**{**ck["model_args"], "max_seq": max(a.seq, ck["model_args"]["max_seq"])})
    model = MoEModel(margs)
    model.load_state_dict(ck["model"])
    decay = [p for p in model.parameters() if p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": p1["args"]["wd"]},
                             {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    opt.load_state_dict(ck["opt"])
    rng = np.random.default_rng(a.seed)
    step, tokens, elapsed_before, ema = 0, 0, 0.0, None
    if a.resume:
        rng.bit_generator.state = ck["np_rng"]
        torch.set_rng_state(ck["torch_rng"])
        step, tokens, elapsed_before, ema = ck["step"], ck["tokens"], ck["elapsed"], ck["ema"]
        trim_log(log_path, p1["step"] + step)
        print(f"resumed {ckpt_path} at phase-2 step {step}", flush=True)
    else:
        torch.manual_seed(a.seed)

    probs = domain_weights(train, p1["args"]["weight_cap"])
    convs_train = build(a.data, DOMAINS, "train", a.seed, tok)
    convs_held = build(a.data, DOMAINS, "heldout", 7, tok)
    tok_bytes = tok.token_byte_lengths()
    win256 = eval_windows(held, 256, 24)
    win_long = eval_windows(held, margs.max_seq, 6)
    total_steps = int(a.tokens_total // (a.batch * a.seq))
    print(f"phase 2: {total_steps} steps of {a.batch}x{a.seq}, chat share {a.chat_frac}; "
          f"train conversations " + ", ".join(f"{d} {len(c)}" for d, c in convs_train.items()),
          flush=True)

    def lr_at(s):
        if s < a.warmup:
            return a.lr * (s + 1) / a.warmup
        frac = min(1.0, (s - a.warmup) / max(1, total_steps - a.warmup))
        return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

    stop = {"flag": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(flag=True))
    signal.signal(signal.SIGINT, lambda *_: stop.update(flag=True))
    t0 = time.time()

    def state():
        return {"args": {k: getattr(a, k) for k in KEYS}, "model_args": margs.to_dict(),
                "phase1": p1, "step": step, "tokens": tokens,
                "elapsed": elapsed_before + time.time() - t0, "ema": ema,
                "tokenizer": meta["tokenizer"], "domains": DOMAINS}

    def do_eval():
        r256 = evaluate(model, win256, tok_bytes)
        rlong = evaluate(model, win_long, tok_bytes, batch=2)
        row = {"step": p1["step"] + step, "tokens": p1["tokens"] + tokens,
               "elapsed_s": round(p1["elapsed"] + elapsed_before + time.time() - t0, 1),
               "lr": f"{lr_at(max(step - 1, 0)):.6g}",
               "train_ce_ema": round(ema, 4) if ema is not None else ""}
        row.update({f"bpb_{d}": round(v, 4) for d, v in r256.items()})
        row["bpb_mean"] = round(sum(r256.values()) / len(r256), 4)
        row[f"bpb{margs.max_seq}_mean"] = round(sum(rlong.values()) / len(rlong), 4)
        row["chat_answer_ce"] = round(chat_loss(model, convs_held), 4)
        append_log(log_path, row)
        print("EVAL " + str(row), flush=True)

    last_ckpt = last_eval = time.time()
    run_tokens = tokens
    if step == 0:
        do_eval()
    model.train()
    while step < total_steps and not stop["flag"]:
        if a.hours and time.time() - t0 >= a.hours * 3600:
            break
        lr = lr_at(step)
        for g in opt.param_groups:
            g["lr"] = lr
        chat_probs = np.full(len(DOMAINS), 1 / len(DOMAINS)) if a.chat_uniform else probs
        rows = [chat_row(convs_train, chat_probs, a.seq, rng, eot) if rng.random() < a.chat_frac
                else text_row(train, probs, a.seq, rng) for _ in range(a.batch)]
        xs = torch.tensor(rows, dtype=torch.int64)
        x, y = xs[:, :-1], xs[:, 1:]
        logits, aux, z = model(x)
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss = ce + p1["args"]["aux"] * aux + p1["args"]["zloss"] * z
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += x.numel()
        ema = ce.item() if ema is None else 0.98 * ema + 0.02 * ce.item()
        if step % a.print_every == 0 or step == 1:
            el = time.time() - t0
            print(f"p2 step {step}/{total_steps} ce {ce.item():.4f} ema {ema:.4f} "
                  f"lr {lr:.2e} tok/s {(tokens - run_tokens) / el:.0f}", flush=True)
        if time.time() - last_eval >= a.eval_minutes * 60:
            do_eval()
            last_eval = time.time()
        if time.time() - last_ckpt >= a.ckpt_minutes * 60:
            save_ckpt(ckpt_path, model, opt, rng, state())
            last_ckpt = time.time()
    if step >= total_steps:
        do_eval()
    save_ckpt(ckpt_path, model, opt, rng, state())
    print(f"stopped at phase-2 step {step}; checkpoint {ckpt_path}", flush=True)


if __name__ == "__main__":
    main()
