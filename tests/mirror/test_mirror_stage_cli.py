#!/usr/bin/python3
"""`coli mirror plan|stage|verify` as a user runs it: output, exit codes and messages, the heat
learned by `coli generate` ranking the plan, a write that fails partway (RLIMIT_FSIZE, as a full
disk would: exit 5, the file named, the temporary kept) and the rerun that finishes, an altered
copy that verify names (exit 7).

Usage: test_mirror_stage_cli.py --coli PATH --fixtures DIR --work DIR [unittest args]

The copies are checked here independently of the engine: bytes compared with the model's and the
receipt's SHA-256 with Python's hashlib.
"""

import argparse
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
import unittest

ARGS = None
PARTIAL = ".mirror-partial"
RECEIPT = "colibri-mirror.json"


def fixture(name):
    return os.path.join(ARGS.fixtures, name)


def work(name):
    p = os.path.join(ARGS.work, name)
    shutil.rmtree(p, ignore_errors=True)
    os.makedirs(p)
    return p


def coli(*args, limit_bytes=None, timeout=120):
    def limit():
        # A file-size limit makes write(2) fail with EFBIG (SIGXFSZ ignored): a write error
        # partway through a copy, as a full disk would give.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return subprocess.run([ARGS.coli, *args], capture_output=True, timeout=timeout,
                          preexec_fn=limit if limit_bytes else None)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def plan_rows(stdout):
    """The plan table's rows: (file, plan) in rank order."""
    rows = []
    for line in stdout.decode().splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[0].isdigit() and parts[1].endswith(".safetensors"):
            rows.append((parts[1], " ".join(parts[6:]) if len(parts) > 6 else parts[5]))
    return rows


