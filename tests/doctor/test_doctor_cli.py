#!/usr/bin/python3
"""`coli doctor` as a user runs it: the report, exit codes (0 ready, 7 not ready, 2 usage,
130 Ctrl+C), --json, --deep, --require-chat.

Usage: test_doctor_cli.py --coli PATH --fixtures DIR --model DIR --work DIR [unittest args]
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

ARGS = None


def coli(*args, timeout=60):
    return subprocess.run([ARGS.coli, *args], capture_output=True, timeout=timeout)


def work(name):
    p = os.path.join(ARGS.work, name)
    shutil.rmtree(p, ignore_errors=True)
    return p


def copy_fixture(family, name):
    dst = work(name)
    shutil.copytree(os.path.join(ARGS.fixtures, family), dst)
    return dst


def hashing(pid, path):
    """True while process `pid` has `path` open."""
    fds = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fds)
    except OSError:
        return False
    for n in names:
        try:
            if os.readlink(os.path.join(fds, n)) == os.path.realpath(path):
                return True
        except OSError:
            pass
    return False


class Doctor(unittest.TestCase):
    def test_shipped_model_is_ready(self):
        r = coli("doctor", ARGS.model)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = r.stdout.decode()
        self.assertIn("kind:     Hugging Face checkpoint (MixtralForCausalLM)", out)
        self.assertIn("chat template loads", out)
        self.assertRegex(out, r"disk:     \d+\.\d\d GB/s read")
        self.assertIn("result:   ready (0 errors, 0 warnings)", out)

    def test_truncated_shard_is_not_ready(self):
        d = copy_fixture("mixtral", "truncated")
        shard = os.path.join(d, "model-00002-of-00003.safetensors")
        size = os.path.getsize(shard)
        os.truncate(shard, size - 100)
        r = coli("doctor", "--no-bandwidth", d)
        self.assertEqual(r.returncode, 7, r.stdout + r.stderr)
        out = r.stdout.decode()
        self.assertIn(f"error     model-00002-of-00003.safetensors: {size - 100:,} bytes, its "
                      f"safetensors header's tensors need {size:,}: the file is incomplete", out)
        self.assertIn("          what to do: delete it and download it again", out)
        self.assertIn("disk:     not measured (--no-bandwidth)", out)
        self.assertIn("result:   NOT READY (1 error, 0 warnings)", out)

        j = json.loads(coli("doctor", "--no-bandwidth", "--json", d).stdout)
        self.assertFalse(j["ready"])
        self.assertEqual(j["kind"], "checkpoint")
        self.assertEqual(j["bandwidth"], None)
        self.assertEqual([(f["severity"], f["file"]) for f in j["findings"]],
                         [("error", "model-00002-of-00003.safetensors")])
        self.assertIn("incomplete", j["findings"][0]["problem"])

    def test_container_deep_finds_an_altered_byte(self):
        d = work("box")
        r = coli("convert", os.path.join(ARGS.fixtures, "olmoe"), d)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = coli("doctor", "--deep", "--no-bandwidth", d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("kind:     colibri container (OlmoeForCausalLM)", r.stdout.decode())
        shard = os.path.join(d, "model-00001-of-00001.safetensors")
        with open(shard, "r+b") as f:
            f.seek(os.path.getsize(shard) - 3)
            b = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([b[0] ^ 0x10]))
        self.assertEqual(coli("doctor", "--no-bandwidth", d).returncode, 0)
        r = coli("doctor", "--deep", "--no-bandwidth", d)
        self.assertEqual(r.returncode, 7, r.stdout + r.stderr)
        self.assertRegex(r.stdout.decode(),
                         r"error     model-00001-of-00001\.safetensors: SHA-256 [0-9a-f]{16}\.\.\., "
                         r"the manifest gives [0-9a-f]{16}\.\.\.")

    def test_missing_chat_template(self):
        d = copy_fixture("olmoe", "no-template")
        p = os.path.join(d, "tokenizer_config.json")
        with open(p) as f:
            cfg = json.load(f)
        del cfg["chat_template"]
        with open(p, "w") as f:
            json.dump(cfg, f)
        r = coli("doctor", "--no-bandwidth", d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("warning   tokenizer_config.json: no chat template", r.stdout.decode())
        self.assertIn("no usable chat template", r.stdout.decode())
        r = coli("doctor", "--no-bandwidth", "--require-chat", d)
        self.assertEqual(r.returncode, 7, r.stdout + r.stderr)
        self.assertIn("error     tokenizer_config.json: no chat template", r.stdout.decode())

    def test_usage_errors(self):
        r = coli("doctor")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"coli: error:", r.stderr)
        r = coli("doctor", "--bogus", ARGS.model)
        self.assertEqual(r.returncode, 2)
        r = coli("doctor", os.path.join(ARGS.work, "absent"))
        self.assertEqual(r.returncode, 7)
        self.assertIn(b"no such folder", r.stdout)

    def test_ctrl_c_while_hashing(self):
        # A downloaded model whose receipt lists a 16 GiB (sparse) LFS file: hashing it takes
        # seconds, long enough to be interrupted.
        d = copy_fixture("olmoe", "interrupt")
        big = os.path.join(d, "big.bin")
        with open(big, "wb") as f:
            f.truncate(16 << 30)
        self.addCleanup(os.remove, big)  # sparse, but not to be copied with the build folder
        receipt = {"format": "colibri-download", "version": 1,
                   "endpoint": "https://huggingface.co", "repo": "o/n", "revision": "main",
                   "commit": "a" * 40, "completed_ms": 1,
                   "files": [{"path": "big.bin", "size": 16 << 30, "blob_id": "b" * 40,
                              "lfs_sha256": "c" * 64}]}
        with open(os.path.join(d, "colibri-download.json"), "w") as f:
            json.dump(receipt, f)
        p = subprocess.Popen([ARGS.coli, "doctor", "--deep", "--no-bandwidth", d],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            # Interrupt once the big file is open: hashing has started (the handler is in place
            # long before), whatever the machine's load.
            while not hashing(p.pid, big):
                self.assertIsNone(p.poll(), "doctor ended before it hashed big.bin")
                time.sleep(0.02)
            p.send_signal(signal.SIGINT)
            # A hang guard, not a speed check: the hashing stops within one 4 MiB piece.
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 130, out + err)
        self.assertIn(b"coli: interrupted", err)
        self.assertEqual(out, b"")  # no report for an interrupted check


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ARGS, rest = ap.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
