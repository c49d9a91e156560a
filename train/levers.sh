#!/usr/bin/env bash
# The lever table of train/DRAFTS.md: each change to the DFlash2 recipe trained on the same
# small budget and measured the same way (held-out teacher-forced first-position accuracy and tau at
# B=4 and B=8, per task type, EMA 0.99 weights at the end of the run), one niced run after another.
#   train/levers.sh [NAME ...]     default: every lever below, skipping those already done
# Warm-started levers start from the committed draft (models/pf-draft-dflash2.gguf) for STEPS steps;
# the from-scratch pair (target-layer init vs random) trains SCRATCH_STEPS steps from nothing.
# Each run is then measured again at every anchor (accept --stride 1), which gives the rounds greedy
# speculation would run (rtau; train_draft.py eval_accept). Needs the stand-in's features (make
# drafts, steps 1-3). Results: $OUT/<name>/curve.jsonl, accept.json and `levers.sh --table`.
set -euo pipefail
renice -n 19 $$ >/dev/null   # the machine's long job: the whole script at nice 19, not only its runs
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
export OMP_WAIT_POLICY=passive PF_TORCH_THREADS=2
source train/openblas_env.sh
W=train/work/drafts
OUT=${PF_LEVERS_OUT:-train/work/levers}
STEPS=${PF_LEVER_STEPS:-300}
SCRATCH_STEPS=${PF_LEVER_SCRATCH_STEPS:-600}
ROWS_PER_STEP=$((16 * 16 * 7))
INIT=models/pf-draft-dflash2.gguf
export PF_TARGET=models/pf-target-f16.gguf PF_DRAFT_WORK=$PWD/$W

# name | steps | extra train_draft.py arguments
LEVERS=(
    "base|$STEPS|--init-gguf $INIT --taps 1,2,3"
    "taps234|$STEPS|--init-gguf $INIT --taps 2,3,4"
    "layers4|$STEPS|--init-gguf $INIT --taps 1,2,3 --layers 4"
    "nodistill|$STEPS|--init-gguf $INIT --taps 1,2,3 --distill 0"
    "hard50|$STEPS|--init-gguf $INIT --taps 1,2,3 --anchor-hard 0.5"
    "hardlong|$((4 * STEPS))|--init-gguf $INIT --taps 1,2,3 --anchor-hard 0.75 --anchor-pow 2"
    "scratch|$SCRATCH_STEPS|--taps 1,2,3 --ffn 1024"
    "inittarget|$SCRATCH_STEPS|--taps 1,2,3 --ffn 1024 --init-target"
    "taps124|$STEPS|--init-gguf $INIT --taps 1,2,4"
    "schema25|$((2 * STEPS))|--init-gguf $INIT --taps 1,2,3 --mix schema:0.25 --lr 3e-4"
    "schema25lo|$((2 * STEPS))|--init-gguf $INIT --taps 1,2,3 --mix schema:0.25 --lr 1e-4"
)

if [ "${1:-}" = --table ]; then
    $PY - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
types = ["chat", "code", "extraction", "math", "qa", "rewrite", "summary"]
print("| lever | steps | rows | acc1 B=4 | tau B=4 | tau B=8 | " + " | ".join(f"{t} B=4" for t in types) +
      " | rounds: tau B=4 | B=8 | math B=4 | rewrite B=4 | rows/s |")
print("|---|" + "---|" * (10 + len(types)))
for name in sorted(os.listdir(out)):
    p = os.path.join(out, name, "curve.jsonl")
    f = os.path.join(out, name, "final.json")
    if not (os.path.exists(p) and os.path.exists(f)):
        continue
    r = [json.loads(l) for l in open(p)][-1]
    fin = json.load(open(f))
    ap = os.path.join(out, name, "accept.json")
    acc = json.load(open(ap)) if os.path.exists(ap) else {}
    rt = " | ".join(f"{acc[k]:.3f}" if k in acc else "-" for k in ("rtau_4", "rtau_8", "rtau_4_math", "rtau_4_rewrite"))
    print(f"| {name} | {r['step']} | {r['rows']} | {r['acc1_4']:.3f} | {r['tau_4']:.3f} | {r['tau_8']:.3f} | " +
          " | ".join(f"{r.get('tau_4_' + t, 0):.2f}" for t in types) + f" | {rt} | {fin['rows'] / max(1, fin['wall_s']):.0f} |")
PY
    exit 0
fi

mkdir -p "$OUT"
for spec in "${LEVERS[@]}"; do
    IFS='|' read -r name steps args <<<"$spec"
    [ $# -eq 0 ] || [[ " $* " == *" $name "* ]] || continue
    if [ ! -f "$OUT/$name/final.json" ]; then
        # shellcheck disable=SC2086
        nice -n 19 $PY train/train_draft.py train --version 2 --run "$OUT/$name" --data train --eval-data eval \
            --rows $((steps * ROWS_PER_STEP)) --lr 6e-4 --distill 1.0 --schedule wsd --warmup-frac 0.03 \
            --decay-frac 0.3 --ema 0.99 --curve-rows 1e6 --ckpt-minutes 10 --resume $args \
            >>"$OUT/$name.out" 2>&1
        echo "lever $name: $(tail -1 "$OUT/$name/train.log")"
    fi
    if [ ! -f "$OUT/$name/accept.json" ]; then
        nice -n 19 $PY train/train_draft.py accept --ckpt "$OUT/$name/final.pt" --data eval --blocks 4 8 --stride 1 \
            --out "$OUT/$name/accept.json" >>"$OUT/$name.out" 2>&1
        echo "lever $name rounds: $(tail -2 "$OUT/$name.out" | tr '\n' ' ')"
    fi
    # a lever trained on the constrained outputs (schema_data.sh) is also measured on the structured
    # suite's constrained text, as is the committed draft it starts from
    if [[ "$args" == *"--mix schema"* ]] && [ ! -f "$OUT/$name/accept_schema.json" ]; then
        [ -f "$OUT/committed_schema.json" ] || nice -n 19 $PY train/train_draft.py accept --ckpt "$INIT" \
            --data schemaeval --blocks 4 8 --stride 1 --out "$OUT/committed_schema.json" >>"$OUT/$name.out" 2>&1
        nice -n 19 $PY train/train_draft.py accept --ckpt "$OUT/$name/final.pt" --data schemaeval --blocks 4 8 \
            --stride 1 --out "$OUT/$name/accept_schema.json" >>"$OUT/$name.out" 2>&1
        echo "lever $name on the suite's constrained text: $(tail -2 "$OUT/$name.out" | tr '\n' ' ')"
    fi
done
