#!/usr/bin/python3
"""Held-out bits per byte per domain over the WHOLE held-out split (train.py's periodic
evaluation uses a fixed sample of windows only).

The held-out tokens of a domain are cut into consecutive windows of the model's context; every
token after the first of a window is predicted from the window's earlier tokens. Bits per byte =
summed NLL / ln 2 / bytes of the predicted tokens (<|endoftext|> counts as one byte, as in
train.py and baseline_ngram.py).

  /usr/bin/python3 tools/train/evaluate.py --ckpt /work/train-state/ckpt/last.pt
  /usr/bin/python3 tools/train/evaluate.py --export DIR      (the rounded, exported weights)
  add --context T to use windows of T tokens instead of the model's context
  add --routing [--windows N] for torch-side routing shares per domain on N fixed held-out
  windows per domain (a preview: the shipped statistics must come from the engine, issue 3)
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model import ModelArgs, MoEModel  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402
from train import DOMAINS, load_tokens  # noqa: E402


@torch.no_grad()
def full_bpb(model, held, tok_bytes, T, batch=16):
    res = {}
    for d in DOMAINS:
        a = held[d].astype(np.int64)
        n = (len(a) - 1) // T
        nll, nbytes = 0.0, 0
        for i in range(0, n, batch):
            rows = [a[j * T:j * T + T + 1] for j in range(i, min(n, i + batch))]
            w = torch.from_numpy(np.stack(rows))
            logits, _, _ = model(w[:, :-1])
            y = w[:, 1:]
            nll += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                                   reduction="sum").item()
            nbytes += int(tok_bytes[y.numpy()].sum())
        res[d] = round(nll / math.log(2) / nbytes, 4)
    return res


@torch.no_grad()
def routing(model, held, n_windows):
    """Per layer: share of the top-k routing slots each expert gets per domain, the
    domain-balanced share (mean over domains), and the (domain, expert) pairs where the domain's
    share is >= 3x the balanced share while the balanced share is >= 1% (issue 3's criterion)."""
    from train import eval_windows
    windows = eval_windows(held, model.args.max_seq, n_windows)
    L, E = model.args.n_layers, model.args.n_experts
    share = {}
    for d, w in windows.items():
        c = np.zeros((L, E))
        for i in range(0, w.shape[0], 8):
            model(w[i:i + 8, :-1])
            for li, layer in enumerate(model.layers):
                c[li] += np.bincount(layer.block_sparse_moe.last_topk.reshape(-1).numpy(),
                                     minlength=E)
        share[d] = c / c.sum(1, keepdims=True)
    balanced = np.mean([share[d] for d in DOMAINS], axis=0)
    out = []
    for li in range(L):
        hits = []
        for d in DOMAINS:
            for e in range(E):
                if balanced[li, e] >= 0.01 and share[d][li, e] >= 3 * balanced[li, e]:
                    hits.append({"domain": d, "expert": e,
                                 "ratio": round(float(share[d][li, e] / balanced[li, e]), 2)})
        out.append({"layer": li, "max_ratio": round(float(max(
            (share[d][li] / np.maximum(balanced[li], 1e-9))[balanced[li] >= 0.01].max()
            for d in DOMAINS)), 2), "specialists": hits,
            "balanced_share": [round(float(v), 4) for v in balanced[li]]})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt")
    ap.add_argument("--export")
    ap.add_argument("--data", default="/work/train-state/data")
    ap.add_argument("--context", type=int, default=0,
                    help="window length in tokens (default: the model's context)")
    ap.add_argument("--routing", action="store_true")
    ap.add_argument("--windows", type=int, default=24, help="per domain, for --routing")
    a = ap.parse_args()
    torch.set_num_threads(1)
    meta, _, held = load_tokens(a.data)
    if a.export:
        from export import load_export
        model = load_export(a.export)
    else:
        ck = torch.load(a.ckpt)
        model = MoEModel(ModelArgs(**ck["model_args"]))
        model.load_state_dict(ck["model"])
        model.eval()
    if a.routing:
        for r in routing(model, held, a.windows):
            print(json.dumps(r))
        return
    tok_bytes = Tokenizer(meta["tokenizer"]).token_byte_lengths()
    T = a.context or model.args.max_seq
    if T > model.args.max_seq:
        sys.exit(f"evaluate: --context {T} exceeds the model's {model.args.max_seq}")
    res = full_bpb(model, held, tok_bytes, T)
    res["mean"] = round(sum(res.values()) / len(res), 4)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
