# ARM64: cross build (build-arm64/) and the test suite under qemu-user, one run per CPU model
# (docs/arm64.md). qemu 7.2's models cover the three levels: cortex-a53 (NEON only), neoverse-n1
# (+ dotprod), max (+ dotprod, i8mm). Without a binfmt registration the tests reach the ARM CLI
# through a wrapper script given as PF_CLI. PF_EXPECT_LEVEL makes kernels_cpu_levels check that
# each model gets its level. T= selects tests as in `make test`.
ARM64_CC     ?= aarch64-linux-gnu-gcc
ARM64_ROOT   ?= /usr/aarch64-linux-gnu
QEMU_AARCH64 ?= qemu-aarch64
ARM64_CPUS   ?= cortex-a53:neon neoverse-n1:dotprod max:i8mm
ARM64_BUILD  := build-arm64

$(BUILD)/pocketflash: $(CLI_OBJ) $(BUILD)/libpocketflash.a
	$(CC) $(CFLAGS) -o $@ $^ $(CLI_LDLIBS) $(LDLIBS)

.PHONY: arm64 test-arm64 test-arm64-ci test-cross-device
# Linked statically: qemu-user 7.2 here never returns from the first pthread_create of a
# dynamically linked aarch64 program (seen with a 10-line test; a static one runs), and the pool
# and the tests use threads. The cross sysroot has no libmicrohttpd: the ARM CLI is built without
# `serve` (SERVE=0).
arm64:
	$(MAKE) CC=$(ARM64_CC) BUILD=$(ARM64_BUILD) SERVE=0 LDLIBS="-static -lzstd -lxxhash -lm -pthread" $(ARM64_BUILD)/pocketflash $(ARM64_BUILD)/tests/run_tests \
	    $(ARM64_BUILD)/examples/arm64_stream $(ARM64_BUILD)/examples/chat

# The suite under qemu, one CPU model after another (tests/arm64_suite.sh writes the wrappers that
# PF_CLI and PF_EXAMPLE_CHAT name).
test-arm64: arm64 $(TEST_DATA)
	sh tests/arm64_suite.sh $(QEMU_AARCH64) $(ARM64_ROOT) $(ARM64_BUILD) $(SHARED) "$(ARM64_CPUS)" $(T)

# Greedy token ids of F16, Q8_0 and Q4_1 models: every x86 level = x86 scalar = each qemu CPU model (asserted).
test-cross-device: pocketflash arm64
	sh tests/arm64_cross_device.sh ./pocketflash $(ARM64_BUILD)/pocketflash $(QEMU_AARCH64) $(ARM64_ROOT) \
	    $(ARM64_BUILD)/cross-device $(foreach cl,$(ARM64_CPUS),$(firstword $(subst :, ,$(cl))))

# The app-developer example (examples/arm64_stream.c) against the library of this build.
$(BUILD)/examples/arm64_stream: examples/arm64_stream.c $(BUILD)/libpocketflash.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The CI subset (.ci/run): kernels, forward batch invariance, lossless speculation with random
# DFlash/DFlash2 drafts and the lookup draft, for every CPU model at once (one process each); the
# llama.cpp golden under the model with every ARM level (max: its f32 forward alone takes minutes
# under qemu, and every level's kernels are asserted bitwise the scalar reference on each model);
# then the cross-device agreement. The trained-draft lossless tests stay in test-arm64 (more than
# 8 minutes per CPU model under qemu here).
ARM64_CI_TESTS ?= test_kernels forward_batch_invariant spec_greedy_lossless_random spec_greedy_lossless_ngram
ARM64_CI_GOLDEN_CPU ?= max:i8mm
test-arm64-ci: arm64 $(TEST_DATA)
	sh tests/arm64_suite.sh -p $(QEMU_AARCH64) $(ARM64_ROOT) $(ARM64_BUILD) $(SHARED) "$(ARM64_CPUS)" $(ARM64_CI_TESTS)
	sh tests/arm64_suite.sh $(QEMU_AARCH64) $(ARM64_ROOT) $(ARM64_BUILD) $(SHARED) "$(ARM64_CI_GOLDEN_CPU)" golden_llamacpp
	$(MAKE) --no-print-directory test-cross-device

# The per-core performance model of the quantized gemm (docs/arm64-model.md, written by
# tools/arm64_model.py): llvm-mca on the inner loops cross-compiled for each level. The newest
# llvm-mca found is used: Debian 12's llvm-19 has the Neoverse N2 / V1 / V2 scheduling models,
# while its default LLVM 14 gives those CPUs the Cortex-A57 model (the file names the one used).
LLVM_MCA ?= $(firstword $(foreach v,19 18 17 16 15 14,$(shell command -v llvm-mca-$(v) 2>/dev/null)) llvm-mca)
.PHONY: arm64-model
arm64-model:
	python3 tools/arm64_model.py --cc $(ARM64_CC) --mca $(LLVM_MCA) --out docs/arm64-model.md
