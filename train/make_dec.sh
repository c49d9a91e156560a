#!/usr/bin/env bash
# Dec head (decision head) for the DFlash2 draft (issue #6/#7, refit in #16): the C engine decodes
# training prompts speculatively and logs every round (features + accepted length), a third of the
# prompts each at a quarter, half and all of the draft's trained block (4, 8, 16 for a block of 16:
# the adaptive planner drafts blocks of every size up to the trained one, and a non-causal block's
# rows depend on its size); a logistic
# regression (train_dec.py) is fitted on them; dec-attach stores it in the draft file itself as
# dec.* tensors, so one file carries draft + Dec. Run after make_drafts.sh.
#   train/make_dec.sh      (PF_DEC_PROMPTS training prompts, default 400)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
source train/openblas_env.sh
# the target and draft make_drafts.sh trained (make drafts TARGET=...), else the stand-in pair
T=${PF_TARGET:-models/pf-target-f16.gguf}
DW=train/work/drafts
[ "$T" = models/pf-target-f16.gguf ] || DW=train/work/drafts-$(basename "$T" .gguf)
D=$(cat "$DW/draft.path" 2>/dev/null || echo models/pf-draft-dflash2.gguf)
W=train/work/dec
[ "$T" = models/pf-target-f16.gguf ] || W=$DW/dec
N=${PF_DEC_PROMPTS:-400}
mkdir -p "$W"
make pocketflash >/dev/null
[ -f "$D" ] || { echo "missing $D (make_drafts.sh first)" >&2; exit 1; }
# training prompts only (never eval/tasks): the drafts' greedy prompt shard
P=$DW/prompts_greedy_1.jsonl
[ -f "$P" ] || { echo "missing $P (make_drafts.sh writes it)" >&2; exit 1; }
rm -f "$W/rounds.bin"
# the head must not see itself: log with the draft's weights as they are (any dec.* is ignored by
# dflash at a fixed block); the draft's default head vocabulary is used, as at run time
head -n "$N" "$P" > "$W/prompts.jsonl"
BLK=$(./pocketflash info "$D" | awk '$1 == "dflash.block_size" {print $3}')
Q=$(( BLK / 4 > 2 ? BLK / 4 : 2 )); H=$(( BLK / 2 > 2 ? BLK / 2 : 2 ))
i=1
for B in $Q $H $BLK; do
    awk -v i=$i 'NR % 3 == i % 3' "$W/prompts.jsonl" > "$W/prompts_b$B.jsonl"
    i=$(( i + 1 ))
    ./pocketflash gen -m "$T" -d "$D" --block $B -i "$W/prompts_b$B.jsonl" -o "$W/gen_b$B.jsonl" -n 96 -t 2 \
        --log-rounds "$W/rounds.bin"
done
# the calibration table: the stand-in's is committed beside the recipe, another target's stays in its work folder
CAL=train/dec_calibration.md
[ "$T" = models/pf-target-f16.gguf ] || CAL=$W/dec_calibration.md
$PY train/train_dec.py "$W/rounds.bin" "$W/dec.json" --calibration "$CAL" \
    --positions $(( BLK - 1 ))
./pocketflash dec-attach -d "$D" --dec "$W/dec.json" -o "$W/draft-with-dec.gguf"
mv "$W/draft-with-dec.gguf" "$D"
echo "Dec head attached to $D"

# every shipped model also as a Hugging Face checkpoint (export_hf_all.sh)
[ "$T" != models/pf-target-f16.gguf ] || bash train/export_hf_all.sh