class MirrorCli(unittest.TestCase):
    def setUp(self):
        self.model = fixture("mixtral")  # three shards: two hold experts, one only dense tensors
        self.db = os.path.join(work("db-" + self._testMethodName), "usage.db")

    def mirror_args(self, mirror, *extra):
        return [self.model, mirror, "--usage-db", self.db, "--reserve-gib", "0", *extra]

    def test_plan_stage_verify_across_two_folders(self):
        mirror = work("two-folders")
        r = coli("mirror", "plan", *self.mirror_args(mirror))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        self.assertIn("no usage history", out)
        self.assertIn("expert bytes per byte", out)
        rows = plan_rows(r.stdout)
        # Only the shards holding experts, never the dense-only one.
        self.assertEqual(sorted(f for f, _ in rows),
                         ["model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors"])
        self.assertEqual(os.listdir(mirror), [], "plan writes nothing")

        r = coli("mirror", "stage", *self.mirror_args(mirror))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 copied", r.stdout.decode())
        with open(os.path.join(mirror, RECEIPT)) as f:
            receipt = json.load(f)
        self.assertEqual(receipt["format"], "colibri-mirror")
        self.assertEqual(receipt["primary"], os.path.realpath(self.model))
        self.assertEqual(len(receipt["files"]), 2)
        for e in receipt["files"]:
            copy, primary = os.path.join(mirror, e["path"]), os.path.join(self.model, e["path"])
            with open(copy, "rb") as a, open(primary, "rb") as b:
                self.assertEqual(a.read(), b.read(), e["path"])
            self.assertEqual(e["sha256"], sha256(primary))
            self.assertEqual(e["size"], os.path.getsize(primary))
        self.assertEqual(sorted(os.listdir(mirror)),
                         sorted([RECEIPT] + [e["path"] for e in receipt["files"]]))

        r = coli("mirror", "verify", self.model, mirror)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 of 2 files match", r.stdout.decode())

        # A second stage keeps both, copying nothing.
        r = coli("mirror", "stage", *self.mirror_args(mirror))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0 copied", r.stdout.decode())
        self.assertIn("2 kept", r.stdout.decode())

    def test_learned_heat_ranks_the_plan(self):
        """Heat learned by `coli generate` in the same database is what the plan ranks by."""
        mirror = work("heat")
        r = coli("generate", self.model, "-p", "The quick brown fox", "-n", "12", "--seed", "3",
                 "--usage-db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = coli("mirror", "plan", *self.mirror_args(mirror))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        self.assertIn("learned heat per byte", out)
        self.assertIn("of the learned heat", out)
        self.assertNotIn("no usage history", out)

    def test_budget_leaves_out_what_does_not_fit(self):
        mirror = work("budget")
        small = os.path.getsize(os.path.join(self.model, "model-00002-of-00003.safetensors"))
        budget = str((small + 1000) / 2**30)
        r = coli("mirror", "plan", *self.mirror_args(mirror, "--budget-gib", budget))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(plan_rows(r.stdout), [("model-00002-of-00003.safetensors", "copy"),
                                               ("model-00001-of-00003.safetensors",
                                                "does not fit")])
        r = coli("mirror", "stage", *self.mirror_args(mirror, "--budget-gib", budget))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(mirror)),
                         [RECEIPT, "model-00002-of-00003.safetensors"])

    def test_failed_write_exits_5_keeps_the_temporary_and_the_rerun_finishes(self):
        mirror = work("full")
        big = "model-00001-of-00003.safetensors"  # 406 KiB; the other expert shard is 246 KiB
        # RLIMIT_FSIZE limits each file: the small shard is copied, the big one's write fails.
        r = coli("mirror", "stage", *self.mirror_args(mirror), limit_bytes=300000)
        self.assertEqual(r.returncode, 5, r.stderr)
        err = r.stderr.decode()
        self.assertIn("cannot stage the mirror", err)
        self.assertIn(big, err)
        self.assertIn("kept", err)
        self.assertIn("run the same command again", err)
        self.assertTrue(os.path.exists(os.path.join(mirror, big + PARTIAL)))
        self.assertEqual(os.path.getsize(os.path.join(mirror, big + PARTIAL)), 300000)
        self.assertFalse(os.path.exists(os.path.join(mirror, big)))
        self.assertFalse(os.path.exists(os.path.join(mirror, RECEIPT)))
        self.assertTrue(os.path.exists(os.path.join(mirror, "model-00002-of-00003.safetensors")))

        r = coli("mirror", "verify", self.model, mirror)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn(b"no mirror receipt", r.stderr)

        r = coli("mirror", "stage", *self.mirror_args(mirror))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 copied", r.stdout.decode())
        self.assertIn("1 kept", r.stdout.decode())
        self.assertFalse(os.path.exists(os.path.join(mirror, big + PARTIAL)))
        r = coli("mirror", "verify", self.model, mirror)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_killed_stage_resumes(self):
        """SIGKILL at several moments of a stage (whatever it was doing): the next run finishes,
        the mirror verifies, and no temporary is left."""
        mirror = work("killed")
        for delay in (0.0, 0.005, 0.02, 0.05, 0.1, 0.2):
            with self.subTest(delay=delay):
                p = subprocess.Popen([ARGS.coli, "mirror", "stage", *self.mirror_args(mirror)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(delay)
                p.kill()
                p.wait(timeout=60)
                r = coli("mirror", "stage", *self.mirror_args(mirror))
                self.assertEqual(r.returncode, 0, r.stderr)
                r = coli("mirror", "verify", self.model, mirror)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertEqual([f for f in os.listdir(mirror) if f.endswith(PARTIAL)], [])
                for f in os.listdir(mirror):
                    os.remove(os.path.join(mirror, f))

    def test_verify_names_an_altered_copy(self):
        mirror = work("altered")
        self.assertEqual(coli("mirror", "stage", *self.mirror_args(mirror)).returncode, 0)
        victim = "model-00002-of-00003.safetensors"
        path = os.path.join(mirror, victim)
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) - 10)
            b = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([b[0] ^ 0xFF]))
        r = coli("mirror", "verify", self.model, mirror)
        self.assertEqual(r.returncode, 7, r.stderr)
        out = r.stdout.decode()
        self.assertIn("MISMATCH  " + victim, out)
        self.assertIn("SHA-256", out)
        self.assertIn("1 of 2 files match", out)
        self.assertNotIn("MISMATCH  model-00001", out)
        # Staging again never overwrites it: it is left out, with a warning.
        r = coli("mirror", "stage", *self.mirror_args(mirror))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(victim, r.stderr.decode())
        self.assertIn("left out", r.stderr.decode())
        with open(os.path.join(mirror, RECEIPT)) as f:
            self.assertEqual([e["path"] for e in json.load(f)["files"]],
                             ["model-00001-of-00003.safetensors"])

    def test_usage_errors(self):
        mirror = work("usage")
        r = coli("mirror", "plan", *self.mirror_args(os.path.join(mirror, "missing")))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"create the mirror folder", r.stderr)
        r = coli("mirror", "stage", *self.mirror_args(self.model))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"model folder itself", r.stderr)
        r = coli("mirror", "plan", *self.mirror_args(mirror, "--budget-gib", "-1"))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"--budget-gib", r.stderr)
        r = coli("mirror", "plan", os.path.join(mirror, "no-model"), mirror)
        self.assertEqual(r.returncode, 3, r.stderr)
        r = coli("mirror", "verify", self.model, mirror)
        self.assertEqual(r.returncode, 7, r.stderr)
        r = coli("mirror")
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_help_says_the_exit_codes_without_cli11_annotations(self):
        raw = re.compile(r"\b(INT|UINT|FLOAT|BOOLEAN|NUM)\b|:INT|in \[|\[\d+ - \d+\]|:\{|"
                         r"REQUIRED|Excludes:|Needs:")
        for sub in ([], ["plan"], ["stage"], ["verify"]):
            r = coli("mirror", *sub, "--help")
            self.assertEqual(r.returncode, 0, r.stderr)
            out = r.stdout.decode()
            self.assertIsNone(raw.search(out), out)
            self.assertIn("mirror verify: 7", out)
        self.assertIn("--budget-gib N", coli("mirror", "stage", "--help").stdout.decode())


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--coli", required=True)
    p.add_argument("--fixtures", required=True)
    p.add_argument("--work", required=True)
    ARGS, rest = p.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
