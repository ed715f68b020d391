#!/usr/bin/python3
"""The engine's use of a mirror from the command line (docs/mirror.md "The engine's use of a
mirror", docs/cli.md "Expert placement"): `coli generate --mirror DIR` gives the text of a run
without a mirror, says at load how much the mirror serves and at the end how many bytes each disk
served (equal to --tier-log's per-disk sums); a refused file or a folder without a receipt is one
warning naming it; --disk-weights is checked; a mirror folder removed in the middle of a
generation gives the same text and exactly one warning."""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

ARGS = None
PROMPT = "The Lord is my shepherd"


def coli(*args):
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(ARGS.work, "xdg"))
    return subprocess.run([ARGS.coli, *args], capture_output=True, text=True, timeout=300, env=env)


def generate(*extra, n="24"):
    return coli("generate", ARGS.model, "-p", PROMPT, "-n", n, "--temp", "0", "-t", "2",
                "--no-learn", *extra)


def shards(model):
    return sorted(f for f in os.listdir(model) if f.endswith(".safetensors"))


def make_mirror(model, mirror, files, receipt=True):
    """Copies `files` of the model and writes colibri-mirror.json (as `coli mirror stage`)."""
    os.makedirs(mirror, exist_ok=True)
    entries = []
    for f in files:
        shutil.copyfile(os.path.join(model, f), os.path.join(mirror, f))
        with open(os.path.join(model, f), "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
        entries.append({"path": f, "size": os.path.getsize(os.path.join(model, f)),
                        "sha256": digest})
    if receipt:
        with open(os.path.join(mirror, "colibri-mirror.json"), "w") as fh:
            json.dump({"format": "colibri-mirror", "version": 1,
                       "primary": os.path.abspath(model), "created_ms": 1, "files": entries}, fh)


def warnings(stderr):
    return [l for l in stderr.splitlines() if l.startswith("coli: warning: ")]


class MirrorReads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.want = generate("--resident")
        assert cls.want.returncode == 0, cls.want.stderr

    def setUp(self):
        self.dir = os.path.join(ARGS.work, self.id().split(".")[-1])
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.mirror = os.path.join(self.dir, "mirror")

    def test_same_text_and_bytes_per_disk(self):
        make_mirror(ARGS.model, self.mirror, shards(ARGS.model))
        log = os.path.join(self.dir, "tiers.jsonl")
        r = generate("--ram-budget", "0", "--mirror", self.mirror, "--disk-weights", "1,1",
                     "--tier-log", log)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.want.stdout)
        self.assertEqual(warnings(r.stderr), [])
        self.assertRegex(r.stderr, r"; mirror .*mirror: 1 file, 50 % of their experts read from it")
        m = re.search(r"read from the primary disk ([\d.]+ [KMG]?i?B), from the mirror ([\d.]+ [KMG]?i?B)",
                      r.stderr)
        self.assertIsNotNone(m, r.stderr)
        with open(log) as fh:
            lines = [json.loads(l) for l in fh]
        self.assertEqual(lines[0]["mirror"], self.mirror)
        self.assertEqual(lines[0]["mirror_share"], 0.5)
        steps = lines[1:]
        primary = sum(s["bytes_read_primary"] for s in steps)
        mirror = sum(s["bytes_read_mirror"] for s in steps)
        self.assertEqual(primary + mirror, sum(s["bytes_read"] for s in steps))
        self.assertGreater(primary, 0)
        self.assertGreater(mirror, 0)

    def test_measured_weights(self):
        make_mirror(ARGS.model, self.mirror, shards(ARGS.model))
        r = generate("--ram-budget", "0", "--mirror", self.mirror)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.want.stdout)
        self.assertRegex(r.stderr, r"mirror: 1 file, \d+ % of their experts read from it")

    def test_altered_file_refused_with_one_warning(self):
        make_mirror(ARGS.model, self.mirror, shards(ARGS.model))
        path = os.path.join(self.mirror, shards(ARGS.model)[0])
        with open(path, "r+b") as fh:  # a byte of the safetensors header's JSON
            fh.seek(20)
            b = fh.read(1)
            fh.seek(20)
            fh.write(bytes([b[0] ^ 0x20]))
        r = generate("--ram-budget", "0", "--mirror", self.mirror, "--disk-weights", "1,1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.want.stdout)
        w = warnings(r.stderr)
        self.assertEqual(len(w), 2, r.stderr)  # the file, then "no usable file"
        self.assertIn(path, w[0])
        self.assertIn("differ from the primary", w[0])
        self.assertIn("no usable file; not used", w[1])
        self.assertNotIn("from the mirror", r.stderr)

    def test_no_receipt_is_one_warning(self):
        make_mirror(ARGS.model, self.mirror, shards(ARGS.model), receipt=False)
        r = generate("--ram-budget", "0", "--mirror", self.mirror)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.want.stdout)
        w = warnings(r.stderr)
        self.assertEqual(len(w), 1, r.stderr)
        self.assertIn("colibri-mirror.json", w[0])
        self.assertIn("not used", w[0])

    def test_disk_weights_checked(self):
        make_mirror(ARGS.model, self.mirror, shards(ARGS.model))
        for flags, message in ((["--disk-weights", "1,1"], "--mirror"),
                               (["--mirror", self.mirror, "--disk-weights", "0,0"], "both be 0"),
                               (["--mirror", self.mirror, "--disk-weights", "3"], "is not A,B"),
                               (["--mirror", self.mirror, "--disk-weights", "-1,2"], "out of range"),
                               (["--mirror", ""], "empty")):
            with self.subTest(flags=flags):
                r = generate(*flags)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)

    def test_mirror_removed_mid_generation(self):
        make_mirror(ARGS.model, self.mirror, shards(ARGS.model))
        # Every expert from the mirror (weights 0,1), read again and again (budget 0).
        args = [ARGS.coli, "generate", ARGS.model, "-p", PROMPT, "-n", "160", "--ignore-eos",
                "--temp", "0", "-t", "1", "--no-learn", "--ram-budget", "0",
                "--mirror", self.mirror, "--disk-weights", "0,1"]
        want = generate("--resident", "--ignore-eos", n="160")
        self.assertEqual(want.returncode, 0, want.stderr)
        env = dict(os.environ, XDG_DATA_HOME=os.path.join(ARGS.work, "xdg"))
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        first = p.stdout.read(1)  # the first piece: generation has started
        shutil.rmtree(self.mirror)
        rest, err = p.communicate(timeout=300)
        err = err.decode()
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual((first + rest).decode(), want.stdout)
        w = [l for l in warnings(err) if "switched off" in l]
        self.assertEqual(len(w), 1, err)
        self.assertIn("removed or unmounted", w[0])
        self.assertIn("(mirror switched off)", err)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--coli", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--work", required=True)
    ARGS, rest = parser.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest)
