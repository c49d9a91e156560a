#!/bin/sh
# Cross-device agreement (make test-cross-device): greedy token ids (32 per prompt) of the F16
# stand-in target (models/pf-target-f16.gguf) and its Q8_0 and Q4_1 quantizations (made here) on
# 49 prompts of every task type in both languages (eval/tasks; the F16 model 7 of them) at every x86 level this machine runs
# (PF_KERNELS=avx2, avxvnni, avx512; a level the CPU lacks caps to the next one down) and under
# qemu-aarch64 for each CPU model (NEON, dotprod, i8mm levels) must equal those of this machine's
# scalar level, token for token (one thread each; the expectation is computed at test time,
# nothing is committed). The quantized matmuls of every level are bitwise the scalar reference and
# the float-weight matmuls, the float kernels and attention follow kernels/float_order.h on every
# level (docs/kernels.md), so every level computes the same logits. Any difference fails the run. Then the 8-bit KV cache (--kv q8, refused on scalar) with
# the Q8_0 model: every x86 SIMD level = each CPU model.
# The CPU models run at once, one qemu process each (the runs are one thread; the machines have two
# cores or more); each line says how long its run took.
# Usage: tests/arm64_cross_device.sh NATIVE_CLI ARM64_CLI QEMU SYSROOT WORKDIR CPU...
set -eu
native=$1 arm=$2 qemu=$3 root=$4 work=$5
shift 5
mkdir -p "$work"
# arm_gen TAG MODEL [GEN FLAG...]: every CPU model's run at once into $work/arm-CPU-TAG.ids, its
# seconds into $work/arm-CPU-TAG.s; a run that fails leaves no ids file
arm_gen() {
    tag=$1 model=$2
    shift 2
    for cpu in $cpus; do
        (start=$(date +%s)
         rm -f "$work/arm-$cpu-$tag.ids"
         if "$qemu" -L "$root" -cpu "$cpu" "$arm" gen -m "$model" -i "$work/prompts.jsonl" -o "$work/arm-$cpu-$tag.jsonl" \
             -n 32 -t 1 "$@" >/dev/null; then
             ids "$work/arm-$cpu-$tag.jsonl" > "$work/arm-$cpu-$tag.ids"
         fi
         echo $(($(date +%s) - start)) > "$work/arm-$cpu-$tag.s") &
    done
    wait
}
cpus=$*
# 49 prompts: 4 English and 3 Chinese of each task type of the eval set; the F16 model on 7 of
# them, one of each type, in both languages (qemu runs F16 conversions slowly: ten minutes of CPU
# for the 49 per model, and its float kernels are asserted bitwise the scalar reference on every
# model by the kernel tests)
for f in chat code extraction math qa rewrite summary; do
    grep '"lang": "en"' "eval/tasks/$f.jsonl" | head -4
    grep '"lang": "zh"' "eval/tasks/$f.jsonl" | head -3
