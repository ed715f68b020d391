#!/usr/bin/python3
"""How a model routes, from a `coli trace` file: what an expert cache of a given size would see.

Usage: routing_stats.py TRACE.jsonl [--budget FRACTION]

Per MoE layer, over every token of the trace (prompt and generated): distinct experts used, the
perplexity of the use counts (2^entropy: 64 = every expert equally often, 8 = always the same
top-8) and the share of picks that go to the hottest FRACTION x n_experts experts. Over all
layers: how many of a token's top-k experts the previous token also picked (k^2 / n_experts for
independent picks) and the hit rate of an LRU cache holding FRACTION x n_experts experts per
layer, filled on demand in trace order. Used for the figures in docs/bigmodel.md.
"""

import argparse
import collections
import json
import math


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--budget", type=float, default=0.25, help="cache share (default 0.25)")
    args = ap.parse_args()
    with open(args.trace) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    head, recs = lines[0], lines[1:]
    n_exp, k, layers = head["n_experts"], head["top_k"], len(head["moe_layers"])
    slots = max(1, round(args.budget * n_exp))
    print(f"{len(recs)} tokens, {layers} MoE layers, {n_exp} experts, top-{k}; "
          f"cache {slots} experts per layer")
    print("layer  distinct  perplexity  hottest-%d share" % slots)
    overlap, hits, picks = [], 0, 0
    for layer in range(layers):
        counts = collections.Counter(e for r in recs for e in r["experts"][layer])
        n = sum(counts.values())
        h = -sum(v / n * math.log2(v / n) for v in counts.values())
        hot = sum(v for _, v in counts.most_common(slots)) / n
        print(f"{layer:5d}  {len(counts):8d}  {2 ** h:10.1f}  {hot:17.2f}")
        overlap += [len(set(a["experts"][layer]) & set(b["experts"][layer]))
                    for a, b in zip(recs, recs[1:])]
        lru = collections.OrderedDict()
        for r in recs:
            for e in r["experts"][layer]:
                picks += 1
                if e in lru:
                    hits += 1
                    lru.move_to_end(e)
                else:
                    lru[e] = True
                    if len(lru) > slots:
                        lru.popitem(last=False)
    print(f"shared with the previous token: {sum(overlap) / len(overlap):.2f} of {k} "
          f"(independent picks: {k * k / n_exp:.2f})")
    print(f"LRU hit rate, {slots} experts per layer: {hits / picks:.2f}")


if __name__ == "__main__":
    main()
