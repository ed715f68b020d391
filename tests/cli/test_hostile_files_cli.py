#!/usr/bin/python3
"""`coli generate` on copies of the shipped model whose side files are hostile: a named pipe in
place of config.json, tokenizer.json, tokenizer_config.json or generation_config.json (open()
alone would block forever), a symbolic link loop, a dangling link, a 20 GB sparse tokenizer.json.
Each run exits 3 within seconds with the file and the problem named (docs/cli.md "Files").
Every run has a 20 s timeout and CTest one of 30 s for the whole: a regression fails, never hangs.

Usage: test_hostile_files_cli.py --coli PATH --model DIR --work DIR [unittest args]
"""
import argparse
import os
import shutil
import subprocess
import sys
import unittest

from model_copy import model_copy as shared_model_copy

ARGS = None
SIDE_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json")


def coli(*args):
    return subprocess.run([ARGS.coli, *args], capture_output=True, text=True, timeout=20,
                          env=dict(os.environ, XDG_DATA_HOME=os.path.join(ARGS.work, "xdg")))


def model_copy(name):
    return shared_model_copy(ARGS.model, ARGS.work, name)


def generate(model):
    return coli("generate", model, "-p", "Hi", "-n", "1", "--no-learn")


class HostileFiles(unittest.TestCase):
    def assertModelError(self, r, *needles):
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertTrue(r.stderr.startswith("coli: error: "), r.stderr)
        for n in needles:
            self.assertIn(n, r.stderr)
        self.assertEqual(r.stdout, "")

    def test_copy_loads(self):
        r = generate(model_copy("plain"))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_named_pipe_in_place_of_a_side_file(self):
        for f in SIDE_FILES:
            with self.subTest(f):
                d = model_copy("fifo-" + f)
                os.remove(os.path.join(d, f))
                os.mkfifo(os.path.join(d, f))
                self.assertModelError(generate(d), os.path.join(d, f),
                                      "not a regular file (a named pipe)")

    def test_symbolic_link_loop(self):
        d = model_copy("loop")
        os.remove(os.path.join(d, "tokenizer.json"))
        os.symlink("tokenizer2.json", os.path.join(d, "tokenizer.json"))
        os.symlink("tokenizer.json", os.path.join(d, "tokenizer2.json"))
        self.assertModelError(generate(d), "tokenizer.json", "symbolic link loop")

    def test_dangling_symbolic_link(self):
        for f in ("config.json", "generation_config.json", "model.safetensors"):
            with self.subTest(f):
                d = model_copy("dangling-" + f)
                os.remove(os.path.join(d, f))
                os.symlink("/nonexistent/" + f, os.path.join(d, f))
                self.assertModelError(generate(d), os.path.join(d, f), "dangling symbolic link")

    def test_huge_sparse_json(self):
        d = model_copy("huge")
        os.truncate(os.path.join(d, "tokenizer.json"), 20 << 30)  # sparse: no disk space used
        self.assertModelError(generate(d), "tokenizer.json", "over the 256 MiB limit")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--coli", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--work", required=True)
    ARGS, rest = p.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest)
