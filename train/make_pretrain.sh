#!/usr/bin/env bash
# The target's pretraining stage: inputs (pretrain_fetch.sh), documents (pretrain_corpus.py), the
# tokenizer and token stream (prepare_pretrain.py), then the resumable run (pretrain_target.py).
# Each stage is skipped when its output exists (FORCE=1 redoes all but the run; delete
# work/pretrain/ to train from scratch). Runs niced: a long job that yields the cores to the rest.
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3
FORCE=${FORCE:-0}
export OMP_WAIT_POLICY=passive
source openblas_env.sh
bash corpus.sh
bash pretrain_fetch.sh
redo() { [ "$FORCE" = 1 ] || [ ! -f "$1" ]; }
if [ "$FORCE" != 1 ] && { [ -f work/pretrain/final.pt ] || $PY pretrain_target.py finish; }; then
    # the run has ended (here or in the committed snapshot): the tuning needs only the tokenizer
    nice -n 10 $PY prepare_pretrain.py vocab
    exit 0
fi
if redo work/pre/docs.jsonl; then nice -n 10 $PY pretrain_corpus.py; fi
if redo work/pre/tokenizer.json; then nice -n 10 $PY prepare_pretrain.py vocab; fi
if redo work/pre/stream.u16; then nice -n 10 $PY prepare_pretrain.py encode; fi
$PY prepare_pretrain.py manifest
if [ ! -f work/pretrain/final.pt ]; then nice -n 19 $PY pretrain_target.py train; fi
