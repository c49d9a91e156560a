#!/bin/sh
# Decode speed through the CLI, the Python binding and the Java binding on one prompt: plain, then
# the speculative modes of $SPEC (default: the draft's default strategy, and dflash with a fixed
# block 4), REPS rounds interleaved (CLI, Python, Java back to back in each), THREADS threads (default 2); every figure
# is the library's own clock ((n_gen - 1) / decode_s). Prints one line per run, the median per path
# and the median of each binding's ratio to the CLI of its round. Needs `make pocketflash
# libpocketflash.so` and a JDK; run it under the CPU lock.
#   tools/bindings_bench/run.sh TARGET DRAFT [REPS] [N]
set -e
target=$1 draft=$2 reps=${3:-5} n=${4:-128}
THREADS=${THREADS:-2}
SPEC=${SPEC:-"default dflash:4"} # the speculative modes after plain: default (the draft's default strategy), dflash:B
prompt="Write a short story about a robot who learns to paint."
here=$(cd "$(dirname "$0")" && pwd) root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
jdk=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
javac -d "$tmp" "$root/bindings/android/java/org/pocketflash/PocketFlash.java" "$here/Bench.java"
cc -std=c11 -O2 -shared -fPIC -I"$root/include" -I"$jdk/include" -I"$jdk/include/linux" -o "$tmp/libpocketflash_jni.so" \
    "$root/bindings/android/jni/pocketflash_jni.c" "$root/build/libpocketflash.so" -Wl,-rpath,"$root/build"
for mode in plain $SPEC; do
    case $mode in
        plain) cliflag="--spec ar" ;;
        default) cliflag="-d $draft" ;;
        dflash:*) cliflag="-d $draft --spec dflash --block ${mode#dflash:}" ;;
    esac
    for r in $(seq "$reps"); do
        c=$("$root/pocketflash" run -m "$target" $cliflag -p "$prompt" -n "$n" -t "$THREADS" --ignore-eos 2>&1 >/dev/null |
            sed -n 's/^decode: .*(\([0-9.]*\) tok\/s).*/\1/p')
        p=$(python3 "$here/bench.py" "$target" "$draft" "$prompt" "$n" "$mode" "$THREADS" 2>/dev/null | cut -d' ' -f1)
        j=$(java -Djava.library.path="$tmp" -cp "$tmp" Bench "$target" "$draft" "$prompt" "$n" "$mode" "$THREADS" 2>/dev/null | cut -d' ' -f1)
        echo "$mode $r cli $c python $p java $j"
    done
done | tee "$tmp/runs"
python3 -c '
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for mode in dict.fromkeys(r[0] for r in rows):
    for i, path in ((3, "cli"), (5, "python"), (7, "java")):
        v = [float(r[i]) for r in rows if r[0] == mode]
        print("median %s %s %.1f tok/s" % (mode, path, statistics.median(v)))
    for i, path in ((5, "python"), (7, "java")):
        r = [float(x[i]) / float(x[3]) for x in rows if x[0] == mode]
        print("median %s %s / cli of the same round %.3f" % (mode, path, statistics.median(r)))' "$tmp/runs"
