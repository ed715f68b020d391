#!/usr/bin/python3
"""A hostile or slow chat template in a model folder, from the command line (docs/chat-templates.md
"Render budget"): `coli generate --chat` stops a template that grows a value exponentially or
loops without end with a clear error naming the file, the line and the limit (exit 3), and a
Ctrl+C during a slow render ends `coli generate` (exit 130) or returns `coli chat` to its prompt,
as during generation. Each run gets an address-space limit well above the render budget, so a
template that escaped the budget fails the test instead of exhausting the machine."""
import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest

ARGS = None
MEMORY_CAP = 3 << 30  # bytes of address space for each coli run
SANITIZED = False


def sanitized(binary):
    """AddressSanitizer reserves terabytes of address space for its shadow: no RLIMIT_AS then."""
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    return "libasan" in r.stdout


def cap_memory():
    # A regression that lets a template grow must not take the machine's memory with it.
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


# The slowest render the default budget allows: nested loops until the 10^7 operations run out
# (seconds; the operation budget error ends it).
SLOW = ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
        "{{ raise_exception('the slow render finished before Ctrl+C') }}")


class ChatBudgetCli(unittest.TestCase):
    def model_with_template(self, template):
        """A copy of the shipped model whose tokenizer_config.json has `template`."""
        d = os.path.join(ARGS.work, self.id().split(".")[-1])
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(ARGS.model, d)
        cfg_path = os.path.join(d, "tokenizer_config.json")
        with open(cfg_path, encoding="utf-8") as f:
            cfg = json.load(f)
        cfg["chat_template"] = template
        with open(cfg_path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        return d, cfg_path

    def generate(self, model, timeout=None):
        # A hang guard, not a speed limit: a render to the end of the operation budget takes
        # ~1 s in Release and tens of seconds under AddressSanitizer on a loaded machine.
        timeout = timeout or ARGS.run_timeout
        return subprocess.run([ARGS.coli, "generate", model, "--chat", "-p", "hi", "-n", "4"],
                              capture_output=True, text=True, timeout=timeout,
                              preexec_fn=cap_memory, stdin=subprocess.DEVNULL)

    def test_exponential_templates_are_refused_naming_file_line_and_limit(self):
        for name, step in (("concat", "{% set ns.s = ns.s ~ ns.s %}"),
                           ("plus", "{% set ns.s = ns.s + ns.s %}"),
                           ("join", "{% set ns.s = [ns.s, ns.s]|join %}")):
            with self.subTest(name):
                model, cfg = self.model_with_template(
                    "{% set ns = namespace(s='x') %}\n{% for i in range(64) %}" + step +
                    "{% endfor %}{{ ns.s }}")
                r = self.generate(model)
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn(cfg + ":2:", r.stderr)
                self.assertIn("memory budget", r.stderr)
                self.assertIn("64 MiB", r.stderr)
                self.assertEqual(r.stdout, "")

    def test_endless_loops_are_refused_by_the_operation_budget(self):
        model, cfg = self.model_with_template(
            "{% for i in range(100000) %}\n{% for j in range(100000) %}{% endfor %}{% endfor %}")
        r = self.generate(model)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(cfg + ":", r.stderr)
        self.assertIn("operation budget of 10000000", r.stderr)

    def sigint_delay(self, model):
        """Half the time `coli generate` takes to load the model and run the slow render to the
        end of its budget here: a Ctrl+C sent then lands in the render."""
        t0 = time.monotonic()
        r = self.generate(model)
        took = time.monotonic() - t0
        self.assertIn("operation budget", r.stderr)
        t0 = time.monotonic()
        subprocess.run([ARGS.coli, "info", model], capture_output=True, timeout=30)
        load = time.monotonic() - t0
        self.assertGreater(took - load, 0.6, "the slow render is too fast to interrupt reliably")
        return took / 2

    def test_sigint_during_a_slow_render_ends_generate(self):
        model, _ = self.model_with_template(SLOW)
        delay = self.sigint_delay(model)
        p = subprocess.Popen([ARGS.coli, "generate", model, "--chat", "-p", "hi", "-n", "4"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=cap_memory)
        try:
            time.sleep(delay)  # loaded (a tiny model), now rendering
            self.assertIsNone(p.poll(), "the slow render should still run")
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=ARGS.run_timeout)
        finally:
            if p.poll() is None:
                p.kill()
        self.assertEqual(p.returncode, 130, err)
        # Interrupted, not ended by the operation budget (exit 3): the render stopped at Ctrl+C.
        self.assertIn("interrupted while rendering the chat template", err)
        self.assertNotIn("operation budget", err)

    def test_sigint_during_a_slow_render_returns_chat_to_the_prompt(self):
        model, _ = self.model_with_template(SLOW)
        delay = self.sigint_delay(model)
        p = subprocess.Popen([ARGS.coli, "chat", model, "-n", "4"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=cap_memory)
        try:
            p.stdin.write("hello\n")
            p.stdin.flush()
            time.sleep(delay)
            self.assertIsNone(p.poll(), "the slow render should still run")
            p.send_signal(signal.SIGINT)
            # The chat goes on, back at its prompt.
            time.sleep(0.5)
            self.assertIsNone(p.poll(), "chat must survive Ctrl+C during a render")
            _, err = p.communicate(timeout=ARGS.run_timeout)  # EOF on stdin: the chat ends normally
        finally:
            if p.poll() is None:
                p.kill()
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("[interrupted while rendering the chat template]", err)
        self.assertNotIn("slow render finished", err)
        self.assertNotIn("operation budget", err)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--run-timeout", type=float, default=30,
                    help="seconds one coli run may take before the test calls it hung")
    ARGS, rest = ap.parse_known_args()
    SANITIZED = sanitized(ARGS.coli)
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest)
