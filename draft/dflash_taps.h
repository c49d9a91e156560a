/* Which target layers a DFlash draft taps by default: z-lab's build_target_layer_ids (the DFlash
 * reference code, dflash/model/utils.py; the same formula in SGLang's and vLLM's ports), which never
 * taps the final layer: llama.cpp taps the INPUT of layer id + 1 (dflash.target_layers stores id + 1),
 * and a dense target has no input of layer n_layer (GGML_ASSERT "layer input tensor is null"). */
#ifndef PF_DFLASH_TAPS_H
#define PF_DFLASH_TAPS_H

/* n_draft 0-based "after layer L" ids (= HF target_layer_ids) for a target of n_target layers:
 *   n_draft == 1: [n_target / 2]
 *   else:         round(1 + i * (n_target - 4) / (n_draft - 1)), i = 0 .. n_draft-1, rounding half to even
 *                 as Python's round() does,
 * each clamped to 0 .. n_target - 2 (the formula assumes n_target >= 4). Returns n_draft, or -1 when
 * n_target < 2 (no layer but the last to tap) or n_draft is outside 1..256. */
int pf_dflash_default_taps(int n_target, int n_draft, int *out);

/* Index of the first entry of the draft file's dflash.target_layers equal to n_target (a tap of the
 * output of the target's last layer, which llama.cpp refuses), or -1 when none or unreadable. */
int pf_dflash_file_taps_last(const char *draft_path, int n_target);

#endif
