#!/usr/bin/python3
"""`coli download` on a disk that really fills up: a 24 MiB tmpfs mounted in a private mount
namespace (`unshare -rm`, which also works as root), a throttled 18 MiB download into it, and a
file that takes the rest of the space while it runs. coli must stop with exit 5 and a message
saying the disk is full, keep the .part, and a rerun after the filler is deleted must finish with
the right hashes. Exits 77 (counted as skipped by CTest, with the reason printed) when no tmpfs
can be mounted here.

Usage: test_download_tmpfs.py --coli PATH --work DIR
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

from hub_cli_util import Hub, coli_env, make_repo

MiB = 1 << 20

# Runs inside the namespace: mount, download, fill, wait, report, free, rerun, report.
INNER = r'''
set -u
mnt="$1"; coli="$2"; out="$3"
mount -t tmpfs -o size=24m tmpfs "$mnt" || exit 77
dest="$mnt/model"
"$coli" download test/r --dir "$dest" --reserve 0 --retries 0 >"$out/run1.out" 2>"$out/run1.err" &
pid=$!
for i in $(seq 1 500); do
    n=$(cat "$dest"/*.part 2>/dev/null | wc -c)
    [ "$n" -ge 1048576 ] && break
    sleep 0.02
done
dd if=/dev/zero of="$mnt/filler" bs=64k 2>/dev/null
wait $pid; rc1=$?
part=$(stat -c %s "$dest/model.safetensors.part" 2>/dev/null || echo 0)
rm -f "$mnt/filler"
"$coli" download test/r --dir "$dest" --reserve 0 >"$out/run2.out" 2>"$out/run2.err"; rc2=$?
sha=$(sha256sum "$dest/model.safetensors" 2>/dev/null | cut -d' ' -f1)
left=$(ls "$dest" | grep -c '\.part$')
printf '{"rc1": %d, "part": %d, "rc2": %d, "sha": "%s", "parts_left": %d}\n' \
    "$rc1" "$part" "$rc2" "$sha" "$left" >"$out/result.json"
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--coli", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    probe = subprocess.run(["unshare", "-rm", "sh", "-c",
                            "mount -t tmpfs -o size=1m tmpfs \"$0\"", a.work],
                           capture_output=True)
    if probe.returncode != 0:
        print("SKIP: cannot mount a tmpfs here (unshare -rm + mount failed: %s); the disk-full "
              "behaviour is still tested by the RLIMIT_FSIZE injection in test_download_cli"
              % probe.stderr.decode().strip())
        return 77
    repo = os.path.join(a.work, "repo")
    sums = make_repo(repo, {"model.safetensors": 18 * MiB})
    mnt = os.path.join(a.work, "mnt")
    os.makedirs(mnt)
    with Hub({"test/r": repo}, extra=["--throttle", str(4 * MiB)]) as hub:
        env = coli_env(a.work, hub.endpoint)
        r = subprocess.run(["unshare", "-rm", "bash", "-c", INNER, "inner", mnt,
                            os.path.abspath(a.coli), a.work], env=env, timeout=240)
    if r.returncode == 77:
        print("SKIP: tmpfs mount refused inside the namespace")
        return 77
    with open(os.path.join(a.work, "result.json")) as f:
        res = json.load(f)
    err1 = open(os.path.join(a.work, "run1.err")).read()
    err2 = open(os.path.join(a.work, "run2.err")).read()
    print(json.dumps(res))
    failures = []
    if res["rc1"] != 5:
        failures.append("the first run exited %d, not 5: %s" % (res["rc1"], err1))
    if "disk full" not in err1:
        failures.append("no 'disk full' in the message: %s" % err1)
    if res["part"] < MiB:
        failures.append("the .part was not kept (%d bytes)" % res["part"])
    if res["rc2"] != 0:
        failures.append("the rerun exited %d: %s" % (res["rc2"], err2))
    if res["sha"] != sums["model.safetensors"]:
        failures.append("wrong SHA-256 after the rerun")
    if res["parts_left"]:
        failures.append("a .part is left")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
