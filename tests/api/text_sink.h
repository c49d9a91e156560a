/* Streamed text collected for a program of the public API (tests/api, tools/chat_reuse_bench.c):
 * text_sink is a pf_generate callback that appends each piece to a text, kept NUL-terminated;
 * what does not fit is dropped. */
#ifndef PF_TEST_TEXT_SINK_H
#define PF_TEST_TEXT_SINK_H

#include <stddef.h>
#include <string.h>

typedef struct { char s[16384]; size_t n; } text;

static int text_sink(void *u, const char *s, size_t n) {
    text *t = u;
    if (t->n + n < sizeof t->s) {
        memcpy(t->s + t->n, s, n);
        t->n += n;
        t->s[t->n] = 0;
    }
    return 0;
}

#endif
