#!/bin/sh
# Throughput of `pocketflash serve --parallel N` (docs/performance.md): N different greedy chat
# requests of TOKENS tokens each (ignore_eos, so every one is TOKENS long), streamed, sent all at
# once and then one after another to the same server: aggregate tok/s of each (wall clock of the
# whole run, prefill included) and their ratio; then BURST requests through N clients for the time
# to first token under load (p50, p99). Needs node and the OpenAI SDK (mk/serve.mk).
# usage: tools/serve_burst.sh MODEL [N [TOKENS [BURST [SERVE FLAGS...]]]]
set -eu
model=$1
n=${2:-4}
tokens=${3:-64}
burst=${4:-32}
[ $# -gt 4 ] && shift 4 || shift $#
cli=${PF_CLI:-./pocketflash}
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
"$cli" serve -m "$model" --port 0 --parallel "$n" "$@" 2>"$dir/log" &
pid=$!
for _ in $(seq 600); do grep -q 'listening on' "$dir/log" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$dir/log")
[ -n "$url" ] || { cat "$dir/log"; exit 1; }
sed -n 's/.*(\(model.*\))$/server: \1/p' "$dir/log"
python3 - "$dir" "$n" "$tokens" "$burst" <<'EOF'
import json, sys
d, n, tokens, burst = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
topics = ["the sea", "a mountain", "the city at night", "an old library", "the first snow", "a train journey",
          "a garden in spring", "the desert", "a lighthouse", "a market"]
def req(i):
    return {"endpoint": "chat", "body": {"model": "m", "messages": [{"role": "user", "content":
            "Write a short story about %s." % topics[i % len(topics)]}], "max_tokens": tokens,
            "temperature": 0, "ignore_eos": True, "stream": True}}
json.dump([req(i) for i in range(n)], open(d + "/set.json", "w"))
json.dump([req(i) for i in range(burst)], open(d + "/burst.json", "w"))
EOF
export PF_OPENAI_DIR="${PF_OPENAI_DIR:-$(pwd)/.cache/openai-node}"
node tests/serve/client.mjs "$url" burst "$dir/set.json" "$dir/warm.json" "$n"
node tests/serve/client.mjs "$url" burst "$dir/set.json" "$dir/seq.json" 1
node tests/serve/client.mjs "$url" burst "$dir/set.json" "$dir/conc.json" "$n"
node tests/serve/client.mjs "$url" burst "$dir/burst.json" "$dir/load.json" "$n"
python3 - "$dir" <<'EOF'
import json, sys
d = sys.argv[1]
def run(name):
    r = json.load(open("%s/%s.json" % (d, name)))
    bad = [x for x in r["results"] if not x.get("ok")]
    if bad:
        sys.exit("%s: %d requests failed: %s" % (name, len(bad), bad[0]))
    toks = sum(x["usage"]["completion_tokens"] for x in r["results"])
    return r, toks / (r["wall_ms"] / 1000)
seq, seq_tps = run("seq")
conc, conc_tps = run("conc")
same = [a["text"] for a in seq["results"]] == [b["text"] for b in conc["results"]]
print("one after another: %.1f tok/s (%.2f s)" % (seq_tps, seq["wall_ms"] / 1000))
print("all at once:       %.1f tok/s (%.2f s), %.2fx, answers identical: %s"
      % (conc_tps, conc["wall_ms"] / 1000, conc_tps / seq_tps, "yes" if same else "NO"))
# the decoding alone: the tokens after each first one over the time after it (one after another:
# each request's own; all at once: from the last first token to the end), which leaves out the
# prompts' prefill that batching does not make cheaper
def after_first(r):
    return sum(x["usage"]["completion_tokens"] - 1 for x in r["results"])
seq_dec = after_first(seq) / (sum(x["ms"] - x["ttft_ms"] for x in seq["results"]) / 1000)
conc_dec = after_first(conc) / ((conc["wall_ms"] - max(x["ttft_ms"] for x in conc["results"])) / 1000)
print("decoding after the first tokens: %.1f tok/s one after another, %.1f at once, %.2fx;"
      " prefill (first token) %.0f ms per request one after another, %.0f ms until the last at once"
      % (seq_dec, conc_dec, conc_dec / seq_dec, sum(x["ttft_ms"] for x in seq["results"]) / len(seq["results"]),
         max(x["ttft_ms"] for x in conc["results"])))
load, load_tps = run("load")
ttft = sorted(x["ttft_ms"] for x in load["results"] if x["ttft_ms"] is not None)
pct = lambda p: ttft[min(len(ttft) - 1, int(p * len(ttft)))]
print("burst of %d through %d clients: %.1f tok/s, time to first token p50 %.0f ms, p99 %.0f ms"
      % (len(ttft), len(conc["results"]), load_tps, pct(0.5), pct(0.99)))
EOF
