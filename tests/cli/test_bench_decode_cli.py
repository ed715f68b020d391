#!/usr/bin/python3
"""`coli bench decode` (docs/cli.md, docs/performance.md) on the default model converted to a
colibri container: one row per (page-cache state, budget) with decode tok/s, bytes read per token,
hit rates and the I/O pool's bandwidth as a ratio of the disk's; a bigger budget reads less per
token and hits more. Speeds are printed, never asserted."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import unittest

ARGS = None


def table_rows(stdout):
    # The fields of the table's rows (state, budget, MiB, ... io/disk), in order.
    return [l.split() for l in stdout.splitlines()
            if len(l.split()) == 14 and l.split()[0] in ("cold", "warm", "hot")]


class BenchDecode(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.container = os.path.join(ARGS.work, "tiny-int4")
        shutil.rmtree(cls.container, ignore_errors=True)
        r = subprocess.run([ARGS.coli, "convert", ARGS.model, cls.container], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr

    def test_table(self):
        r = subprocess.run([ARGS.coli, "bench", "decode", self.container, "--runs", "2", "-n", "6",
                            "--budgets", "0,50%", "--cache", "cold,warm", "-t", "2"],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"resident:\s+[\d.]+ tok/s")
        rows = {(f[0], f[1]): f for f in table_rows(r.stdout)}
        self.assertEqual(set(rows), {("cold", "0"), ("cold", "50%"), ("warm", "0"), ("warm", "50%")},
                         r.stdout)
        for (state, budget), f in rows.items():
            mib, tokps, per_token, hit, pin, fly, dem = map(float, [f[2], f[3], f[5], f[6], f[7], f[8], f[9]])
            self.assertGreater(tokps, 0)
            self.assertAlmostEqual(hit + fly + dem, 100.0, delta=0.3)
            self.assertGreater(float(f[11]), 0)  # pool MB/s
            self.assertGreater(float(f[12]), 0)  # disk MB/s
            self.assertGreater(float(f[13]), 0)  # ratio
        for state in ("cold", "warm"):
            small, half = rows[(state, "0")], rows[(state, "50%")]
            self.assertLess(float(small[2]), float(half[2]))   # budget MiB
            self.assertGreater(float(small[5]), float(half[5]))  # MiB read per token
            self.assertLess(float(small[6]), float(half[6]))   # hit rate

    def test_hot_keeps_the_expert_cache(self):
        # --cache hot: one model per row, so after the warm-up run a budget holding every expert
        # serves the same tokens without a read (no pool speed, no ratio: "-"), while the working
        # set still reads; warm rows start each run with an empty expert cache.
        r = subprocess.run([ARGS.coli, "bench", "decode", self.container, "--runs", "2", "-n", "6",
                            "--budgets", "0,100%", "--cache", "warm,hot", "-t", "2"],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("hot = both keep what the row's earlier runs read", r.stdout)
        rows = {(f[0], f[1]): f for f in table_rows(r.stdout)}
        self.assertEqual(set(rows), {("warm", "0"), ("warm", "100%"), ("hot", "0"),
                                     ("hot", "100%")}, r.stdout)
        full = rows[("hot", "100%")]
        self.assertEqual(float(full[5]), 0.0, r.stdout)    # MiB read per token
        self.assertEqual(float(full[6]), 100.0, r.stdout)  # hit%
        self.assertEqual(full[11], "-", r.stdout)          # pool MB/s
        self.assertEqual(full[13], "-", r.stdout)          # io/disk
        small = rows[("hot", "0")]
        self.assertGreater(float(small[5]), 0, r.stdout)
        self.assertGreater(float(small[11]), 0, r.stdout)
        self.assertGreater(float(small[13]), 0, r.stdout)
        self.assertGreaterEqual(float(rows[("warm", "100%")][5]), float(full[5]))

    def test_streamed_reference(self):
        # A model bigger than memory is never loaded whole: the first streamed run is the
        # reference every other run must reproduce (forced here; auto picks it when the experts
        # do not fit, and resident on this small model, as test_table shows).
        r = subprocess.run([ARGS.coli, "bench", "decode", self.container, "--runs", "1", "-n", "4",
                            "--budgets", "0,100%", "--cache", "warm", "-t", "2",
                            "--reference", "streamed"], capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"resident:\s+not run \(--reference streamed\); every run must "
                                   r"decode the first streamed run's tokens")
        rows = [f[1] for f in table_rows(r.stdout)]
        self.assertEqual(rows, ["0", "100%"], r.stdout)
        r = subprocess.run([ARGS.coli, "bench", "decode", self.container, "--reference", "disk"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--reference", r.stderr)

    def phase_tables(self, stdout):
        # The per-phase tables of a --phases run: {phase: [runs per unit, t0 work, t0 wait, ...]}
        # each, with its "total" row checked against the columns' sums and then removed.
        tables, current = [], None
        for line in stdout.splitlines():
            if line.startswith("phase "):
                current = {}
                tables.append(current)
                self.assertEqual(line.split()[3:], ["t0", "work", "t0", "wait", "t1", "work",
                                                    "t1", "wait"], line)
            elif current is not None and line.startswith(("total", "prefill", "phases")):
                if line.startswith("total"):
                    current["total"] = [float(v) for v in line.split()[1:]]
                current = None
            elif current is not None:
                name, fields = line[:26].strip(), line[26:].split()
                current[name] = [float(v) for v in fields]
        for table in tables:
            self.assertIn("total", table, stdout)
            total = table.pop("total")
            self.assertEqual(len(total), 4)
            self.assertGreater(total[0], 0)
            for t in range(4):  # the total is the column's sum (each printed to 3 decimals)
                self.assertAlmostEqual(sum(row[1 + t] for row in table.values()), total[t],
                                       delta=0.001 * len(table) + 1e-9)
        return tables

    def layers(self):
        import json
        with open(os.path.join(self.container, "config.json")) as f:
            return json.load(f)["num_hidden_layers"]

    def check_rows(self, tables, names, stdout):
        # Two tables, each with `names`, q/k/v once per layer and the LM head once per token.
        self.assertEqual(len(tables), 2, stdout)
        for table in tables:
            for name in names + ("q/k/v projections", "LM head"):
                self.assertIn(name, table, stdout)
            self.assertEqual(table["q/k/v projections"][0], self.layers())
            self.assertEqual(table["LM head"][0], 1)

    def test_resident_phases(self):
        # --phases: a per-phase table after the decode rows and after each prefill row, each
        # phase's runs per token (per layer: once per layer) and every thread's work and wait.
        r = subprocess.run([ARGS.coli, "bench", "decode", self.container, "--resident", "--phases",
                            "--prefill", "8", "--runs", "1", "-n", "4", "-t", "2"],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("phases:     decode steps of the 1 runs, ms per token", r.stdout)
        self.assertIn("phases:     prefill of 8 tokens, ms per prompt", r.stdout)
        tables = self.phase_tables(r.stdout)
        self.check_rows(tables, ("attention norm", "attention over KV", "o projection", "router"),
                        r.stdout)

    def test_streamed_phases(self):
        # Streamed rows: one table per budget, with the handout of streamed experts (the master
        # asks the cache, the team waits) as a phase of its own.
        r = subprocess.run([ARGS.coli, "bench", "decode", self.container, "--phases",
                            "--budgets", "0,100%", "--cache", "warm", "--runs", "1", "-n", "4",
                            "-t", "2"],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("phases:     warm 0: decode steps of the 1 runs, ms per token", r.stdout)
        self.assertIn("phases:     warm 100%: decode steps of the 1 runs, ms per token", r.stdout)
        tables = self.phase_tables(r.stdout)
        self.check_rows(tables, ("top-k, expert cache", "streamed expert handout"), r.stdout)
        for table in tables:
            # At least one handout per MoE layer and token: the one that says the layer is done.
            self.assertGreater(table["streamed expert handout"][0],
                               table["top-k, expert cache"][0])

    def test_bad_budget(self):
        for budget, message in (("250%", "bad percentage '250%'"),
                                ("1MiB", "'1MiB' is not 0, N% or a byte count")):
            r = subprocess.run([ARGS.coli, "bench", "decode", self.container, "--budgets", budget,
                                "--runs", "1", "-n", "2"], capture_output=True, text=True,
                               timeout=300)
            self.assertEqual(r.returncode, 2, r.stderr)  # a usage error, before any model loads
            self.assertIn(message, r.stderr)
            self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--coli", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--work", required=True)
    ARGS, rest = p.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest)
