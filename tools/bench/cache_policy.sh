#!/bin/bash
# The expert-cache policy benchmark (issue 5; results: docs/perf-cache-policy.md).
# Writes routing traces of the default model (coli trace) over varied prompts, the held-out text
# of its 7 training domains cut into pieces and some chat-style prompts, each continued greedily,
# then replays them all as one session with `coli cache-sim` at 10%, 25% and 50% of the routed
# experts, decode order (--chunk 1), under LRU, LFU, LFRU (the engine's HeatTable) and Belady.
#
# Usage: tools/bench/cache_policy.sh [COLI [MODEL_DIR [WORK_DIR]]] [-- extra cache-sim flags]
#   COLI       default build/release/cli/coli
#   MODEL_DIR  default resources/models/colibri-moe-tiny
#   WORK_DIR   default build/cache-policy (prompts/, traces/, result.json)
# Environment: PIECE_BYTES (default 900: prompt size, the model's context is 512 tokens),
#   NEW_TOKENS (default 96: greedy tokens per prompt), THREADS (default 1).
set -euo pipefail
cd "$(dirname "$0")/../.."
extra=()
pos=()
while [ $# -gt 0 ]; do
    if [ "$1" = "--" ]; then shift; extra=("$@"); break; fi
    pos+=("$1"); shift
done
coli=${pos[0]:-build/release/cli/coli}
model=${pos[1]:-resources/models/colibri-moe-tiny}
work=${pos[2]:-build/cache-policy}
piece_bytes=${PIECE_BYTES:-900}
new_tokens=${NEW_TOKENS:-96}
threads=${THREADS:-1}
python=/usr/bin/python3

rm -rf "$work/prompts" "$work/traces"
mkdir -p "$work/prompts" "$work/traces"

# Prompts: each held-out file cut at line ends into pieces of at most $piece_bytes bytes, named
# NN-domain so that sorting interleaves the domains (a session that changes topic each prompt),
# plus chat-style prompts in the model's ChatML template.
"$python" - "$work/prompts" "$piece_bytes" <<'PY'
import os, sys
out, limit = sys.argv[1], int(sys.argv[2])
src = "tests/default_model/heldout"
for name in sorted(os.listdir(src)):
    if not name.endswith(".txt"):
        continue
    pieces, cur = [], ""
    for line in open(os.path.join(src, name), encoding="utf-8").read().splitlines(True):
        if cur and len((cur + line).encode()) > limit:
            pieces.append(cur)
            cur = ""
        cur += line
    if cur.strip():
        pieces.append(cur)
    for i, p in enumerate(pieces):
        with open(os.path.join(out, f"{i:02d}-{name[:-4]}.txt"), "w", encoding="utf-8") as f:
            f.write(p)
chats = [
    "How do I read a file line by line in Python?",
    "Tell me a short fortune for today.",
    "What does the word 'collegiate' mean?",
    "Erzähl mir einen Witz über Programmierer.",
    "¿Cuál es el sentido de la vida?",
    "Summarise the story of Noah in two sentences.",
    "Write a function that reverses a list.",
    "What is a dictionary comprehension?",
]
for i, c in enumerate(chats):
    with open(os.path.join(out, f"{i:02d}-chat.txt"), "w", encoding="utf-8") as f:
        f.write(f"<|im_start|>user\n{c}<|im_end|>\n<|im_start|>assistant\n")
PY

n=0
for p in "$work"/prompts/*.txt; do
    base=$(basename "$p" .txt)
    "$coli" trace "$model" -p "$(cat "$p")" -n "$new_tokens" -t "$threads" \
        -o "$work/traces/$base.jsonl" 2>>"$work/traces/log.txt"
    n=$((n + 1))
done
echo "traces: $n prompts ($(grep -c . "$work"/traces/*.jsonl | awk -F: '{s += $2 - 1} END {print s}') tokens) in $work/traces" >&2

bytes=$("$coli" info "$model" --json | "$python" -c 'import json,sys; print(json.load(sys.stdin)["bytes_per_expert"])')
"$coli" cache-sim "$work"/traces/*.jsonl --capacity 10%,25%,50% --chunk 1 \
    --bytes-per-expert "$bytes" --json "$work/result.json" "${extra[@]}"
