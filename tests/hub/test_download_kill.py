#!/usr/bin/python3
"""`coli download` killed with SIGKILL at 20 random moments and restarted each time (label slow):
a fixture repo of 66 MiB over three weight files (plus config.json and a tokenizer) served
throttled by the local Hub; after the last, uninterrupted run every file's SHA-256 is right, no
.part is left, the receipt is written, and the bytes the server sent over all runs stay below
1.2 x the repo's size. Prints the figures (bytes sent / repo size, time, kills that landed
mid-file) for docs/hub.md.

Usage: test_download_kill.py --coli PATH --work DIR [--seed N] [--kills N]
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import time

from hub_cli_util import Hub, coli_env, make_repo, part_bytes, sha256_file

MiB = 1 << 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--throttle", type=int, default=4 * MiB)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    rng = random.Random(seed)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    repo = os.path.join(a.work, "repo")
    sums = make_repo(repo, {"model-00001-of-00003.safetensors": 22 * MiB,
                            "model-00002-of-00003.safetensors": 22 * MiB,
                            "model-00003-of-00003.safetensors": 22 * MiB}, seed=seed)
    size = sum(os.path.getsize(os.path.join(repo, n)) for n in sums)
    dest = os.path.join(a.work, "model")
    failures = []
    with Hub({"test/big": repo}, extra=["--throttle", str(a.throttle)]) as hub:
        env = coli_env(a.work, hub.endpoint)
        cmd = [a.coli, "download", "test/big", "--dir", dest, "--reserve", "0"]
        began = time.monotonic()
        mid_file = 0
        for i in range(a.kills):
            delay = rng.uniform(0.1, 1.0)
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
            time.sleep(delay)
            p.kill()  # SIGKILL
            _, err = p.communicate()
            if p.returncode != -9:
                failures.append("run %d ended by itself (status %d) before the kill at %.2f s: %s"
                                % (i, p.returncode, delay, err.decode()[-300:]))
            if part_bytes(dest) > 0:
                mid_file += 1
        r = subprocess.run(cmd, capture_output=True, env=env, timeout=300)
        seconds = time.monotonic() - began
        if r.returncode != 0:
            failures.append("the last run failed (%d): %s" % (r.returncode, r.stderr.decode()))
        sent = hub.stats()["total_bytes_sent"]
    for name, digest in sums.items():
        path = os.path.join(dest, name)
        if not os.path.exists(path) or sha256_file(path) != digest:
            failures.append("%s: missing or wrong SHA-256" % name)
    if part_bytes(dest):
        failures.append("a .part file is left")
    if not os.path.exists(os.path.join(dest, "colibri-download.json")):
        failures.append("no receipt")
    ratio = sent / size
    print("kill test: seed %d, %d SIGKILLs (%d left a .part), repo %d bytes over %d files, "
          "server sent %d bytes = %.3f x the repo, %.1f s in all (throttle %d B/s)"
          % (seed, a.kills, mid_file, size, len(sums), sent, ratio, seconds, a.throttle))
    if ratio >= 1.2:
        failures.append("bytes sent %.3f x the repo size (limit 1.2)" % ratio)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
