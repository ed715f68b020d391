#!/usr/bin/python3
"""Trains the default model (tools/train/model.py) on the token files of tokenizer.py encode.

Deterministic for a seed: the learning-rate schedule follows the step count (cosine over
--total-tokens), batches come from a numpy PCG64 generator whose state is checkpointed, and
evaluation windows are fixed, so an interrupted run resumed with --resume continues exactly as
if it had not stopped (single torch thread, same machine).

  start:  /usr/bin/python3 tools/train/train.py --state /work/train-state [model/opt flags]
  resume: /usr/bin/python3 tools/train/train.py --state /work/train-state --resume
  bench:  /usr/bin/python3 tools/train/train.py --state /tmp/x --bench-seconds 120 [flags]

Writes STATE/ckpt/last.pt (every --ckpt-minutes, on SIGTERM/SIGINT and at the end; the previous
one is kept as prev.pt) and appends held-out bits per byte per domain to STATE/log.csv.
"""
import argparse
import csv
import json
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
from model import ModelArgs, MoEModel  # noqa: E402

DOMAINS = ["kjv_en", "fortunes_en", "fortunes_de", "fortunes_es", "dict_en", "pydoc", "pycode"]
LN2 = math.log(2.0)


def load_tokens(data):
    tdir = os.path.join(data, "tokens")
    with open(os.path.join(tdir, "meta.json")) as f:
        meta = json.load(f)
    train, held = {}, {}
    for d in DOMAINS:
        train[d] = np.fromfile(os.path.join(tdir, f"{d}.train.bin"), dtype=np.uint16)
        held[d] = np.fromfile(os.path.join(tdir, f"{d}.heldout.bin"), dtype=np.uint16)
    return meta, train, held


def domain_weights(train, cap_tokens):
    """Sampling weight of a domain: sqrt(min(tokens, cap)). Keeps the 15M-token dictionary from
    dominating and gives the small Spanish set a few epochs only."""
    w = np.array([math.sqrt(min(len(train[d]), cap_tokens)) for d in DOMAINS])
    return w / w.sum()


def get_batch(train, probs, B, T, rng):
    dom = rng.choice(len(DOMAINS), size=B, p=probs)
    xs = np.empty((B, T + 1), dtype=np.int64)
    for i, di in enumerate(dom):
        a = train[DOMAINS[di]]
        s = int(rng.integers(0, len(a) - T - 1))
        xs[i] = a[s:s + T + 1]
    t = torch.from_numpy(xs)
    return t[:, :-1], t[:, 1:]


def eval_windows(held, T, n):
    """n fixed windows of T+1 tokens per domain, evenly spaced over the held-out tokens."""
    out = {}
    for d in DOMAINS:
        a = held[d]
        starts = np.linspace(0, len(a) - T - 1, num=n).astype(np.int64)
        out[d] = torch.from_numpy(np.stack([a[s:s + T + 1] for s in starts]).astype(np.int64))
    return out


@torch.no_grad()
def evaluate(model, windows, tok_bytes, batch=8):
    """Held-out bits per byte per domain: summed NLL of the predicted tokens / ln 2 / their
    bytes of text (<|endoftext|> counts as one byte)."""
    model.eval()
    res = {}
    for d, w in windows.items():
        nll, nbytes = 0.0, 0
        for i in range(0, w.shape[0], batch):
            x, y = w[i:i + batch, :-1], w[i:i + batch, 1:]
            logits, _, _ = model(x)
            nll += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                                   reduction="sum").item()
            nbytes += int(tok_bytes[y.numpy()].sum())
        res[d] = nll / LN2 / nbytes
    model.train()
    return res


def lr_at(step, a, total_steps):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    frac = min(1.0, (step - a.warmup) / max(1, total_steps - a.warmup))
    return a.lr * (a.min_lr_frac + (1 - a.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * frac)))


def save_ckpt(path, model, opt, rng, state):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                "np_rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                **state}, tmp)
    if os.path.exists(path):
        os.replace(path, os.path.join(os.path.dirname(path), "prev.pt"))
    os.replace(tmp, path)


