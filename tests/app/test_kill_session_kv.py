#!/usr/bin/python3
"""A killed app's chat continues warm (docs/app.md "The KV cache on disk"):
colibri_session_probe, the app's EngineController + SessionManager + StorageWorker without a
window, streams two answers of one chat into a fresh database and is killed with SIGKILL at a
random moment once the chat's KV file has committed the first turn (its count slot covers it):
while the second turn runs, while its KV file is being written, or once it is idle (a quarter of
the kills at least must land during the turn, which the database shows: the question without its
answer, or an answer without its end). Then, as the app's next start would:

  warm: the probe starts on that database, the chat comes back, and one more message is sent
        (--continue); the engine must find a committed conversation in the file, the turn must
        reuse stored prompt tokens (reused > 0, at most the tokens the file held when the engine
        opened it) and may say nothing but a repair (cut back);
  cold: the same on a copy of the database without the KV folder: nothing reused, and exactly
        the same answer (the KV cache changes speed, never the tokens).

Each kill uses its own database (the shipped model's context is 512 tokens)."""
import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import time

HEADER = 4096  # SessionKvFile::kHeaderBytes
PROMPT = "Now tell me how the story ends."


class Failure(Exception):
    pass


def kv_dir(db):
    """runtime/session_kv_dir.h sessionKvDir: <folder>/<stem>.kv"""
    folder, name = os.path.split(db)
    return os.path.join(folder, os.path.splitext(name)[0] + ".kv")


def kv_files(db):
    d = kv_dir(db)
    if not os.path.isdir(d):
        return {}
    return {f: os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
            if f.startswith("session-") and f.endswith(".kv")}


def committed_records(path):
    """The record count of a KV file's current count slot (runtime/session_kv_file.h: {seq,
    count, xxh64} at 3072 and 3584, the one of higher seq current; written only after the records
    it counts). Records past it are a save that had not finished: they are not the file's."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEADER)
    except FileNotFoundError:
        return 0
    if len(head) < HEADER:
        return 0
    slots = [struct.unpack_from("<QQQ", head, at) for at in (3072, 3584)]
    return max(slots)[1]


def kv_committed(db):
    d = kv_dir(db)
    return {f: committed_records(os.path.join(d, f)) for f in kv_files(db)}


def record_bytes(model):
    """SessionKvFile::recordBytes for a family with full K/V rows (the shipped Mixtral): the
    token and 4 zero bytes, K and V of every layer's KV heads (f32), an xxh64."""
    with open(os.path.join(model, "config.json"), encoding="utf-8") as f:
        c = json.load(f)
    head = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    heads = c.get("num_key_value_heads") or c["num_attention_heads"]
    return 8 + c["num_hidden_layers"] * heads * 2 * head * 4 + 8


