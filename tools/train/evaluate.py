#!/usr/bin/python3
"""Held-out bits per byte per domain over the WHOLE held-out split (train.py's periodic
evaluation uses a fixed sample of windows only).

The held-out tokens of a domain are cut into consecutive windows of the model's context; every
token after the first of a window is predicted from the window's earlier tokens. Bits per byte =
summed NLL / ln 2 / bytes of the predicted tokens (<|endoftext|> counts as one byte, as in
train.py and baseline_ngram.py).

  /usr/bin/python3 tools/train/evaluate.py --ckpt /work/train-state/ckpt/last.pt
  /usr/bin/python3 tools/train/evaluate.py --export DIR      (the rounded, exported weights)
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
def full_bpb(model, held, tok_bytes, batch=16):
    T = model.args.max_seq
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt")
    ap.add_argument("--export")
    ap.add_argument("--data", default="/work/train-state/data")
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
    tok_bytes = Tokenizer(meta["tokenizer"]).token_byte_lengths()
    res = full_bpb(model, held, tok_bytes)
    res["mean"] = round(sum(res.values()) / len(res), 4)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
