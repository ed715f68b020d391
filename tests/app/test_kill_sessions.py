#!/usr/bin/python3
"""The kill test of issue 11 (docs/testing.md "Kill test"): colibri_session_probe, the app's
EngineController + SessionManager + StorageWorker without a window, streams answers into a
database and is killed with SIGKILL at --kills random moments (a seeded RNG: before the model is
loaded, while an answer streams and is saved, between answers, at a new chat). The storage
thread acknowledges every committed write of a message's text on a pipe ("ack <id> <sha256>").
After each kill, as the app would at its next start, the database must pass
`PRAGMA integrity_check`, `PRAGMA foreign_key_check` and FTS5's integrity-check, hold every
message acknowledged so far in any run with exactly the text of its last acknowledgement, and
keep every session and message it held before (later runs add to it, nothing is reset).

One write may have been committed and not yet acknowledged when the kill came: the last
acknowledged message of that run may hold a longer text whose byte prefix is the acknowledged one
(an answer's text only grows). The test allows that for that message only, and counts it."""
import argparse
import hashlib
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

ACK = re.compile(r"ack (\d+) ([0-9a-f]{64})\n\Z")


def sha(data):
    return hashlib.sha256(data).hexdigest()


def prefix_hashing_to(data, digest):
    """The length of the byte prefix of `data` whose SHA-256 is `digest`, or None."""
    for n in range(len(data) + 1):
        if sha(data[:n]) == digest:
            return n
    return None


class Failure(Exception):
    pass


def read_acks(fd, out):
    with os.fdopen(fd, "r", encoding="ascii", newline="") as f:
        for line in f:
            out.append(line)


def run_once(args, run, rng, stderr_path):
    """Starts the probe, kills it after a random delay; returns (delay, ack lines)."""
    r, w = os.pipe()
    with open(stderr_path, "wb") as err:
        p = subprocess.Popen(
            [args.probe, "--model", args.model, "--db", args.db, "--ack-fd", str(w),
             "--seed", str(run * 1000 + 1), "--max-tokens", str(args.max_tokens),
             "--save-interval-ms", str(args.save_interval_ms), "--per-session", "1"],
            pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    os.close(w)  # the pipe reaches EOF when the probe is gone
    lines = []
    reader = threading.Thread(target=read_acks, args=(r, lines))
    reader.start()
    delay = rng.uniform(args.min_delay, args.max_delay)
    try:
        code = p.wait(timeout=delay)
        with open(stderr_path, encoding="utf-8", errors="replace") as f:
            raise Failure(f"run {run}: the probe exited by itself (code {code}) after less than "
                          f"{delay:.2f} s: {f.read().strip()}")
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGKILL)
    code = p.wait(timeout=30)
    reader.join(timeout=30)
    if reader.is_alive():
        raise Failure(f"run {run}: the acknowledgement pipe stayed open after the kill")
    if code != -signal.SIGKILL:
        raise Failure(f"run {run}: the probe ended with code {code}, not by SIGKILL")
    with open(stderr_path, encoding="utf-8", errors="replace") as f:
        printed = f.read().strip()
    if printed:
        raise Failure(f"run {run}: the probe printed (it prints only errors): {printed}")
    return delay, lines


