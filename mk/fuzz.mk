# libFuzzer targets that need the whole engine (clang): the model loader end to end, the draft
# loader against a target, the tokenizer, the chat prompt path and the JSON reader as vocab-import
# and convert use it. The library is built once more with clang under the fuzzer's coverage and
# ASan + UBSan in build-fuzz/lib. Seeds are committed in tests/fuzz/seeds/NAME; each run grows
# build-fuzz/corpus-NAME. `make fuzz FUZZ_TIME=S` runs every target for S seconds.
FUZZ_ENGINE := model draft tokenizer chat json
FUZZ_SAN := -fsanitize=address,undefined
FUZZ_LIB := build-fuzz/lib/libpocketflash.a
PF_ENSURE_CLANG = $(call pf_ensure,fuzz dependencies,$(call pf_need,command -v clang,clang))

fuzz: $(FUZZ_ENGINE:%=fuzz-%)

.PHONY: $(FUZZ_ENGINE:%=fuzz-%) fuzz-lib
fuzz-lib:
	@$(PF_ENSURE_CLANG)
	$(MAKE) BUILD=build-fuzz/lib CC=clang OPT="-O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN)" $(FUZZ_LIB)

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/gguf_patch.h fuzz-lib
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -I. -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< $(FUZZ_LIB) $(LDLIBS)

$(FUZZ_ENGINE:%=fuzz-%): fuzz-%: build-fuzz/fuzz_%
	@mkdir -p build-fuzz/corpus-$*
	UBSAN_OPTIONS=halt_on_error=1 build-fuzz/fuzz_$* -max_total_time=$(FUZZ_TIME) -max_len=16384 -rss_limit_mb=4096 \
	    -print_final_stats=1 -artifact_prefix=build-fuzz/ build-fuzz/corpus-$* tests/fuzz/seeds/$*

# The targets run the scalar kernels (PF_KERNELS=scalar, set by the targets), built with the
# sanitizers, so a bad shape that reaches a kernel reads past its buffer where ASan sees it. The
# SIMD kernels, which the suite checks against the scalar ones, are linked uninstrumented: clang
# takes minutes per file with the sanitizers.
build-fuzz/lib/%_avx2.o build-fuzz/lib/%_avxvnni.o build-fuzz/lib/%_avx512.o: override OPT = -O1
