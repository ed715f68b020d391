#!/usr/bin/python3
"""`coli bench io` (a benchmark, so nothing here checks a speed) on the default model converted to
a container: the table has its four tests with their fields, the replay reads exactly the trace's
distinct experts per token and MoE layer (one whole blob each, lengths from colibri.json, counted
here independently of the engine), the disk tests use the expert size and the queue depth, and
bad input gets its exit code.

Usage: test_bench_io_cli.py --coli PATH --model DIR --work DIR [unittest args]"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

ARGS = None
ROW = re.compile(r"^(disk-sequential|disk-random|replay-layer|replay-stream)\s+(\d+)\s+(\d+)\s+"
                 r"(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)-([0-9.]+)\s+([0-9.]+)$", re.M)


def coli(*args, timeout=300):
    return subprocess.run([ARGS.coli, *args], capture_output=True, text=True, timeout=timeout)


def read_trace(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return lines[0], lines[1:]


class BenchIo(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(ARGS.work, ignore_errors=True)
        os.makedirs(ARGS.work)
        cls.container = os.path.join(ARGS.work, "tiny")
        r = coli("convert", ARGS.model, cls.container)
        assert r.returncode == 0, r.stderr
        cls.trace = os.path.join(ARGS.work, "trace.jsonl")
        r = coli("trace", cls.container, "-p", "Once upon a time a small bird sang", "-n", "12",
                 "-o", cls.trace, "-t", "1")
        assert r.returncode == 0, r.stderr
        with open(os.path.join(cls.container, "colibri.json")) as f:
            cls.blob = {(e["layer"], e["expert"]): e["length"] for e in json.load(f)["experts"]}

    def expected(self, tokens=None):
        """(reads, bytes) of one replay: every token's distinct experts per MoE layer."""
        header, records = read_trace(self.trace)
        reads = size = 0
        for rec in records[:tokens]:
            for layer, ids in zip(header["moe_layers"], rec["experts"]):
                for e in set(ids):
                    reads += 1
                    size += self.blob[(layer, e)]
        return reads, size

    def bench(self, *extra):
        r = coli("bench", "io", self.container, "--trace", self.trace, "--runs", "2",
                 "--disk-mib", "2", *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = {m.group(1): m.groups()[1:] for m in ROW.finditer(r.stdout)}
        self.assertEqual(sorted(rows), ["disk-random", "disk-sequential", "replay-layer",
                                        "replay-stream"], r.stdout)
        return r.stdout, {k: (int(v[0]), int(v[1]), int(v[2]), int(v[3]), float(v[4]),
                              float(v[5]), float(v[6]), float(v[7])) for k, v in rows.items()}

    def check_table(self, out, rows, depth, tokens=None):
        reads, size = self.expected(tokens)
        blob = sorted(self.blob.values())[len(self.blob) // 2]
        self.assertIn(f"{reads} expert reads per replay ({size} bytes)", out)
        for name in ("replay-layer", "replay-stream"):
            request, n, nbytes, in_flight, med, lo, hi, ratio = rows[name]
            self.assertEqual(request, blob, name)
            self.assertEqual(n, reads, name)
            self.assertEqual(nbytes, size, name)  # IoStats::bytes of the run
            self.assertGreaterEqual(in_flight, 1)
            self.assertLessEqual(in_flight, depth)
            self.assertTrue(lo <= med <= hi and lo > 0, out)
        # Layer by layer, a layer's distinct experts (top_k here) is all there is to overlap.
        top_k = read_trace(self.trace)[0]["top_k"]
        self.assertLessEqual(rows["replay-layer"][3], min(depth, top_k))
        request, n, nbytes, in_flight, med, lo, hi, ratio = rows["disk-random"]
        self.assertEqual(request, blob)
        self.assertEqual(nbytes, n * blob)
        self.assertGreaterEqual(nbytes, max(size, 2 << 20))
        self.assertLessEqual(in_flight, depth)
        self.assertAlmostEqual(ratio, 1.0, places=3)
        self.assertEqual(rows["disk-sequential"][0], 4 << 20)
        self.assertGreaterEqual(rows["disk-sequential"][2], max(size, 2 << 20))
        m = re.search(r"^replay-layer / disk-random: ([0-9.]+) \(goal >= 0\.8\)$", out, re.M)
        self.assertIsNotNone(m, out)
        self.assertAlmostEqual(float(m.group(1)), rows["replay-layer"][7], delta=0.0015)
        self.assertIn("2 runs after 1 warm-up", out)
        self.assertIn("cold (POSIX_FADV_DONTNEED on every shard before each run)", out)

    def test_default_table(self):
        out, rows = self.bench()
        self.assertRegex(out, r"backend:\s+(io_uring|pread-threads), queue depth 4; replay reads "
                              r"buffered")
        self.check_table(out, rows, 4)

    def test_pread_direct_depth_and_tokens(self):
        out, rows = self.bench("--backend", "pread", "--direct-io", "--queue-depth", "3",
                               "--tokens", "5")
        self.assertIn("backend:    pread-threads, queue depth 3; replay reads O_DIRECT", out)
        self.check_table(out, rows, 3, tokens=5)

    def test_uring_when_available(self):
        r = coli("bench", "io", self.container, "--trace", self.trace, "--runs", "1",
                 "--disk-mib", "1", "--backend", "io_uring", "--tokens", "2")
        if r.returncode == 2 and "io_uring" in r.stderr:
            self.skipTest("io_uring unavailable here: " + r.stderr.strip())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("backend:    io_uring, queue depth 4", r.stdout)

    def test_bad_input(self):
        # A trace naming an expert the container does not hold (another model's trace).
        header, records = read_trace(self.trace)
        header = dict(header, n_experts=64)
        bad = os.path.join(ARGS.work, "other-model.jsonl")
        with open(bad, "w") as f:
            f.write(json.dumps(header) + "\n")
            rec = dict(records[0])
            rec["experts"] = [[63] + ids[1:] for ids in rec["experts"]]
            f.write(json.dumps(rec) + "\n")
        r = coli("bench", "io", self.container, "--trace", bad, "--runs", "1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("expert 63", r.stderr)
        self.assertIn("does not hold", r.stderr)
        r = coli("bench", "io", os.path.join(ARGS.work, "missing"), "--trace", self.trace)
        self.assertEqual(r.returncode, 3, r.stderr)
        r = coli("bench", "io", self.container, "--trace", os.path.join(ARGS.work, "none.jsonl"))
        self.assertEqual(r.returncode, 2, r.stderr)
        for flags in (["--queue-depth", "0"], ["--queue-depth", "65"], ["--runs", "0"],
                      ["--backend", "aio"]):
            r = coli("bench", "io", self.container, "--trace", self.trace, *flags)
            self.assertEqual(r.returncode, 2, flags)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)
