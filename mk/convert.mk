# Every committed model as a Hugging Face checkpoint in train/work/hf/ (export_hf_all.sh, also
# the last step of `make drafts`).
.PHONY: hf-export
hf-export: pocketflash
	bash train/export_hf_all.sh
