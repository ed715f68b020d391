#!/usr/bin/python3
"""Expert placement from the command line (docs/cli.md "Expert placement"): `coli generate`
streams the routed experts by default; --ram-budget, --resident, --direct-io, --no-prefetch and
--io-backend change the placement but never the text; a budget below the working set is refused
naming the minimum; the summary line and --tier-log report what happened; usage learning pins
the experts a previous run used most."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

ARGS = None
PROMPT = "The Lord is my shepherd"


def coli(*args, env=None):
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(ARGS.work, "xdg"), **(env or {}))
    return subprocess.run([ARGS.coli, *args], capture_output=True, text=True, timeout=300, env=env)


def generate(*extra, model=None, env=None):
    return coli("generate", model or ARGS.model, "-p", PROMPT, "-n", "24", "--temp", "0", "-t", "2",
                *extra, env=env)


class Placement(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.join(ARGS.work, self.id().split(".")[-1])
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)

    def test_placements_give_the_same_text(self):
        want = generate("--resident", "--no-learn")
        self.assertEqual(want.returncode, 0, want.stderr)
        self.assertIn("experts: resident", want.stderr)  # resident: no tiers
        self.assertNotIn("streamed", want.stderr)
        for flags in (["--ram-budget", "0"], ["--ram-budget", "0", "--no-prefetch"],
                      ["--ram-budget", "0", "--direct-io"], ["--ram-budget", "0", "--io-backend", "pread"],
                      ["--ram-budget", "6MiB", "--io-depth", "1"], []):
            with self.subTest(flags=flags):
                r = generate("--no-learn", *flags)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout, want.stdout)
                self.assertIn("experts: streamed from disk", r.stderr)
                m = re.search(r"experts: hit rate ([\d.]+) %.*?([\d.]+ [KMG]?i?B) read/token", r.stderr)
                self.assertIsNotNone(m, r.stderr)
                if flags[:2] == ["--ram-budget", "0"]:
                    self.assertLess(float(m.group(1)), 60.0)  # 6 slots for 96 experts: reads
                if "--direct-io" in flags:
                    self.assertIn("O_DIRECT", r.stderr)
                if "pread" in flags:
                    self.assertIn("pread-threads", r.stderr)

    def test_direct_io_fallback_and_refusal(self):
        # docs/tiers.md "Buffered or O_DIRECT": by default a file whose O_DIRECT check fails is
        # read buffered with one note naming it and its file system; --direct-io refuses it;
        # --buffered never tries. The refusal is injected (this machine's disks accept O_DIRECT).
        shard = os.path.join(ARGS.model, "model.safetensors")
        env = {"COLI_TEST_REFUSE_DIRECT_IO": "model.safetensors"}
        want = generate("--resident", "--no-learn")
        self.assertEqual(want.returncode, 0, want.stderr)
        r = generate("--no-learn", "--ram-budget", "0", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, want.stdout)
        notes = [l for l in r.stderr.splitlines() if "read buffered: O_DIRECT refused" in l]
        self.assertEqual(len(notes), 1, r.stderr)
        self.assertIn(shard, notes[0])
        self.assertRegex(notes[0], r"on this file system \([^)]+\)")
        self.assertRegex(r.stderr, r"experts: streamed from disk \(.*, buffered\)")
        # Without the injection the default reads with O_DIRECT here, and says nothing.
        r = generate("--no-learn", "--ram-budget", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, want.stdout)
        self.assertNotIn("read buffered", r.stderr)
        self.assertRegex(r.stderr, r"experts: streamed from disk \(.*, O_DIRECT\)")
        # An explicit --direct-io refuses the file, naming it and the file system (exit 3).
        r = generate("--no-learn", "--ram-budget", "0", "--direct-io", env=env)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(shard + ": O_DIRECT refused on this file system (", r.stderr)
        self.assertEqual(r.stdout, "")
        # --buffered: no check, no note.
        r = generate("--no-learn", "--ram-budget", "0", "--buffered", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, want.stdout)
        self.assertNotIn("read buffered", r.stderr)
        self.assertRegex(r.stderr, r"experts: streamed from disk \(.*, buffered\)")
        r = generate("--no-learn", "--direct-io", "--buffered")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("excludes", r.stderr)

    def test_bad_flag_combinations_are_refused(self):
        for flags, message in ((["--ram-budget", "-5"], "cannot be negative"),
                               (["--resident", "--ram-budget", "20MiB"], "excludes")):
            with self.subTest(flags=flags):
                r = generate("--no-learn", *flags)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)

    def test_budget_below_the_working_set_is_refused(self):
        r = generate("--no-learn", "--ram-budget", "1MiB")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr, r"below the minimum working set of \d+ bytes \([\d.]+ MiB: 6 expert slots")
        self.assertEqual(r.stdout, "")

    def test_tier_log(self):
        log = os.path.join(self.dir, "tiers.jsonl")
        r = generate("--no-learn", "--ram-budget", "0", "--tier-log", log)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(log) as f:
            lines = [json.loads(l) for l in f]
        head, steps = lines[0], lines[1:]
        self.assertEqual(head["format"], "coli-tier-log")
        self.assertEqual((head["n_layers"], head["n_experts"], head["total_experts"]), (6, 16, 96))
        self.assertEqual(steps[0]["tokens"], len(steps[0]["tokens"] * [0]))
        self.assertEqual(sum(s["tokens"] for s in steps[1:]), len(steps) - 1)  # decode: 1 each
        for s in steps[1:]:
            self.assertEqual(len(s["routed_experts"]), 6)
            for bits in s["routed_experts"]:  # top-2 of 16 per layer for one token
                self.assertIn(bin(int(bits, 16)).count("1"), (1, 2))
            self.assertEqual(s["hits_pinned"] + s["hits_cache"] + s["misses"], s["routed"])
            self.assertLessEqual(s["residency"]["allocated_bytes"], head["budget_bytes"])
        self.assertGreater(sum(s["bytes_read"] for s in steps), 0)

    def test_learning_pins_what_was_used(self):
        db = os.path.join(self.dir, "usage.db")
        first = generate("--ram-budget", "12MiB", "--usage-db", db)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertRegex(first.stderr, r"pinned 0\.0 %")  # nothing learned yet
        second = generate("--ram-budget", "12MiB", "--usage-db", db)
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertEqual(second.stdout, first.stdout)
        pinned = float(re.search(r"pinned ([\d.]+) %", second.stderr).group(1))
        self.assertGreater(pinned, 0.0, second.stderr)
        r = coli("usage", "reset", ARGS.model, "--db", db)
        self.assertEqual(r.returncode, 0, r.stderr)
        third = generate("--ram-budget", "12MiB", "--usage-db", db)
        self.assertRegex(third.stderr, r"pinned 0\.0 %")

    def test_chat_saves_heat_at_each_turn_end(self):
        import sqlite3
        db = os.path.join(self.dir, "chat.db")
        env = dict(os.environ, XDG_DATA_HOME=os.path.join(ARGS.work, "xdg"))
        r = subprocess.run([ARGS.coli, "chat", ARGS.model, "-n", "8", "--temp", "0", "-t", "2",
                            "--ram-budget", "0", "--usage-db", db],
                           input="Tell me a fortune.\n", capture_output=True, text=True,
                           timeout=300, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        with sqlite3.connect(db) as c:
            rows, clock = c.execute("SELECT COUNT(*), MAX(last_seen) FROM expert_usage").fetchone()
        self.assertGreater(rows, 0)           # saved when the turn ended
        self.assertGreater(clock, 8)          # the token clock: prompt + answer tokens
        r2 = subprocess.run([ARGS.coli, "chat", ARGS.model, "-n", "8", "--temp", "0", "-t", "2",
                             "--ram-budget", "0", "--usage-db", db],
                            input="Tell me a fortune.\nAnd another.\n", capture_output=True,
                            text=True, timeout=300, env=env)
        self.assertEqual(r2.returncode, 0, r2.stderr)
        with sqlite3.connect(db) as c:
            clock2 = c.execute("SELECT MAX(last_seen) FROM expert_usage").fetchone()[0]
        self.assertGreater(clock2, clock)     # continued from the saved clock over two turns

    def test_locked_usage_database_is_a_warning(self):
        import sqlite3
        db = os.path.join(self.dir, "locked.db")
        self.assertEqual(generate("--ram-budget", "0", "--usage-db", db).returncode, 0)
        holder = sqlite3.connect(db, timeout=0, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")  # another process writing for a long time
        try:
            r = generate("--ram-budget", "0", "--usage-db", db)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"usage (learning off|not saved).*locked")
        self.assertIn("experts: hit rate", r.stderr)  # the run itself went on

    def test_broken_usage_database_is_a_warning(self):
        db = os.path.join(self.dir, "broken.db")
        with open(db, "wb") as f:
            f.write(b"this is not a database" * 100)
        r = generate("--ram-budget", "0", "--usage-db", db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("usage learning off", r.stderr)
        self.assertIn("broken.db", r.stderr)
        with open(db, "rb") as f:
            self.assertEqual(f.read(), b"this is not a database" * 100)  # left as it was


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--coli", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--work", required=True)
    ARGS, rest = p.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest)
