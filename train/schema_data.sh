#!/usr/bin/env bash
# The stand-in target's constrained outputs as draft training data: schema'd extraction prompts
# (schema_prompts.py, eval packages held out), answered greedily by `pocketflash gen` under each
# line's own schema (speculative with the committed draft: the same text), then their features
# (taps_set.sh) as the features sets `schema` (training) and `schemaeval` (the structured suite's
# prompts, for a teacher-forced measure of the constrained text). train_draft.py train --mix
# schema:F then trains on them beside the general set. Resumable: every step is skipped when its
# output exists. The machine's long job: everything at nice 19.
#   train/schema_data.sh [N_PROMPTS]     (default 4000)
set -euo pipefail
renice -n 19 $$ >/dev/null
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
NICE="nice -n 19"
N=${1:-4000}
T=models/pf-target-f16.gguf
D=models/pf-draft-dflash2.gguf
W=train/work/drafts
S=train/work/schema
TAPS=1,2,3,4
export PF_TARGET=$T PF_DRAFT_WORK=$PWD/$W OMP_WAIT_POLICY=passive
mkdir -p "$S"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$S/pipeline.log"; }
make pocketflash >/dev/null
[ -f "$S/prompts.jsonl" ] || $PY train/schema_prompts.py --n "$N" --out "$S/prompts.jsonl"
# the suite's prompts with their schemas, under ids whose prefix is their task type
[ -f "$S/eval_prompts.jsonl" ] || $PY -c "
import json, sys
with open(sys.argv[2], 'w') as f:
    for l in open(sys.argv[1], encoding='utf-8'):
        r = json.loads(l)
        f.write(json.dumps({'id': 'extraction-' + r['id'], 'prompt': r['prompt'], 'schema': r['schema']}, ensure_ascii=False) + '\n')
" eval/tasks/structured/extraction.jsonl "$S/eval_prompts.jsonl"
half=$(( ($(wc -l < "$S/prompts.jsonl") + 1) / 2 ))
for k in 0 1; do
    [ -f "$S/gen_$k.jsonl" ] && continue
    sed -n "$((k * half + 1)),$(((k + 1) * half))p" "$S/prompts.jsonl" > "$S/prompts_$k.jsonl"
    $NICE ./pocketflash gen -m "$T" -d "$D" -i "$S/prompts_$k.jsonl" -o "$S/gen_$k.jsonl" -n 128 -t 1 -c 1024 \
        2>>"$S/gen.log" &
done
wait
[ -f "$S/gen_eval.jsonl" ] || $NICE ./pocketflash gen -m "$T" -d "$D" -i "$S/eval_prompts.jsonl" -o "$S/gen_eval.jsonl" \
    -n 128 -t 1 -c 1024 2>>"$S/gen.log"
log "gen: $(cat "$S"/gen_0.jsonl "$S"/gen_1.jsonl | wc -l) responses, $($PY -c "
import json, sys
print(sum(len(json.loads(l)['response_ids']) for f in sys.argv[1:] for l in open(f)))" "$S"/gen_0.jsonl "$S"/gen_1.jsonl) response tokens"
source train/taps_set.sh
taps_set schema 2 "$S/gen_0.jsonl" "$S/gen_1.jsonl"
taps_set schemaeval 1 "$S/gen_eval.jsonl"
log "schema features done"
