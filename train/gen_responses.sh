#!/usr/bin/env bash
# The target's own responses to the drafts' training prompts, in chunks so that a stopped run loses
# at most one chunk per worker (each chunk's output is renamed into place when complete; a re-run
# skips the chunks that exist). Two workers, one thread each (the machine's two cores).
#
#   train/gen_responses.sh W TARGET NEW
# reads W/prompts_{greedy,sampled}_{0,1}.jsonl and writes W/gen/<file>.<chunk>.jsonl, then
# W/gen_{greedy,sampled}_{0,1}.jsonl (the chunks concatenated in order). Sampled shard 0 runs at
# temperature 0.7, shard 1 at 1.0 (per-prompt seeds: gen's --seed S + line index, S per chunk).
set -euo pipefail
W=$1 T=$2 NEW=$3
CHUNK=${PF_GEN_CHUNK:-2000}
# Speculative generation with the committed DFlash2 draft: greedy responses are the target's own
# token for token, sampled ones have its distribution (their exact text then depends on the draft
# file); PF_GEN_DRAFT= (empty) decodes plainly.
DRAFT=${PF_GEN_DRAFT-models/pf-draft-dflash2.gguf}
DARGS=()
[ -n "$DRAFT" ] && [ -f "$DRAFT" ] && DARGS=(-d "$DRAFT")
mkdir -p "$W/gen"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$W/pipeline.log"; }

run_file() {  # name sampling-args...
    local name=$1
    shift
    local src="$W/prompts_$name.jsonl" n
    n=$(wc -l < "$src")
    for ((c = 0; c * CHUNK < n; c++)); do
        local out="$W/gen/$name.$(printf %03d $c).jsonl" in="$W/gen/$name.$(printf %03d $c).prompts"
        [ -f "$out" ] && continue
        sed -n "$((c * CHUNK + 1)),$(((c + 1) * CHUNK))p" "$src" > "$in"
        local t0 s tokens
        t0=$(date +%s.%N)
        # a chunk's seed base: the shard's base + the chunk's first line, so seeds do not depend on CHUNK
        if [ $# -gt 0 ]; then s=(--seed $(( $1 + c * CHUNK )) --temp "$2"); else s=(); fi
        ./pocketflash gen -m "$T" -i "$in" -o "$out" -n "$NEW" -t 1 -c 2048 "${s[@]}" "${DARGS[@]}" 2>>"$W/gen.log"
        rm -f "$in"
        tokens=$(python3 -c "import json,sys; print(sum(len(json.loads(l)['response_ids']) for l in open(sys.argv[1])))" "$out")
        log "gen $name chunk $c: $(wc -l < "$out") responses, $tokens response tokens, $(python3 -c "import sys; print(f'{float(sys.argv[1]) / (float(sys.argv[3]) - float(sys.argv[2])):.0f}')" "$tokens" "$t0" "$(date +%s.%N)") tok/s"
    done
}

worker() {  # shard
    run_file "greedy_$1"
    if [ "$1" = 0 ]; then run_file sampled_0 1000 0.7; else run_file sampled_1 5000000 1.0; fi
}
worker 0 &
worker 1 &
wait
for f in greedy_0 greedy_1 sampled_0 sampled_1; do
    n=$(wc -l < "$W/prompts_$f.jsonl")
    got=$(cat "$W"/gen/$f.*.jsonl 2>/dev/null | wc -l)
    [ "$got" = "$n" ] || { echo "gen $f: $got of $n responses" >&2; exit 1; }
    cat "$W"/gen/$f.*.jsonl /dev/null 2>/dev/null > "$W/gen_$f.jsonl.tmp" || true
    mv "$W/gen_$f.jsonl.tmp" "$W/gen_$f.jsonl"
done
log "generation: $(cat "$W"/gen_greedy_*.jsonl "$W"/gen_sampled_*.jsonl | wc -l) responses"