def trim_log(log_path, max_step):
    """On resume: drop evaluation rows written after the checkpoint (they will be redone)."""
    if not os.path.exists(log_path):
        return
    with open(log_path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return
    keep = [rows[0]] + [r for r in rows[1:] if r and int(r[0]) <= max_step]
    with open(log_path, "w", newline="") as f:
        csv.writer(f).writerows(keep)


def append_log(log_path, row):
    new = not os.path.exists(log_path)
    with open(log_path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(list(row))
        w.writerow(list(row.values()))


def build_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--state", default="/work/train-state", help="checkpoints and log.csv")
    ap.add_argument("--data", default="/work/train-state/data")
    ap.add_argument("--resume", action="store_true", help="continue STATE/ckpt/last.pt")
    ap.add_argument("--seed", type=int, default=1)
    # model
    ap.add_argument("--d-model", type=int, default=192)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--experts", type=int, default=16)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=192)
    ap.add_argument("--seq", type=int, default=256, help="training context in tokens")
    # optimisation
    ap.add_argument("--batch", type=int, default=16, help="sequences per step")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=200, help="steps")
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--aux", type=float, default=0.01, help="load-balancing loss coefficient")
    ap.add_argument("--zloss", type=float, default=1e-3, help="router z-loss coefficient")
    ap.add_argument("--total-tokens", type=float, default=32e6,
                    help="schedule length (cosine ends here, training stops here)")
    ap.add_argument("--weight-cap", type=float, default=3.5e6,
                    help="domain weight = sqrt(min(train tokens, cap))")
    # this invocation
    ap.add_argument("--hours", type=float, default=0, help="stop this process after H hours "
                                                            "(checkpointed; resume later)")
    ap.add_argument("--stop-at-step", type=int, default=0,
                    help="stop this process at this step (checkpointed; for tests)")
    ap.add_argument("--bench-seconds", type=float, default=0,
                    help="only measure tokens/s for this long (no checkpoints, no log)")
    ap.add_argument("--ckpt-minutes", type=float, default=10)
    ap.add_argument("--eval-minutes", type=float, default=10)
    ap.add_argument("--eval-windows", type=int, default=24, help="per domain")
    ap.add_argument("--print-every", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    return ap


SCHEDULE_KEYS = ("seed", "d_model", "layers", "heads", "kv_heads", "experts", "top_k", "ffn",
                 "seq", "batch", "lr", "min_lr_frac", "warmup", "wd", "aux", "zloss",
                 "total_tokens", "weight_cap")


def main():
    a = build_args().parse_args()
    torch.set_num_threads(a.threads)
    os.makedirs(a.state, exist_ok=True)
    ckpt_path = os.path.join(a.state, "ckpt", "last.pt")
    log_path = os.path.join(a.state, "log.csv")
    ck = None
    if a.resume:
        if not os.path.exists(ckpt_path):
            sys.exit(f"train: --resume but {ckpt_path} does not exist")
        ck = torch.load(ckpt_path)
        for k in SCHEDULE_KEYS:  # the run's own settings win over the command line
            setattr(a, k, ck["args"][k])

    meta, train, held = load_tokens(a.data)
    margs = ModelArgs(vocab_size=meta["vocab_size"], d_model=a.d_model, n_layers=a.layers,
                      n_heads=a.heads, n_kv_heads=a.kv_heads, n_experts=a.experts,
                      top_k=a.top_k, ffn=a.ffn, max_seq=a.seq)
    torch.manual_seed(a.seed)
    model = MoEModel(margs)
    model.init_weights(torch.Generator().manual_seed(a.seed))
    total, active = model.count_params()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd},
                             {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    rng = np.random.default_rng(a.seed)
    step, tokens, elapsed_before, ema = 0, 0, 0.0, None
    if ck is not None:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        rng.bit_generator.state = ck["np_rng"]
        torch.set_rng_state(ck["torch_rng"])
        step, tokens, elapsed_before, ema = ck["step"], ck["tokens"], ck["elapsed"], ck["ema"]
        trim_log(log_path, step)
        print(f"resumed {ckpt_path} at step {step}, {tokens:,d} tokens", flush=True)

    probs = domain_weights(train, a.weight_cap)
    tok_per_step = a.batch * a.seq
    total_steps = int(a.total_tokens // tok_per_step)
    from tokenizer import Tokenizer  # noqa: E402  (regex only needed here)
    tok_bytes = Tokenizer(meta["tokenizer"]).token_byte_lengths()
    windows = eval_windows(held, a.seq, a.eval_windows)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); params "
          f"{total / 1e6:.2f}M, active/token {active / 1e6:.2f}M; {margs.to_dict()}", flush=True)
    print("domain sampling: " + ", ".join(f"{d} {p:.3f}" for d, p in zip(DOMAINS, probs)) +
          f"; {total_steps} steps of {tok_per_step} tokens", flush=True)

    stop = {"flag": False}

    def on_signal(signum, frame):
        stop["flag"] = True
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def state():
        return {"args": {k: getattr(a, k) for k in SCHEDULE_KEYS}, "model_args": margs.to_dict(),
                "step": step, "tokens": tokens, "elapsed": elapsed_before + time.time() - t0,
                "ema": ema, "tokenizer": meta["tokenizer"], "domains": DOMAINS,
                "domain_probs": probs.tolist()}

    def do_eval():
        res = evaluate(model, windows, tok_bytes)
        row = {"step": step, "tokens": tokens,
               "elapsed_s": round(elapsed_before + time.time() - t0, 1),
               "lr": f"{lr_at(max(step - 1, 0), a, total_steps):.6g}",
               "train_ce_ema": round(ema, 4) if ema is not None else ""}
        row.update({f"bpb_{d}": round(v, 4) for d, v in res.items()})
        row["bpb_mean"] = round(sum(res.values()) / len(res), 4)
        if not a.bench_seconds:
            append_log(log_path, row)
        print("EVAL " + json.dumps(row), flush=True)

    t0 = time.time()
    last_ckpt = last_eval = t0
    run_start_tokens = tokens
    if step == 0 and not a.bench_seconds:
        do_eval()
    model.train()
    while step < total_steps and not stop["flag"]:
        now = time.time()
        if a.bench_seconds and now - t0 >= a.bench_seconds:
            break
        if a.hours and now - t0 >= a.hours * 3600:
            break
        if a.stop_at_step and step >= a.stop_at_step:
            break
        lr = lr_at(step, a, total_steps)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(train, probs, a.batch, a.seq, rng)
        logits, aux, z = model(x)
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss = ce + a.aux * aux + a.zloss * z
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += x.numel()
        c = ce.item()
        ema = c if ema is None else 0.98 * ema + 0.02 * c
        if step % a.print_every == 0 or step == 1:
            el = time.time() - t0
            print(f"step {step} tokens {tokens:,d} ce {c:.4f} ema {ema:.4f} aux {float(aux):.3f} "
                  f"z {float(z):.2f} lr {lr:.2e} tok/s {(tokens - run_start_tokens) / el:.0f}",
                  flush=True)
        if a.bench_seconds:
            continue
        if time.time() - last_eval >= a.eval_minutes * 60:
            do_eval()
            last_eval = time.time()
        if time.time() - last_ckpt >= a.ckpt_minutes * 60:
            save_ckpt(ckpt_path, model, opt, rng, state())
            last_ckpt = time.time()
    el = time.time() - t0
    print(f"stopped at step {step}: {tokens - run_start_tokens:,d} tokens in {el:.0f} s, "
          f"{(tokens - run_start_tokens) / el:.0f} tokens/s", flush=True)
    if a.bench_seconds:
        return
    if step >= total_steps:
        do_eval()
    save_ckpt(ckpt_path, model, opt, rng, state())
    print(f"checkpoint {ckpt_path}", flush=True)


if __name__ == "__main__":
    main()
