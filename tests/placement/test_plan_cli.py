#!/usr/bin/python3
"""End-to-end test of `coli plan` on the fixture models.

Usage: test_plan_cli.py --coli PATH --fixtures DIR --work DIR [unittest args]

- With --trace, the plan's hit rate equals what `coli cache-sim --policy lfru` prints for the
  same trace at the capacity the budget gives (both run here, the numbers compared exactly).
- With learned heat in the usage database (made by `coli generate`), the hit rate is the share of
  decayed heat held by the hottest N experts, recomputed here from the database with sqlite3.
- With neither, a trace is recorded from the built-in prompt (source "recorded").
- Budget edges: 0 (the working set alone: nothing fits, nothing hits) and everything fits (no
  disk reads); the time model's arithmetic on given rates; the readable table's units.
"""

import argparse
import json
import math
import os
import sqlite3
import subprocess
import sys
import unittest

ARGS = None
MODEL = "olmoe"
HALF_LIFE = 8192  # storage::kDefaultHalfLifeTokens


def coli(*args, timeout=60):
    return subprocess.run([ARGS.coli, *args], capture_output=True, text=True, timeout=timeout)


def work(name):
    os.makedirs(ARGS.work, exist_ok=True)
    return os.path.join(ARGS.work, name)


def model_dir():
    return os.path.join(ARGS.fixtures, MODEL)


def plan(*args, db=None):
    """`coli plan --json` with given rates (so no measurement runs); returns the JSON."""
    db = db or work("empty.db")
    r = coli("plan", model_dir(), "--json", "--mem-bandwidth", "10", "--disk-bandwidth", "1",
             "--usage-db", db, *args)
    if r.returncode != 0:
        raise AssertionError(f"coli plan {args}: exit {r.returncode}\n{r.stderr}")
    return json.loads(r.stdout)


class PlanCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for f in ("empty.db", "empty.db-wal", "empty.db-shm"):
            if os.path.exists(work(f)):
                os.remove(work(f))
        base = plan("--ram-budget", "0")
        cls.slot = base["slot_bytes"]
        cls.working = base["working_slots"]
        cls.total = base["total_experts"]
        cls.trace = work("trace.jsonl")
        r = coli("trace", model_dir(), "-p", "the quick brown fox jumps over the lazy dog", "-n",
                 "40", "-o", cls.trace)
        if r.returncode != 0:
            raise AssertionError(r.stderr)

    def budget_for(self, capacity):
        return str((self.working + capacity) * self.slot + self.slot // 3)

    def test_hit_rate_equals_cache_sim(self):
        for capacity in (1, 4, 7, 12):
            with self.subTest(capacity=capacity):
                p = plan("--ram-budget", self.budget_for(capacity), "--trace", self.trace)
                self.assertEqual(p["experts_that_fit"], capacity)
                self.assertEqual(p["hit_rate_source"], "trace")
                out = work(f"sim{capacity}.json")
                r = coli("cache-sim", self.trace, "--capacity", str(capacity), "--policy", "lfru",
                         "--json", out)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(out) as f:
                    sim = json.load(f)
                lfru = [row for row in sim["results"] if row["policy"] == "lfru"]
                self.assertEqual(len(lfru), 1)
                self.assertEqual(p["hit_rate"], lfru[0]["hit_rate"])

    def test_time_model(self):
        p = plan("--ram-budget", self.budget_for(5), "--trace", self.trace)
        routed = p["moe_layers"] * p["top_k"]
        mem = p["dense_bytes"] + routed * p["slot_bytes"]
        disk = (1 - p["hit_rate"]) * routed * p["bytes_per_expert"]
        self.assertAlmostEqual(p["mem_bytes_per_token"], mem, delta=1e-6 * mem)
        self.assertAlmostEqual(p["disk_bytes_per_token"], disk, delta=1e-6 * disk)
        t = mem / 10e9 + disk / 1e9
        self.assertAlmostEqual(p["seconds_per_token"], t, delta=1e-9 * t)
        self.assertAlmostEqual(p["tokens_per_second"], 1 / t, delta=1e-6 / t)
        # The cache keeps whole slots of the budget asked for.
        self.assertEqual(p["budget_bytes"], (self.working + 5) * self.slot)
        self.assertEqual(p["working_set_bytes"], self.working * self.slot)
        self.assertEqual(p["cached_expert_bytes"], 5 * self.slot)

    def test_budget_zero_and_everything_fits(self):
        p = plan("--ram-budget", "0", "--trace", self.trace)
        self.assertEqual(p["experts_that_fit"], 0)
        self.assertEqual(p["hit_rate"], 0)
        self.assertEqual(p["budget_bytes"], self.working * self.slot)
        p = plan("--ram-budget", "1GiB", "--trace", self.trace)
        self.assertEqual(p["experts_that_fit"], self.total)
        self.assertEqual(p["hit_rate"], 1)
        self.assertEqual(p["disk_bytes_per_token"], 0)
        self.assertEqual(p["hit_rate_source"], "none")

    def test_recorded_without_trace_or_heat(self):
        p = plan("--ram-budget", self.budget_for(6))
        self.assertEqual(p["hit_rate_source"], "recorded")
        self.assertIn("built-in prompt", p["hit_rate_detail"])
        self.assertTrue(0 < p["hit_rate"] < 1, p["hit_rate"])
        # Recorded as `coli trace` records: the same prompt and length through coli trace, then
        # coli cache-sim, give the same hit rate.
        rec = p["recorded_trace"]
        tr = work("builtin.jsonl")
        r = coli("trace", model_dir(), "-p", rec["prompt"], "-n", str(rec["new_tokens"]), "-o", tr)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(tr) as f:
            self.assertEqual(sum(1 for line in f if line.strip()) - 1, rec["tokens"])
        out = work("builtin-sim.json")
        r = coli("cache-sim", tr, "--capacity", "6", "--policy", "lfru", "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            sim = json.load(f)
        lfru = [row for row in sim["results"] if row["policy"] == "lfru"]
        self.assertEqual(p["hit_rate"], lfru[0]["hit_rate"])

    def test_heat_from_the_usage_database(self):
        db = work("heat.db")
        for f in (db, db + "-wal", db + "-shm"):
            if os.path.exists(f):
                os.remove(f)
        r = coli("generate", model_dir(), "-p", "hello there, tell me a story", "-n", "30",
                 "--temp", "0", "--ignore-eos", "--ram-budget", "0", "--usage-db", db)
        self.assertEqual(r.returncode, 0, r.stderr)
        capacity = 5
        p = plan("--ram-budget", self.budget_for(capacity), db=db)
        self.assertEqual(p["hit_rate_source"], "heat")
        con = sqlite3.connect(db)
        rows = con.execute("SELECT heat, last_seen FROM expert_usage").fetchall()
        con.close()
        now = max(ls for _, ls in rows)
        heats = sorted((h * 0.5 ** ((now - ls) / HALF_LIFE) for h, ls in rows if h > 0),
                       reverse=True)
        want = sum(heats[:capacity]) / sum(heats)
        self.assertAlmostEqual(p["hit_rate"], want, places=12)
        # --no-learn leaves the database alone: the built-in prompt is recorded instead.
        p = plan("--ram-budget", self.budget_for(capacity), "--no-learn", db=db)
        self.assertEqual(p["hit_rate_source"], "recorded")

    def test_readable_table(self):
        # The disk measured (1 MiB of reads), the memory rate given (its measurement streams
        # max(256 MiB, 8 x LLC), which the unit test covers on a small buffer).
        r = coli("plan", model_dir(), "--ram-budget", self.budget_for(3), "--trace", self.trace,
                 "--usage-db", work("empty.db"), "--disk-read", "1MiB", "--mem-bandwidth", "12.5")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        for needle in ("dense (resident):", "KiB", "expected hit rate:", "[trace: cache simulator",
                       "12.50 GB/s  [given (--mem-bandwidth)]", "GB/s  [measured: ", "tok/s",
                       "disk read/token:", "memory read/token:"):
            self.assertIn(needle, out)

    def test_bad_input(self):
        r = coli("plan", model_dir(), "--trace", work("missing.jsonl"), "--ram-budget",
                 self.budget_for(2), "--usage-db", work("empty.db"), "--mem-bandwidth", "1",
                 "--disk-bandwidth", "1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing.jsonl", r.stderr)
        other = os.path.join(ARGS.fixtures, "qwen3moe")
        tr = work("qwen3.jsonl")
        self.assertEqual(coli("trace", other, "-p", "hi there", "-o", tr).returncode, 0)
        r = coli("plan", model_dir(), "--trace", tr, "--ram-budget", self.budget_for(2),
                 "--usage-db", work("empty.db"), "--mem-bandwidth", "1", "--disk-bandwidth", "1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("another model", r.stderr)
        # Checked even when the budget alone decides the hit rate.
        r = coli("plan", model_dir(), "--trace", tr, "--ram-budget", "0",
                 "--usage-db", work("empty.db"), "--mem-bandwidth", "1", "--disk-bandwidth", "1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("another model", r.stderr)
        r = coli("plan", model_dir(), "--resident", "--usage-db", work("empty.db"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("resident", r.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--work", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])
