#include <pocketflash.h>
#include <stdio.h>

static int print(void *user, const char *text, size_t len) {
    (void)user;
    fwrite(text, 1, len, stdout);
    return 0; /* > 0 stops generation, < 0 cancels it (PF_ERR_CANCELLED) */
}

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: %s MODEL.gguf DRAFT.gguf\n", argv[0]), 2;
    char err[PF_ERR_LEN];
    pf_model *model = NULL;
    pf_draft *draft = NULL;
    pf_session *session = NULL;
    if (pf_load_model(argv[1], &model, err) != PF_OK || pf_load_draft(model, argv[2], &draft, err) != PF_OK ||
        pf_session_new(model, NULL, &session, err) != PF_OK)
        return fprintf(stderr, "%s\n", err), 1; /* the status says which kind: io, format, oom, ... */

    pf_gen_params params;
    pf_gen_params_default(&params);
    params.draft = draft; /* speculative decoding, same text as without */
    pf_message chat[3] = {{"user", "A shop sells 12 apples for 3 dollars each. How much do they cost?"}};
    pf_gen_stats stats;
    if (pf_generate_chat(session, chat, 1, &params, print, NULL, &stats, err) != PF_OK)
        return fprintf(stderr, "%s\n", err), 1;
    printf("\n[%d tokens, tau %.2f]\n", stats.n_gen, stats.tau);

    /* the next turn: the history plus a new message; what the cache shares is not prefilled again */
    chat[1] = (pf_message){"assistant", "The apples cost 36 dollars."};
    chat[2] = (pf_message){"user", "And 5 apples?"};
    if (pf_generate_chat(session, chat, 3, &params, print, NULL, &stats, err) != PF_OK)
        return fprintf(stderr, "%s\n", err), 1;
    printf("\n[%d prompt tokens, %d reused]\n", stats.n_prompt, stats.n_reused);

    pf_session_free(session);
    pf_free_draft(draft);
    pf_free_model(model);
    return 0;
}
