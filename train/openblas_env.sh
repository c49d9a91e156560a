# Sourced by the recipe's scripts: OpenBLAS's kernels pinned to one core type per instruction set, so
# a run's float results do not depend on which model of CPU OpenBLAS detects. SkylakeX's kernels use
# AVX-512 and die with an illegal instruction on a CPU without it; there Haswell's (AVX2) run.
# OPENBLAS_CORETYPE set by the caller wins.
if grep -q -w avx512f /proc/cpuinfo 2>/dev/null; then
    export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
else
    export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
fi
