#!/usr/bin/env bash
# Draft models for pocketflash: DFlash2 (and DFlash) drafts trained on the stand-in target's OWN
# responses to training prompts, exported as dflash GGUF files plus the C engine's reference file.
# Run after the target is exported (models/pf-target-f16.gguf); `make drafts` calls it, then
# make_dec.sh (Dec head).
#
#   draft/train/make_drafts.sh     every step is skipped when its output exists: generation resumes
#                                  by chunk, the training from its last checkpoint (every ~10 min)
# Sizes (environment):
#   PF_DRAFT_PROMPTS  training prompts (default 60000; 30% sampled at T 0.7 / 1.0, per-type weights
#                     favour rewrite, summary, qa and chat, Chinese prompts first)
#   PF_DRAFT_NEW      max response tokens (128)
#   PF_DRAFT_ROWS     supervised block rows of the DFlash2 training (20,000,000): the run goes on,
#                     across stops, until it has trained them (warm-up, constant rate, a final decay)
#   PF_DRAFT_EXPORT=1 export the current checkpoint (its EMA weights) before the budget is reached
# This is the machine's one long job, every step at nice 19: generation two single-thread engine
# processes, the taps (features + the target's top-32 next tokens for distillation) two, the
# training ONE PyTorch process with 2 threads waiting passively, so builds and tests take the cores
# back when they need them. It prints gen tok/s, taps progress and training rows/s, rows done /
# budget and the learning curve (held-out first-position accuracy and tau at B=4 and 8) into the
# logs under draft/train/work/drafts/.
# Outputs: models/pf-draft-dflash2.gguf (when the run's curve beats the committed draft),
# models/pf-draft-ref.json; work files under draft/train/work/drafts/.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
export OPENBLAS_CORETYPE=SkylakeX
W=draft/train/work/drafts
T=models/pf-target-f16.gguf
N_PROMPTS=${PF_DRAFT_PROMPTS:-60000}
NEW=${PF_DRAFT_NEW:-128}
ROWS=${PF_DRAFT_ROWS:-20000000}
NICE="nice -n 19"
export OMP_WAIT_POLICY=passive PF_TORCH_THREADS=2
mkdir -p "$W"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$W/pipeline.log"; }
[ -f "$T" ] || { echo "missing $T (export the target first)" >&2; exit 1; }
make pocketflash >/dev/null

# The generations are only valid for the target they came from.
TSUM=$(sha256sum "$T" | cut -c1-16)
if [ -f "$W/target.sha" ] && [ "$(cat "$W/target.sha")" != "$TSUM" ]; then
    log "target changed: discarding old generations, features and checkpoints"
    rm -rf "$W"/gen "$W"/gen_* "$W"/train_* "$W"/eval_* "$W"/v3-*
fi
echo "$TSUM" > "$W/target.sha"

# 1. training prompts, two shards each of greedy and sampled (never an eval prompt: checked by
#    draft_data.py against eval/tasks)
if [ ! -f "$W/prompts_greedy_0.jsonl" ] || [ "$(cat "$W/prompts.n" 2>/dev/null)" != "$N_PROMPTS" ]; then
    $NICE $PY draft/train/draft_data.py prompts --n "$N_PROMPTS" --weights 1,1,0.8,1.6,1.4,1.4,1.6 --zh-first \
        --sampled-frac 0.3 --shards 2 | tee -a "$W/pipeline.log"
    echo "$N_PROMPTS" > "$W/prompts.n"
    rm -rf "$W"/gen "$W"/gen_*.jsonl "$W"/train_*
fi

# 2. the target's own responses (C engine; chunked and resumable)
[ -f "$W/gen_sampled_1.jsonl" ] || $NICE bash draft/train/gen_responses.sh "$W" "$T" "$NEW"

