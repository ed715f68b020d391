#!/usr/bin/python3
"""What `coli` says to people about hostile numbers and odd inputs (docs/cli.md):

- every numeric flag refuses an out-of-range or negative value with exit 2, naming the flag and
  the range; nothing wraps (--seed 2^64 is not 2^64-1) or saturates;
- a chat template that renders nothing, an empty or invalid tokenizer_config.json, an empty
  --usage-db are each said as they are;
- no engine status names ("Not found: ...") in messages, no CLI11 type annotations ("INT",
  "in [0 - 4096]") in --help;
- `coli chat` says what happens when an answer fills the context (the chat goes on with older
  exchanges left out), and it does.

Usage: test_flags_messages_cli.py --coli PATH --model DIR --work DIR [unittest args]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

from model_copy import model_copy as shared_model_copy

ARGS = None
U64_MAX = "18446744073709551615"


def coli(*args, stdin=""):
    return subprocess.run([ARGS.coli, *args], input=stdin, capture_output=True, text=True,
                          timeout=120,
                          env=dict(os.environ, XDG_DATA_HOME=os.path.join(ARGS.work, "xdg")))


def model_copy(name, tokenizer_config=None):
    return shared_model_copy(ARGS.model, ARGS.work, name, tokenizer_config)


STATUS_NAMES = ("Not found:", "Invalid argument:", "Malformed:", "Unsupported:", "I/O error:",
                "Numeric error:", "Internal error:")


class Numbers(unittest.TestCase):
    def assertUsage(self, args, *needles):
        r = coli(*args)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertTrue(r.stderr.startswith("coli: error: "), r.stderr)
        for n in needles:
            self.assertIn(n, r.stderr)
        for bad in ("overflow", "Could not convert", "terminate called", "what():"):
            self.assertNotIn(bad, r.stderr)
        self.assertEqual(r.stdout, "")
        return r.stderr

    def test_seed_beyond_64_bits_is_refused(self):
        m = ARGS.model
        self.assertUsage(["generate", m, "-p", "x", "--seed", "18446744073709551616"],
                         "--seed: 18446744073709551616 is out of range (0 to " + U64_MAX + ")")
        self.assertUsage(["generate", m, "-p", "x", "--seed", "9" * 40], "--seed", "out of range")
        err = self.assertUsage(["chat", m, "--seed", "-1"], "--seed: -1 is out of range")
        self.assertNotIn("seed " + U64_MAX, err)
        r = coli("generate", m, "-p", "x", "-n", "1", "--no-learn", "--seed", U64_MAX)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("seed " + U64_MAX, r.stderr)

    def test_ram_budget_sizes(self):
        m = ARGS.model
        self.assertUsage(["generate", m, "-p", "x", "--ram-budget", "18446744073709551616"],
                         "--ram-budget: 18446744073709551616 is out of range")
        self.assertUsage(["generate", m, "-p", "x", "--ram-budget", "16EiB"],
                         "--ram-budget: 16EiB is out of range")
        self.assertUsage(["generate", m, "-p", "x", "--ram-budget", "-1GiB"],
                         "--ram-budget: -1GiB: a size cannot be negative")
        self.assertUsage(["generate", m, "-p", "x", "--ram-budget", "12XB"],
                         "--ram-budget: '12XB' is not a size")
        r = coli("generate", m, "-p", "x", "-n", "1", "--no-learn", "--ram-budget", "1 gib")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_every_numeric_flag_names_itself_when_out_of_range(self):
        m, big = ARGS.model, "99999999999999999999"
        trace = os.path.join(ARGS.work, "none.jsonl")
        cases = [
            (["generate", m, "-p", "x", "-t", big], "-t"),
            (["generate", m, "-p", "x", "--threads", "-1"], "--threads: -1 is out of range"),
            (["generate", m, "-p", "x", "-n", big], "--max-tokens: " + big + " is out of range"),
            (["generate", m, "-p", "x", "-n", "-5"], "--max-tokens: -5 is out of range"),
            (["generate", m, "-p", "x", "--top-k", big], "--top-k: " + big + " is out of range"),
            (["generate", m, "-p", "x", "--top-k", "-3"], "--top-k: -3 is out of range"),
            (["generate", m, "-p", "x", "--repeat-last-n", "-1"], "--repeat-last-n"),
            (["generate", m, "-p", "x", "--temp", "1e400"], "--temp: 1e400 is out of range"),
            (["generate", m, "-p", "x", "--top-p", "nan"], "--top-p: 'nan' is not a number"),
            (["generate", m, "-p", "x", "--io-depth", "0"], "--io-depth: 0 is out of range (1 to"),
            (["chat", m, "-n", big], "--max-tokens"),
            (["chat", m, "--io-depth", big], "--io-depth"),
            (["trace", m, "-p", "x", "-n", "-1"], "--max-tokens: -1 is out of range"),
            (["info", m, "-t", "-2"], "--threads"),
            (["route-stats", m, "--domain", "a=b", "--window", "0"], "--window: 0 is out of"),
            (["route-stats", m, "--domain", "a=b", "--max-tokens", big], "--max-tokens"),
            (["convert", m, os.path.join(ARGS.work, "out"), "--shard-size", "-1"],
             "--shard-size: -1 is out of range"),
            (["cache-sim", trace, "--chunk", big], "--chunk"),
            (["cache-sim", trace, "--half-life", "0"], "--half-life"),
            (["cache-sim", trace, "--half-life", "-2"], "--half-life"),
            (["cache-sim", trace, "--bytes-per-expert", "-1"], "--bytes-per-expert: -1 is out"),
            (["cache-sim", trace, "--bytes-per-expert", big], "--bytes-per-expert"),
            (["bench", "decode", m, "--budgets", "0," + big], "--budgets: " + big + " is out of"),
            (["bench", "decode", m, "--budgets", "-5%"], "--budgets"),
            (["bench", "decode", m, "-n", "0"], "--tokens: 0 is out of range"),
            (["bench", "decode", m, "--runs", big], "--runs"),
            (["bench", "decode", m, "-t", "-1"], "--threads"),
            (["bench", "decode", m, "--io-depth", "65"], "--io-depth: 65 is out of range"),
            (["bench", "io", m, "--trace", trace, "--tokens", "-1"], "--tokens: -1 is out of"),
            (["bench", "io", m, "--trace", trace, "--queue-depth", big], "--queue-depth"),
            (["bench", "io", m, "--trace", trace, "--runs", "0"], "--runs"),
            (["bench", "io", m, "--trace", trace, "--sequential-mib", "-1"], "--sequential-mib"),
            (["bench", "io", m, "--trace", trace, "--disk-mib", big], "--disk-mib"),
            (["bench", "kernels", "--repetitions", "0"], "--repetitions: 0 is out of range"),
            (["bench", "kernels", "--repetitions", big], "--repetitions"),
            (["bench", "kernels", "--min-time", "-1"], "--min-time: -1 is out of range"),
            (["bench", "kernels", "--threads", "-1"], "--threads"),
        ]
        for args, needle in cases:
            with self.subTest(args):
                self.assertUsage(args, needle)

    def test_empty_paths_are_refused(self):
        m = ARGS.model
        for args, flag in ((["generate", m, "-p", "x", "--usage-db", ""], "--usage-db"),
                           (["chat", m, "--usage-db", ""], "--usage-db"),
                           (["usage", "path", "--db", ""], "--db"),
                           (["usage", "reset", "--db", ""], "--db"),
                           (["generate", m, "-p", "x", "--tier-log", ""], "--tier-log"),
                           (["trace", m, "-p", "x", "-o", ""], "--output")):
            with self.subTest(args):
                self.assertUsage(args, flag + ": the path is empty")


class Messages(unittest.TestCase):
    def test_template_rendering_nothing_is_named(self):
        d = model_copy("empty-render", json.dumps({"chat_template": "{% if false %}x{% endif %}"}))
        r = coli("generate", d, "-p", "Hello", "--chat", "-n", "1", "--no-learn")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("chat template", r.stderr)
        self.assertIn("tokenizer_config.json", r.stderr)
        self.assertIn("rendered an empty prompt", r.stderr)

    def test_template_rendering_nothing_in_chat_is_named(self):
        d = model_copy("empty-render-chat",
                       json.dumps({"chat_template": "{% if false %}x{% endif %}"}))
        r = coli("chat", d, "-n", "1", "--no-learn", "--no-history", stdin="Hello\nAgain\n")
        self.assertEqual(r.returncode, 0, r.stderr)  # each message is refused, the chat goes on
        self.assertEqual(r.stderr.count("rendered an empty prompt"), 2, r.stderr)
        self.assertIn("tokenizer_config.json", r.stderr)
        self.assertNotIn("generation failed", r.stderr)
        self.assertNotIn("give some text with -p", r.stderr)

    def test_empty_tokenizer_config_is_said_to_be_empty(self):
        d = model_copy("empty-tc", "")
        for args in (["generate", d, "-p", "Hello", "--chat", "-n", "1", "--no-learn"],
                     ["chat", d, "--no-learn"]):
            with self.subTest(args[0]):
                r = coli(*args)
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn("tokenizer_config.json: the file is empty", r.stderr)
                self.assertNotIn("not found", r.stderr)

    def test_invalid_tokenizer_config_is_a_warning_without_chat(self):
        d = model_copy("bad-tc", '{"chat_template": ')
        r = coli("generate", d, "-p", "Hello", "-n", "1", "--no-learn")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"coli: warning: .*tokenizer_config.json: invalid JSON")

    def test_no_status_names_in_messages(self):
        missing = os.path.join(ARGS.work, "no-such-model")
        bad = model_copy("bad-tc-chat", '{"chat_template": ')
        for args in (["generate", missing, "-p", "x"], ["info", missing],
                     ["chat", missing], ["convert", missing, os.path.join(ARGS.work, "o")],
                     ["chat", bad, "--no-learn"],
                     ["generate", bad, "-p", "x", "--chat", "--no-learn"]):
            with self.subTest(args):
                r = coli(*args)
                self.assertNotEqual(r.returncode, 0)
                self.assertTrue(r.stderr.startswith("coli:"), r.stderr)
                for name in STATUS_NAMES:
                    self.assertNotIn(name, r.stderr)

    def test_help_has_no_cli11_type_annotations(self):
        commands = [[], ["info"], ["generate"], ["chat"], ["trace"], ["route-stats"],
                    ["convert"], ["bench"], ["bench", "kernels"], ["bench", "io"],
                    ["bench", "decode"], ["cache-sim"], ["usage"], ["usage", "path"],
                    ["usage", "reset"]]
        raw = re.compile(r"\b(INT|UINT|FLOAT|BOOLEAN|NUM)\b|:INT|in \[|\[\d+ - \d+\]|:\{|"
                         r"REQUIRED|Excludes:|Needs:")
        for c in commands:
            with self.subTest(c):
                r = coli(*c, "--help")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIsNone(raw.search(r.stdout), r.stdout)
                # TEXT is only the documented value of -p, --system and --stop.
                for line in r.stdout.splitlines():
                    if " TEXT" in line:
                        self.assertRegex(line, r"(--prompt|--system|--stop) TEXT", line)
        r = coli("generate", "--help")
        self.assertIn("--seed S", r.stdout)
        self.assertIn("--ram-budget SIZE", r.stdout)
        self.assertIn("--threads N", r.stdout)

    def test_chat_goes_on_after_an_answer_fills_the_context(self):
        # 512-token context; each answer may take 1000 tokens, so the first fills the context.
        r = coli("chat", ARGS.model, "--no-learn", "--temp", "0", "--ignore-eos", "-n", "1000",
                 stdin="The Lord is my shepherd\nAnd then?\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("stop: context full", r.stderr)
        self.assertNotIn("/reset starts a new conversation", r.stderr)
        self.assertIn("the chat goes on with the oldest exchanges left out", r.stderr)
        # ...and it does: the second message is answered with the first exchange left out.
        self.assertRegex(r.stderr, r"\[2 older messages left out to fit the 512-token context\]")
        self.assertEqual(r.stderr.count("coli: error"), 0, r.stderr)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--coli", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--work", required=True)
    ARGS, rest = p.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest)
