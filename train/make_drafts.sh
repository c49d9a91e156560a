#!/usr/bin/env bash
# Draft models for pocketflash: a DFlash2 draft trained on the target's OWN responses to training
# prompts, exported as a dflash GGUF file (with its head vocabulary; make_dec.sh then adds the Dec
# head), and for the stand-in also a DFlash (v1) draft, the kind llama.cpp loads. `make drafts` calls
# it, then make_dec.sh.
#
#   make drafts                                   the shipped stand-in pair (models/)
#   make drafts TARGET=my.gguf PROMPTS=my.jsonl   a draft for any Qwen3 GGUF target, from a file of
#                                                 JSON lines {"prompt": ..., "type": optional}
# Every step is skipped when its output exists: generation resumes by chunk, the training from its
# last checkpoint (every ~10 min), so a stopped run goes on where it stopped.
# Environment:
#   PF_TARGET / PF_PROMPTS   what TARGET= / PROMPTS= set (default: the stand-in and its corpus)
#   PF_DRAFT_OUT             where a user target's draft goes (default train/work/drafts-NAME/)
#   PF_DRAFT_PROMPTS  corpus prompts for the stand-in (default 60000; 30% sampled at T 0.7 / 1.0,
#                     per-type weights favour rewrite, summary, qa and chat, Chinese prompts first)
#   PF_DRAFT_LONG     long inputs among the stand-in's prompts (2000; train/work/tune/long_train.jsonl,
#                     those that fit the target's context: none for a 512-token target)
#   PF_DRAFT_NEW      max response tokens (128)
#   PF_DRAFT_ROWS     supervised block rows of the training (20,000,000): the run goes on, across
#                     stops, until it has trained them (warm-up, constant rate, a final decay)
#   PF_DRAFT_INIT     a draft GGUF the run starts from when it has no checkpoint (default for the
#                     stand-in: the committed draft when it was trained on this target, so a new
#                     machine continues the shipped one instead of starting over; PF_DRAFT_INIT=
#                     (empty) trains from scratch)
#   PF_DRAFT_ROWS_V1  the same for the stand-in's DFlash (v1) draft, trained after the DFlash2 one
#                     (2,000,000)
#   PF_DRAFT_DECAY    the final decay's share of the budget (0.1)
#   PF_DRAFT_CURVE    millions of rows at which the learning curve is measured (0.25,0.5,1,2,4,...)
#   PF_DRAFT_EXPORT=1 export the current checkpoint (its EMA weights) before the budget is reached
#   PF_DRAFT_ANNEAL=N anneal instead: branch the run's last checkpoint, decay the rate to 0 over N
#                     steps, export that (the run stays at constant rate and resumes on the next call)
#   PF_DRAFT_MIX=NAME:F  with PF_DRAFT_ANNEAL: the branch trains a share F of its steps on the features
#                     set NAME; `schema` (the target's constrained outputs) is built by schema_data.sh
# This is the machine's one long job, every step at nice 19: generation two single-thread engine
# processes, the taps (features + the target's top-32 next tokens for distillation) two, the
# training ONE PyTorch process with 2 threads waiting passively, so builds and tests take the cores
# back when they need them. Logs (gen tok/s, taps progress, training rows/s, rows done / budget and
# the learning curve: held-out first-position accuracy and tau at B=4 and 8) under the work folder.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
source train/openblas_env.sh
STANDIN=models/pf-target-f16.gguf
# whether draft file $1 was trained on the target $T (export_draft.py writes the target's SHA-256 in it)
trained_on_target() { [ "$($PY train/export_draft.py target-sha "$1")" = "$(sha256sum "$T" | cut -d' ' -f1)" ]; }
# the draft-head vocabulary of draft file $1: the target's response tokens ranked by frequency; the
# head scores the top ones covering 99.9% by default (run/bench --draft-head overrides)
attach_head() {
    local n
    n=$($PY train/head_tokens.py "$W/head_tokens.txt" 0.999)
    ./pocketflash draft-head -d "$1" -m "$T" --ranked "$W/head_tokens.txt" -n "$n" -o "$1.head.tmp" | tee -a "$W/pipeline.log"
    mv "$1.head.tmp" "$1"
}
T=${PF_TARGET:-$STANDIN}
PROMPTS=${PF_PROMPTS:-}
N_PROMPTS=${PF_DRAFT_PROMPTS:-60000}
N_LONG=${PF_DRAFT_LONG:-2000}
NEW=${PF_DRAFT_NEW:-128}
ROWS=${PF_DRAFT_ROWS:-20000000}
NICE="nice -n 19"
export OMP_WAIT_POLICY=passive PF_TORCH_THREADS=2
[ -f "$T" ] || { echo "make drafts: missing target $T" >&2; exit 1; }
[ -z "$PROMPTS" ] || [ -f "$PROMPTS" ] || { echo "make drafts: missing prompt file $PROMPTS" >&2; exit 1; }
if [ "$T" = "$STANDIN" ]; then
    W=train/work/drafts
    OUTD=models
    INIT=${PF_DRAFT_INIT-models/pf-draft-dflash2.gguf}
    # the committed draft is a start only for the target it was trained on: a new target's draft
    # trains from scratch (a draft exported before it named its target counts as another target's)
    if [ -z "${PF_DRAFT_INIT+set}" ] && [ -f "$INIT" ] && ! trained_on_target "$INIT"; then
        INIT=""
    fi
    TAPS=1,2,3,4          # the features after target layers 1-4; the draft reads [1,2,3] (z-lab's rule)
    DTAPS=1,2,3
