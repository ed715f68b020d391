#!/bin/bash
# After phase 2 (finetune.py): export the shipped model and produce everything docs and tests
# use from it. Run from the repository root with the engine built (tools/setup.sh test or run):
#   tools/train/finalize.sh [STATE_DIR] [COLI]
# FINAL_CKPT (default STATE/ckpt/phase2.pt) picks the checkpoint to ship; PHASE2_LOG (default
# STATE/log_phase2.csv) the fine-tuning log that continues the loss curve.
# Writes resources/models/colibri-moe-tiny/, tests/default_model/golden.json,
# docs/data/default-model/*.json and docs/images/default-model-*.png; prints Markdown tables.
set -euo pipefail
STATE=${1:-/work/train-state}
COLI=${2:-build/release/cli/coli}
NAME=colibri-moe-tiny
OUT=resources/models/$NAME
DATA=docs/data/default-model
PY=/usr/bin/python3
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive
mkdir -p "$DATA" docs/images

FINAL_CKPT=${FINAL_CKPT:-$STATE/ckpt/phase2.pt}
PHASE2_LOG=${PHASE2_LOG:-$STATE/log_phase2.csv}
$PY tools/train/export.py --ckpt "$FINAL_CKPT" --log "$PHASE2_LOG" --out "$OUT" --name "$NAME" --samples
$PY tools/train/golden.py "$OUT"
# Held-out bits per byte over the whole split: the shipped weights at 256 and 512 tokens, and
# the end of phase 1 at its 256 (what phase 2 cost on short windows).
$PY tools/train/evaluate.py --export "$OUT" --context 256 > "$DATA/eval-256.json"
$PY tools/train/evaluate.py --export "$OUT" --context 512 > "$DATA/eval-512.json"
$PY tools/train/evaluate.py --ckpt "$STATE/ckpt/last.pt" > "$DATA/eval-phase1-256.json"
cp "$STATE/log.csv" "$DATA/log-phase1.csv"
cp "$PHASE2_LOG" "$DATA/log-phase2.csv"
$PY tools/train/report.py --log "$STATE/log.csv" --log2 "$PHASE2_LOG" \
    --png docs/images/default-model-loss.png --rows 14 > "$DATA/loss-table.md"
# Routing statistics from the engine on the held-out text of every domain.
args=()
for d in kjv_en fortunes_en fortunes_de fortunes_es dict_en pydoc pycode; do
    args+=(--domain "$d=$STATE/data/text/$d.heldout.txt")
done
"$COLI" route-stats "$OUT" "${args[@]}" --max-tokens 50000 -t 1 --json "$DATA/route-stats.json" \
    > "$DATA/route-stats.txt"
$PY tools/train/routing_report.py "$DATA/route-stats.json" \
    --png docs/images/default-model-routing.png > "$DATA/route-stats-tables.md"
$PY - "$DATA" <<'PYEOF'
import json, sys
d = sys.argv[1]
base = json.load(open("tools/train/baseline.json"))["domains"]
e256, e512, p1 = (json.load(open(f"{d}/{n}.json")) for n in ("eval-256", "eval-512", "eval-phase1-256"))
print("| Domain | n-gram (all domains) | n-gram (own domain) | phase 1, 256 | shipped, 256 | shipped, 512 |")
print("|---|---:|---:|---:|---:|---:|")
for k in e256:
    if k == "mean":
        continue
    print(f"| {k} | {base[k]['bpb_all_domains']:.3f} | {base[k]['bpb_own_domain']:.3f} | {p1[k]:.3f} | {e256[k]:.3f} | {e512[k]:.3f} |")
m = lambda key: sum(base[k][key] for k in base) / len(base)
print(f"| mean | {m('bpb_all_domains'):.3f} | {m('bpb_own_domain'):.3f} | {p1['mean']:.3f} | {e256['mean']:.3f} | {e512['mean']:.3f} |")
PYEOF
tail -1 "$DATA/route-stats.txt"
