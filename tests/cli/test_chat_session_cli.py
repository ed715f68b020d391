#!/usr/bin/python3
"""`coli chat --session`: a conversation kept in the database with its KV cache beside it
(runtime/session_kv_file.h) continues after a restart, and after a kill -9, warm: the same answer
tokens and the same reused-token counts as the same chat in one process that never stopped.

Families: a GQA one (qwen3moe), an MLA one (deepseekv3) and the shipped default model.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import unittest

ARGS = None
LINES = ["hello there", "what is this about", "and one more thing"]
TURN = re.compile(rb"\[(\d+) prompt tokens \((\d+) reused\)")


def models():
    return [("qwen3moe", os.path.join(ARGS.fixtures, "qwen3moe")),
            ("deepseekv3", os.path.join(ARGS.fixtures, "deepseekv3")),
            ("default", ARGS.model)]


def chat(model, db, lines, session="A", extra=()):
    r = subprocess.run([ARGS.coli, "chat", model, "--db", db, "--session", session, "-n", "10",
                        "--temp", "0", "--no-learn", *extra],
                       input="".join(l + "\n" for l in lines).encode(), capture_output=True,
                       timeout=300)
    return r


def turns(stderr):
    """[(prompt tokens, reused)] per turn, from the summary line."""
    return [(int(a), int(b)) for a, b in TURN.findall(stderr)]


class ChatSession(unittest.TestCase):
    def setUp(self):
        self.work = os.path.join(ARGS.work, self.id().split(".")[-1])
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)

    def test_restart_after_each_turn_equals_one_process(self):
        for name, model in models():
            with self.subTest(model=name):
                one = chat(model, os.path.join(self.work, name + "-one.db"), LINES)
                self.assertEqual(one.returncode, 0, one.stderr)
                split_out, split_turns = b"", []
                db = os.path.join(self.work, name + "-split.db")
                for i, line in enumerate(LINES):
                    r = chat(model, db, [line])
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn(b"new" if i == 0 else b"continued", r.stderr)
                    split_out += r.stdout
                    split_turns += turns(r.stderr)
                self.assertEqual(split_out, one.stdout)  # the answers, token for token
                self.assertEqual(split_turns, turns(one.stderr))  # and the reuse, turn by turn
                # Turns 2 and 3 reused everything before the new message: zero re-prefill.
                self.assertGreater(split_turns[1][1], 0)
                self.assertGreater(split_turns[2][1], split_turns[1][1])
                kv = os.path.join(self.work, name + "-split.kv", "session-1.kv")
                self.assertTrue(os.path.getsize(kv) > 4096)
                print(f"[ {name} ] turns (prompt, reused): {split_turns}; KV file "
                      f"{os.path.getsize(kv)} bytes", file=sys.stderr)

    def test_a_kill_during_an_answer_keeps_the_earlier_turns_warm(self):
        # The default model: its 512-token context leaves an answer long enough to be killed in.
        model = ARGS.model
        db = os.path.join(self.work, "kill.db")
        first = chat(model, db, LINES[:2])
        self.assertEqual(first.returncode, 0, first.stderr)
        reference = chat(model, os.path.join(self.work, "ref.db"), LINES)
        # A third turn killed while it generates (a long answer, killed at its first piece).
        p = subprocess.Popen([ARGS.coli, "chat", model, "--db", db, "--session", "A", "-n",
                              "100000", "--temp", "0", "--no-learn", "--ignore-eos"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        p.stdin.write(b"a long answer please\n")
        p.stdin.flush()
        p.stdout.read(1)  # it is answering
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        # The two saved turns are there and warm: continuing with the reference's third line
        # reuses the same prefix and answers as the never-stopped process did.
        r = chat(model, db, [LINES[2]])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"continued (4 messages", r.stderr)
        self.assertEqual(turns(r.stderr), turns(reference.stderr)[2:])
        self.assertTrue(reference.stdout.endswith(r.stdout))

    def test_another_model_sets_the_file_aside(self):
        db = os.path.join(self.work, "swap.db")
        a = chat(os.path.join(ARGS.fixtures, "qwen3moe"), db, LINES[:1])
        self.assertEqual(a.returncode, 0, a.stderr)
        b = chat(os.path.join(ARGS.fixtures, "olmoe"), db, LINES[1:2])
        self.assertEqual(b.returncode, 0, b.stderr)
        self.assertIn(b"another model, weight format or KV layout: set aside", b.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.work, "swap.kv", "session-1.kv.old")))
        self.assertIn(b"continued (2 messages, 0 tokens of KV cache restored)", b.stderr)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--coli", required=True)
    p.add_argument("--fixtures", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--work", required=True)
    ARGS, rest = p.parse_known_args()
    prog = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
