#!/bin/sh
# Runs COMMAND with an unlocked gnome-keyring (the Secret Service that qtkeychain uses on Linux) on
# the session bus of `dbus-run-session`, under a throwaway HOME:
#   dbus-run-session -- with_keyring.sh COMMAND [ARGS...]
# COMMAND sees COLI_TEST_KEYRING=1 when the keyring runs, else COLI_TEST_KEYRING_SKIP=<why>, so a
# test can skip visibly with the reason. Found here: an empty password on stdin creates no login
# keyring (the daemon then asks a graphical prompter, which cannot run without a display), so a
# throwaway password is used; the keyring file appears a moment after the daemon forks.
set -u
tmp=$(mktemp -d)
export HOME="$tmp" XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" XDG_CACHE_HOME="$tmp/cache"
mkdir -p "$XDG_DATA_HOME/keyrings" "$XDG_CONFIG_HOME"
if ! command -v gnome-keyring-daemon >/dev/null 2>&1; then
    export COLI_TEST_KEYRING_SKIP="gnome-keyring-daemon is not installed (package gnome-keyring)"
elif [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ]; then
    export COLI_TEST_KEYRING_SKIP="no session bus: run under dbus-run-session"
elif ! printf '%s' colibri-test |
        gnome-keyring-daemon --unlock --components=secrets >"$tmp/daemon.out" 2>"$tmp/daemon.err"; then
    export COLI_TEST_KEYRING_SKIP="gnome-keyring-daemon did not start: $(head -c 300 "$tmp/daemon.err")"
else
    i=0
    while [ ! -f "$XDG_DATA_HOME/keyrings/login.keyring" ] && [ $i -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    if [ -f "$XDG_DATA_HOME/keyrings/login.keyring" ]; then
        export COLI_TEST_KEYRING=1
    else
        export COLI_TEST_KEYRING_SKIP="gnome-keyring-daemon made no login keyring in 5 s"
    fi
fi
"$@"
rc=$?
rm -rf "$tmp"
exit $rc
