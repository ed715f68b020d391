#!/usr/bin/env bash
# Colibri Desktop: set up a fresh Debian 12 machine, build, and either launch the app or run the
# whole test suite. This is what the README's two commands call, and what CI (.ci/run) calls.
#
#   tools/setup.sh run     install packages, build Release, launch the app on the default model
#   tools/setup.sh test    install packages, build Release + an ASan/UBSan build + a TSan build
#                          of the concurrency tests, run every test
#
# Environment: COLI_BUILD_DIR (default build/release), COLI_JOBS (default nproc),
#              COLI_SKIP_INSTALL=1 to skip the package check, COLI_SKIP_ASAN=1 / COLI_SKIP_TSAN=1
#              to skip the ASan / ThreadSanitizer build in `test`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE="${1:-}"
BUILD="${COLI_BUILD_DIR:-$ROOT/build/release}"
ASAN_BUILD="$ROOT/build/asan"
TSAN_BUILD="$ROOT/build/tsan"
JOBS="${COLI_JOBS:-$(nproc)}"
# ccache: hash paths relative to the checkout, so a fresh clone elsewhere (CI) reuses the cache;
# and not the build folder, which ccache otherwise hashes whenever debug info is made (-g: the
# sanitizer builds), so that every clone recompiled them.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
# The sanitizer builds: -O1 (what the sanitizers' documentation recommends: fast enough tests,
# far less compile time than -O2) and line tables only (-g1: enough for symbolized reports).
SAN_FLAGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
           "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")

log() { printf '\033[1m[colibri]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[colibri] error:\033[0m %s\n' "$*" >&2; exit 1; }

usage() {
    sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 2
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@";
    elif command -v sudo >/dev/null; then sudo "$@";
    else die "need root to install packages: run this script as root or install sudo"; fi
}

install_packages() {
    [ "${COLI_SKIP_INSTALL:-0}" = 1 ] && return 0
    local wanted missing=()
    mapfile -t wanted < <(grep -v '^\s*#' "$ROOT/tools/packages.txt" | sed '/^\s*$/d')
    for p in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    # Node.js + npm (tokenizer reference tests): keep a node that is already there (it may come
    # from another source whose package conflicts with Debian's npm).
    if ! command -v npm >/dev/null || ! command -v node >/dev/null; then missing+=(nodejs npm); fi
    if [ ${#missing[@]} -eq 0 ]; then log "all Debian packages present"; return 0; fi
    log "installing ${#missing[@]} Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
        "${missing[@]}"
}

configure_and_build() { # dir, extra cmake args..., -- targets...
    local dir="$1"; shift
    local args=() targets=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    targets=("$@")
    log "configuring $dir"
    cmake -S "$ROOT" -B "$dir" -G Ninja "${args[@]}" >/dev/null
    log "building $dir ${targets[*]:-(all)}"
    if [ ${#targets[@]} -gt 0 ]; then
        cmake --build "$dir" -j "$JOBS" --target "${targets[@]}"
    else
        cmake --build "$dir" -j "$JOBS"
    fi
}

cmd_run() {
    # Before installing or building (minutes): without a display the window could not open anyway.
    if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
        die "no display found (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot open.
       Run this from a desktop session, or on a headless machine:  xvfb-run -a tools/setup.sh run
       The command-line tool works without a display:  $BUILD/cli/coli --help"
    fi
    install_packages
    configure_and_build "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCOLI_BUILD_APP=ON -- colibri coli
    log "launching $BUILD/bin/colibri"
    exec "$BUILD/bin/colibri" "${@}"
}

cmd_test() {
    install_packages
    local start=$SECONDS
    # Tests run two at a time on 2 cores: spinning OpenMP workers would steal the other test's core.
    export OMP_WAIT_POLICY=PASSIVE
    configure_and_build "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCOLI_BUILD_APP=ON --
    log "running the test suite (Release)"
    local rc=0
    (cd "$BUILD" && ctest --output-on-failure -j "$JOBS" -LE soak --timeout 900) || rc=$?
    if [ "${COLI_SKIP_ASAN:-0}" != 1 ]; then
        # The Qt-free libraries' tests again under AddressSanitizer + UBSan.
        configure_and_build "$ASAN_BUILD" "${SAN_FLAGS[@]}" -DCOLI_BUILD_APP=OFF -DCOLI_BUILD_BENCH=OFF \
            -DCOLI_SANITIZE=ON -DCOLI_FIXTURE_DIR="$BUILD/fixtures" --
        log "running the fast tests under ASan/UBSan"
        # `coli info` loads the Vulkan loader and lavapipe: their own allocations are suppressed.
        (cd "$ASAN_BUILD" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
            LSAN_OPTIONS="suppressions=$ROOT/tools/lsan-suppressions.txt" \
            UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j "$JOBS" -L fast -LE soak --timeout 900) || rc=$?
    fi
    if [ "${COLI_SKIP_TSAN:-0}" != 1 ]; then
        # The concurrency tests (label tsan) under ThreadSanitizer; only their targets are built.
        configure_and_build "$TSAN_BUILD" "${SAN_FLAGS[@]}" -DCOLI_BUILD_APP=OFF -DCOLI_BUILD_BENCH=OFF \
            -DCOLI_OPENMP=OFF -DCOLI_TSAN=ON -DCOLI_FIXTURE_DIR="$BUILD/fixtures" -- coli_tsan_tests
        log "running the concurrency tests under ThreadSanitizer"
        (cd "$TSAN_BUILD" && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
            ctest --output-on-failure -j "$JOBS" -L tsan -LE soak --timeout 900) || rc=$?
    fi
    log "test command finished in $((SECONDS - start)) s with status $rc"
    return $rc
}

case "$MODE" in
    run) shift; cmd_run "$@" ;;
    test) shift; cmd_test "$@" ;;
    *) usage ;;
esac
