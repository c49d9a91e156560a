#!/usr/bin/env bash
# Draft models for pocketflash (issue #6): DFlash and DFlash2 drafts trained on the stand-in target's
# OWN responses to TRAINING prompts, exported as dflash GGUF files plus the C engine's reference file.
# Run after the target is exported (models/pf-target-f16.gguf); make_models.sh calls it at its end.
#
#   draft/train/make_drafts.sh            everything (each step is skipped when its output exists,
#                                         training resumes from its checkpoint)
# Sizes (environment): PF_DRAFT_PROMPTS (training prompts, default 8400), PF_DRAFT_NEW (max response
# tokens, 128), PF_DRAFT_LAYERS (draft layers, default 3; the taps follow z-lab's rule,
# dflash_model.build_target_layer_ids), PF_DRAFT_ROWS1 / PF_DRAFT_ROWS2 (nominal supervised block
# rows of the DFlash / DFlash2 run, 1,792 a step = 16 sequences x 16 anchors x 7 rows of a block of 8;
# defaults 215040 / 163072 = 120 / 91 steps, the budgets this session's 19-minute fit gave;
# PF_DRAFT_ROWS1C / PF_DRAFT_ROWS2C the same for the second stage, 159488 / 134400 = 89 / 75 steps),
# PF_DRAFT_SAMPLED (sampled prompts answered per shard, default 400 of 1,050) and PF_DRAFT_FEATURES
# (responses per file the drafts train on, default 1,100: 2,200 greedy + 800 sampled): this session's
# CPU time ran out; the first ones are kept (gen --limit, features --limit), each sampled one with its
# own seed, so larger values only append,
# PF_DRAFT_MIN / PF_DRAFT_MINC (if set: shrink the stage budgets once, after 10 steps, to fit this many minutes; recorded in
# the run config), PF_DRAFT_ACCEPT=0 skips the offline acceptance.
# Outputs: models/pf-draft-dflash.gguf, models/pf-draft-dflash2.gguf, models/pf-draft-ref.json;
# work files (prompts, generations, features, checkpoints, logs) under draft/train/work/drafts/.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
export OPENBLAS_CORETYPE=SkylakeX
W=draft/train/work/drafts
T=models/pf-target-f16.gguf
N_PROMPTS=${PF_DRAFT_PROMPTS:-8400}
NEW=${PF_DRAFT_NEW:-128}
LAYERS=${PF_DRAFT_LAYERS:-3}
ROWS1=${PF_DRAFT_ROWS1:-215040}
ROWS2=${PF_DRAFT_ROWS2:-163072}
ROWS1C=${PF_DRAFT_ROWS1C:-159488}
ROWS2C=${PF_DRAFT_ROWS2C:-134400}
FEAT_LIMIT=${PF_DRAFT_FEATURES:-1100}
SAMPLED=${PF_DRAFT_SAMPLED:-400}
mkdir -p "$W"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$W/pipeline.log"; }
[ -f "$T" ] || { echo "missing $T (export the target first)" >&2; exit 1; }
make pocketflash >/dev/null 2>&1 || [ -x ./pocketflash ]

# The generations are only valid for the target they came from.
TSUM=$(sha256sum "$T" | cut -c1-16)
if [ -f "$W/target.sha" ] && [ "$(cat "$W/target.sha")" != "$TSUM" ]; then
    log "target changed: discarding old generations, features and checkpoints"
    rm -rf "$W"/gen_* "$W"/train_* "$W"/eval_* "$W"/v1b "$W"/v2 "$W"/v1c "$W"/v2c
fi
echo "$TSUM" > "$W/target.sha"

# 1. training prompts (3/4 greedy, 1/4 sampled at T=0.8), two shards each
if [ ! -f "$W/prompts_greedy_0.jsonl" ] || [ "$(cat "$W/prompts.n" 2>/dev/null)" != "$N_PROMPTS" ]; then
    $PY draft/train/draft_data.py prompts --n "$N_PROMPTS" --sampled-frac 0.25 --shards 2 | tee -a "$W/pipeline.log"
    echo "$N_PROMPTS" > "$W/prompts.n"
    rm -f "$W"/gen_*.jsonl "$W"/train_*
fi

# 2. the target's own responses (C engine, one thread per process, two processes)
gen() {  # in out [sampling args]
    local in=$1 out=$2
    shift 2
    [ -f "$out" ] || ./pocketflash gen -m "$T" -i "$in" -o "$out" -n "$NEW" -t 1 -c 1024 "$@" 2>>"$W/gen.log"
}
t0=$(date +%s)
gen "$W/prompts_greedy_0.jsonl" "$W/gen_greedy_0.jsonl" &
gen "$W/prompts_greedy_1.jsonl" "$W/gen_greedy_1.jsonl" &
wait
gen "$W/prompts_sampled_0.jsonl" "$W/gen_sampled_0.jsonl" --temp 0.8 --seed 1000 --limit "$SAMPLED" &
gen "$W/prompts_sampled_1.jsonl" "$W/gen_sampled_1.jsonl" --temp 0.8 --seed 500000 --limit "$SAMPLED" &
wait
log "generation: $(cat "$W"/gen_greedy_*.jsonl "$W"/gen_sampled_*.jsonl | wc -l) responses in $(( $(date +%s) - t0 ))s"

# 3. tapped target features (frozen target read back from the GGUF), two single-thread processes
#    (one per shard), then merged in shard order
if [ ! -f "$W/train_index.npz" ]; then
    for k in 0 1; do
        [ -f "$W/train_$k""_index.npz" ] || $PY draft/train/draft_data.py features "train_$k" --bf16 --layers "$LAYERS" --limit "$FEAT_LIMIT" \
            "$W/gen_greedy_$k.jsonl" "$W/gen_sampled_$k.jsonl" > "$W/features_$k.log" 2>&1 &
    done
    wait
    cat "$W"/features_[01].log | tee -a "$W/pipeline.log"
    $PY draft/train/draft_data.py merge train train_0 train_1 | tee -a "$W/pipeline.log"
