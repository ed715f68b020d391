#!/usr/bin/python3
"""The GPU tier as a user meets it (docs/gpu.md, docs/cli.md): `coli info` names the experts the
tier can take and the Vulkan devices; `coli generate --gpu DEVICE` on a container prints the same
text as `--gpu none`, says where experts ran and splits VRAM out of the hit rate; a device name
that matches nothing is refused (exit 3) with the devices listed; without a Vulkan loader `info`
still works and says so. Skips (exit 77) when the test device is missing."""
import argparse
import json
import os
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

    def test_unknown_device(self):
        r = coli("generate", self.container, "-p", "1 2", "-n", "2", "--gpu", "no-such-gpu")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn('no Vulkan device\'s name contains "no-such-gpu"', r.stderr)
        self.assertIn(ARGS.device, r.stderr.lower())


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
