#!/usr/bin/env bash
# The README's Performance and Benchmarks numbers: every command that produced them, in order.
# Long-running (tens of minutes on 2 cores); run on a quiet machine (no training). Output goes to
# eval/results/ (markdown + JSON + SVG).
#   bash eval/benchmarks.sh [perf|pair|pocket|all]
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=eval/results
mkdir -p "$out" .cache
make -s pocketflash
T=${THREADS:-2}

if [ "$what" = perf ] || [ "$what" = all ]; then
    # Synthetic models of exact shapes: the target's cost regime on this device.
    for shape in pocket qwen3-0.6b; do
        for type in q4_1 q8_0 f16; do
            f=.cache/synth-$shape-$type.gguf
            [ -f "$f" ] || ./pocketflash synth --shape "$shape" --type "$type" -o "$f"
            ./pocketflash bench-model -m "$f" -t "$T" --json "$out/bench-model-$shape-$type.json" \
                | tee "$out/bench-model-$shape-$type.md"
        done
    done
fi

if [ "$what" = pair ] || [ "$what" = all ]; then
    # The small trained stand-in pair, per task type.
    tgt=models/pf-target-f16.gguf
    for d in dflash dflash2; do
        [ -f "models/pf-draft-$d.gguf" ] || continue
        for B in 4 8 16; do
            ./pocketflash bench -m "$tgt" -d "models/pf-draft-$d.gguf" --tasks eval/tasks --block "$B" \
                --prompts 8 -n 64 --reps 3 -t "$T" --json "$out/bench-pair-$d-b$B.json" \
                --svg "$out/bench-pair-$d-b$B.svg" | tee "$out/bench-pair-$d-b$B.md"
        done
    done
fi

if [ "$what" = pocket ] || [ "$what" = all ]; then
    # The Pocket-shape stand-in (function-preserving expansion of the trained pair), Q4_1.
    make -s pocket-standin
    tgt=.cache/pocket-standin-q4_1.gguf
    d=.cache/pocket-standin-dflash2-q4_1.gguf
    [ -f "$d" ] || d=.cache/pocket-standin-dflash-q4_1.gguf
    ./pocketflash bench-model -m "$tgt" -t "$T" --json "$out/bench-model-standin-q4_1.json" \
        | tee "$out/bench-model-standin-q4_1.md"
    ./pocketflash bench -m "$tgt" -d "$d" --tasks eval/tasks --prompts 4 -n 48 --reps 2 -t "$T" \
        --json "$out/bench-pocket-fixed.json" --svg "$out/bench-pocket-fixed.svg" | tee "$out/bench-pocket-fixed.md"
    ./pocketflash tune -m "$tgt" -d "$d" --tasks eval/tasks --prompts 3 -n 48 --reps 2 -t "$T" \
        -o "$out/profile-pocket.json" | tee "$out/tune-pocket.md"
    ./pocketflash bench -m "$tgt" -d "$d" --tasks eval/tasks --profile "$out/profile-pocket.json" --prompts 4 -n 48 \
        --reps 2 -t "$T" --json "$out/bench-pocket-tuned.json" | tee "$out/bench-pocket-tuned.md"
    if [ -f models/pf-draft-dec.gguf ]; then
        [ -f .cache/pocket-standin-dec-q4_1.gguf ] || ./pocketflash expand -m models/pf-target-f16.gguf \
            -o .cache/pocket-standin-q4_1.gguf --type q4_1 -d models/pf-draft-dec.gguf -O .cache/pocket-standin-dec-q4_1.gguf
        ./pocketflash bench -m "$tgt" -d .cache/pocket-standin-dec-q4_1.gguf --spec dec --block 16 \
            --tasks eval/tasks --prompts 4 -n 48 --reps 2 -t "$T" --json "$out/bench-pocket-dec.json" \
            | tee "$out/bench-pocket-dec.md"
    fi
fi
