/* pocketflash draft-head: store a frequency-ranked head vocabulary in a DFlash draft. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "draft/dflash.h"
#include "convert/head_vocab.h"
#include "engine/model.h"

static const char k_usage[] =
    "usage: pocketflash draft-head -d DRAFT.gguf -m TARGET.gguf --ranked FILE [-n N] -o OUT.gguf\n"
    "  writes the draft with dflash.head_tokens = the token ids of FILE (whitespace-separated, most\n"
    "  frequent first, as train/head_tokens.py ranks the training data) and dflash.head_vocab = N\n"
    "  (default: all of them): by default the draft's head then scores only those N tokens instead of\n"
    "  the whole vocabulary (--draft-head of run/bench/tune/gen overrides it). The output is loaded\n"
    "  with the target before the command succeeds.\n";

/* Token ids of a text file into *ids (*n of them): 0, or after a one-line error the exit status of
 * its kind (2 the file cannot be read, 3 an entry is not a token id, 4 out of memory). */
static int read_ids(const char *path, int limit, int32_t **ids_out, int *n) {
    size_t len;
    char *text;
    int st = cli_read_file(path, &text, &len);
    if (st) return st;
    int cap = 1024, m = 0;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    char *p = text;
    while (ids && !st) {
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1 << 30 || (*end && *end != ' ' && *end != '\n' && *end != '\t' && *end != '\r'))
            st = cli_fail_kind(PF_ERR_FORMAT, "%s: entry %d is not a token id", path, m + 1);
        else if (m == limit)
            st = cli_fail_kind(PF_ERR_FORMAT, "%s: more than %d token ids (the vocabulary)", path, limit);
        else if (m == cap) {
            int32_t *q = realloc(ids, (size_t)(cap *= 2) * sizeof *ids);
            if (!q) free(ids);
            ids = q;
        }
        if (ids && !st) ids[m++] = (int32_t)v;
        p = end;
    }
    free(text);
    if (!ids) st = cli_fail_kind(PF_ERR_OOM, "out of memory");
    else if (!st && m == 0) st = cli_fail_kind(PF_ERR_FORMAT, "%s: no token ids", path);
    if (st) {
        free(ids);
        return st;
    }
    *ids_out = ids;
    *n = m;
    return 0;
}

int cmd_draft_head(int argc, char **argv) {
    const char *draft = NULL, *target = NULL, *ranked = NULL, *out = NULL;
    long long nv = 0;
    const cli_arg args[] = {CLI_STR("-d", &draft), CLI_STR("-m", &target), CLI_STR("--ranked", &ranked),
                            CLI_STR("-o", &out), CLI_LL("-n", &nv, 1, 1 << 24), CLI_END};
    int parsed = cli_parse("draft-head", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_usage, stdout), 0) : 1;
    if (!draft || !target || !ranked || !out) return cli_fail("draft-head: -d, -m, --ranked and -o are required");
    char err[PF_ERR_LEN];
    pf_model *m;
    pf_rc mrc = pf_model_open(target, &m, err);
    if (mrc != PF_RC_OK) return cli_fail_status(pf_api_status(mrc), err);
    int n = 0;
    int32_t *ids = NULL;
    int rc = read_ids(ranked, m->hp.n_vocab, &ids, &n);
    if (!rc) {
        pf_dflash *d = NULL;
        pf_rc arc = pf_draft_head_attach(draft, ids, n, nv ? (int)nv : n, m->hp.n_vocab, out, err);
        if (arc == PF_RC_OK && (arc = pf_dflash_open(out, m, &d, err)) != PF_RC_OK) /* the result must load with this target */
            remove(out);
        if (arc != PF_RC_OK) {
            rc = cli_fail_status(pf_api_status(arc), err);
        } else {
            printf("%s: head vocabulary of %d tokens (of %d ranked, vocabulary %d)\n", out, pf_dflash_head_default(d),
                   pf_dflash_head_ranked(d), m->hp.n_vocab);
        }
        pf_dflash_free(d);
    }
    free(ids);
    pf_model_free(m);
    return rc;
}
