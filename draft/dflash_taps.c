/* z-lab's default tap rule. See dflash_taps.h. */
#include "draft/dflash_taps.h"

#include <math.h>

#include "formats/gguf.h"

int pf_dflash_default_taps(int n_target, int n_draft, int *out) {
    if (n_target < 2 || n_draft < 1 || n_draft > 256) return -1;
    for (int i = 0; i < n_draft; i++) {
        /* Python: int(round(start + (i * span) / (num_draft_layers - 1))); nearbyint rounds half to even
         * in the default rounding mode, like round(), and the double operations are Python's */
        double v = n_draft == 1 ? (double)(n_target / 2)
                                : nearbyint(1.0 + (double)(i * (n_target - 4)) / (double)(n_draft - 1));
        int id = (int)v;
        out[i] = id < 0 ? 0 : id > n_target - 2 ? n_target - 2 : id;
    }
    return n_draft;
}

int pf_dflash_file_taps_last(const char *draft_path, int n_target) {
    char err[PF_ERR_LEN];
    gguf_file *f;
    gguf_open_file(draft_path, &f, err); /* a file that cannot be read taps nothing */
    const gguf_kv *kv = f ? gguf_get_arr(f, "dflash.target_layers", GGUF_I32) : NULL;
    int at = -1;
    for (uint64_t i = 0; kv && at < 0 && i < kv->v.arr.n; i++)
        if (gguf_arr_int(kv, i) == n_target) at = (int)i;
    gguf_close(f);
    return at;
}
