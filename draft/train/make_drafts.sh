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
# rows, 1,792 a step = 16 sequences x 16 anchors x 7 rows of a block of 8, of the DFlash base run / of
# each continuation from it),
# PF_DRAFT_MIN1 / PF_DRAFT_MIN2 (if set: shrink those budgets once, after 10 steps, to fit this many
# minutes; recorded in the run config), PF_DRAFT_ACCEPT=0 skips the offline acceptance.
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
ROWS1=${PF_DRAFT_ROWS1:-1161600}
ROWS2=${PF_DRAFT_ROWS2:-1600000}
mkdir -p "$W"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$W/pipeline.log"; }
[ -f "$T" ] || { echo "missing $T (export the target first)" >&2; exit 1; }
make pocketflash >/dev/null 2>&1 || [ -x ./pocketflash ]

# The generations are only valid for the target they came from.
TSUM=$(sha256sum "$T" | cut -c1-16)
if [ -f "$W/target.sha" ] && [ "$(cat "$W/target.sha")" != "$TSUM" ]; then
    log "target changed: discarding old generations, features and checkpoints"
    rm -rf "$W"/gen_* "$W"/train_* "$W"/eval_* "$W"/v1 "$W"/v1b "$W"/v2
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
gen "$W/prompts_sampled_0.jsonl" "$W/gen_sampled_0.jsonl" --temp 0.8 --seed 1000 &
gen "$W/prompts_sampled_1.jsonl" "$W/gen_sampled_1.jsonl" --temp 0.8 --seed 500000 &
wait
log "generation: $(cat "$W"/gen_greedy_*.jsonl "$W"/gen_sampled_*.jsonl | wc -l) responses in $(( $(date +%s) - t0 ))s"

# 3. tapped target features (frozen target read back from the GGUF)
[ -f "$W/train_index.npz" ] || $PY draft/train/draft_data.py features train --bf16 --layers "$LAYERS" "$W"/gen_greedy_*.jsonl \
    "$W"/gen_sampled_*.jsonl | tee -a "$W/pipeline.log"

# 4. a DFlash base run; then, from the SAME base and with the SAME row budget, (a) DFlash continued
#    (fresh warm-up + cosine) and (b) DFlash2 (identity conv, zero successor table) fine-tuned with the
#    selector loss: equal training for the two exported drafts.
[ -f "$W/v1/final.pt" ] || $PY draft/train/train_draft.py train --version 1 --run "$W/v1" --rows "$ROWS1" --layers "$LAYERS" --resume \
    --max-minutes "${PF_DRAFT_MIN1:-0}" > "$W/v1.out" 2>&1
log "v1 base: $(tail -1 "$W/v1/train.log")"
[ -f "$W/v2/final.pt" ] || $PY draft/train/train_draft.py train --version 2 --run "$W/v2" --init "$W/v1/final.pt" \
    --rows "$ROWS2" --layers "$LAYERS" --resume --max-minutes "${PF_DRAFT_MIN2:-0}" > "$W/v2.out" 2>&1
log "v2 (DFlash2): $(tail -1 "$W/v2/train.log")"
[ -f "$W/v1b/final.pt" ] || $PY draft/train/train_draft.py train --version 1 --run "$W/v1b" --init "$W/v1/final.pt" \
    --rows "$ROWS2" --layers "$LAYERS" --resume --max-minutes "${PF_DRAFT_MIN2:-0}" > "$W/v1b.out" 2>&1
log "v1b (DFlash): $(tail -1 "$W/v1b/train.log")"

# 5. export + reference for tests/test_draft_ref.c
#    (only when a checkpoint is newer than its file: a re-run keeps the Dec head make_dec.sh attached)
D1=models/pf-draft-dflash.gguf
D2=models/pf-draft-dflash2.gguf
[ "$D1" -nt "$W/v1b/final.pt" ] || $PY draft/train/export_draft.py gguf "$W/v1b/final.pt" "$D1" | tee -a "$W/pipeline.log"
[ "$D2" -nt "$W/v2/final.pt" ] || $PY draft/train/export_draft.py gguf "$W/v2/final.pt" "$D2" | tee -a "$W/pipeline.log"
if [ ! -f models/pf-draft-ref.json ] || [ "$W/v1b/final.pt" -nt models/pf-draft-ref.json ] || \
   [ "$W/v2/final.pt" -nt models/pf-draft-ref.json ]; then
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
    for v in 1b 2; do
        [ -f "$W/accept_v$v.json" ] || $PY draft/train/train_draft.py accept --ckpt "$W/v$v/final.pt" --data eval --blocks 4 8 --stride 2 \
            --out "$W/accept_v$v.json" | tee -a "$W/pipeline.log"
    done
fi
du -ch models/*.gguf | tee -a "$W/pipeline.log"
log "drafts done"
