# HF import (issue #14): the libFuzzer target for the safetensors reader, run by `make fuzz` too.
# Its seed is a small valid checkpoint shard written by the recipe's numpy writer.
fuzz: fuzz-safetensors

.PHONY: fuzz-safetensors
fuzz-safetensors: build-fuzz/fuzz_safetensors
	mkdir -p build-fuzz/corpus-st
	$(PYTHON) -c "import sys, numpy as np; sys.path.insert(0, 'draft/train'); import safetensors_io as S; \
	    S.write('build-fuzz/corpus-st/seed.safetensors', {'a': np.arange(6, dtype=np.float16).reshape(2, 3), \
	    'b': np.ones(4, np.float32), 'd2t': np.arange(3, dtype=np.int64)}, {'format': 'pt'})"
	build-fuzz/fuzz_safetensors -max_total_time=$(FUZZ_TIME) -max_len=65536 -rss_limit_mb=4096 build-fuzz/corpus-st

build-fuzz/fuzz_safetensors: tests/fuzz/fuzz_safetensors.c formats/safetensors.c formats/json.c formats/ggml_types.c
	@mkdir -p build-fuzz
	clang -std=c11 -D_GNU_SOURCE -g -O1 -I. -fsanitize=fuzzer,address,undefined -o $@ $^

# Every committed model as a Hugging Face checkpoint in draft/train/work/hf/ (export_hf_all.sh, also
# the last step of `make drafts`).
.PHONY: hf-export
hf-export: pocketflash
	bash draft/train/export_hf_all.sh