else
    NAME=$(basename "$T" .gguf)
    W=train/work/drafts-$NAME
    OUTD=${PF_DRAFT_OUT:-$W}
    INIT=${PF_DRAFT_INIT-}
    TAPS=""               # z-lab's rule for a 3-layer draft on this target's depth
    DTAPS=""
fi
D2=$OUTD/$( [ "$T" = "$STANDIN" ] && echo pf-draft-dflash2 || echo "$NAME-dflash2").gguf
export PF_TARGET=$T PF_DRAFT_WORK=$PWD/$W
mkdir -p "$W" "$OUTD"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$W/pipeline.log"; }
bash train/corpus.sh >/dev/null   # the Python toolchain, and the corpus the stand-in's prompts come from
make pocketflash >/dev/null

# The generations are only valid for the target they came from.
TSUM=$(sha256sum "$T" | cut -c1-16)
if [ -f "$W/target.sha" ] && [ "$(cat "$W/target.sha")" != "$TSUM" ]; then
    log "target changed: discarding old generations, features and checkpoints"
    rm -rf "$W"/gen "$W"/gen_* "$W"/train_* "$W"/eval_* "$W"/run-*
fi
echo "$TSUM" > "$W/target.sha"

# 1. training prompts, two shards each of greedy and sampled (the stand-in's never an eval prompt:
#    checked by draft_data.py against eval/tasks)
PKEY=$( [ -n "$PROMPTS" ] && sha256sum "$PROMPTS" | cut -c1-16 || echo "$N_PROMPTS+$N_LONG")
if [ ! -f "$W/prompts_greedy_0.jsonl" ] || [ "$(cat "$W/prompts.n" 2>/dev/null)" != "$PKEY" ]; then
    if [ -n "$PROMPTS" ]; then
        $PY train/draft_data.py userprompts "$PROMPTS" --sampled-frac 0.3 --shards 2 | tee -a "$W/pipeline.log"
    else
        $NICE $PY train/draft_data.py prompts --n "$N_PROMPTS" --weights 1,1,0.8,1.6,1.4,1.4,1.6 --zh-first \
            --long "$N_LONG" --sampled-frac 0.3 --shards 2 | tee -a "$W/pipeline.log"
    fi
    echo "$PKEY" > "$W/prompts.n"
    rm -rf "$W"/gen "$W"/gen_*.jsonl "$W"/train_*
fi

# 2. the target's own responses (C engine; chunked and resumable; speculative with the stand-in's
#    committed draft, plain for another target)
GEN_DRAFT=""; [ "$T" = "$STANDIN" ] && GEN_DRAFT=models/pf-draft-dflash2.gguf
[ -f "$W/gen_sampled_1.jsonl" ] || PF_GEN_DRAFT=$GEN_DRAFT $NICE bash train/gen_responses.sh "$W" "$T" "$NEW"

# 3. features from the C engine (the forward the drafts are fed by at run time): the residual rows
#    after the tapped target layers (never the last one, which llama.cpp's loader cannot serve) and the
#    target's top-32 next tokens after every row; two single-thread processes over the halves
source train/taps_set.sh
taps_set train 2 "$W"/gen_greedy_0.jsonl "$W"/gen_greedy_1.jsonl "$W"/gen_sampled_0.jsonl "$W"/gen_sampled_1.jsonl
# the held-out eval prompts, answered greedily: the learning curve's teacher-forced acceptance
$PY train/draft_data.py evalprompts
[ -f "$W/gen_eval.jsonl" ] || $NICE ./pocketflash gen -m "$T" -i "$W/eval_prompts.jsonl" -o "$W/gen_eval.jsonl" -n "$NEW" -t 1 -c 2048
taps_set eval 1 "$W/gen_eval.jsonl"

