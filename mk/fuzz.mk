# Fuzzing. Every tests/fuzz/fuzz_NAME.c is a target. All link the library as the Makefile builds
# it (its LIB_SRC list), never a list of sources of their own, so a target cannot fall behind the
# library: with clang's libFuzzer, against the library built once more by clang under the
# fuzzer's coverage and ASan + UBSan in build-fuzz/lib; without it, through tests/fuzz/driver.c
# (each input once) against the ordinary build. Seeds: tests/fuzz/seeds/NAME (committed) and
# build-fuzz/seeds/NAME (written by the CLI: a synthetic model and its bundle).
#   make fuzz [FUZZ_TIME=60]   every target FUZZ_TIME seconds, growing build-fuzz/corpus-NAME
#   make fuzz-NAME             one target
#   make fuzz-long             every target niced, resumable over tests/fuzz/corpus/NAME, with a report
#   make test, make asan       every target over its seeds (tests/test_fuzz_seeds.c)
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_SAN := -fsanitize=address,undefined
# The kernels' loops are sanitized but not coverage-traced (tests/fuzz/coverage-ignore.txt).
FUZZ_COV := -fsanitize-coverage-ignorelist=tests/fuzz/coverage-ignore.txt
FUZZ_LIB := build-fuzz/lib/libpocketflash.a
FUZZ_HDR := $(wildcard tests/fuzz/*.h)
# A forged section size in a .pfb cannot then ask for gigabytes (formats/pfb_impl.h).
FUZZ_DEFS := -DPFB_MAX_RAW=0x4000000ull
# The inputs that are whole files of a model need more than libFuzzer's default length.
FUZZ_MAXLEN_gguf := 400000
FUZZ_MAXLEN_pfb := 400000
FUZZ_MAXLEN_prompt_cache := 65536
fuzz_maxlen = $(or $(FUZZ_MAXLEN_$(1)),16384)
fuzz_seeds = $(wildcard tests/fuzz/seeds/$(1)) build-fuzz/seeds/$(1)
# A target's dictionary, tests/fuzz/NAME.dict where it has one: the keywords its input must spell
# (schema keywords, request fields), which mutation alone meets only after millions of inputs.
fuzz_dict = $(if $(wildcard tests/fuzz/$(1).dict),-dict=tests/fuzz/$(1).dict)
# fuzz_serve also links the server's files of the CLI (without main) and libmicrohttpd; without
# the server (SERVE=0) it is left out.
FUZZ_SERVE_SRC := $(filter cli/serve_%,$(CLI_SRC))
ifeq ($(SERVE),0)
FUZZ_TARGETS := $(filter-out serve,$(FUZZ_TARGETS))
endif
FUZZ_LIBS_serve := -lmicrohttpd
PF_ENSURE_CLANG = $(call pf_ensure,fuzz dependencies,$(call pf_need,command -v clang,clang))
# Whether clang can link a libFuzzer target here (a shell condition).
PF_HAVE_LIBFUZZER = { d=$$(mktemp -d) && printf 'int LLVMFuzzerTestOneInput(const char *p, unsigned long n) { return !p && n; }\n' >$$d/f.c && \
    clang -fsanitize=fuzzer $$d/f.c -o $$d/f >/dev/null 2>&1; r=$$?; rm -rf $$d; [ $$r = 0 ]; }

.PHONY: fuzz fuzz-long fuzz-lib fuzz-seeds fuzz-suite $(FUZZ_TARGETS:%=fuzz-%)
fuzz: $(FUZZ_TARGETS:%=fuzz-%)

# The sub-make decides whether the library is out of date (FORCE), and the targets relink only
# when it changed. Not in that sub-make itself, where the Makefile's own rule builds the file.
ifneq ($(BUILD),build-fuzz/lib)
$(FUZZ_LIB): FORCE
	@$(PF_ENSURE_CLANG)
	@$(MAKE) --no-print-directory BUILD=build-fuzz/lib CC=clang OPT="-O1 -fsanitize=fuzzer-no-link $(FUZZ_COV) $(FUZZ_SAN) $(FUZZ_DEFS)" \
	    $(FUZZ_LIB) $(FUZZ_SERVE_SRC:%.c=build-fuzz/lib/%.o)
$(FUZZ_SERVE_SRC:%.c=build-fuzz/lib/%.o): $(FUZZ_LIB) ;
endif
fuzz-lib: $(FUZZ_LIB)
.PHONY: FORCE
FORCE:

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_HDR) $(FUZZ_LIB)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -I. $(FUZZ_DEFS) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< \
	    $(filter %.o,$^) $(FUZZ_LIB) $(FUZZ_LIBS_$*) $(LDLIBS)
# (and their sources, since make takes the objects the sub-make rebuilt for unchanged)
build-fuzz/fuzz_serve: $(FUZZ_SERVE_SRC:%.c=build-fuzz/lib/%.o) $(FUZZ_SERVE_SRC) $(wildcard cli/serve_*.h)

# The same targets through the plain driver, built like the tests ($(BUILD): build, or build-asan
# under the sanitizers).
$(BUILD)/fuzz-plain/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/driver.c $(FUZZ_HDR) $(BUILD)/libpocketflash.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< tests/fuzz/driver.c $(filter %.o,$^) $(BUILD)/libpocketflash.a $(FUZZ_LIBS_$*) $(LDLIBS)
$(BUILD)/fuzz-plain/fuzz_serve: $(FUZZ_SERVE_SRC:%.c=$(BUILD)/%.o)

fuzz-seeds: build-fuzz/seeds/gguf/tiny-q4_1.gguf build-fuzz/seeds/pfb/tiny.pfb
	@mkdir -p $(FUZZ_TARGETS:%=build-fuzz/seeds/%)
build-fuzz/seeds/gguf/tiny-q4_1.gguf: pocketflash
	@mkdir -p $(@D)
	./pocketflash synth --shape tiny --type q4_1 -o $@ >/dev/null
build-fuzz/seeds/pfb/tiny.pfb: build-fuzz/seeds/gguf/tiny-q4_1.gguf
	@mkdir -p $(@D)
	./pocketflash pack -m $< -o $@ >/dev/null

$(FUZZ_TARGETS:%=fuzz-%): fuzz-%: build-fuzz/fuzz_% fuzz-seeds
	@mkdir -p build-fuzz/corpus-$*
	UBSAN_OPTIONS=halt_on_error=1 build-fuzz/fuzz_$* -max_total_time=$(FUZZ_TIME) -max_len=$(call fuzz_maxlen,$*) \
	    -rss_limit_mb=4096 $(call fuzz_dict,$*) -print_final_stats=1 -artifact_prefix=build-fuzz/ build-fuzz/corpus-$* $(call fuzz_seeds,$*)

# For the suite: the libFuzzer targets where clang links them, else the plain driver's
# (FUZZ_DRIVER=plain forces those); build-fuzz/suite-bin names the folder the tests run from.
FUZZ_DRIVER ?= auto
fuzz-suite: fuzz-seeds
	@if [ "$(FUZZ_DRIVER)" != plain ] && $(PF_HAVE_LIBFUZZER); then \
	    $(MAKE) --no-print-directory $(FUZZ_TARGETS:%=build-fuzz/fuzz_%) && echo build-fuzz >build-fuzz/suite-bin; \
	else \
	    echo "pocketflash: no clang libFuzzer here (or FUZZ_DRIVER=plain); the fuzz targets run their seeds through tests/fuzz/driver.c"; \
	    $(MAKE) --no-print-directory $(FUZZ_TARGETS:%=$(BUILD)/fuzz-plain/fuzz_%) && echo $(BUILD)/fuzz-plain >build-fuzz/suite-bin; \
	fi

# Long runs: every target in turn at nice 19 for FUZZ_LONG_TIME seconds, over its corpus in
# tests/fuzz/corpus/NAME (kept from run to run, minimized after each), reporting runs, exec/s,
# coverage and the run at which coverage last grew (tools/fuzz_long.sh).
FUZZ_LONG_TIME ?= 3600
fuzz-long: $(FUZZ_TARGETS:%=build-fuzz/fuzz_%) fuzz-seeds
	@$(foreach t,$(FUZZ_TARGETS),sh tools/fuzz_long.sh $(t) $(FUZZ_LONG_TIME) $(call fuzz_maxlen,$(t)) $(call fuzz_seeds,$(t)) &&) true

# The targets run the scalar kernels (PF_KERNELS=scalar, set by the targets), built with the
# sanitizers, so a bad shape that reaches a kernel reads past its buffer where ASan sees it; serve,
# whose model shapes are fixed and whose subject is the request handling, runs the best level. The
# SIMD kernels, which the suite checks against the scalar ones, are linked uninstrumented: clang
# takes minutes per file with the sanitizers.
build-fuzz/lib/%_avx2.o build-fuzz/lib/%_avxvnni.o build-fuzz/lib/%_avx512.o: override OPT = -O1