class Checker:
    def __init__(self, db):
        self.db = db
        self.last = {}        # message id -> sha256 of its last acknowledged text
        self.ahead = {}       # message id -> sha256 of the committed, unacknowledged text
        self.sessions = set()
        self.messages = set()
        self.session_counts = []
        self.ahead_count = 0
        self.mid_answer = 0   # kills whose last acknowledged write was of an unfinished answer
        self.orphan_runs = 0

    def merge(self, run, lines):
        ids = []
        for line in lines:
            m = ACK.match(line)
            if not m:
                raise Failure(f"run {run}: malformed acknowledgement {line!r}")
            mid = int(m.group(1))
            self.last[mid] = m.group(2)
            self.ahead.pop(mid, None)
            ids.append(mid)
        return ids

    def check(self, run, run_ids):
        if not os.path.exists(self.db):
            if self.last or self.sessions:
                raise Failure(f"run {run}: the database file is gone")
            return
        con = sqlite3.connect(self.db)
        try:
            self.check_open(con, run, run_ids)
        finally:
            con.close()

    def check_open(self, con, run, run_ids):
        integrity = con.execute("PRAGMA integrity_check").fetchall()
        if integrity != [("ok",)]:
            raise Failure(f"run {run}: PRAGMA integrity_check says {integrity}")
        fk = con.execute("PRAGMA foreign_key_check").fetchall()
        if fk:
            raise Failure(f"run {run}: PRAGMA foreign_key_check lists {fk[:5]}")
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master")}
        for fts in ("messages_fts", "sessions_fts"):
            if fts in tables:  # schema v2: the full-text indexes match their tables
                try:
                    con.execute(f"INSERT INTO {fts}({fts}) VALUES('integrity-check')")
                except sqlite3.DatabaseError as e:
                    raise Failure(f"run {run}: FTS5 integrity-check of {fts} failed: {e}")
        con.rollback()
        if "messages" not in tables:
            if self.last:
                raise Failure(f"run {run}: the messages table is gone")
            return
        texts = {mid: (bytes(text), stop, role) for mid, text, stop, role in con.execute(
            "SELECT id, CAST(text AS BLOB), stop_reason, role FROM messages")}
        sessions = {row[0] for row in con.execute("SELECT id FROM sessions")}
        self.orphan_runs = con.execute(
            "SELECT COUNT(*) FROM runs WHERE id NOT IN "
            "(SELECT run FROM messages WHERE run IS NOT NULL)").fetchone()[0]

        # Positions in a session are 0..n-1: a chat restored at start goes on at its end.
        for session, positions in con.execute(
                "SELECT session, group_concat(position) FROM "
                "(SELECT session, position FROM messages ORDER BY session, position) "
                "GROUP BY session"):
            got = [int(x) for x in positions.split(",")]
            if got != list(range(len(got))):
                raise Failure(f"run {run}: session {session} has message positions {got}")
        lost = self.messages - texts.keys()
        if lost:
            raise Failure(f"run {run}: messages of earlier runs are gone: {sorted(lost)[:10]}")
        lost = self.sessions - sessions
        if lost:
            raise Failure(f"run {run}: sessions of earlier runs are gone: {sorted(lost)[:10]}")
        tail = run_ids[-1] if run_ids else None
        for mid, digest in self.last.items():
            if mid not in texts:
                raise Failure(f"run {run}: acknowledged message {mid} is not in the database")
            data = texts[mid][0]
            if sha(data) == digest:
                self.ahead.pop(mid, None)
                continue
            if mid in self.ahead and self.ahead[mid] == sha(data):
                continue  # ahead since an earlier run, unchanged
            n = prefix_hashing_to(data, digest) if mid == tail else None
            if n is None:
                raise Failure(
                    f"run {run}: message {mid} holds {len(data)} bytes (sha256 {sha(data)}) that "
                    f"are not its acknowledged text (sha256 {digest})"
                    + ("" if mid == tail else "; it was not the run's last write"))
            self.ahead[mid] = sha(data)  # a write committed just before the kill
            self.ahead_count += 1
        if tail is not None and texts[tail][2] == "assistant" and texts[tail][1] is None:
            self.mid_answer += 1
        self.messages = set(texts.keys())
        self.sessions = sessions
        self.session_counts.append(len(sessions))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--min-delay", type=float, default=0.02)
    ap.add_argument("--max-delay", type=float, default=3.0)
    ap.add_argument("--max-tokens", type=int, default=200)
    # Much shorter than the app's 2 s, so that every answer is saved several times as it grows.
    ap.add_argument("--save-interval-ms", type=int, default=25)
    args = ap.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    args.db = os.path.join(args.work, "colibri.db")
    stderr_path = os.path.join(args.work, "probe.stderr")
    rng = random.Random(args.seed)
    checker = Checker(args.db)
    started = time.monotonic()
    acks = 0
    quiet_runs = 0  # killed before anything was acknowledged (e.g. before the model was loaded)
    try:
        for run in range(args.kills):
            delay, lines = run_once(args, run, rng, stderr_path)
            run_ids = checker.merge(run, lines)
            acks += len(lines)
            quiet_runs += not lines
            checker.check(run, run_ids)
            print(f"kill {run + 1:2d} at {delay:4.2f} s: {len(lines):3d} acknowledgements, "
                  f"{len(checker.messages)} messages, {len(checker.sessions)} sessions",
                  flush=True)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        print(f"(database kept in {args.work})", file=sys.stderr)
        return 1

    counts = checker.session_counts
    problems = []
    if not counts or counts[-1] <= counts[0]:
        problems.append(f"the session count did not grow over the runs: {counts}")
    if quiet_runs > args.kills // 2:
        problems.append(f"{quiet_runs} of {args.kills} runs were killed before any write was "
                        "acknowledged: the test checked too little")
    if checker.mid_answer == 0:
        problems.append("no kill landed while an answer was being saved")
    print(f"summary: {args.kills} kills in {time.monotonic() - started:.1f} s; {acks} "
          f"acknowledged writes of {len(checker.last)} messages, all found with their text; "
          f"{checker.mid_answer} kills during an answer, {quiet_runs} before the first write; "
          f"{checker.ahead_count} messages a committed but unacknowledged write ahead; "
          f"{len(checker.sessions)} sessions and {len(checker.messages)} messages at the end; "
          f"{checker.orphan_runs} runs without their answer")
    for p in problems:
        print(f"FAIL: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
