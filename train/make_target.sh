#!/usr/bin/env bash
# The pretrained-then-tuned stand-in target, end to end: pretraining (make_pretrain.sh), the tuning
# sets (tune_long.py, prepare_tune.py: one for each phase of the run, the math in place-value then
# column form, tune_math.py and column_math.py), the tuning run
# (tune_target.py), then the GGUF with the pretraining tokenizer. Each stage is skipped when its
# output exists (FORCE=1 redoes the data stages); both runs resume from their checkpoints. The
# export goes to models/ only with PF_SHIP=1 (with the tokenizer and eval/tasks/long.jsonl, the long
# inputs' held-out items); otherwise to work/tune/export/ for a look first (export_target.py --models).
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3
FORCE=${FORCE:-0}
export OMP_WAIT_POLICY=passive
source openblas_env.sh
bash make_pretrain.sh
redo() { [ "$FORCE" = 1 ] || [ ! -f "$1" ]; }
if redo work/tune/long_train.jsonl; then nice -n 10 $PY tune_long.py; fi
mathcheck() {   # the generators' own checks: every operation and equation chain they write is true
    [ -f work/tune/math_check.ok ] || { $PY column_math.py check && $PY tune_math.py check; } > work/tune/math_check.log
    touch work/tune/math_check.ok
}
if redo work/tune/data/val.json; then mathcheck; nice -n 10 $PY prepare_tune.py place; fi
if redo work/tune/data_column/val.json; then mathcheck; nice -n 10 $PY prepare_tune.py column; fi
if [ ! -f work/tune/run/final.pt ]; then nice -n 19 $PY tune_target.py train; fi
OUT=work/tune/export
if [ "${PF_SHIP:-0}" = 1 ]; then
    OUT=../models
    cp work/pre/tokenizer.json ../models/pf-tokenizer.json
    # the long inputs' held-out items join the eval with the target that reads them (2,048 tokens)
    $PY -c 'import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    e = json.loads(line)
    print(json.dumps({k: e[k] for k in ("id", "type", "lang", "prompt", "reference")}, ensure_ascii=False))' \
        work/tune/long_eval.jsonl > ../eval/tasks/long.jsonl.tmp
    mv ../eval/tasks/long.jsonl.tmp ../eval/tasks/long.jsonl
fi
$PY export_target.py work/tune/run/final.pt --tokenizer work/pre/tokenizer.json \
    --val work/tune/data/val.json --models "$OUT" \
    --what "the pretraining stream (train/pretrain_manifest.json), then the tuning set (prepare_tune.py)"