# 3. features from the C engine (the forward the drafts are fed by at run time): the residual rows
#    after target layers 1-4 (the drafts pick theirs: [1,2,3] by z-lab's rule, [2,3,4] deeper; all
#    loadable by llama.cpp, which cannot serve the last layer's output) and the target's top-32 next
#    tokens after every row; two single-thread processes over the halves, joined in order
TAPS=1,2,3,4
taps_set() {  # name parts files...
    local name=$1 parts=$2
    shift 2
    [ -f "$W/${name}_feats.npy" ] && return 0
    $NICE $PY draft/train/draft_data.py seqs "$name" --parts "$parts" --taps "$TAPS" "$@" 2>>"$W/pipeline.log" >/dev/null
    local t0 k pre
    t0=$(date +%s)
    for ((k = 0; k < parts; k++)); do
        pre="$W/${name}"; [ "$parts" -gt 1 ] && pre="$W/${name}_p$k"
        $NICE ./pocketflash taps -m "$T" --layers "$TAPS" -i "${pre}_seqs.bin" -o "${pre}_feats.npy" -t 1 \
            --topk 32 --topk-out "${pre}_topk" 2>>"$W/taps_${name}_$k.log" &
    done
    wait
    [ "$parts" -gt 1 ] && $NICE $PY draft/train/draft_data.py joinfeats "$name" "$parts" --suffix feats topk_ids topk_logp \
        2>>"$W/pipeline.log"
    log "taps $name: $(( $(date +%s) - t0 )) s"
}
taps_set train 2 "$W"/gen_greedy_0.jsonl "$W"/gen_greedy_1.jsonl "$W"/gen_sampled_0.jsonl "$W"/gen_sampled_1.jsonl
# the held-out eval prompts, answered greedily: the learning curve's teacher-forced acceptance
$PY draft/train/draft_data.py evalprompts
[ -f "$W/gen_eval.jsonl" ] || $NICE ./pocketflash gen -m "$T" -i "$W/eval_prompts.jsonl" -o "$W/gen_eval.jsonl" -n "$NEW" -t 1 -c 1024
taps_set eval 1 "$W/gen_eval.jsonl"

# 4. DFlash2 v4 from scratch (not a warm start of warm starts): 3 layers, taps [1,2,3], block 8,
#    hard-label CE + the target's top-32 distribution (distillation), lr 6e-4 warm-up / constant /
#    final decay (WSD), EMA weights (what the curve evaluates and the export writes), one niced
#    process; resumes from its checkpoint on every call until the budget is trained
R=$W/v4-2
[ -f "$R/final.pt" ] || $NICE $PY draft/train/train_draft.py train --version 2 --run "$R" --data train --eval-data eval \
    --rows "$ROWS" --lr 6e-4 --distill 1.0 --schedule wsd --warmup-frac 0.01 --ema 0.999 --taps 1,2,3 \
    --ckpt-minutes 10 --resume >> "$R.out" 2>&1
log "v4 DFlash2: $(tail -1 "$R/train.log")"

# 5. export (when the run has finished, or PF_DRAFT_EXPORT=1: its current EMA weights) + the reference
#    for tests/test_draft_ref.c; make_dec.sh then refits the Dec head
D1=models/pf-draft-dflash.gguf
D2=models/pf-draft-dflash2.gguf
CK=$R/final.pt
if [ ! -f "$CK" ] && [ "${PF_DRAFT_EXPORT:-0}" = 1 ]; then
    CK=$W/v4-2-snapshot.pt
    $PY draft/train/train_draft.py snapshot --run "$R" --out "$CK"
fi
if [ -f "$CK" ] && [ "$CK" -nt "$D2" ]; then
    $PY draft/train/export_draft.py gguf "$CK" "$D2" | tee -a "$W/pipeline.log"
    $PY draft/train/export_draft.py ref "$D1" "$D2" models/pf-draft-ref.json | tee -a "$W/pipeline.log"
    # draft-head vocabulary: the target's response tokens ranked by frequency; the head scores the top
    # ones covering 99.9% by default (run/bench --draft-head overrides)
    HEAD_N=$($PY draft/train/head_tokens.py "$W/head_tokens.txt" 0.999)
    ./pocketflash draft-head -d "$D2" -m "$T" --ranked "$W/head_tokens.txt" -n "$HEAD_N" -o "$D2.head.tmp" | tee -a "$W/pipeline.log"
    mv "$D2.head.tmp" "$D2"
fi
du -ch models/*.gguf | tee -a "$W/pipeline.log"
log "drafts done"