done > "$work/prompts-q.jsonl"
for f in chat code extraction math; do grep '"lang": "en"' "eval/tasks/$f.jsonl" | head -1; done > "$work/prompts-f16.jsonl"
for f in qa rewrite summary; do grep '"lang": "zh"' "eval/tasks/$f.jsonl" | head -1; done >> "$work/prompts-f16.jsonl"
x86_levels="avx2 avxvnni avx512"
ids() { grep -o '"response_ids": *\[[^]]*\]' "$1"; }
fail=0
for t in f16 q8_0 q4_1; do
    if [ $t = f16 ]; then cp "$work/prompts-f16.jsonl" "$work/prompts.jsonl"; else cp "$work/prompts-q.jsonl" "$work/prompts.jsonl"; fi
    np=$(wc -l < "$work/prompts.jsonl")
    m=$work/target-$t.gguf
    if [ $t = f16 ]; then
        m=models/pf-target-f16.gguf
    elif [ ! -s "$m" ]; then
        "$native" quantize models/pf-target-f16.gguf "$m" "$t" >/dev/null
    fi
    PF_KERNELS=scalar "$native" gen -m "$m" -i "$work/prompts.jsonl" -o "$work/x86-scalar-$t.jsonl" -n 32 -t 1 >/dev/null
    ids "$work/x86-scalar-$t.jsonl" > "$work/x86-scalar-$t.ids"
    n=$(grep -c '[0-9]' "$work/x86-scalar-$t.ids" || true)
    if [ "$n" != $np ]; then echo "FAIL $t: the x86 run gave $n id lists, expected $np"; fail=1; continue; fi
    for lv in $x86_levels; do
        PF_KERNELS=$lv "$native" gen -m "$m" -i "$work/prompts.jsonl" -o "$work/x86-$lv-$t.jsonl" -n 32 -t 1 >/dev/null
        ids "$work/x86-$lv-$t.jsonl" > "$work/x86-$lv-$t.ids"
        if cmp -s "$work/x86-scalar-$t.ids" "$work/x86-$lv-$t.ids"; then
            echo "ok   $t: x86 PF_KERNELS=$lv = x86 scalar"
        else
            echo "FAIL $t: x86 PF_KERNELS=$lv differs from x86 scalar"; diff "$work/x86-scalar-$t.ids" "$work/x86-$lv-$t.ids" | head -4; fail=1
        fi
    done
    arm_gen $t "$m"
    for cpu in $cpus; do
        if [ -f "$work/arm-$cpu-$t.ids" ] && cmp -s "$work/x86-scalar-$t.ids" "$work/arm-$cpu-$t.ids"; then
            echo "ok   $t: qemu-aarch64 -cpu $cpu = x86 scalar, $(($(tr -cd , < "$work/arm-$cpu-$t.ids" | wc -c) + np)) tokens, $(cat "$work/arm-$cpu-$t.s") s"
        else
            echo "FAIL $t: qemu-aarch64 -cpu $cpu differs from x86 scalar"; [ -f "$work/arm-$cpu-$t.ids" ] && diff "$work/x86-scalar-$t.ids" "$work/arm-$cpu-$t.ids" | head -4; fail=1
        fi
    done
done
m=$work/target-q8_0.gguf
for lv in $x86_levels; do
    PF_KERNELS=$lv "$native" gen -m "$m" -i "$work/prompts.jsonl" -o "$work/x86-$lv-kvq8.jsonl" -n 32 -t 1 --kv q8 >/dev/null
    ids "$work/x86-$lv-kvq8.jsonl" > "$work/x86-$lv-kvq8.ids"
done
n=$(grep -c '[0-9]' "$work/x86-avx2-kvq8.ids" || true)
if [ "$n" != $np ]; then echo "FAIL kv q8: the x86 run gave $n id lists, expected $np"; fail=1; fi
for lv in $x86_levels; do
    if cmp -s "$work/x86-avx2-kvq8.ids" "$work/x86-$lv-kvq8.ids"; then
        echo "ok   q8_0 --kv q8: x86 PF_KERNELS=$lv = x86 avx2"
    else
        echo "FAIL q8_0 --kv q8: x86 PF_KERNELS=$lv differs from x86 avx2"; fail=1
    fi
done
arm_gen kvq8 "$m" --kv q8
for cpu in $cpus; do
    if [ "$n" = $np ] && [ -f "$work/arm-$cpu-kvq8.ids" ] && cmp -s "$work/x86-avx2-kvq8.ids" "$work/arm-$cpu-kvq8.ids"; then
        echo "ok   q8_0 --kv q8: qemu-aarch64 -cpu $cpu = x86 avx2, $(cat "$work/arm-$cpu-kvq8.s") s"
    else
        echo "FAIL q8_0 --kv q8: qemu-aarch64 -cpu $cpu differs from x86 avx2"; fail=1
    fi
done
exit $fail
