#!/usr/bin/env bash
# Benchmark the committed drafts on the held-out eval prompts (greedy): DFlash vs DFlash2 at B = 4, 8, 16,
# then print the markdown tables for DRAFTS.md (train/drafts_report.py). Run with nothing else
# heavy on the machine: bench measures wall-clock speed.
#   train/bench_drafts.sh [prompts per type (8)] [tokens (64)]
set -euo pipefail
cd "$(dirname "$0")/.."
W=train/work/drafts
P=${1:-8}
N=${2:-64}
mkdir -p "$W/bench"
make pocketflash >/dev/null
for d in dflash dflash2; do
    for B in 4 8 16; do
        ./pocketflash bench -m models/pf-target-f16.gguf -d models/pf-draft-$d.gguf --tasks eval/tasks --block $B \
            --prompts "$P" -n "$N" --reps 1 --json "$W/bench/$d-B$B.json" > "$W/bench/$d-B$B.md" 2>/dev/null
        echo "$d B=$B: $(grep overall "$W/bench/$d-B$B.md")"
    done
done
${PYTHON:-/usr/bin/python3} train/drafts_report.py
