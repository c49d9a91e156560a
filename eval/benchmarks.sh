#!/usr/bin/env bash
# The numbers of docs/performance.md: every command that produced them, in order.
# Long-running (tens of minutes on 2 cores); run on a quiet machine (no training). Output goes to
# eval/results/ (markdown + JSON + SVG).
#   bash eval/benchmarks.sh [perf|pair|pocket|compare|all]     (THREADS=N, RETUNE=1: see compare)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=eval/results
mkdir -p "$out" .cache
make -s pocketflash
T=${THREADS:-2}

if [ "$what" = perf ] || [ "$what" = all ]; then
    # Synthetic models of exact shapes: the target's cost regime on this device (--ops: where a
    # B-row forward's time goes).
    for sm in pocket:q4_1 pocket:q8_0 pocket:f16 qwen3-0.6b:q4_1; do
        shape=${sm%%:*} type=${sm#*:}
        f=.cache/synth-$shape-$type.gguf
        [ -f "$f" ] || ./pocketflash synth --shape "$shape" --type "$type" -o "$f"
        ./pocketflash bench-model -m "$f" -t "$T" --reps 3 --ops --json "$out/bench-model-$shape-$type.json" \
            | tee "$out/bench-model-$shape-$type.md"
    done
    # the 8-bit KV cache (--kv q8) on the quantized shapes
    for sm in pocket:q4_1 pocket:q8_0 qwen3-0.6b:q4_1; do
        shape=${sm%%:*} type=${sm#*:}
        f=.cache/synth-$shape-$type.gguf
        ./pocketflash bench-model -m "$f" -t "$T" --reps 3 --ops --kv q8 \
            --json "$out/bench-model-$shape-$type-kvq8.json" | tee "$out/bench-model-$shape-$type-kvq8.md"
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
    # The Pocket-shape stand-in (function-preserving expansion of the trained pair), Q4_1, with the
    # DFlash2 draft (its Dec head and head vocabulary included).
    make -s pocket-standin
    tgt=.cache/pocket-standin-q4_1.gguf
    d=.cache/pocket-standin-dflash2-q4_1.gguf
    common=(--tasks eval/tasks --prompts 4 -n 48 --reps 2 -t "$T")
    ./pocketflash bench-model -m "$tgt" -t "$T" --reps 3 --json "$out/bench-model-standin-q4_1.json" \
        | tee "$out/bench-model-standin-q4_1.md"
    for B in 4 8; do
        ./pocketflash bench -m "$tgt" -d "$d" --block "$B" "${common[@]}" --json "$out/bench-pocket-dflash2-b$B.json" \
            --svg "$out/bench-pocket-dflash2-b$B.svg" | tee "$out/bench-pocket-dflash2-b$B.md"
    done
    # the same B=4 run with the draft's head over the whole vocabulary (what the head vocabulary saves)
    ./pocketflash bench -m "$tgt" -d "$d" --block 4 --draft-head full "${common[@]}" \
        --json "$out/bench-pocket-dflash2-b4-fullhead.json" | tee "$out/bench-pocket-dflash2-b4-fullhead.md"
    ./pocketflash tune -m "$tgt" -d "$d" --tasks eval/tasks --prompts 3 -n 48 --reps 2 -t "$T" \
        -o "$out/profile-pocket.json" | tee "$out/tune-pocket.md"
    ./pocketflash bench -m "$tgt" -d "$d" --profile "$out/profile-pocket.json" "${common[@]}" \
        --json "$out/bench-pocket-tuned.json" --svg "$out/bench-pocket-tuned.svg" | tee "$out/bench-pocket-tuned.md"
    ./pocketflash bench -m "$tgt" -d "$d" --spec dec --block 8 "${common[@]}" --json "$out/bench-pocket-dec-b8.json" \
        | tee "$out/bench-pocket-dec-b8.md"
    ./pocketflash bench -m "$tgt" -d "$d" --spec dec --block 16 "${common[@]}" --json "$out/bench-pocket-dec.json" \
        | tee "$out/bench-pocket-dec.md"
fi

if [ "$what" = compare ] || [ "$what" = all ]; then
    # Fixed blocks, Dec gating, the tuned profile as a prior and the adaptive block in ONE
    # interleaved run per kernel level (c(B) differs by 2x between AVX-512 and AVX2), each level with
    # its own tuned profile and bench-model's bandwidth/compute probes.
    make -s pocket-standin
    tgt=.cache/pocket-standin-q4_1.gguf
    d=.cache/pocket-standin-dflash2-q4_1.gguf
    for lvl in avx512 avx2; do
        PF_KERNELS=$lvl ./pocketflash bench-model -m "$tgt" -t "$T" --reps 2 --json "$out/bench-model-standin-q4_1-$lvl.json" \
            | tee "$out/bench-model-standin-q4_1-$lvl.md"
        # the profile of an earlier run is kept (a prior tuned in another hour's regime is the case
        # the adaptation is for); RETUNE=1 tunes it again first
        if [ "${RETUNE:-0}" = 1 ] || [ ! -f "$out/profile-pocket-$lvl.json" ]; then
            PF_KERNELS=$lvl ./pocketflash tune -m "$tgt" -d "$d" --tasks eval/tasks --prompts 4 -n 48 --reps 1 -t "$T" \
                -o "$out/profile-pocket-$lvl.json" | tee "$out/tune-pocket-$lvl.md"
        fi
        # every fixed block worth trying against Dec, the profile as a prior and the adaptive block,
        # 3 interleaved repetitions (single runs move each arm up to 5% either way)
        PF_KERNELS=$lvl ./pocketflash bench -m "$tgt" -d "$d" --tasks eval/tasks --prompts 8 -n 48 --reps 3 -t "$T" \
            --compare "fixed:2,fixed:3,fixed:4,fixed:6,dec,profile:$out/profile-pocket-$lvl.json,adaptive" \
            --json "$out/compare-pocket-$lvl.json" --svg "$out/compare-pocket-$lvl.svg" | tee "$out/compare-pocket-$lvl.md"
    done
fi
