#!/bin/sh
# One long libFuzzer run (make fuzz-long): target NAME for SECONDS at nice 19 over its corpus
# tests/fuzz/corpus/NAME, which it grows and which later runs resume from; the seeds join it.
# Afterwards the corpus is minimized (libFuzzer's merge: the smallest set with the same coverage),
# so what is committed stays small, and one line reports the run: executions, exec/s, coverage,
# and the execution at which coverage last grew (how long it has been flat).
# usage: tools/fuzz_long.sh NAME SECONDS MAX_LEN SEED_DIR...
# FUZZ_RUNS=N also ends the run after N executions (whichever comes first).
# kill -INT on the fuzzer ends a run early; what it found is kept (see below).
# FUZZ_FORK=N runs N fuzzing processes on the corpus at once (libFuzzer's fork mode), one per core.
# FUZZ_LEN_CONTROL=N is libFuzzer's -len_control (default here 0: inputs up to MAX_LEN from the
# start). libFuzzer's own default (100) begins every run with short inputs and raises the limit as
# it goes, so a run resumed over a grown corpus spends its start re-walking short inputs and finds
# length-dependent paths late in every run, never flat for long.
# tests/fuzz/NAME.dict, where it exists, is the target's libFuzzer dictionary.
set -eu
name=$1 secs=$2 max_len=$3
shift 3
bin=build-fuzz/fuzz_$name corpus=tests/fuzz/corpus/$name log=build-fuzz/long-$name.log
dict=""
[ ! -f "tests/fuzz/$name.dict" ] || dict="-dict=tests/fuzz/$name.dict"
mkdir -p "$corpus"
seeds=""
for d in "$@"; do [ ! -d "$d" ] || seeds="$seeds $d"; done
rc=0
# shellcheck disable=SC2086 # the seed folders are words
UBSAN_OPTIONS=halt_on_error=1 nice -n 19 "$bin" -max_total_time="$secs" -max_len="$max_len" -rss_limit_mb=4096 \
    -len_control="${FUZZ_LEN_CONTROL:-0}" $dict ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} ${FUZZ_FORK:+-fork="$FUZZ_FORK"} -print_final_stats=1 -artifact_prefix="build-fuzz/long-$name-" "$corpus" $seeds >"$log" 2>&1 || rc=$?
# SIGINT to the fuzzer (kill -INT PID) ends a run early and keeps it: libFuzzer exits 72, and the
# corpus is merged and reported as after a full run. (A fork-mode parent can go on starting jobs
# after SIGINT; then stop this script and it, and rerun the lines below by hand.)
[ "$rc" != 72 ] || rc=0
if [ "$rc" != 0 ]; then
    echo "fuzz-long $name: FAILED (exit $rc); the input is build-fuzz/long-$name-*; log $log:"
    tail -n 40 "$log"
    exit 1
fi
# The minimal corpus with the same coverage replaces the grown one.
rm -rf "$corpus.min" && mkdir -p "$corpus.min"
nice -n 19 "$bin" -merge=1 -max_len="$max_len" -rss_limit_mb=4096 "$corpus.min" "$corpus" >"$log.merge" 2>&1
rm -rf "$corpus" && mv "$corpus.min" "$corpus"
# libFuzzer's lines: "#RUNS <event> cov: C ft: F corp: ..." and the final "stat::..." lines; in fork
# mode "#RUNS: cov: C ft: F corp: ... time: Ts" and no "stat::" lines.
# (fork mode's "cov:" counts features; the merge's edge count is then reported as cov.)
edges=$(sed -n 's/.*; \([0-9]*\) new coverage edges.*/\1/p' "$log.merge" | tail -n 1)
awk -v name="$name" -v edges="${edges:-0}" -v files="$(ls "$corpus" | wc -l)" -v kb="$(du -sk "$corpus" | cut -f1)" '
    /^#[0-9]+/ && / cov: / {
        n = substr($1, 2) + 0
        for (i = 1; i < NF; i++) if ($i == "cov:") c = $(i + 1) + 0
        for (i = 1; i < NF; i++) if ($i == "ft:") f = $(i + 1) + 0
        if (!seen || c > cov) { cov = c; grew = n; seen = 1 }
        ft = f
        last = n
        for (i = 1; i < NF; i++) if ($i == "time:") t = $(i + 1) + 0
    }
    /^stat::number_of_executed_units:/ { runs = $2 }
    /^stat::average_exec_per_sec:/ { eps = $2 }
    END {
        if (runs == 0) { runs = last; eps = t > 0 ? last / t : 0; if (edges > 0) cov = edges }
        flat = runs > 0 ? 100 * (runs - grew) / runs : 0
        printf "fuzz-long %s: %d runs, %d exec/s, cov %d ft %d, coverage last grew at run %d (flat for the last %.0f%%), corpus %d files %d kB\n",
            name, runs, eps, cov, ft, grew, flat, files, kb
    }' "$log"
