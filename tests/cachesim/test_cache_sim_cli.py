#!/usr/bin/python3
"""End-to-end test of `coli cache-sim` on a trace that `coli trace` writes for the default model.

Usage: test_cache_sim_cli.py --coli PATH --model DIR --work DIR [unittest args]

The hit counts of LRU and Belady are recomputed here from the trace with their own small
implementations (the engine's rules: per token and MoE layer, each routed expert is one access;
an expert of the layer being computed is never evicted), and must equal coli's exactly; every
policy must stay at or below Belady's hits; the table must list each capacity with each policy.
"""

import argparse
import json
import os
import subprocess
import sys
import unittest

ARGS = None
PROMPTS = [
    "def reverse(items):\n    return items[::-1]\n",
    "<|im_start|>user\nTell me a fortune.<|im_end|>\n<|im_start|>assistant\n",
]


def coli(*args, timeout=120):
    return subprocess.run([ARGS.coli, *args], capture_output=True, timeout=timeout)


def work(name):
    os.makedirs(ARGS.work, exist_ok=True)
    return os.path.join(ARGS.work, name)


def groups(trace_paths):
    """Decode order: per token, per MoE layer, the list of expert keys (layer, expert)."""
    out = []
    for path in trace_paths:
        with open(path) as f:
            lines = [json.loads(l) for l in f if l.strip()]
        header = lines[0]
        for rec in lines[1:]:
            for i, experts in enumerate(rec["experts"]):
                out.append([(header["moe_layers"][i], e) for e in experts])
    return out


def lru_hits(gs, capacity):
    resident, last, clock, hits = set(), {}, 0, 0
    for g in gs:
        for k in g:
            clock += 1
            if k in resident:
                hits += 1
            elif capacity > 0:
                if len(resident) >= capacity:
                    victims = [r for r in resident if r not in g]
                    if not victims:
                        last[k] = clock
                        continue
                    resident.remove(min(victims, key=lambda r: last[r]))
                resident.add(k)
            last[k] = clock
    return hits


def belady_hits(gs, capacity):
    flat = [(gi, k) for gi, g in enumerate(gs) for k in g]
    nxt, later = [None] * len(flat), {}
    for i in range(len(flat) - 1, -1, -1):
        nxt[i] = later.get(flat[i][1], float("inf"))
        later[flat[i][1]] = i
    resident, next_of, hits = set(), {}, 0
    for i, (gi, k) in enumerate(flat):
        next_of[k] = nxt[i]
        if k in resident:
            hits += 1
        elif capacity > 0:
            if len(resident) >= capacity:
                victims = [r for r in resident if r not in gs[gi]]
                if not victims:
                    continue
                resident.remove(max(victims, key=lambda r: next_of[r]))
            resident.add(k)
    return hits


class CacheSimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.traces = []
        for i, p in enumerate(PROMPTS):
            out = work(f"trace-{i}.jsonl")
            r = coli("trace", ARGS.model, "-p", p, "-n", "24", "-o", out, "-t", "1")
            assert r.returncode == 0, r.stderr.decode()
            cls.traces.append(out)

    def test_hits_equal_independent_lru_and_belady(self):
        js = work("result.json")
        r = coli("cache-sim", *self.traces, "--capacity", "10%,25%,50%,7", "--json", js)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        with open(js) as f:
            result = json.load(f)
        gs = groups(self.traces)
        tokens = sum(1 for _ in gs) // 6
        self.assertEqual(result["tokens"], tokens)
        self.assertEqual(result["total_experts"], 96)  # 6 MoE layers x 16 experts
        rows = {(x["capacity"], x["policy"]): x for x in result["results"]}
        self.assertEqual({c for c, _ in rows}, {10, 24, 48, 7})
        self.assertEqual({p for _, p in rows}, {"lru", "lfu", "lfru", "belady"})
        for cap in (7, 10, 24, 48):
            with self.subTest(capacity=cap):
                self.assertEqual(rows[(cap, "lru")]["hits"], lru_hits(gs, cap))
                self.assertEqual(rows[(cap, "belady")]["hits"], belady_hits(gs, cap))
                for p in ("lru", "lfu", "lfru"):
                    row = rows[(cap, p)]
                    self.assertEqual(row["accesses"], tokens * 6 * 2)  # top-2, chunk 1
                    self.assertEqual(row["hits"] + row["misses"], row["accesses"])
                    self.assertLessEqual(row["hits"], rows[(cap, "belady")]["hits"])
        # The table: one row per capacity, "N (P%)", each with every policy's hit rate.
        out = r.stdout.decode()
        self.assertIn("lru", out)
        self.assertIn("belady", out)
        for cap, pct in ((10, "10.4%"), (24, "25.0%"), (48, "50.0%"), (7, "7.3%")):
            line = next(l for l in out.splitlines() if l.strip().startswith(f"{cap} ("))
            self.assertIn(pct, line)
            self.assertEqual(line.count("%"), 1 + 4, line)  # the capacity share + 4 hit rates
            self.assertIn("(1.000)", line)  # Belady as a fraction of itself

    def test_prefill_chunks_read_each_expert_once_per_layer(self):
        js = work("chunked.json")
        r = coli("cache-sim", self.traces[0], "--chunk", "64", "--capacity", "96",
                 "--policy", "lru", "--json", js)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        with open(js) as f:
            rows = json.load(f)["results"]
        # All experts fit: misses = distinct experts; fewer accesses than decode order.
        distinct = {k for g in groups(self.traces[:1]) for k in g}
        for row in rows:
            self.assertEqual(row["misses"], len(distinct))
            self.assertLess(row["accesses"], len(groups(self.traces[:1])) * 2)

    def test_bad_input_is_a_usage_error_naming_file_and_line(self):
        bad = work("bad.jsonl")
        with open(self.traces[0]) as f, open(bad, "w") as g:
            lines = f.read().splitlines()
            lines[2] = lines[2].replace('"experts":[[', '"experts":[[99,', 1)
            g.write("\n".join(lines) + "\n")
        r = coli("cache-sim", bad)
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"{bad}:3: ", r.stderr.decode())
        for args in (["--chunk", "0"], ["--capacity", "150%"], ["--policy", "fifo"]):
            with self.subTest(args=args):
                r = coli("cache-sim", self.traces[0], *args)
                self.assertEqual(r.returncode, 2, r.stderr.decode())
                self.assertTrue(r.stderr.decode().startswith("coli: error: "))
        r = coli("cache-sim", work("missing.jsonl"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot open", r.stderr.decode())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--coli", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--work", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)
