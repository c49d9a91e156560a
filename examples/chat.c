/* A streaming multi-turn chat on the public API (include/pocketflash.h only): one user message
 * per line of stdin, each reply streamed to stdout as it is generated, speculating with a draft
 * when -d is given. The conversation is passed whole every turn; the session keeps its cache, so
 * each turn prefills only the new message. Per turn, stderr gets the tokens prefilled and reused,
 * tau and the decode speed.
 *
 *   build/examples/chat -m models/pf-target-f16.gguf -d models/pf-draft-dflash2.gguf */
#include <pocketflash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TURNS 64

static int print_text(void *user, const char *text, size_t len) {
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* Keep the reply as well: it goes into the next turn's messages. */
typedef struct { char *s; size_t n, cap; } buffer;

static int keep_text(void *user, const char *text, size_t len) {
    buffer *b = user;
    if (b->n + len + 1 > b->cap) {
        size_t cap = (b->n + len + 1) * 2;
        char *p = realloc(b->s, cap);
        if (!p) return 1; /* stops generation */
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, text, len);
    b->n += len;
    b->s[b->n] = 0;
    return print_text(NULL, text, len);
}

static char *dup(const char *s) {
    char *d = malloc(strlen(s) + 1);
    return d ? strcpy(d, s) : NULL;
}

static int usage(void) {
    fprintf(stderr, "usage: chat -m MODEL.gguf [-d DRAFT.gguf] [-n TOKENS] [-t THREADS] [--system TEXT]\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *draft_path = NULL, *system = NULL;
    int max_tokens = 128, threads = 1;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) return usage();
        if (!strcmp(argv[i], "-m")) model_path = argv[++i];
        else if (!strcmp(argv[i], "-d")) draft_path = argv[++i];
        else if (!strcmp(argv[i], "-n")) max_tokens = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t")) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--system")) system = argv[++i];
        else return usage();
    }
    if (!model_path) return usage();

    char err[PF_ERR_LEN];
    pf_model *model = NULL;
    if (pf_load_model(model_path, &model, err) != PF_OK) return fprintf(stderr, "chat: %s\n", err), 1;
    pf_draft *draft = NULL;
    pf_session *session = NULL;
    pf_session_params sp = {.n_threads = threads};
    if (!draft_path || pf_load_draft(model, draft_path, &draft, err) == PF_OK)
        pf_session_new(model, &sp, &session, err); /* session stays NULL when it fails */
    if (!session) {
        fprintf(stderr, "chat: %s\n", err);
        pf_free_draft(draft);
        pf_free_model(model);
        return 1;
    }

    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = max_tokens;
    gp.draft = draft; /* NULL: plain decoding; else the default speculative strategy */

    pf_message messages[2 * MAX_TURNS + 1];
    buffer replies[MAX_TURNS] = {{0}};
    char *lines[MAX_TURNS] = {0};
    int n = 0, turns = 0, rc = 0;
    if (system) messages[n++] = (pf_message){"system", system};
    char line[4096];
    while (turns < MAX_TURNS && fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        if (!(lines[turns] = dup(line))) break;
        messages[n++] = (pf_message){"user", lines[turns]};
        pf_gen_stats st;
        pf_status r = pf_generate_chat(session, messages, n, &gp, keep_text, &replies[turns], &st, err);
        if (r != PF_OK) {
            fprintf(stderr, "chat: %s\n", err);
            rc = 1;
            break;
        }
        putchar('\n');
        fflush(stdout);
        fprintf(stderr, "[turn %d: %d prompt tokens, %d reused, %d prefilled; %d generated, tau %.2f, %.1f tok/s]\n",
                turns + 1, st.n_prompt, st.n_reused, st.n_prompt - st.n_reused - st.n_cached, st.n_gen, st.tau,
                st.decode_s > 0 && st.n_gen > 1 ? (st.n_gen - 1) / st.decode_s : 0.0);
        messages[n++] = (pf_message){"assistant", replies[turns].s ? replies[turns].s : ""};
        turns++;
    }
    for (int t = 0; t < MAX_TURNS; t++) {
        free(replies[t].s);
        free(lines[t]);
    }
    pf_session_free(session);
    pf_free_draft(draft);
    pf_free_model(model);
    return rc;
}
