#!/bin/bash
# The real binary under Xvfb: starts on the default model (the shipped one), stays up, and
# SIGTERM quits it through the normal path (exit code 0) within 3 s.
# Usage: colibri_smoke.sh PATH/TO/colibri   (run inside xvfb-run)
set -u
colibri=$1
export XDG_CONFIG_HOME=$(mktemp -d) # no remembered folder: the compiled-in default is used
log=$(mktemp)
"$colibri" >"$log" 2>&1 &
pid=$!
sleep 4
if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid"
    echo "colibri exited early with code $?:"; cat "$log"; exit 1
fi
start=$(date +%s%N)
kill -TERM "$pid"
for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
    echo "colibri still running 3 s after SIGTERM"; kill -KILL "$pid"; exit 1
fi
wait "$pid"; rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "exit code $rc after ${ms} ms"; cat "$log"
if grep -qiE "qml.*(error|warning)|is not a type|Cannot assign" "$log"; then echo "QML warnings"; exit 1; fi
exit $rc
