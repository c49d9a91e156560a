#!/bin/sh
# Single-request decode speed through `pocketflash serve` against `pocketflash run` for the same
# chat prompt, interleaved (ROUNDS pairs): run's "decode: ... tok/s" line next to the server's
# pocketflash.decode_tok_s (the same clock: first generated token to last) and the client's view
# (completion tokens / request wall time, HTTP and prefill included). Not part of make test.
# usage: tests/serve/decode_vs_run.sh TARGET [DRAFT] [TOKENS] [ROUNDS] [THREADS]
set -eu
T=$1 D=${2:-} N=${3:-128} R=${4:-5} TH=${5:-1}
CLI=${PF_CLI:-./pocketflash}
Q='Write a short story about a lighthouse keeper and a storm.'
log=$(mktemp) out=$(mktemp)
DFLAG=${D:+-d $D}
$CLI serve -m "$T" $DFLAG -t "$TH" --port 0 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log" "$out"' EXIT
for _ in $(seq 100); do grep -q 'listening on' "$log" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$log")
body=$(printf '{"messages":[{"role":"user","content":"%s"}],"max_tokens":%d,"temperature":0,"ignore_eos":true}' "$Q" "$N")
curl -s "$url/v1/chat/completions" -d "$body" >/dev/null # warm-up
echo "round  run_tok_s  serve_tok_s  serve_client_tok_s"
for i in $(seq "$R"); do
    $CLI run -m "$T" $DFLAG -t "$TH" --chat --ignore-eos -n "$N" -p "$Q" 2>"$out" >/dev/null
    run=$(sed -n 's/^decode: .*(\([0-9.]*\) tok\/s).*/\1/p' "$out")
    t0=$(date +%s.%N)
    curl -s "$url/v1/chat/completions" -d "$body" >"$out"
    t1=$(date +%s.%N)
    srv=$(jq '.pocketflash.decode_tok_s' "$out")
    cli=$(jq --arg w "$(echo "$t1 - $t0" | bc -l)" '.usage.completion_tokens / ($w|tonumber)' "$out")
    printf '%5d  %9.1f  %11.1f  %18.1f\n' "$i" "$run" "$srv" "$cli"
done
