/* pocketflash dec-attach: store a trained Dec head (JSON from train/train_dec.py) in a draft. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "convert/dec_attach.h"
#include "draft/dec.h"
#include "formats/json.h"

static const char k_usage[] =
    "usage: pocketflash dec-attach -d DRAFT.gguf --dec DEC.json -o OUT.gguf\n"
    "  writes the draft with its Dec head as tensors dec.weight [2H], dec.bias [1], dec.pos_bias [P]\n"
    "  (replacing any earlier head). DEC.json: {\"weight\": [2H numbers: target half, then draft half],\n"
    "  \"bias\": number, \"pos_bias\": [P numbers]}, as written by train/train_dec.py.\n"
    "usage: pocketflash dec-attach -d DRAFT.gguf --strip -o OUT.gguf\n"
    "  writes the draft without its Dec head: the file llama.cpp-family loaders take (they refuse\n"
    "  tensors they do not know).\n";

static float *numbers(const pf_json *a, int *n) {
    if (!a || a->type != PF_JSON_ARRAY || a->u.arr.n == 0 || a->u.arr.n > (1u << 20)) return NULL;
    float *v = malloc(a->u.arr.n * sizeof *v);
    for (size_t i = 0; v && i < a->u.arr.n; i++) {
        if (a->u.arr.items[i].type != PF_JSON_NUMBER) {
            free(v);
            return NULL;
        }
        v[i] = (float)a->u.arr.items[i].u.num.d;
    }
    *n = (int)a->u.arr.n;
    return v;
}

int cmd_dec_attach(int argc, char **argv) {
    const char *draft = NULL, *dec = NULL, *out = NULL;
    bool strip = false;
    const cli_arg args[] = {CLI_STR("-d", &draft), CLI_STR("--dec", &dec), CLI_STR("-o", &out),
                            CLI_ON("--strip", &strip), CLI_END};
    int parsed = cli_parse("dec-attach", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_usage, stdout), 0) : 1;
    char err[PF_ERR_LEN];
    if (strip) {
        if (!draft || !out || dec) return cli_fail("dec-attach: --strip takes -d and -o (and no --dec)");
        pf_rc rc = pf_dec_strip(draft, out, err);
        return rc != PF_RC_OK ? cli_fail_status(pf_api_status(rc), err) : 0;
    }
    if (!draft || !dec || !out) return cli_fail("dec-attach: -d, --dec and -o are required");
    pf_json_doc *doc;
    pf_rc jrc = pf_json_load(dec, &doc, err);
    if (jrc != PF_RC_OK) return cli_fail_status(pf_api_status(jrc), err);
    const pf_json *root = pf_json_root(doc), *b = pf_json_get(root, "bias");
    int nw = 0, np = 0;
    float *w = numbers(pf_json_get(root, "weight"), &nw), *pb = numbers(pf_json_get(root, "pos_bias"), &np);
    int rc = 0;
    pf_rc arc;
    if (!w || !pb || nw % 2 || !b || b->type != PF_JSON_NUMBER) {
        rc = cli_fail_kind(PF_ERR_FORMAT, "%s: needs \"weight\" (2H numbers), \"bias\" (number) and \"pos_bias\" (numbers)",
                           dec);
    } else if ((arc = pf_dec_attach(draft, w, nw / 2, (float)b->u.num.d, pb, np, out, err)) != PF_RC_OK) {
        rc = cli_fail_status(pf_api_status(arc), err);
    } else {
        /* the head must fit the draft's hidden size */
        pf_dec *d;
        if ((arc = pf_dec_load_path(out, nw / 2, &d, err)) != PF_RC_OK) {
            remove(out);
            rc = cli_fail_status(pf_api_status(arc), err);
        }
        pf_dec_free(d);
    }
    free(w);
    free(pb);
    pf_json_free(doc);
    return rc;
}
