#!/usr/bin/python3
"""Order-2 byte n-gram baseline: held-out bits per byte per domain on the model's split.

P(c | a b) with Witten-Bell interpolation (Witten & Bell 1991; Chen & Goodman 1998, sec. 2.5):
  P(c | ab) = (C(abc) + T(ab) P(c | b)) / (C(ab) + T(ab)),  T(ab) = distinct bytes seen after ab,
  P(c | b) likewise from P(c), and P(c) = (C(c) + 1) / (N + 256).
Each document is one byte string ending in the separator byte 0x1e (so that, like the model's
<|endoftext|>, the document break counts as one byte). Two variants: counts from the training
text of all domains (the model's data) and counts from the domain's own training text.

  /usr/bin/python3 tools/train/baseline_ngram.py [--data DIR] [--out tools/train/baseline.json]
"""
import argparse
import json
import math
import os

import numpy as np

DOMAINS = ["kjv_en", "fortunes_en", "fortunes_de", "fortunes_es", "dict_en", "pydoc", "pycode"]
HERE = os.path.dirname(os.path.abspath(__file__))


def read_bytes(path):
    with open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8)


def counts(arr):
    a = arr.astype(np.int64)
    c3 = np.bincount((a[:-2] << 16) | (a[1:-1] << 8) | a[2:], minlength=1 << 24)
    c2 = np.bincount((a[:-1] << 8) | a[1:], minlength=1 << 16)
    c1 = np.bincount(a, minlength=256)
    return c3, c2, c1


def tables(c3, c2, c1):
    """Conditional probability tables [65536, 256] for P(c|ab) and [256, 256] for P(c|b)."""
    p1 = (c1 + 1.0) / (c1.sum() + 256.0)
    m2 = c2.reshape(256, 256).astype(np.float64)
    n2 = m2.sum(1, keepdims=True)
    t2 = (m2 > 0).sum(1, keepdims=True)
    p2 = np.where(n2 + t2 > 0, (m2 + t2 * p1[None, :]) / np.maximum(n2 + t2, 1), p1[None, :])
    m3 = c3.reshape(65536, 256).astype(np.float64)
    n3 = m3.sum(1, keepdims=True)
    t3 = (m3 > 0).sum(1, keepdims=True)
    back = p2[np.arange(65536) & 255]  # context ab backs off to b (the low byte)
    p3 = np.where(n3 + t3 > 0, (m3 + t3 * back) / np.maximum(n3 + t3, 1), back)
    return p3


def bits_per_byte(p3, held):
    a = held.astype(np.int64)
    # the first two bytes of the file have no full context: prefix the separator twice
    a = np.concatenate([[0x1e, 0x1e], a])
    ctx = (a[:-2] << 8) | a[1:-1]
    p = p3[ctx, a[2:]]
    return float(-np.log2(p).sum() / len(p))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/work/train-state/data")
    ap.add_argument("--out", default=os.path.join(HERE, "baseline.json"))
    a = ap.parse_args()
    tdir = os.path.join(a.data, "text")
    train = {d: read_bytes(os.path.join(tdir, d + ".train.txt")) for d in DOMAINS}
    held = {d: read_bytes(os.path.join(tdir, d + ".heldout.txt")) for d in DOMAINS}
    tot = None
    own = {}
    for d in DOMAINS:
        c = counts(train[d])
        own[d] = bits_per_byte(tables(*c), held[d])
        tot = c if tot is None else tuple(x + y for x, y in zip(tot, c))
    p_all = tables(*tot)
    res = {"model": "order-2 byte n-gram, Witten-Bell interpolation", "domains": {}}
    for d in DOMAINS:
        res["domains"][d] = {"bpb_all_domains": round(bits_per_byte(p_all, held[d]), 4),
                             "bpb_own_domain": round(own[d], 4), "heldout_bytes": int(held[d].size)}
        print(d, res["domains"][d], flush=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