# 4. DFlash2: 3 layers, block 8, hard-label CE + the target's top-32 distribution (distillation), lr
#    6e-4 warm-up / constant / final decay (WSD), EMA weights (what the curve evaluates and the export
#    writes), one niced process; resumes from its checkpoint on every call until the budget is
#    trained. Without a checkpoint it starts from INIT (the shipped draft: a new machine has no
#    checkpoint), or from scratch.
R=$W/run-dflash2
CK=$R/final.pt
START=()
[ -f "$R/ckpt.pt" ] || [ -z "$INIT" ] || [ ! -f "$INIT" ] || START=(--init-gguf "$INIT")
if [ -n "${PF_DRAFT_ANNEAL:-}" ]; then
    # an annealing branch of the run's last checkpoint (train_draft.py branch): the rate decays to 0
    # over PF_DRAFT_ANNEAL steps; the run itself stays at constant rate for the next call
    [ -f "$R/ckpt.pt" ] || { echo "make drafts: PF_DRAFT_ANNEAL needs a checkpoint in $R" >&2; exit 1; }
    S=$($PY -c "import torch, sys; print(torch.load(sys.argv[1], map_location='cpu')['step'])" "$R/ckpt.pt")
    MIX=${PF_DRAFT_MIX:-}
    A=$R-anneal-$S${MIX:+-${MIX%%:*}}
    [ "${MIX%%:*}" != schema ] || [ -f "$W/schema_feats.npy" ] || bash train/schema_data.sh
    [ -f "$A/ckpt.pt" ] || $PY train/train_draft.py branch --run "$R" --out "$A" --decay-steps "$PF_DRAFT_ANNEAL" \
        ${MIX:+--mix "$MIX"}
    if [ ! -f "$A/final.pt" ]; then
        $NICE $PY train/train_draft.py train --version 2 --run "$A" --data train --eval-data eval \
            --ckpt-minutes 10 --resume >> "$A.out" 2>&1 &
        echo $! > "$W/train.pid"
        wait $!
    fi
    log "DFlash2 anneal: $(tail -1 "$A/train.log")"
    CK=$A/final.pt
elif [ ! -f "$R/final.pt" ]; then
    $NICE $PY train/train_draft.py train --version 2 --run "$R" --data train --eval-data eval \
        --rows "$ROWS" --lr 6e-4 --distill 1.0 --schedule wsd --warmup-frac 0.01 --decay-frac "${PF_DRAFT_DECAY:-0.1}" \
        --ema 0.999 ${DTAPS:+--taps "$DTAPS"} ${PF_DRAFT_CURVE:+--curve-rows "$PF_DRAFT_CURVE"} "${START[@]}" \
        --ckpt-minutes 10 --resume >> "$R.out" 2>&1 &
    echo $! > "$W/train.pid"   # nice execs the trainer: its pid, for kill -STOP / -CONT around benchmarks
    wait $!
fi
[ -n "${PF_DRAFT_ANNEAL:-}" ] || log "DFlash2: $(tail -1 "$R/train.log")"

# 5. export (when the run has finished, or PF_DRAFT_EXPORT=1: its current EMA weights) and, for the
#    stand-in, the reference for tests/test_draft_ref.c; make_dec.sh then fits the Dec head
if [ ! -f "$CK" ] && [ "${PF_DRAFT_EXPORT:-0}" = 1 ]; then
    CK=$W/run-dflash2-snapshot.pt
    $PY train/train_draft.py snapshot --run "$R" --out "$CK"
fi
if [ -f "$CK" ] && { [ ! -f "$D2" ] || [ "$CK" -nt "$D2" ]; }; then
    $PY train/export_draft.py gguf "$CK" "$D2.tmp" | tee -a "$W/pipeline.log"
    mv "$D2.tmp" "$D2"
    [ "$T" = "$STANDIN" ] && $PY train/export_draft.py ref models/pf-draft-dflash.gguf "$D2" models/pf-draft-ref.json \
        | tee -a "$W/pipeline.log"
    attach_head "$D2"
fi

# 6. the stand-in's DFlash (v1) draft, the kind llama.cpp loads: the same features and recipe, its own
#    budget (PF_DRAFT_ROWS_V1), started from the committed one only when that was trained on this
#    target; exported with the same head vocabulary, then the reference redone with both files
D1=models/pf-draft-dflash.gguf
if [ "$T" = "$STANDIN" ] && [ -z "${PF_DRAFT_ANNEAL:-}" ]; then
    R1=$W/run-dflash
    START1=()
    if [ ! -f "$R1/ckpt.pt" ] && [ -f "$D1" ] && trained_on_target "$D1"; then
        START1=(--init-gguf "$D1")
    fi
    if [ ! -f "$R1/final.pt" ]; then
        $NICE $PY train/train_draft.py train --version 1 --run "$R1" --data train --eval-data eval \
            --rows "${PF_DRAFT_ROWS_V1:-2000000}" --lr 6e-4 --distill 1.0 --schedule wsd --warmup-frac 0.01 \
            --decay-frac "${PF_DRAFT_DECAY:-0.1}" --ema 0.999 ${DTAPS:+--taps "$DTAPS"} "${START1[@]}" \
            --ckpt-minutes 10 --resume >> "$R1.out" 2>&1 &
        echo $! > "$W/train.pid"
        wait $!
    fi
    log "DFlash: $(tail -1 "$R1/train.log")"
    if [ -f "$R1/final.pt" ] && { [ ! -f "$D1" ] || [ "$R1/final.pt" -nt "$D1" ]; }; then
        $PY train/export_draft.py gguf "$R1/final.pt" "$D1.tmp" | tee -a "$W/pipeline.log"
        mv "$D1.tmp" "$D1"
        attach_head "$D1"
        [ ! -f "$D2" ] || $PY train/export_draft.py ref "$D1" "$D2" models/pf-draft-ref.json | tee -a "$W/pipeline.log"
    fi
fi

echo "$D2" > "$W/draft.path"
du -ch "$OUTD"/*.gguf | tail -1 | tee -a "$W/pipeline.log"
log "drafts done: $D2"
