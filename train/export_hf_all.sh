#!/usr/bin/env bash
# The recipe's last step: every trained model also as a Hugging Face checkpoint in the layout other
# engines load (Qwen3ForCausalLM target, z-lab DFlashDraftModel / DFlash2DraftModel drafts; see
# export_hf.py), in train/work/hf/<name>/, each converted back with `pocketflash convert` so a
# checkpoint that would not load is caught here. Run by make_dec.sh (the end of `make drafts`) and by
# `make hf-export`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
OUT=${PF_HF_OUT:-train/work/hf}
T=models/pf-target-f16.gguf
mkdir -p "$OUT"
make pocketflash >/dev/null
$PY train/export_hf.py "$T" -o "$OUT/pf-target-f16"
./pocketflash convert "$OUT/pf-target-f16" -o "$OUT/pf-target-f16.check.gguf"
for v in dflash dflash2; do
    D=models/pf-draft-$v.gguf
    [ -f "$D" ] || continue
    $PY train/export_hf.py "$D" --target "$T" -o "$OUT/pf-draft-$v"
    ./pocketflash convert "$OUT/pf-draft-$v" --target "$OUT/pf-target-f16.check.gguf" -o "$OUT/pf-draft-$v.check.gguf"
done
rm -f "$OUT"/*.check.gguf
echo "HF checkpoints in $OUT"
