#!/bin/sh
# Cross-device agreement (make test-cross-device): greedy token ids of the Q8_0 and Q4_1 stand-in
# target (models/pf-target-f16.gguf quantized here) under qemu-aarch64 for each CPU model (NEON,
# dotprod, i8mm levels) must equal those of this x86-64 machine's scalar level, token for token
# (one thread each; the expectation is computed at test time, nothing is committed). The quantized
# matmuls of every level and the f16 attention of the ARM levels are bitwise the scalar reference;
# the x86 SIMD levels' f16 attention and float kernels reduce in another order, so x86 best level
# vs scalar is reported, not asserted. Then the 8-bit KV cache (--kv q8, refused on scalar) with the
# Q8_0 model: x86 best level = each CPU model.
# Usage: tests/arm64_cross_device.sh NATIVE_CLI ARM64_CLI QEMU SYSROOT WORKDIR CPU...
set -eu
native=$1 arm=$2 qemu=$3 root=$4 work=$5
shift 5
mkdir -p "$work"
cat > "$work/prompts.jsonl" <<'JSONL'
{"id": "a", "prompt": "What is the capital of France?"}
{"id": "b", "prompt": "Write a short poem about the sea."}
{"id": "c", "prompt": "List three prime numbers and explain why they are prime."}
JSONL
ids() { grep -o '"response_ids": *\[[^]]*\]' "$1"; }
fail=0
for t in q8_0 q4_1; do
    m=$work/target-$t.gguf
    [ -s "$m" ] || "$native" quantize models/pf-target-f16.gguf "$m" "$t" >/dev/null
    PF_KERNELS=scalar "$native" gen -m "$m" -i "$work/prompts.jsonl" -o "$work/x86-scalar-$t.jsonl" -n 32 -t 1 >/dev/null
    "$native" gen -m "$m" -i "$work/prompts.jsonl" -o "$work/x86-best-$t.jsonl" -n 32 -t 1 >/dev/null
    ids "$work/x86-scalar-$t.jsonl" > "$work/x86-scalar-$t.ids"
    ids "$work/x86-best-$t.jsonl" > "$work/x86-best-$t.ids"
    n=$(grep -c '[0-9]' "$work/x86-scalar-$t.ids" || true)
    if [ "$n" != 3 ]; then echo "FAIL $t: the x86 run gave $n id lists, expected 3"; fail=1; continue; fi
    # Not (yet) a guarantee: the x86 SIMD levels' f16 attention and float kernels (RMSNorm, SwiGLU,
    # softmax) reduce in another order than the scalar reference, so their greedy text may leave
    # the scalar one; said on one line, not failed. What holds: every ARM level = x86 scalar, and
    # with the 8-bit cache (integer scores) x86 best level = every ARM level.
    if ! cmp -s "$work/x86-scalar-$t.ids" "$work/x86-best-$t.ids"; then
        echo "note $t: x86 best level differs from x86 scalar (f16 attention and float kernels not in the scalar order on x86)"
    fi
    for cpu in "$@"; do
        "$qemu" -L "$root" -cpu "$cpu" "$arm" gen -m "$m" -i "$work/prompts.jsonl" -o "$work/arm-$cpu-$t.jsonl" -n 32 -t 1 >/dev/null
        ids "$work/arm-$cpu-$t.jsonl" > "$work/arm-$cpu-$t.ids"
        if cmp -s "$work/x86-scalar-$t.ids" "$work/arm-$cpu-$t.ids"; then
            echo "ok   $t: qemu-aarch64 -cpu $cpu = x86 scalar, $(($(tr -cd , < "$work/arm-$cpu-$t.ids" | wc -c) + 3)) tokens"
        else
            echo "FAIL $t: qemu-aarch64 -cpu $cpu differs from x86 scalar"; diff "$work/x86-scalar-$t.ids" "$work/arm-$cpu-$t.ids" | head -4; fail=1
        fi
    done
done
m=$work/target-q8_0.gguf
"$native" gen -m "$m" -i "$work/prompts.jsonl" -o "$work/x86-best-kvq8.jsonl" -n 32 -t 1 --kv q8 >/dev/null
ids "$work/x86-best-kvq8.jsonl" > "$work/x86-best-kvq8.ids"
n=$(grep -c '[0-9]' "$work/x86-best-kvq8.ids" || true)
if [ "$n" != 3 ]; then echo "FAIL kv q8: the x86 run gave $n id lists, expected 3"; fail=1; fi
for cpu in "$@"; do
    "$qemu" -L "$root" -cpu "$cpu" "$arm" gen -m "$m" -i "$work/prompts.jsonl" -o "$work/arm-$cpu-kvq8.jsonl" -n 32 -t 1 \
        --kv q8 >/dev/null
    ids "$work/arm-$cpu-kvq8.jsonl" > "$work/arm-$cpu-kvq8.ids"
    if [ "$n" = 3 ] && cmp -s "$work/x86-best-kvq8.ids" "$work/arm-$cpu-kvq8.ids"; then
        echo "ok   q8_0 --kv q8: qemu-aarch64 -cpu $cpu = x86 best level"
    else
        echo "FAIL q8_0 --kv q8: qemu-aarch64 -cpu $cpu differs from x86 best level"; fail=1
    fi
done
exit $fail
