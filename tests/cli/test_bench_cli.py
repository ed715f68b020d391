#!/usr/bin/python3
"""`coli bench kernels` (a benchmark, so nothing here checks a speed): it runs the memory read and
a kernel in one short run, prints the ratio table with a ratio for the kernel computed against
MemRead (1.000 for MemRead itself), and refuses a filter that leaves out the memory baseline."""
import argparse
import re
import subprocess
import sys
import unittest

COLI = None


class BenchKernels(unittest.TestCase):
    def run_bench(self, *extra):
        return subprocess.run([COLI, "bench", "kernels", "--repetitions", "1", "--min-time",
                               "0.01", "-t", "1", *extra], capture_output=True, text=True,
                              timeout=300)

    def test_ratio_table(self):
        r = self.run_bench("--filter", "MemRead|^Kernel/int8-g64/192x192/n1")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = {m.group(1): (float(m.group(2)), float(m.group(3))) for m in re.finditer(
            r"^(\S+)\s+([0-9.]+)\s+[0-9.]+-[0-9.]+\s+([0-9.]+)\s+\(1 runs\)$", r.stdout, re.M)}
        self.assertIn("MemRead", rows, r.stdout)
        self.assertIn("Kernel/int8-g64/192x192/n1", rows, r.stdout)
        mem_gbs, mem_ratio = rows["MemRead"]
        k_gbs, k_ratio = rows["Kernel/int8-g64/192x192/n1"]
        self.assertGreater(mem_gbs, 0)
        self.assertAlmostEqual(mem_ratio, 1.0, places=3)
        self.assertAlmostEqual(k_ratio, k_gbs / mem_gbs, delta=0.002 + 0.01 * k_ratio)
        self.assertIn("kernel path:", r.stdout)

    def test_filter_without_baseline_is_refused(self):
        r = self.run_bench("--filter", "^Kernel/int8-g64/192x192/n1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no memory bandwidth was measured", r.stderr)

    def test_bad_option(self):
        r = self.run_bench("--repetitions", "0")
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    a, rest = ap.parse_known_args()
    COLI = a.coli
    unittest.main(argv=[sys.argv[0]] + rest)
