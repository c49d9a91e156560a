# make demo, the README's first command: builds, writes the Pocket-shape stand-in (the committed
# target grown to MNN-Pocket-0.3B's shape as Q4_1, with its DFlash2 draft; `expand`, a few seconds)
# into .cache/ when it is not there, then `pocketflash demo` on the task prompts of eval/tasks.
# DEMO_FLAGS passes options to it (e.g. DEMO_FLAGS="--reps 3"); PF_KERNELS caps the kernel level.
DEMO_TARGET := .cache/pocket-standin-q4_1.gguf
DEMO_DRAFT := .cache/pocket-standin-dflash2-q4_1.gguf
DEMO_FLAGS ?=

.PHONY: demo
demo: pocketflash
	@if [ ! -f $(DEMO_TARGET) ] || [ ! -f $(DEMO_DRAFT) ]; then \
	    echo "demo: writing the Pocket-shape stand-in (Q4_1 target + DFlash2 draft) into .cache/"; \
	    mkdir -p .cache && ./pocketflash expand -m models/pf-target-f16.gguf -o $(DEMO_TARGET) --type q4_1 \
	        -d models/pf-draft-dflash2.gguf -O $(DEMO_DRAFT) >.cache/demo-expand.log 2>&1 || \
	        { cat .cache/demo-expand.log; exit 1; }; \
	fi
	@./pocketflash demo -m $(DEMO_TARGET) -d $(DEMO_DRAFT) --tasks eval/tasks $(DEMO_FLAGS)
