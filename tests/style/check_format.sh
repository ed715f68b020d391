#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what the repo's .clang-format produces.
set -euo pipefail
cd "$1"
command -v clang-format >/dev/null || { echo "clang-format not found (package clang-format)"; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' 2>/dev/null || find engine cli app tests -name '*.cpp' -o -name '*.h')
[ ${#files[@]} -gt 0 ] || { echo "no C++ files found under $1"; exit 1; }
if clang-format --dry-run --Werror "${files[@]}"; then
    echo "${#files[@]} files formatted as .clang-format says"
else
    echo "run: clang-format -i <file> on the files above"; exit 1
fi
