#!/usr/bin/python3
"""`coli chat` and `coli generate` on a terminal (a pseudo-terminal here) and on pipes.

Usage: test_terminal_cli.py --coli PATH --model DIR --fixture DIR --work DIR [unittest args]

- chat on a terminal edits lines with libedit: Up brings back the previous line (from this session
  or, through the history file, an earlier one), and no escape text ("^[[A") reaches the model:
  a turn's token counts must equal those of the same line given through a pipe;
- Ctrl+C during an answer stops it without a "^C" in the text, the report on a line of its own;
- /help lists the commands instead of going to the model;
- generate ends its text with a newline on a terminal, and leaves stdout untouched on a pipe.
"""

import argparse
import fcntl
import os
import re
import select
import shutil
import subprocess
import sys
import termios
import threading
import time
import unittest

ARGS = None
UP = b"\x1b[A"
# The turn report (docs/cli.md): the counts, without the timings.
TURN = re.compile(rb"\[(\d+) prompt tokens \((\d+) reused\), (\d+) tokens, [^\]]*stop: ([a-z ]+)\]")


def base_env(state):
    env = dict(os.environ, TERM="xterm", XDG_STATE_HOME=state,
               XDG_DATA_HOME=os.path.join(ARGS.work, "xdg-data"), OMP_WAIT_POLICY="passive")
    return env


class Terminal:
    """coli on a pseudo-terminal that is its controlling terminal (so Ctrl+C raises SIGINT)."""

    def __init__(self, args, env, stderr_to_pty=True):
        master, slave = os.openpty()
        self.master = master

        def controlling_tty():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen([ARGS.coli, *args], stdin=slave, stdout=slave,
                                     stderr=slave if stderr_to_pty else subprocess.PIPE,
                                     env=env, preexec_fn=controlling_tty, close_fds=True)
        os.close(slave)
        self.data, self.lock = b"", threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.1)
                if not ready:
                    if self.proc.poll() is not None:
                        return
                    continue
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            with self.lock:
                self.data += chunk

    def output(self):
        with self.lock:
            return self.data

    def send(self, data):
        os.write(self.master, data)

    def wait_for(self, predicate, what, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if predicate(self.output()):
                return self.output()
            time.sleep(0.01)
        raise AssertionError(f"timed out waiting for {what}; got {self.output()[-1500:]!r}")

    def editing(self):
        """True once libedit has the terminal in its raw mode (no canonical input, no echo).

        The prompt can reach us a moment before that; keys sent in between would be echoed by
        the terminal itself ("^[[A"), as they would for a person typing ahead."""
        try:
            lflag = termios.tcgetattr(self.master)[3]
        except termios.error:
            return False
        return not lflag & (termios.ICANON | termios.ECHO)

    def wait_for_prompt(self, what="the prompt", extra=lambda o: True):
        return self.wait_for(lambda o: o.endswith(b"> ") and extra(o) and self.editing(), what)

    def wait_for_turns(self, n):
        return self.wait_for_prompt(f"{n} answered turn(s) and the prompt",
                                    lambda o: len(TURN.findall(o)) >= n)

    def finish(self, timeout=15):
        try:
            rc = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.reader.join(timeout=2)
            os.close(self.master)
        return rc


def chat_args(*extra):
    return ["chat", ARGS.model, "--seed", "7", "--temp", "0", "-n", "6", "-t", "1", "--no-learn",
            *extra]


def piped_turns(lines, state):
    r = subprocess.run([ARGS.coli, *chat_args()], input="".join(l + "\n" for l in lines).encode(),
                       capture_output=True, env=base_env(state), timeout=25)
    assert r.returncode == 0, r.stderr
    return TURN.findall(r.stderr)


class ChatTerminal(unittest.TestCase):
    def setUp(self):
        self.state = os.path.join(ARGS.work, self.id().split(".")[-1], "state")
        shutil.rmtree(os.path.dirname(self.state), ignore_errors=True)
        os.makedirs(self.state)
        self.history = os.path.join(self.state, "colibri", "chat_history")

    def test_up_arrow_recalls_the_previous_line(self):
        t = Terminal(chat_args(), base_env(self.state))
        t.wait_for_prompt()
        t.send(b"hello there\r")
        t.wait_for_turns(1)
        mark = len(t.output())
        t.send(UP)
        t.wait_for(lambda o: b"hello there" in o[mark:], "the recalled line")
        t.send(b"\r")
        out = t.wait_for_turns(2)
        t.send(b"\x04")  # Ctrl+D: leave
        self.assertEqual(t.finish(), 0)
        self.assertNotIn(b"^[[A", out)
        self.assertNotIn(b"^[", out)
        # The model got "hello there" twice: the same counts as through a pipe.
        self.assertEqual(TURN.findall(out), piped_turns(["hello there", "hello there"],
                                                        self.state + "-pipe"))
        with open(self.history, "rb") as f:
            self.assertIn(b"hello", f.read())
        self.assertEqual(os.stat(self.history).st_mode & 0o777, 0o600)

    def test_history_file_carries_over_and_can_be_left_out(self):
        first = Terminal(chat_args(), base_env(self.state))
        first.wait_for_prompt()
        first.send(b"an earlier question\r")
        first.wait_for_turns(1)
        first.send(b"\x04")
        self.assertEqual(first.finish(), 0)

        second = Terminal(chat_args(), base_env(self.state))
        second.wait_for_prompt()
        second.send(UP + b"\r")
        out = second.wait_for_turns(1)
        second.send(b"\x04")
        self.assertEqual(second.finish(), 0)
        self.assertEqual(TURN.findall(out), piped_turns(["an earlier question"],
                                                        self.state + "-pipe"))

        other = os.path.join(os.path.dirname(self.state), "state-no-history")
        third = Terminal(chat_args("--no-history"), base_env(other))
        third.wait_for_prompt()
        third.send(b"not kept\r")
        third.wait_for_turns(1)
        third.send(b"\x04")
        self.assertEqual(third.finish(), 0)
        self.assertFalse(os.path.exists(os.path.join(other, "colibri", "chat_history")))

    def test_ctrl_c_ends_the_answer_on_its_own_line(self):
        args = ["chat", ARGS.fixture, "--seed", "3", "-n", "100000", "--ignore-eos", "-t", "1",
                "--no-learn", "--no-history"]
        t = Terminal(args, base_env(self.state))
        t.wait_for_prompt()
        t.send(b"Hello\r")
        echoed = t.wait_for(lambda o: b"Hello\r\n" in o, "the echo")
        start = echoed.index(b"Hello\r\n") + len(b"Hello\r\n")
        t.wait_for(lambda o: len(o) > start + 20, "the answer's first pieces")
        t.send(b"\x03")
        out = t.wait_for_prompt("the cancelled turn", lambda o: TURN.search(o))
        t.send(b"\x04")
        self.assertEqual(t.finish(), 0)
        self.assertNotIn(b"^C", out)
        m = TURN.search(out)
        self.assertEqual(m.group(4), b"cancelled")
        # The report starts a line: the answer's text ended its own.
        self.assertTrue(out[:m.start()].endswith(b"\n"), out[max(0, m.start() - 80):m.end()])


class ChatCommands(unittest.TestCase):
    def test_help_lists_the_commands(self):
        state = os.path.join(ARGS.work, "help-state")
        r = subprocess.run([ARGS.coli, *chat_args()], input=b"/help\n", capture_output=True,
                           env=base_env(state), timeout=25)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"")  # nothing went to the model, nothing was answered
        err = r.stderr.decode()
        self.assertIsNone(TURN.search(r.stderr), err)
        for command in ("/help", "/reset", "/quit", "/exit"):
            self.assertIn(command, err)


