#!/usr/bin/python3
"""Exports a training checkpoint as a Hugging Face Mixtral checkpoint directory.

  /usr/bin/python3 tools/train/export.py --ckpt /work/train-state/ckpt/last.pt --out DIR
      [--dtype BF16|F16] [--name colibri-moe-tiny] [--samples]

Writes config.json (MixtralConfig keys), model.safetensors (BF16 by default, tensors in name
order, header padded to 8 bytes), tokenizer.json, tokenizer_config.json (ChatML template),
generation_config.json and README.md (model card: architecture, data and licences from
tools/train/manifest.json, held-out bits per byte from the training log, samples).
"""
import argparse
import csv
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model import ModelArgs, MoEModel, hf_state_dict, load_hf_state_dict  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

SAMPLE_PROMPTS = {
    "kjv_en": "And it came to pass, when the king",
    "fortunes_en": "A man who",
    "fortunes_de": "Wer andern eine",
    "fortunes_es": "El amor es",
    "dict_en": "Lantern \\Lan\"tern\\, n.",
    "pydoc": ".. function:: ",
    "pycode": "def read_config(path):\n    ",
}


def write_safetensors(path, tensors, dtype):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().float().contiguous()
        if dtype == "BF16":
            raw = t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
        elif dtype == "F16":
            raw = t.numpy().astype("<f2").tobytes()
        else:
            raw = t.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * ((8 - len(hj) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """name -> float32 tensor (BF16, F16 and F32 files)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, m in hdr.items():
        if name == "__metadata__":
            continue
        a, b = m["data_offsets"]
        if m["dtype"] == "BF16":
            arr = (np.frombuffer(data[a:b], dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif m["dtype"] == "F16":
            arr = np.frombuffer(data[a:b], dtype="<f2").astype(np.float32)
        else:
            arr = np.frombuffer(data[a:b], dtype="<f4")
        out[name] = torch.from_numpy(arr.copy()).view(m["shape"])
    return out


def load_export(d):
    """The exported checkpoint as a float32 torch model (for checks and goldens)."""
    with open(os.path.join(d, "config.json")) as f:
        c = json.load(f)
    ma = ModelArgs(vocab_size=c["vocab_size"], d_model=c["hidden_size"],
                   n_layers=c["num_hidden_layers"], n_heads=c["num_attention_heads"],
                   n_kv_heads=c["num_key_value_heads"], n_experts=c["num_local_experts"],
                   top_k=c["num_experts_per_tok"], ffn=c["intermediate_size"],
                   max_seq=c["max_position_embeddings"], rope_theta=c["rope_theta"],
                   rms_eps=c["rms_norm_eps"])
    m = MoEModel(ma)
    load_hf_state_dict(m, read_safetensors(os.path.join(d, "model.safetensors")))
    m.eval()
    return m


@torch.no_grad()
def generate(model, ids, n, eos_ids=(), temperature=0.0, top_k=40, seed=0):
    """Greedy (temperature 0) or top-k sampling; stops before an eos id. Returns new ids."""
    g = torch.Generator().manual_seed(seed)
    T = model.args.max_seq
    ids = list(ids)
    out = []
    for _ in range(n):
        if len(ids) >= T:
            break
        logits, _, _ = model(torch.tensor([ids]))
        last = logits[0, -1]
        if temperature == 0:
            nxt = int(last.argmax())
        else:
            v, ix = (last / temperature).topk(top_k)
            nxt = int(ix[torch.multinomial(v.softmax(-1), 1, generator=g)])
        if nxt in eos_ids:
            break
        ids.append(nxt)
        out.append(nxt)
    return out


def last_eval_row(log_path, step):
    if not log_path or not os.path.exists(log_path):
        return None
    with open(log_path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(r["step"]) <= step]
    return rows[-1] if rows else None


CHAT_SAMPLE_REQUESTS = ["Tell me a fortune.", "Erzähl mir einen Spruch.", "Dime un refrán.",
                        "Define lantern.", "Quote the Bible.",
                        "Write a Python function named read_config."]


def training_summary(ck):
    """Totals over both phases: a phase-2 checkpoint (finetune.py) carries phase 1's in
    ck["phase1"]."""
    p1 = ck.get("phase1")
    if p1 is None:
        return {"step": ck["step"], "tokens": ck["tokens"], "elapsed": ck["elapsed"],
                "args": ck["args"], "phase2": None}
    return {"step": p1["step"] + ck["step"], "tokens": p1["tokens"] + ck["tokens"],
            "elapsed": p1["elapsed"] + ck["elapsed"], "args": p1["args"],
            "phase2": {"step": ck["step"], "tokens": ck["tokens"], "args": ck["args"]}}


def chat_ids(tok, request):
    """The engine's tokens for CHAT_TEMPLATE with one user message and the generation prompt."""
    ims, ime = tok.special["<|im_start|>"], tok.special["<|im_end|>"]
    return ([ims] + tok.encode("user\n" + request) + [ime] + tok.encode("\n") + [ims] +
            tok.encode("assistant\n"))


def model_card(name, cfg, ck, manifest, row, samples, dtype, size):
    ma = ck["model_args"]
    ts = training_summary(ck)
    lines = [f"# {name}", "",
             "A small decoder-only Mixture-of-Experts language model in the Mixtral layout, "
             "trained from scratch on CPU on real text from Debian packages, as the embedded "
             "default model of Colibri Desktop. It continues text in the style of its seven "
             "training domains and, in the ChatML format, answers a few kinds of request "
             "(a fortune in English, German or Spanish, a dictionary definition, a Bible "
             "passage, a Python documentation page or function) with text of that domain. It "
             "is not a general assistant, follows no other instructions and knows little of "
             "the world.", "",
             "## Architecture", "",
             f"- `MixtralForCausalLM`, {ma['n_layers']} layers, hidden {ma['d_model']}, "
             f"{ma['n_heads']} heads of {ma['d_model'] // ma['n_heads']} "
             f"(GQA, {ma['n_kv_heads']} KV heads), RoPE theta {ma['rope_theta']:g}, RMSNorm eps "
             f"{ma['rms_eps']:g}, context {ma['max_seq']} tokens.",
             f"- Every layer: {ma['n_experts']} SwiGLU experts (ffn {ma['ffn']}), softmax router, "
             f"top-{ma['top_k']}, weights renormalised.",
             f"- Byte-level BPE vocabulary of {ma['vocab_size']} tokens (GPT-4/Qwen split regex; "
             "`<|endoftext|>`, `<|im_start|>`, `<|im_end|>`).",
             f"- Weights {dtype}, `model.safetensors` {size / 1e6:.1f} MB.",
             "", "## Training", "",
             f"- {ts['tokens']:,d} tokens ({ts['step']} steps), "
             f"{ts['elapsed'] / 3600:.2f} h on one CPU thread (Debian python3-torch "
             f"{torch.__version__}); AdamW, cosine schedule, load-balancing loss "
             f"{ts['args']['aux']}, router z-loss {ts['args']['zloss']}.",
             "- Phase 1: plain text in 256-token windows." + (
                 "" if not ts["phase2"] else
                 f" Phase 2 (last {ts['phase2']['tokens']:,d} tokens): "
                 f"{ts['phase2']['args']['seq']}-token windows, "
                 f"{ts['phase2']['args']['chat_frac']:.0%} of them ChatML conversations whose "
                 "answers are training documents and whose requests come from a fixed list of "
                 "templates (tools/train/chat_data.py)."),
             "- Code: `tools/train/` in the Colibri Desktop repository (prepare_data.py, "
             "tokenizer.py, train.py, export.py).", ""]
    if row:
        lines += ["## Held-out bits per byte", "", "| domain | bits/byte |", "|---|---|"]
        for k, v in row.items():
            if k.startswith("bpb_"):
                lines.append(f"| {k[4:]} | {v} |")
        lines += ["", f"(at step {row['step']}, {int(row['tokens']):,d} tokens; fixed "
                  "256-token held-out windows, see docs/default-model.md)", ""]
        long_keys = [k for k in row if k.startswith("bpb") and k.endswith("_mean") and
                     k[3:-5].isdigit()]
        for k in long_keys:
            lines += [f"Mean over domains on {k[3:-5]}-token windows: {row[k]} bits/byte.", ""]
        if row.get("chat_answer_ce"):
            lines += [f"Cross-entropy of held-out chat answers: {row['chat_answer_ce']} nats "
                      "per token.", ""]
    lines += ["## Data and licences", "",
              "| domain | Debian package | version | licence of the text | train bytes |",
              "|---|---|---|---|---|"]
    for dom, d in manifest["domains"].items():
        for s in d["sources"]:
            lines.append(f"| {dom} | {s['package']} | {s['version']} | {s['licence']} | "
                         f"{s['bytes_train']:,d} |")
    lines += ["", "Part of the training text (fortunes-de, fortunes-es, dict-gcide) is GPL-2+. "
              "Whether model weights are a derivative work of their training text is unsettled; "
              "this model is therefore distributed conservatively under the terms of the GNU "
              "GPL version 2 or later, with the notices of all sources above. See "
              "docs/default-model.md.", ""]
    if samples:
        lines += ["## Samples (top-k 40, temperature 0.8)", "",
                  "Continuations of the start of a document of each domain:", ""]
        for dom, (prompt, text) in samples["text"].items():
            lines += [f"**{dom}**, prompt `{prompt!r}`:", "", "```", prompt + text, "```", ""]
        lines += ["Chat (the request through the chat template, the answer up to "
                  "`<|im_end|>`):", ""]
        for req, text in samples["chat"].items():
            lines += [f"**{req}**", "", "```", text, "```", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt", default="/work/train-state/ckpt/last.pt")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="BF16", choices=["BF16", "F16", "F32"])
    ap.add_argument("--name", default="colibri-moe-tiny")
    ap.add_argument("--log", default=None, help="log.csv for the card (default: next to ckpt)")
    ap.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    ap.add_argument("--samples", action="store_true", help="put samples in the model card")
    a = ap.parse_args()
    torch.set_num_threads(1)
    ck = torch.load(a.ckpt)
    ma = ModelArgs(**ck["model_args"])
    model = MoEModel(ma)
    model.load_state_dict(ck["model"])
    model.eval()
    tok_path = ck["tokenizer"]
    tok = Tokenizer(tok_path)
    eot, ims, ime = (tok.special[s] for s in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"))
    os.makedirs(a.out, exist_ok=True)

    cfg = {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
        "vocab_size": ma.vocab_size, "hidden_size": ma.d_model, "intermediate_size": ma.ffn,
        "num_hidden_layers": ma.n_layers, "num_attention_heads": ma.n_heads,
        "num_key_value_heads": ma.n_kv_heads, "head_dim": ma.head_dim, "hidden_act": "silu",
        "max_position_embeddings": ma.max_seq, "initializer_range": 0.02,
        "rms_norm_eps": ma.rms_eps, "use_cache": True, "pad_token_id": None,
        "bos_token_id": eot, "eos_token_id": eot, "tie_word_embeddings": False,
        "rope_theta": ma.rope_theta, "rope_scaling": None, "sliding_window": None,
        "attention_dropout": 0.0, "num_experts_per_tok": ma.top_k,
        "num_local_experts": ma.n_experts, "output_router_logits": False,
        "router_aux_loss_coef": training_summary(ck)["args"]["aux"], "router_jitter_noise": 0.0,
        "torch_dtype": {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}[a.dtype],
        "transformers_version": "4.46.0",
    }
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    st_path = os.path.join(a.out, "model.safetensors")
    write_safetensors(st_path, hf_state_dict(model), a.dtype)
    shutil.copyfile(tok_path, os.path.join(a.out, "tokenizer.json"))
    added = {str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True}
             for s, i in sorted(tok.special.items(), key=lambda kv: kv[1])}
    tcfg = {"add_bos_token": False, "add_eos_token": False, "add_prefix_space": False,
            "added_tokens_decoder": added, "bos_token": None, "eos_token": "<|im_end|>",
            "pad_token": "<|endoftext|>", "unk_token": None, "clean_up_tokenization_spaces": False,
            "model_max_length": ma.max_seq, "tokenizer_class": "PreTrainedTokenizerFast",
            "chat_template": CHAT_TEMPLATE}
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump(tcfg, f, indent=2, ensure_ascii=False)
        f.write("\n")
    gcfg = {"bos_token_id": eot, "eos_token_id": [eot, ime], "do_sample": True,
            "temperature": 0.8, "top_k": 40, "top_p": 0.95, "repetition_penalty": 1.05,
            "transformers_version": "4.46.0"}
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump(gcfg, f, indent=2)
        f.write("\n")

    samples = {}
    if a.samples:
        ref = load_export(a.out)  # samples from the exported (rounded) weights
        samples = {"text": {}, "chat": {}}
        for i, (dom, prompt) in enumerate(SAMPLE_PROMPTS.items()):
            new = generate(ref, tok.encode(prompt), 80, eos_ids=(eot, ime), temperature=0.8,
                           seed=i)
            samples["text"][dom] = (prompt, tok.decode(new))
        for i, req in enumerate(CHAT_SAMPLE_REQUESTS):
            new = generate(ref, chat_ids(tok, req), 120, eos_ids=(eot, ime), temperature=0.8,
                           seed=100 + i)
            samples["chat"][req] = tok.decode(new)
    with open(a.manifest, encoding="utf-8") as f:
        manifest = json.load(f)
    log = a.log or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.ckpt))),
                                "log_phase2.csv" if "phase1" in ck else "log.csv")
    row = last_eval_row(log, training_summary(ck)["step"])
    with open(os.path.join(a.out, "README.md"), "w", encoding="utf-8") as f:
        f.write(model_card(a.name, cfg, ck, manifest, row, samples, a.dtype,
                           os.path.getsize(st_path)))
    print(f"exported {a.out}: model.safetensors {os.path.getsize(st_path):,d} bytes ({a.dtype})")


if __name__ == "__main__":
    main()
