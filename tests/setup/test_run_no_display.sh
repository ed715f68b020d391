#!/usr/bin/env bash
# `tools/setup.sh run` without a display must say so at once, before installing or building
# (which takes minutes): exit 1, the usual message, and no build folder made.
# Usage: test_run_no_display.sh SOURCE_DIR WORK_DIR
set -uo pipefail
src="$1" work="$2"
build="$work/build-that-must-not-exist"
rm -rf "$work" && mkdir -p "$work"
start=$SECONDS
out=$(env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM COLI_SKIP_INSTALL=1 COLI_JOBS=1 \
    COLI_BUILD_DIR="$build" "$src/tools/setup.sh" run 2>&1)
rc=$?
fail() { printf 'FAIL: %s\n--- output ---\n%s\n' "$1" "$out"; exit 1; }
[ "$rc" -eq 1 ] || fail "exit status $rc, expected 1"
grep -q "no display found" <<<"$out" || fail "no 'no display found' message"
grep -q "xvfb-run -a tools/setup.sh run" <<<"$out" || fail "the message does not name xvfb-run"
grep -q "configuring\|building" <<<"$out" && fail "it configured or built before checking"
[ -e "$build" ] && fail "it made $build before checking the display"
[ $((SECONDS - start)) -le 5 ] || fail "took $((SECONDS - start)) s"
echo "ok: refused in $((SECONDS - start)) s without building"