class GenerateTerminal(unittest.TestCase):
    ARGS = ["--seed", "1", "--temp", "0", "-n", "5", "-t", "1", "--no-learn"]

    def test_text_ends_its_line_on_a_terminal_only(self):
        env = base_env(os.path.join(ARGS.work, "gen-state"))
        piped = subprocess.run([ARGS.coli, "generate", ARGS.model, "-p", "The Lord",
                                *self.ARGS], capture_output=True, env=env, timeout=25,
                               stdin=subprocess.DEVNULL)
        self.assertEqual(piped.returncode, 0, piped.stderr)
        self.assertTrue(piped.stdout)
        # The premise: this text does not end a line of its own.
        self.assertFalse(piped.stdout.endswith(b"\n"), piped.stdout)

        t = Terminal(["generate", ARGS.model, "-p", "The Lord", *self.ARGS], env,
                     stderr_to_pty=False)
        t.proc.stderr.read()
        t.proc.stderr.close()
        rc = t.finish()
        self.assertEqual(rc, 0)
        # The terminal turns "\n" into "\r\n" (onlcr).
        self.assertEqual(t.output(), piped.stdout.replace(b"\n", b"\r\n") + b"\r\n")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--model", required=True, help="a model with a chat template")
    ap.add_argument("--fixture", required=True,
                    help="a model with a long context (the Ctrl+C test's long answer)")
    ap.add_argument("--work", required=True)
    ARGS, rest = ap.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest)
