#!/usr/bin/env bash
# `make models`: fetch pinned inputs, build the corpus + eval sets, prune the tokenizer, train the
# stand-in target (resumable), export GGUF + reference logits, write the manifest.
# Each stage is skipped when its output exists (FORCE=1 redoes everything except training; delete
# train/work/target/ to retrain from scratch). Everything large stays under train/work/.
set -euo pipefail
cd "$(dirname "$0")"
HERE=$PWD
WORK=$HERE/work
PY=/usr/bin/python3
source openblas_env.sh
FORCE=${FORCE:-0}
# ---- toolchain, pinned inputs, tokenizer check, corpus + eval sets
bash corpus.sh

# ---- pruned tokenizer, packed training windows
if [ "$FORCE" = 1 ] || [ ! -f "$WORK/data/train_ids.npy" ]; then
    # models/pf-tokenizer.json is committed and reused; PF_REPRUNE=1 recounts and prunes again
    REPRUNE=""; [ "${PF_REPRUNE:-0}" = 1 ] && REPRUNE=--reprune
    nice -n 5 $PY prepare_data.py $REPRUNE
fi

# ---- train (budget in tokens, fixed seed, checkpointed; resumes where it stopped)
if [ ! -f "$WORK/target/final.pt" ]; then
    $PY train_target.py train --resume
fi

# ---- export GGUF + reference logits + samples, then the manifest
$PY export_target.py
$PY write_manifest.py

# ---- the drafts (DFlash, DFlash2) and the DFlash2 draft's Dec head
cd ..  # the repository root (this script runs inside train/)
bash train/make_drafts.sh
bash train/make_dec.sh
