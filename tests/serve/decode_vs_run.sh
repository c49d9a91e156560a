#!/bin/sh
# Single-request decode speed through `pocketflash serve` against `pocketflash run` for the same
# chat prompt, interleaved (ROUNDS pairs): run's "decode: ... tok/s" line next to the server's
# pocketflash.decode_tok_s (the same clock: first generated token to last) and the client's view
# (completion tokens / request wall time, HTTP and prefill included). Not part of make test.
# The last line gives the medians and the ratio serve / run. SPEC=dflash BLOCK=4 (environment)
# fixes the strategy on both sides (the default, Dec, adapts to timings, and a server session keeps
# its planner's state from request to request while each run starts afresh).
# usage: tests/serve/decode_vs_run.sh TARGET [DRAFT] [TOKENS] [ROUNDS] [THREADS]
set -eu
T=$1 D=${2:-} N=${3:-128} R=${4:-5} TH=${5:-1}
CLI=${PF_CLI:-./pocketflash}
Q='Write a short story about a lighthouse keeper and a storm.'
log=$(mktemp) out=$(mktemp) rows=$(mktemp)
DFLAG=${D:+-d $D}
$CLI serve -m "$T" $DFLAG -t "$TH" --port 0 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log" "$out" "$rows"' EXIT
for _ in $(seq 100); do grep -q 'listening on' "$log" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$log")
EXTRA='' RFLAGS=''
if [ -n "${SPEC:-}" ]; then EXTRA=",\"spec\":\"$SPEC\",\"block\":${BLOCK:-4}"; RFLAGS="--spec $SPEC --block ${BLOCK:-4}"; fi
body=$(printf '{"messages":[{"role":"user","content":"%s"}],"max_tokens":%d,"temperature":0,"ignore_eos":true%s}' "$Q" "$N" "$EXTRA")
curl -s "$url/v1/chat/completions" -d "$body" >/dev/null # warm-up
echo "round  run_tok_s  serve_tok_s  serve_client_tok_s"
for i in $(seq "$R"); do
    $CLI run -m "$T" $DFLAG $RFLAGS -t "$TH" --chat --ignore-eos -n "$N" -p "$Q" 2>"$out" >/dev/null
    run=$(sed -n 's/^decode: .*(\([0-9.]*\) tok\/s).*/\1/p' "$out")
    t0=$(date +%s.%N)
    curl -s "$url/v1/chat/completions" -d "$body" >"$out"
    t1=$(date +%s.%N)
    srv=$(jq '.pocketflash.decode_tok_s' "$out")
    cli=$(jq --arg w "$(echo "$t1 - $t0" | bc -l)" '.usage.completion_tokens / ($w|tonumber)' "$out")
    printf '%5d  %9.1f  %11.1f  %18.1f\n' "$i" "$run" "$srv" "$cli" | tee -a "$rows"
done
med() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
r=$(awk '{print $2}' "$rows" | med) s=$(awk '{print $3}' "$rows" | med) c=$(awk '{print $4}' "$rows" | med)
printf 'median  %9.1f  %11.1f  %18.1f   serve/run %.3f\n' "$r" "$s" "$c" "$(echo "$s / $r" | bc -l)"
