#!/usr/bin/env bash
# Dec head (decision head) for the DFlash2 draft (issue #6/#7): the C engine decodes training
# prompts speculatively at the draft's trained block (8 since the v2 drafts) and logs every round
# (features + accepted length); a logistic regression (train_dec.py) is fitted on them; dec-attach
# stores it in the draft file itself as dec.* tensors, so one file carries draft + Dec. Run after make_drafts.sh.
#   draft/train/make_dec.sh      (PF_DEC_PROMPTS training prompts, default 120)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
export OPENBLAS_CORETYPE=SkylakeX
W=draft/train/work/dec
T=models/pf-target-f16.gguf
D=models/pf-draft-dflash2.gguf
N=${PF_DEC_PROMPTS:-120}
mkdir -p "$W"
make pocketflash >/dev/null
[ -f "$D" ] || { echo "missing $D (make_drafts.sh first)" >&2; exit 1; }
# training prompts only (never eval/tasks): the drafts' greedy prompt shard
P=draft/train/work/drafts/prompts_greedy_1.jsonl
[ -f "$P" ] || { echo "missing $P (make_drafts.sh writes it)" >&2; exit 1; }
rm -f "$W/rounds.bin"
# the head must not see itself: log with the draft's weights as they are (any dec.* is ignored by dflash)
./pocketflash gen -m "$T" -d "$D" --block 8 -i "$P" --limit "$N" -o "$W/gen.jsonl" -n 96 -t 1 \
    --log-rounds "$W/rounds.bin"
$PY draft/train/train_dec.py "$W/rounds.bin" "$W/dec.json" --calibration draft/train/dec_calibration.md --positions 7
./pocketflash dec-attach -d "$D" --dec "$W/dec.json" -o "$W/draft-with-dec.gguf"
mv "$W/draft-with-dec.gguf" "$D"
echo "Dec head attached to $D"

# every model also as a Hugging Face checkpoint (export_hf_all.sh)
bash draft/train/export_hf_all.sh
