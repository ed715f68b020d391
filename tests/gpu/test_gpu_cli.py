#!/usr/bin/python3
"""The GPU tier as a user meets it (docs/gpu.md, docs/cli.md): `coli info` names the experts the
tier can take and the Vulkan devices; `coli generate --gpu DEVICE` on a container prints the same
text as `--gpu none`, says where experts ran and splits VRAM out of the hit rate; a device name
that matches nothing is refused (exit 3) with the devices listed; without a Vulkan loader `info`
still works and says so; `coli bench decode --gpu DEVICE --vram-budgets ...` crosses RAM and VRAM
budgets (decoding the CPU's tokens in every row) with the GPU columns, streamed and --resident, and
refuses a VRAM budget over 100 % (exit 2); `coli plan` shows the tier and its expected share;
learned VRAM pins are saved with tier 'vram'. Skips (exit 77) when the test device is missing."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

ARGS = None


def coli(*args, env=None):
    e = dict(os.environ, OMP_WAIT_POLICY="passive", XDG_CACHE_HOME=ARGS.work,
             XDG_DATA_HOME=ARGS.work)
    if env:
        e.update(env)
    return subprocess.run([ARGS.coli, *args], capture_output=True, text=True, timeout=300, env=e)


class GpuCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.container = os.path.join(ARGS.work, "olmoe-int4")
        shutil.rmtree(cls.container, ignore_errors=True)
        r = coli("convert", os.path.join(ARGS.fixtures, "olmoe"), cls.container)
        assert r.returncode == 0, r.stderr

    def test_info_lists_devices_and_the_experts(self):
        r = coli("info", self.container)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("GPU tier:         int4-g64", r.stdout)
        self.assertIn("can be computed in VRAM", r.stdout)
        self.assertIn(ARGS.device, r.stdout.lower())
        self.assertIn("--gpu auto:", r.stdout)
        j = json.loads(coli("info", self.container, "--json").stdout)
        self.assertTrue(any(ARGS.device in d.lower() for d in j["vulkan_devices"]))
        r = coli("info", os.path.join(ARGS.fixtures, "olmoe"))
        self.assertIn("f32 experts stay on the CPU", r.stdout)

    def test_info_without_a_loader(self):
        r = coli("info", self.container, env={"COLI_VULKAN_LOADER": "/nonexistent/libvulkan.so.1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Vulkan devices:   none", r.stdout)
        self.assertIn("no Vulkan loader (/nonexistent/libvulkan.so.1)", r.stdout)

    def test_generate_same_text_and_gpu_figures(self):
        args = ["generate", self.container, "-p", "3 7 11 5 2 9", "-n", "12", "--temp", "0",
                "--no-learn"]
        cpu = coli(*args, "--gpu", "none")
        gpu = coli(*args, "--gpu", ARGS.device)
        self.assertEqual(cpu.returncode, 0, cpu.stderr)
        self.assertEqual(gpu.returncode, 0, gpu.stderr)
        self.assertEqual(gpu.stdout, cpu.stdout)
        self.assertIn("GPU tier:", gpu.stderr)
        self.assertIn("self-test passed", gpu.stderr)
        self.assertRegex(gpu.stderr, r"gpu: +[1-9][0-9]* experts computed in VRAM")
        self.assertRegex(gpu.stderr, r"hit rate [0-9.]+ % \(VRAM [0-9.]+ %")
        self.assertNotIn("gpu:", cpu.stderr)
        # The verdict was cached under XDG_CACHE_HOME: the second run says so.
        again = coli(*args, "--gpu", ARGS.device)
        self.assertIn("(cached)", again.stderr)
        self.assertEqual(again.stdout, cpu.stdout)

    def test_plan_shows_the_vram_tier(self):
        base = ["plan", self.container, "--gpu", ARGS.device, "--no-learn", "--json",
                "--mem-bandwidth", "10", "--disk-bandwidth", "1", "--ram-budget", "0"]
        whole = coli(*base)
        self.assertEqual(whole.returncode, 0, whole.stderr)
        j = json.loads(whole.stdout)
        self.assertIn(ARGS.device, j["gpu_device"].lower())
        self.assertEqual(j["vram_experts"], j["total_experts"])
        self.assertEqual(j["vram_share"], 1.0)
        # A quarter of the experts: a share from the recorded trace, strictly between 0 and 1.
        quarter = j["vram_budget_bytes"] // 4
        r = coli(*base[:-2], "--vram-budget", str(quarter), "--ram-budget", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        q = json.loads(r.stdout)
        self.assertEqual(q["vram_experts"], j["total_experts"] // 4)
        self.assertGreater(q["vram_share"], 0.0)
        self.assertLess(q["vram_share"], 1.0)
        none = json.loads(coli("plan", self.container, "--no-learn", "--json", "--mem-bandwidth",
                               "10", "--disk-bandwidth", "1", "--ram-budget", "0").stdout)
        self.assertEqual(none["gpu_device"], "")
        self.assertIsNone(none["vram_share"])

    def test_learned_vram_pins_are_saved_with_their_tier(self):
        import sqlite3
        db = os.path.join(ARGS.work, "pins.db")
        if os.path.exists(db):
            os.remove(db)
        j = json.loads(coli("plan", self.container, "--gpu", ARGS.device, "--no-learn", "--json",
                            "--mem-bandwidth", "10", "--disk-bandwidth", "1").stdout)
        args = ["generate", self.container, "-p", "3 7 11 5 2 9", "-n", "12", "--temp", "0",
                "--gpu", ARGS.device, "--vram-budget", str(j["vram_budget_bytes"] // 4),
                "--usage-db", db]
        first = coli(*args)
        self.assertEqual(first.returncode, 0, first.stderr)
        second = coli(*args)  # learned heat now: the hottest are pinned in VRAM first
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertEqual(second.stdout, first.stdout)
        with sqlite3.connect(db) as c:
            tiers = dict(c.execute("SELECT tier, count(*) FROM pins GROUP BY tier").fetchall())
        self.assertGreater(tiers.get("vram", 0), 0, tiers)
        self.assertLessEqual(tiers["vram"], j["total_experts"] // 8 + 1, tiers)

    def test_unknown_device(self):
        r = coli("generate", self.container, "-p", "1 2", "-n", "2", "--gpu", "no-such-gpu")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn('no Vulkan device\'s name contains "no-such-gpu"', r.stderr)
        self.assertIn(ARGS.device, r.stderr.lower())

    def test_bench_decode_vram_axis(self):
        r = coli("bench", "decode", self.container, "--gpu", ARGS.device, "--vram-budgets",
                 "0,50%,100%", "--budgets", "0", "--runs", "1", "--tokens", "4", "--cache", "warm")
        # Exit 0 also means every row decoded the CPU's tokens (the benchmark's assertion).
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        gpu = re.search(r"^gpu: +(.*)$", r.stdout, re.M)
        self.assertIsNotNone(gpu, r.stdout)
        self.assertIn(ARGS.device, gpu.group(1).lower())
        # The device's timestampValidBits decide the device-time column (lavapipe: 64 bits).
        stamps = re.search(r"timestamps ([0-9]+) bits x [0-9.e+-]+ ns", gpu.group(1))
        if stamps is None:
            self.assertIn("no timestamps (gpu_ms/t n/a)", gpu.group(1))
        rows = {row["vram"]: row for row in table(r.stdout, "state")}
        self.assertEqual(set(rows), {"0", "50%", "100%"}, r.stdout)
        none, half, full = rows["0"], rows["50%"], rows["100%"]
        self.assertEqual(float(none["vram%"]), 0.0)
        for col in ("gpu_ms/t", "gwait_ms/t", "MBup/run", "evict", "flag"):
            self.assertEqual(none[col], "-", col)
        for row in (half, full):
            self.assertGreater(float(row["vram%"]), 0.0, row)
            self.assertGreater(float(row["MBup/run"]), 0.0, row)
            self.assertEqual(row["flag"], "0", row)
            if stamps is not None:
                self.assertGreater(float(row["gpu_ms/t"]), 0.0, row)
            else:
                self.assertEqual(row["gpu_ms/t"], "n/a", row)
        self.assertEqual(full["evict"], "0")  # every expert fits
        # routed = RAM hits + in flight + read on demand + VRAM
        for row in (none, half, full):
            parts = sum(float(row[c]) for c in ("hit%", "fly%", "dem%", "vram%"))
            self.assertAlmostEqual(parts, 100.0, delta=0.3, msg=row)
        self.assertIn("gpu_ms/t = the device's time on expert batches", r.stdout)

    def test_bench_decode_resident_vram_axis(self):
        r = coli("bench", "decode", self.container, "--resident", "--gpu", ARGS.device,
                 "--vram-budgets", "0,100%", "--runs", "1", "--tokens", "4")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        sections = re.split(r"^vram ", r.stdout, flags=re.M)[1:]
        self.assertEqual([s.split(":")[0] for s in sections], ["0", "100%"], r.stdout)
        self.assertRegex(sections[1], r"^100%: +[0-9.]+ MiB, (\d+) of \1 experts in VRAM")
        # The titles before the GPU columns hold spaces ("R GB/s"): key the last six only.
        cpu, gpu = (table(sec, " run", last=6)[0] for sec in sections)
        self.assertEqual(float(cpu["vram%"]), 0.0)
        self.assertEqual(cpu["gpu_ms/t"], "-")
        self.assertEqual(float(gpu["vram%"]), 100.0)  # every routed expert computed in VRAM
        self.assertEqual(float(gpu["MBup/run"]), 0.0)  # uploaded at load, before the runs

    def test_bench_decode_vram_budget_errors(self):
        r = coli("bench", "decode", self.container, "--gpu", ARGS.device, "--vram-budgets", "150%")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--vram-budgets", r.stderr)
        self.assertIn("150%", r.stderr)
        r = coli("bench", "decode", self.container, "--vram-budgets", "50%")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--vram-budgets needs --gpu", r.stderr)
        r = coli("bench", "decode", self.container, "--gpu", "no-such-gpu", "--budgets", "0")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn('no Vulkan device\'s name contains "no-such-gpu"', r.stderr)


def table(text, first, last=None):
    """The rows (lines starting "warm ", "cold " or a run number) of the table whose title line
    starts with `first`: a dict per row keyed by the column titles (each one word), or by the
    `last` N titles only."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith(first))
    names = lines[head].split()[-last:] if last else lines[head].split()
    rows = []
    for line in lines[head + 1:]:
        cells = line.split()
        if len(cells) < len(names) or not re.match(r"(warm|cold| +[0-9]+) ", line):
            break
        rows.append(dict(zip(names, cells[-len(names):])))
    return rows


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--coli", required=True)
    p.add_argument("--fixtures", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--device", default="llvmpipe")
    ARGS, rest = p.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    devices = subprocess.run([ARGS.coli, "info", os.path.join(ARGS.fixtures, "olmoe")],
                             capture_output=True, text=True).stdout.lower()
    if ARGS.device not in devices:
        print(f"SKIPPED: no Vulkan device named {ARGS.device} on this machine")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0], *rest])