fi

# 4. warm starts from the v1 drafts (2 layers, taps after layers 1,3,5, block 16; as committed at
#    V1_COMMIT): train_draft.warm_start copies their tensors, fc's columns of the taps both share (1, 3),
#    and adds the third layer as identity. Then, on the same batch sequence, (a) DFlash from v1 DFlash
#    and (b) DFlash2 from v1 DFlash2, side by side (lr 3e-4: half the from-scratch rate, as a fine-tune
#    of trained weights; DFlash2's step costs more, so a wall-clock fit gives it fewer steps).
V1_COMMIT=6bfb118
for v in dflash dflash2; do
    [ -f "$W/v1-$v.gguf" ] || { git show "$V1_COMMIT:models/pf-draft-$v.gguf" > "$W/v1-$v.gguf.tmp" && \
        mv "$W/v1-$v.gguf.tmp" "$W/v1-$v.gguf"; }
done
[ -f "$W/v2/final.pt" ] || $PY draft/train/train_draft.py train --version 2 --run "$W/v2" --init-gguf "$W/v1-dflash2.gguf" \
    --rows "$ROWS2" --lr 3e-4 --layers "$LAYERS" --resume --max-minutes "${PF_DRAFT_MIN:-0}" > "$W/v2.out" 2>&1 &
[ -f "$W/v1b/final.pt" ] || $PY draft/train/train_draft.py train --version 1 --run "$W/v1b" --init-gguf "$W/v1-dflash.gguf" \
    --rows "$ROWS1" --lr 3e-4 --layers "$LAYERS" --resume --max-minutes "${PF_DRAFT_MIN:-0}" > "$W/v1b.out" 2>&1 &
wait
log "v2 (DFlash2): $(tail -1 "$W/v2/train.log")"
log "v1b (DFlash): $(tail -1 "$W/v1b/train.log")"
# 4b. a second stage from each (fresh warm-up + cosine, another batch seed): the first stage's budget
#     ended while the loss still fell
[ -f "$W/v2c/final.pt" ] || $PY draft/train/train_draft.py train --version 2 --run "$W/v2c" --init "$W/v2/final.pt" \
    --seed 20261201 --rows "$ROWS2C" --lr 3e-4 --layers "$LAYERS" --resume --max-minutes "${PF_DRAFT_MINC:-0}" \
    > "$W/v2c.out" 2>&1 &
[ -f "$W/v1c/final.pt" ] || $PY draft/train/train_draft.py train --version 1 --run "$W/v1c" --init "$W/v1b/final.pt" \
    --seed 20261201 --rows "$ROWS1C" --lr 3e-4 --layers "$LAYERS" --resume --max-minutes "${PF_DRAFT_MINC:-0}" \
    > "$W/v1c.out" 2>&1 &
wait
log "v2c (DFlash2): $(tail -1 "$W/v2c/train.log")"
log "v1c (DFlash): $(tail -1 "$W/v1c/train.log")"

# 5. export + reference for tests/test_draft_ref.c
#    (only when a checkpoint is newer than its file: a re-run keeps the Dec head make_dec.sh attached)
D1=models/pf-draft-dflash.gguf
D2=models/pf-draft-dflash2.gguf
[ "$D1" -nt "$W/v1c/final.pt" ] || $PY draft/train/export_draft.py gguf "$W/v1c/final.pt" "$D1" | tee -a "$W/pipeline.log"
[ "$D2" -nt "$W/v2c/final.pt" ] || $PY draft/train/export_draft.py gguf "$W/v2c/final.pt" "$D2" | tee -a "$W/pipeline.log"
if [ ! -f models/pf-draft-ref.json ] || [ "$W/v1c/final.pt" -nt models/pf-draft-ref.json ] || \
   [ "$W/v2c/final.pt" -nt models/pf-draft-ref.json ]; then
    $PY draft/train/export_draft.py ref "$D1" "$D2" models/pf-draft-ref.json | tee -a "$W/pipeline.log"
fi

# 5b. draft-head vocabulary: the target's response tokens the drafts are trained on, ranked by
#     frequency; the head scores by default the top ones covering 99.9% of them (pocketflash
#     draft-head; run/bench --draft-head overrides). Re-applied on every run (idempotent).
HEAD_N=$($PY draft/train/head_tokens.py "$W/head_tokens.txt" 0.999)
for D in "$D1" "$D2"; do
    ./pocketflash draft-head -d "$D" -m "$T" --ranked "$W/head_tokens.txt" -n "$HEAD_N" -o "$D.head.tmp" | tee -a "$W/pipeline.log"
    mv "$D.head.tmp" "$D"
done

# 6. offline acceptance: held-out eval prompts, teacher-forced on the target's greedy responses
if [ "${PF_DRAFT_ACCEPT:-1}" != 0 ]; then
    $PY draft/train/draft_data.py evalprompts
    gen "$W/eval_prompts.jsonl" "$W/gen_eval.jsonl"
    [ -f "$W/eval_index.npz" ] || $PY draft/train/draft_data.py features eval --bf16 --layers "$LAYERS" "$W/gen_eval.jsonl"
    for v in 1c 2c; do
        [ -f "$W/accept_v$v.json" ] || $PY draft/train/train_draft.py accept --ckpt "$W/v$v/final.pt" --data eval --blocks 4 8 --stride 2 \
            --out "$W/accept_v$v.json" | tee -a "$W/pipeline.log"
    done
fi
du -ch models/*.gguf | tee -a "$W/pipeline.log"
log "drafts done"
