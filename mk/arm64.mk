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

# One wrapper per model: PF_CLI for the tests (a plain path, so the tests that resolve it work);
# test-arm64 writes a second one for examples/chat (PF_EXAMPLE_CHAT, tests/api/test_example.c).
$(ARM64_BUILD)/qemu-%.sh: | arm64
	printf '#!/bin/sh\nexec %s -L %s -cpu %s %s "$$@"\n' "$(QEMU_AARCH64)" "$(ARM64_ROOT)" "$*" \
	    "$(CURDIR)/$(ARM64_BUILD)/pocketflash" > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@

test-arm64: arm64 $(TEST_DATA)
	@set -e; for cl in $(ARM64_CPUS); do \
	    cpu=$${cl%%:*}; level=$${cl#*:}; \
	    rm -f $(ARM64_BUILD)/qemu-$$cpu.sh; $(MAKE) --no-print-directory $(ARM64_BUILD)/qemu-$$cpu.sh >/dev/null; \
	    chat=$(CURDIR)/$(ARM64_BUILD)/qemu-$$cpu-chat.sh; \
	    printf '#!/bin/sh\nexec %s -L %s -cpu %s %s "$$@"\n' "$(QEMU_AARCH64)" "$(ARM64_ROOT)" "$$cpu" \
	        "$(CURDIR)/$(ARM64_BUILD)/examples/chat" > $$chat && chmod +x $$chat; \
	    echo "== qemu-aarch64 -cpu $$cpu (expect $$level)"; \
	    PF_EXPECT_LEVEL=$$level PF_SHARED=$(SHARED) PF_CLI=$(CURDIR)/$(ARM64_BUILD)/qemu-$$cpu.sh PF_EXAMPLE_CHAT=$$chat \
	        $(QEMU_AARCH64) -L $(ARM64_ROOT) -cpu $$cpu $(ARM64_BUILD)/tests/run_tests $(T); \
	done

# Greedy token ids of F16, Q8_0 and Q4_1 models: every x86 level = x86 scalar = each qemu CPU model (asserted).
test-cross-device: pocketflash arm64
	sh tests/arm64_cross_device.sh ./pocketflash $(ARM64_BUILD)/pocketflash $(QEMU_AARCH64) $(ARM64_ROOT) \
	    $(ARM64_BUILD)/cross-device $(foreach cl,$(ARM64_CPUS),$(firstword $(subst :, ,$(cl))))

# The app-developer example (examples/arm64_stream.c) against the library of this build.
$(BUILD)/examples/arm64_stream: examples/arm64_stream.c $(BUILD)/libpocketflash.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The CI subset (.ci/run): kernels, forward batch invariance, llama.cpp golden, lossless
# speculation with random DFlash/DFlash2 drafts and the lookup draft, for every CPU model, then the
# cross-device agreement. The trained-draft lossless tests stay in test-arm64 (more than 8 minutes
# per CPU model under qemu here).
ARM64_CI_TESTS ?= test_kernels forward_batch_invariant golden_llamacpp spec_greedy_lossless_random spec_greedy_lossless_ngram
test-arm64-ci: arm64 $(TEST_DATA)
	@set -e; for t in $(ARM64_CI_TESTS); do $(MAKE) --no-print-directory test-arm64 T=$$t; done
	$(MAKE) --no-print-directory test-cross-device

# The per-core performance model of the quantized gemm (docs/arm64-model.md, written by
# tools/arm64_model.py): llvm-mca on the inner loops cross-compiled for each level. The newest
# llvm-mca found is used: Debian 12's llvm-19 has the Neoverse N2 / V1 / V2 scheduling models,
# while its default LLVM 14 gives those CPUs the Cortex-A57 model (the file names the one used).
LLVM_MCA ?= $(firstword $(foreach v,19 18 17 16 15 14,$(shell command -v llvm-mca-$(v) 2>/dev/null)) llvm-mca)
.PHONY: arm64-model
arm64-model:
	python3 tools/arm64_model.py --cc $(ARM64_CC) --mca $(LLVM_MCA) --out docs/arm64-model.md
