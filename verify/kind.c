#include "verify/kind.h"

#include <stdio.h>
#include <string.h>

static const char *const k_kind_names[] = {"default", "plain", "dflash", "ngram", "dec", "adaptive", "hybrid"};
#define N_KINDS (int)(sizeof k_kind_names / sizeof *k_kind_names)

int pf_kind_parse(const char *name, pf_kind *kind, char err[PF_ERR_LEN]) {
    if (!strcmp(name, "ar")) name = "plain"; /* plain decoding's earlier name, still taken */
    for (int k = 0; k < N_KINDS; k++)
        if (!strcmp(name, k_kind_names[k])) {
            *kind = (pf_kind)k;
            return 0;
        }
    snprintf(err, PF_ERR_LEN, "unknown strategy '%.40s' (plain, dflash, ngram, hybrid, dec, adaptive, default)", name);
    return -1;
}

const char *pf_kind_name(pf_kind kind) { return (int)kind >= 0 && (int)kind < N_KINDS ? k_kind_names[kind] : "?"; }

int pf_kind_uses_draft(pf_kind k) {
    return k == PF_KIND_DFLASH || k == PF_KIND_HYBRID || k == PF_KIND_DEC || k == PF_KIND_ADAPTIVE;
}

int pf_block_check(const char *what, long long block, char err[PF_ERR_LEN]) {
    if (block >= 2 && block <= PF_MAX_BLOCK) return 0;
    snprintf(err, PF_ERR_LEN, "%.80s %lld is outside 2..%d", what, block, PF_MAX_BLOCK);
    return -1;
}
