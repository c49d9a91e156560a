/* Minimal app-side use of libpocketflash.a (README "ARM64"): load a GGUF target, open a session,
 * stream a chat answer to stdout as it is generated. Only the public API (include/pocketflash.h).
 *   cc -std=c11 -Iinclude examples/arm64_stream.c libpocketflash.a -lzstd -lxxhash -lm -pthread
 *   ./a.out MODEL.gguf "your question" */
#include <stdio.h>
#include <string.h>

#include "pocketflash.h"

static int print_piece(void *user, const char *text, size_t len) {
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout); /* show each piece as it arrives */
    return 0;       /* nonzero would stop generation */
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL.gguf PROMPT\n", argv[0]);
        return 2;
    }
    char err[PF_ERR_LEN];
    pf_model *m = NULL;
    if (pf_load_model(argv[1], &m, err) != PF_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    pf_session_params sp = {.n_threads = 2, .n_ctx = 1024};
    pf_session *s = NULL;
    if (pf_session_new(m, &sp, &s, err) != PF_OK) {
        fprintf(stderr, "%s\n", err);
        pf_free_model(m);
        return 1;
    }
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.chat = true;
    gp.max_tokens = 64;
    pf_gen_stats st;
    pf_status rc = pf_generate(s, argv[2], strlen(argv[2]), &gp, print_piece, NULL, &st, err);
    if (rc == PF_OK)
        fprintf(stderr, "\n%d tokens in %.3f s after a %.3f s prefill\n", st.n_gen, st.decode_s, st.prefill_s);
    else
        fprintf(stderr, "\n%s\n", err);
    pf_session_free(s);
    pf_free_model(m);
    return rc == PF_OK ? 0 : 1;
}
