# Target architecture, from the compiler ($(CC) -dumpmachine): which kernel files are built and
# with which flags. Included by the Makefile right after the source lists.
#   x86-64:  kernels/x86/*.c; *_avx2.c, *_avxvnni.c, *_avx512.c get their ISA flags (the Makefile's isa_rule),
#            chosen at run time by CPUID
#   aarch64: kernels/arm/*.c; *_dotprod.c and *_i8mm.c get their ISA flags, the rest baseline
#            armv8-a NEON; chosen at run time (getauxval / sysctlbyname, kernels/cpu.c)
#   other:   the scalar reference only
PF_ARCH := $(firstword $(subst -, ,$(shell $(CC) -dumpmachine 2>/dev/null)))

ifneq (,$(filter aarch64 arm64,$(PF_ARCH)))
LIB_SRC += $(sort $(foreach d,$(LIB_DIRS_ARM),$(wildcard $(d)/*.c)))
# GCC 12.2 for aarch64 stops with an internal compiler error (vect_transform_reduction) in a
# reduction loop of this test file; test code, so it is simply not vectorised.
$(BUILD)/tests/test_expand.o: CFLAGS += -fno-tree-vectorize
else ifneq (,$(filter x86_64 amd64,$(PF_ARCH)))
LIB_SRC += $(sort $(foreach d,$(LIB_DIRS_X86),$(wildcard $(d)/*.c)))
endif

# Scalar reference results must be the same bits on every compiler and architecture: no fused
# multiply-add unless the code asks for one (fmaf). GCC's -std=c11 already implies this; clang
# (Android NDK, Apple) contracts by default, and GNU C mode on aarch64 would too.
CFLAGS += -ffp-contract=off
