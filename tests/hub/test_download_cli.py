#!/usr/bin/python3
"""`coli search` and `coli download` end to end against the local Hub (hub_server.py), with
HF_ENDPOINT pointing at it: the search table and its flags, a download of the shipped tiny model
that `coli info` then opens, the exit codes (3 refused architecture, before any weight byte; 6
missing or gated repo, a dead server; 2 usage), Ctrl+C keeping the .part and a rerun resuming it,
and a disk full (RLIMIT_FSIZE on the coli process, always run): exit 5, the .part kept, a rerun
after the limit is gone finishes.

Usage: test_download_cli.py --coli PATH --work DIR [unittest args]
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import unittest

from hub_cli_util import (TINY, Hub, coli_env, make_repo, part_bytes, run_coli, sha256_file,
                          wait_for)

ARGS = None
MiB = 1 << 20


def work(name):
    p = os.path.join(ARGS.work, name)
    shutil.rmtree(p, ignore_errors=True)
    os.makedirs(p)
    return p


def download(args, env, **kw):
    """`coli download ARGS --reserve 0`: the default margin is 5 % of the disk, so how full the
    machine's disk happens to be would decide these tests (a 252 GB disk with 12 GB free refused
    them all); test_the_margin_is_kept checks the margin itself."""
    return run_coli(ARGS.coli, ["download", *args, "--reserve", "0"], env, **kw)


class Search(unittest.TestCase):
    def test_table_flags_what_cannot_run(self):
        w = work("search")
        repos = {
            "test/tiny-moe": make_repo(os.path.join(w, "a"), {"model.safetensors": 1000},
                                       meta={"downloads": 900, "parameters": 12_300_000}),
            "test/deep-moe": make_repo(os.path.join(w, "b"), {"model.safetensors": 10},
                                       arch="DbrxForCausalLM", meta={"downloads": 50}),
        }
        os.makedirs(os.path.join(w, "c"))
        with open(os.path.join(w, "c", "model-Q4_K_M.gguf"), "wb") as f:
            f.write(b"GGUF")
        with open(os.path.join(w, "c", "_hub.json"), "w") as f:
            json.dump({"downloads": 10, "tags": ["gguf"]}, f)
        folders = {"test/tiny-moe": os.path.join(w, "a"), "test/deep-moe": os.path.join(w, "b"),
                   "test/gguf-moe": os.path.join(w, "c")}
        del repos
        with Hub(folders) as hub:
            env = coli_env(w, hub.endpoint)
            r = run_coli(ARGS.coli, ["search", "moe"], env)
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = r.stdout.decode().splitlines()
            self.assertRegex(lines[0], r"REPO\s+ARCHITECTURE\s+PARAMS\s+DOWNLOADS")
            self.assertEqual([l.split()[0] for l in lines[1:]],
                             ["test/tiny-moe", "test/deep-moe", "test/gguf-moe"])
            self.assertRegex(lines[1], r"MixtralForCausalLM\s+12\.3M\s+900\s+yes")
            self.assertIn("no: architecture DbrxForCausalLM is not supported", lines[2])
            self.assertIn("no: GGUF files only", lines[3])
            r = run_coli(ARGS.coli, ["search", "moe", "--limit", "1"], env)
            self.assertEqual(len(r.stdout.decode().splitlines()), 2)
            r = run_coli(ARGS.coli, ["search", "nothing-like-this"], env)
            self.assertEqual(r.returncode, 0)
            self.assertIn("no models match", r.stdout.decode())
            r = run_coli(ARGS.coli, ["search", "moe", "--limit", "0"], env)
            self.assertEqual(r.returncode, 2, r.stderr)
            r = run_coli(ARGS.coli, ["search", "moe", "--retries", "101"], env)
            self.assertEqual(r.returncode, 2, r.stderr)
        # A Hub that is not there: with --retries 0 the search fails at once with exit 6.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed = "http://127.0.0.1:%d" % s.getsockname()[1]
        env = coli_env(w, closed)
        t0 = time.monotonic()
        r = run_coli(ARGS.coli, ["search", "moe", "--retries", "0"], env)
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("cannot search the Hub", r.stderr.decode())
        self.assertLess(time.monotonic() - t0, 20)


class Download(unittest.TestCase):
    def test_downloads_the_tiny_model_into_the_models_folder_and_info_opens_it(self):
        w = work("tiny")
        with Hub({"colibri/moe-tiny": TINY}) as hub:
            env = coli_env(w, hub.endpoint)
            r = download(["colibri/moe-tiny"], env)
            self.assertEqual(r.returncode, 0, r.stderr)
            out = r.stdout.decode()
            dest = os.path.join(w, "xdg", "colibri", "models", "colibri--moe-tiny")
            self.assertIn("-> " + dest, out)
            self.assertRegex(out, r"files:\s+\d+ \(\d+ fetched, 0 already there\)")
            for name in os.listdir(TINY):
                self.assertEqual(sha256_file(os.path.join(dest, name)),
                                 sha256_file(os.path.join(TINY, name)), name)
            with open(os.path.join(dest, "colibri-download.json")) as f:
                receipt = json.load(f)
            self.assertEqual(receipt["repo"], "colibri/moe-tiny")
            self.assertEqual(len(receipt["commit"]), 40)
            # Not a terminal: plain progress lines, no carriage returns.
            self.assertNotIn(b"\r", r.stderr)
            self.assertIn(b"model.safetensors", r.stderr)
            info = run_coli(ARGS.coli, ["info", dest], env)
            self.assertEqual(info.returncode, 0, info.stderr)
            self.assertIn("MixtralForCausalLM", info.stdout.decode())
            # Again: nothing fetched, every file checked in place.
            r = download(["colibri/moe-tiny"], env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout.decode(), r"\(0 fetched, \d+ already there\)")

    def test_unsupported_architecture_is_refused_before_any_weight_byte(self):
        w = work("deep")
        log = os.path.join(w, "requests.log")
        make_repo(os.path.join(w, "repo"), {"model.safetensors": 4 * MiB},
                  arch="DbrxForCausalLM")
        with Hub({"test/deep": os.path.join(w, "repo")}, log=log) as hub:
            r = download(["test/deep", "--dir", os.path.join(w, "d")],
                         coli_env(w, hub.endpoint))
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn(b"DbrxForCausalLM", r.stderr)
            with open(log) as f:
                asked = [json.loads(l)["path"] for l in f]
            self.assertTrue(any("/resolve/" in p and p.endswith("config.json") for p in asked))
            self.assertFalse([p for p in asked if "safetensors" in p or "/lfs/" in p], asked)
            self.assertEqual(hub.stats()["bytes_sent"].get("test/deep/model.safetensors", 0), 0)

    def test_missing_gated_and_unreachable_are_hub_errors(self):
        w = work("errors")
        make_repo(os.path.join(w, "repo"), {"model.safetensors": 1000}, meta={"gated": True})
        with Hub({"test/gated": os.path.join(w, "repo")}, extra=["--token", "hf_test"]) as hub:
            env = coli_env(w, hub.endpoint)
            r = download(["test/none", "--dir", os.path.join(w, "n")], env)
            self.assertEqual(r.returncode, 6, r.stderr)
            self.assertIn(b"test/none", r.stderr)
            self.assertIn(b"not found", r.stderr)
            r = download(["test/gated", "--dir", os.path.join(w, "g")],
                         env)
            self.assertEqual(r.returncode, 6, r.stderr)
            self.assertIn(b"HF_TOKEN", r.stderr)
            self.assertNotIn(b"hf_test", r.stderr)
            r = download(["test/gated", "--dir", os.path.join(w, "g")],
                         coli_env(w, hub.endpoint, token="hf_test"))
            self.assertEqual(r.returncode, 0, r.stderr)
            dead = hub.endpoint
        r = download(["test/gated", "--dir", os.path.join(w, "x"),
                                 "--retries", "0"], coli_env(w, dead))
        self.assertEqual(r.returncode, 6, r.stderr)

    def test_the_margin_is_kept(self):
        # A reserve no disk has: refused with exit 5 before any weight byte, the figures named.
        w = work("margin")
        make_repo(os.path.join(w, "repo"), {"model.safetensors": 4 * MiB})
        dest = os.path.join(w, "d")
        with Hub({"test/r": os.path.join(w, "repo")}) as hub:
            r = run_coli(ARGS.coli, ["download", "test/r", "--dir", dest, "--reserve", "1P"],
                         coli_env(w, hub.endpoint))
            self.assertEqual(r.returncode, 5, r.stderr)
            self.assertRegex(r.stderr, rb"not enough free space for test/r: 4\.00 MiB to "
                                       rb"download plus a margin of \d+\.\d\d GiB")
            self.assertEqual(hub.stats()["bytes_sent"].get("test/r/model.safetensors", 0), 0)
            self.assertEqual(part_bytes(dest), 0)

    def test_usage_errors(self):
        w = work("usage")
        make_repo(os.path.join(w, "repo"), {"model.safetensors": 1000})
        with Hub({"test/r": os.path.join(w, "repo")}) as hub:
            env = coli_env(w, hub.endpoint)
            r = download(["no-slash"], env)
            self.assertEqual(r.returncode, 2, r.stderr)
            r = download(["test/r", "--include", "*.txt",
                                     "--dir", os.path.join(w, "d")], env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(b"--include", r.stderr)
            r = download([], env)
            self.assertEqual(r.returncode, 2, r.stderr)

    def test_ctrl_c_keeps_the_part_and_a_rerun_resumes(self):
        w = work("sigint")
        sums = make_repo(os.path.join(w, "repo"), {"model.safetensors": 8 * MiB})
        dest = os.path.join(w, "d")
        with Hub({"test/r": os.path.join(w, "repo")}, extra=["--throttle", str(2 * MiB)]) as hub:
            env = coli_env(w, hub.endpoint)
            p = subprocess.Popen([ARGS.coli, "download", "test/r", "--dir", dest, "--reserve", "0"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            self.assertTrue(wait_for(lambda: part_bytes(dest) >= MiB))
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 130, err)
            self.assertIn(b"run the same command again", err)
            kept = part_bytes(dest)
            self.assertGreaterEqual(kept, MiB)
            before = hub.settled_bytes_sent()
            r = download(["test/r", "--dir", dest], env)
            self.assertEqual(r.returncode, 0, r.stderr)
            for name, digest in sums.items():
                self.assertEqual(sha256_file(os.path.join(dest, name)), digest, name)
            # The rerun fetched only what the .part lacked (and config.json once more, to check
            # it before anything else).
            config = os.path.getsize(os.path.join(w, "repo", "config.json"))
            self.assertEqual(hub.stats()["total_bytes_sent"] - before, 8 * MiB - kept + config)

    def test_disk_full_by_file_size_limit_exits_5_keeps_the_part_and_resumes(self):
        w = work("fsize")
        sums = make_repo(os.path.join(w, "repo"), {"model.safetensors": 6 * MiB})
        dest = os.path.join(w, "d")
        with Hub({"test/r": os.path.join(w, "repo")}) as hub:
            env = coli_env(w, hub.endpoint)
            # Create the database first: its own files must not meet the limit.
            download(["test/r", "--include", "nothing", "--dir", dest], env)
            r = download(["test/r", "--dir", dest], env,
                         limit_bytes=2 * MiB)
            self.assertEqual(r.returncode, 5, r.stderr)
            # EFBIG is named as the size limit it is; what to do is the same as for ENOSPC.
            self.assertIn(b"file size limit", r.stderr)
            self.assertIn(b"model.safetensors.part is kept: free some space", r.stderr)
            part = os.path.join(dest, "model.safetensors.part")
            self.assertEqual(os.path.getsize(part), 2 * MiB)
            self.assertFalse(os.path.exists(os.path.join(dest, "colibri-download.json")))
            r = download(["test/r", "--dir", dest], env)
            self.assertEqual(r.returncode, 0, r.stderr)
            for name, digest in sums.items():
                self.assertEqual(sha256_file(os.path.join(dest, name)), digest, name)
            self.assertFalse(os.path.exists(part))


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--work", required=True)
    ARGS, rest = ap.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