def kill_mid_chat(args, db, rng, run, stderr_path):
    """Starts the probe on `db`, waits for a KV file whose count covers the first turn, kills it
    a random moment later. Returns (seconds after the first save, the records committed then,
    the file sizes at the kill)."""
    with open(stderr_path, "wb") as err:
        p = subprocess.Popen(
            [args.probe, "--model", args.model, "--db", db, "--seed", str(run * 1000 + 1),
             "--max-tokens", str(args.max_tokens), "--per-session", "1000", "--stop-after", "2",
             "--save-interval-ms", "25"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 60
    try:
        while not any(n > 0 for n in kv_committed(db).values()):
            if p.poll() is not None:
                with open(stderr_path, encoding="utf-8", errors="replace") as f:
                    raise Failure(f"run {run}: the probe exited by itself (code {p.returncode}): "
                                  f"{f.read().strip()}")
            if time.monotonic() > deadline:
                raise Failure(f"run {run}: no KV file holding a turn after 60 s in {kv_dir(db)}")
            time.sleep(0.002)
        committed = max(kv_committed(db).values())
        # Every other kill early, while the second turn has only just begun (its window is about
        # a tenth of a second on the shipped model), the others anywhere in max_delay.
        delay = rng.uniform(0.0, args.max_delay if run % 2 else 0.03)
        time.sleep(delay)
        sizes = kv_files(db)
        p.send_signal(signal.SIGKILL)
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)
    if p.returncode != -signal.SIGKILL:
        raise Failure(f"run {run}: the probe ended with code {p.returncode}, not by SIGKILL")
    return delay, committed, sizes


def killed_mid_turn(db):
    """Whether the chat's last turn had not ended: its last message is the question, or an
    answer saved without its end."""
    con = sqlite3.connect(db)
    try:
        row = con.execute("SELECT role, stop_reason FROM messages "
                          "ORDER BY session DESC, position DESC LIMIT 1").fetchone()
    finally:
        con.close()
    return row is not None and (row[0] == "user" or row[1] is None)


def continue_chat(args, db, run, what):
    r = subprocess.run(
        [args.probe, "--model", args.model, "--db", db, "--seed", "7", "--max-tokens",
         str(args.continue_tokens), "--continue", PROMPT],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    if r.returncode != 0:
        raise Failure(f"run {run}: the {what} start failed (code {r.returncode}): "
                      f"{r.stderr.decode(errors='replace').strip()}")
    lines = r.stdout.decode().strip().splitlines()
    if len(lines) != 1:
        raise Failure(f"run {run}: the {what} start printed {lines!r}")
    return json.loads(lines[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--kills", type=int, default=8)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--max-delay", type=float, default=0.25)
    ap.add_argument("--max-tokens", type=int, default=100)
    ap.add_argument("--continue-tokens", type=int, default=16)
    args = ap.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rng = random.Random(args.seed)
    started = time.monotonic()
    warm_total = 0
    mid_turn = 0
    repaired = 0
    try:
        for run in range(args.kills):
            folder = os.path.join(args.work, f"run{run}")
            os.makedirs(folder)
            db = os.path.join(folder, "colibri.db")
            delay, committed, sizes = kill_mid_chat(args, db, rng, run,
                                                    os.path.join(folder, "stderr"))
            cold_folder = os.path.join(args.work, f"run{run}-cold")
            os.makedirs(cold_folder)
            for f in os.listdir(folder):  # the database and its WAL, not the KV folder
                if f.startswith("colibri.db"):
                    shutil.copy2(os.path.join(folder, f), cold_folder)
            mid = killed_mid_turn(db)
            mid_turn += mid
            warm = continue_chat(args, db, run, "warm")
            cold = continue_chat(args, os.path.join(cold_folder, "colibri.db"), run, "cold")
            if warm["rows"] < 2 or warm["rows"] != cold["rows"]:
                raise Failure(f"run {run}: the chat came back with {warm['rows']} messages "
                              f"(cold: {cold['rows']})")
            # A committed turn is never lost. (A later save may have cut the file back to the part
            # the next prompt shares before the kill, never to nothing: it starts the same.)
            if warm["kvBytesAtOpen"] <= HEADER:
                raise Failure(f"run {run}: the chat's KV file held no token when it was opened; "
                              f"{committed} records were committed before the kill (files then: "
                              f"{sizes})")
            if warm["reused"] <= 0:
                raise Failure(f"run {run}: the continued chat was cold: {warm}")
            held = (warm["kvBytesAtOpen"] - HEADER) // record_bytes(args.model)
            if warm["reused"] > held:
                raise Failure(f"run {run}: {warm['reused']} tokens reused, but the KV file held "
                              f"{held}")
            if cold["reused"] != 0:
                raise Failure(f"run {run}: without its KV file the chat reused {cold['reused']}")
            if warm["answer"] != cold["answer"] or warm["prompt"] != cold["prompt"]:
                raise Failure(f"run {run}: warm and cold answers differ:\n{warm}\n{cold}")
            notice = warm["notice"]
            if notice:
                if "cut back" not in notice:
                    raise Failure(f"run {run}: the warm start said: {notice}")
                repaired += 1
            warm_total += warm["reused"]
            print(f"kill {run + 1:2d} {delay:4.2f} s after the first save"
                  f"{' (mid-turn)' if mid else ''}, KV files {sizes}: "
                  f"reopened with {warm['rows']} messages, KV file {warm['kvBytesAtOpen']} bytes; "
                  f"{warm['reused']} of {warm['prompt']} prompt tokens reused (cold: 0), same "
                  f"answer", flush=True)
        if mid_turn < args.kills // 4:
            raise Failure(f"only {mid_turn} of {args.kills} kills landed during a turn: the test "
                          "checked too little")
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        print(f"(kept in {args.work})", file=sys.stderr)
        return 1
    print(f"summary: {args.kills} kills ({mid_turn} during a turn) in "
          f"{time.monotonic() - started:.1f} s; every chat came "
          f"back warm ({warm_total} prompt tokens not read again in all), {repaired} KV files "
          f"repaired on open; cold starts gave the same answers")
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
