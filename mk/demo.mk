# make demo, the README's first command: builds, writes the Pocket-shape stand-in (the committed
# target grown to MNN-Pocket-0.3B's shape as Q4_1, with its DFlash2 draft; `expand`, a few seconds)
# into .cache/ when it is not there or older than the committed models, then `pocketflash demo` on the task prompts of eval/tasks.
# DEMO_FLAGS passes options to it (e.g. DEMO_FLAGS="--reps 3"); PF_KERNELS caps the kernel level.
DEMO_TARGET := .cache/pocket-standin-q4_1.gguf
DEMO_DRAFT := .cache/pocket-standin-dflash2-q4_1.gguf
DEMO_FLAGS ?=

.PHONY: demo
demo: pocketflash $(DEMO_DRAFT)
	@./pocketflash demo -m $(DEMO_TARGET) -d $(DEMO_DRAFT) --tasks eval/tasks $(DEMO_FLAGS)

# Both files come from one expand; rewritten when the committed target or draft is newer (a stand-in
# of older drafts would measure them instead).
$(DEMO_DRAFT): models/pf-target-f16.gguf models/pf-draft-dflash2.gguf | pocketflash
	@echo "demo: writing the Pocket-shape stand-in (Q4_1 target + DFlash2 draft) into .cache/"
	@mkdir -p .cache && ./pocketflash expand -m models/pf-target-f16.gguf -o $(DEMO_TARGET) --type q4_1 \
	    -d models/pf-draft-dflash2.gguf -O $(DEMO_DRAFT) >.cache/demo-expand.log 2>&1 || \
	    { cat .cache/demo-expand.log; exit 1; }
