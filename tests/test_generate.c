/* Generation loop: plain decoding equals a hand-written forward+argmax loop; stop conditions
 * (length, end of turn inside a multi-token step, context full, callback) end exactly where they
 * should. */
#include <stdlib.h>
#include <string.h>

#include "api/strategy.h"
#include "engine/generate.h"
#include "convert/synth.h"
#include "engine/tokenizer.h"
#include "test.h"
#include "util.h"
#include "include/pocketflash.h"
#include "engine/batch.h"

typedef struct { int32_t toks[512]; int n, stop_after; } collect;

static int on_tok(void *u, int32_t t) {
    collect *c = u;
    c->toks[c->n++] = t;
    return c->stop_after && c->n >= c->stop_after;
}

TEST(generate_ar_equals_manual_greedy_loop) {
    test_tiny ts;
    CHECK(test_tiny_open(&ts, PF_TYPE_Q8_0, 3, 2, 256) == 0);
    char err[PF_ERR_LEN];
    int32_t prompt[7] = {10, 200, 33, 45, 300, 7, 99};
    pf_gen_params gp = test_gen_fixed(30);
    collect c = {.n = 0};
    pf_gen_stats st;
    CHECK(pf_generate_tokens(ts.s, prompt, 7, &gp, on_tok, &c, &st, err) == PF_OK);
    CHECK(c.n == 30 && st.n_gen == 30 && st.stop == PF_STOP_LENGTH && st.n_prompt == 7);
    pf_ctx *ctx = pf_ctx_new(ts.m, 256, 1, NULL, err);
    float *lg = malloc((size_t)ts.m->hp.n_vocab * sizeof(float));
    pf_batch b = {.tokens = prompt, .n = 7, .logits_mode = PF_LOGITS_LAST, .logits = lg};
    CHECK(pf_forward(ctx, &b, err) == 0);
    for (int i = 0; i < 30; i++) {
        int32_t t = pf_argmax(lg, ts.m->hp.n_vocab);
        CHECKF(t == c.toks[i], "token %d: %d vs %d", i, t, c.toks[i]);
        b = (pf_batch){.tokens = &t, .n = 1, .logits_mode = PF_LOGITS_LAST, .logits = lg};
        CHECK(pf_forward(ctx, &b, err) == 0);
    }
    /* callback stop */
    collect c2 = {.n = 0, .stop_after = 5};
    CHECK(pf_generate_tokens(ts.s, prompt, 7, &gp, on_tok, &c2, &st, err) == PF_OK);
    CHECK(c2.n == 5 && st.stop == PF_STOP_CALLBACK && !memcmp(c2.toks, c.toks, 5 * sizeof(int32_t)));
    free(lg);
    pf_ctx_free(ctx);
    test_tiny_close(&ts);
}

/* A strategy that commits 4 scripted tokens per step. */
typedef struct { const int32_t *script; int at; } scripted;

static pf_rc scripted_step(void *state, pf_engine_session *s, int32_t last, int32_t *out, int cap, int *n_out,
                           char err[PF_ERR_LEN]) {
    scripted *sc = state;
    (void)s; (void)last; (void)err;
    int n = cap < 4 ? cap : 4;
    for (int i = 0; i < n; i++) out[i] = sc->script[sc->at++];
    *n_out = n;
    return PF_RC_OK;
}

TEST(generate_stops_inside_multi_token_step) {
    test_tiny ts;
    CHECK(test_tiny_open(&ts, PF_TYPE_Q8_0, 3, 1, 64) == 0);
    char err[PF_ERR_LEN];
    int32_t eot = pf_tokenizer_eot(ts.m->tok);
    CHECK(eot >= 0);
    int32_t script[16] = {5, 6, 7, 8, 9, 10, eot, 11, 12, 13, 14, 15, 16, 17, 18, 19};
    scripted sc = {script, 0};
    pf_strategy strat = {.name = "scripted", .state = &sc, .step = scripted_step};
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = 100;
    pf_api_use_strategy(ts.s, &strat);
    int32_t prompt[3] = {1, 2, 3};
    collect c = {.n = 0};
    pf_gen_stats st;
    CHECK(pf_generate_tokens(ts.s, prompt, 3, &gp, on_tok, &c, &st, err) == PF_OK);
    /* first token from the prefill, then 5,6,7,8 | 9,10,<eot> */
    CHECKF(c.n == 7 && st.stop == PF_STOP_EOT, "n %d stop %d", c.n, st.stop);
    CHECK(c.toks[6] == 10);
    /* the length limit cuts inside a step too */
    sc.at = 0;
    gp.max_tokens = 3;
    c.n = 0;
    CHECK(pf_generate_tokens(ts.s, prompt, 3, &gp, on_tok, &c, &st, err) == PF_OK);
    CHECK(c.n == 3 && st.stop == PF_STOP_LENGTH && c.toks[2] == 6);
    test_tiny_close(&ts);
}

TEST(generate_context_full_and_prompt_too_long) {
    test_tiny ts;
    CHECK(test_tiny_open(&ts, PF_TYPE_Q8_0, 3, 1, 16) == 0);
    char err[PF_ERR_LEN];
    int32_t prompt[16] = {0};
    pf_gen_params gp = test_gen_fixed(100);
    collect c = {.n = 0};
    pf_gen_stats st;
    CHECK(pf_generate_tokens(ts.s, prompt, 16, &gp, on_tok, &c, &st, err) == PF_ERR_CONTEXT);
    CHECK(strstr(err, "does not fit"));
    CHECK(pf_generate_tokens(ts.s, prompt, 10, &gp, on_tok, &c, &st, err) == PF_OK);
    /* 10 prompt rows + 6 generated rows fill 16; the 7th generated token needs no row */
    CHECKF(st.stop == PF_STOP_CONTEXT && st.n_gen == 7, "stop %d n_gen %d", st.stop, st.n_gen);
    test_tiny_close(&ts);
}

static int on_text(void *u, const char *t, size_t n) {
    char *buf = u;
    strncat(buf, t, n);
    return 0;
}

TEST(generate_text_api_rejects_bad_utf8) {
    test_tiny ts;
    CHECK(test_tiny_open(&ts, PF_TYPE_Q8_0, 3, 0, 0) == 0);
    char err[PF_ERR_LEN], out[4096] = "";
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = 5;
    pf_gen_stats st;
    CHECK(pf_generate(ts.s, "ab\xff", 3, &gp, on_text, out, &st, err) == PF_ERR_UTF8);
    CHECK(pf_generate(ts.s, "hello", 5, &gp, on_text, out, &st, err) == PF_OK && st.n_gen <= 5);
    gp.chat = true;
    gp.system = "sys";
    CHECK(pf_generate(ts.s, "hello", 5, &gp, on_text, out, &st, err) == PF_OK);
    CHECK(st.n_prompt > 10); /* the ChatML frame was added */
    test_tiny_close(&ts);
}
