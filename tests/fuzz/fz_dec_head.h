/* The Dec head the draft fuzz targets attach: small fixed weights (0.01 (i % 7 - 3)), bias 0.1 and
 * four position biases, so a draft file carries a head whose numbers stay far from overflow. */
#ifndef PF_FUZZ_FZ_DEC_HEAD_H
#define PF_FUZZ_FZ_DEC_HEAD_H

#include <stdio.h>
#include <stdlib.h>

#include "convert/dec_attach.h"

/* The draft at `draft` (hidden size H) with that head, written to `out`. 0, or -1 with err filled. */
static int fz_attach_dec_head(const char *draft, int H, const char *out, char err[PF_ERR_LEN]) {
    float *w = calloc(2 * (size_t)H, sizeof *w), pos[4] = {0.5f, 0.2f, 0, -0.1f};
    if (!w) {
        snprintf(err, PF_ERR_LEN, "dec head: out of memory");
        return -1;
    }
    for (int i = 0; i < 2 * H; i++) w[i] = 0.01f * (float)((i % 7) - 3);
    pf_rc r = pf_dec_attach(draft, w, H, 0.1f, pos, 4, out, err);
    free(w);
    return r == PF_RC_OK ? 0 : -1;
}

#endif
