/* Strict UTF-8 (RFC 3629 / Unicode 15 table 3-7 well-formed byte sequences). */
#include "engine/unicode.h"

#include <string.h>

/* Valid range of the second byte for each lead byte (table 3-7); the remaining continuation bytes
 * are always 80..BF. */
static bool second_ok(uint8_t lead, uint8_t b) {
    switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF; /* no overlongs */
    case 0xED: return b >= 0x80 && b <= 0x9F; /* no surrogates */
    case 0xF0: return b >= 0x90 && b <= 0xBF; /* no overlongs */
    case 0xF4: return b >= 0x80 && b <= 0x8F; /* <= U+10FFFF */
    default: return b >= 0x80 && b <= 0xBF;
    }
}

static size_t seq_len(uint8_t lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0; /* continuation byte, C0, C1, F5..FF: never a lead */
}

size_t pf_utf8_decode(const char *s, size_t len, uint32_t *cp) {
    if (len == 0) return 0;
    const uint8_t *u = (const uint8_t *)s;
    size_t n = seq_len(u[0]);
    if (n == 1) {
        *cp = u[0];
        return 1;
    }
    *cp = PF_UTF8_INVALID;
    if (n == 0) return 1;
    /* Count how many bytes form a valid prefix; stop at the first bad one (maximal subpart). */
    size_t i = 1;
    if (i >= len || !second_ok(u[0], u[1])) return 1;
    for (i = 2; i < n; i++)
        if (i >= len || (u[i] & 0xC0) != 0x80) return i;
    uint32_t c;
    if (n == 2) c = ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
    else if (n == 3) c = ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    else
        c = ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) |
            ((uint32_t)(u[2] & 0x3F) << 6) | (u[3] & 0x3F);
    *cp = c;
    return n;
}

size_t pf_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= 0x10FFFF) {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}

size_t pf_utf8_first_invalid(const char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        if ((uint8_t)s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t n = pf_utf8_decode(s + i, len - i, &cp);
        if (cp == PF_UTF8_INVALID) return i;
        i += n;
    }
    return len;
}

bool pf_utf8_valid(const char *s, size_t len) { return pf_utf8_first_invalid(s, len) == len; }

size_t pf_utf8_rewrite(const char *in, size_t n, int (*sub)(uint32_t cp, char *at), char *out) {
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = pf_utf8_decode(in + i, n - i, &cp);
        int w = sub(cp, out + o);
        if (w < 0) {
            memcpy(out + o, in + i, k);
            o += k;
        } else {
            o += (size_t)w;
        }
        i += k;
    }
    return o;
}

size_t pf_utf8_incomplete_tail(const char *s, size_t len) {
    const uint8_t *u = (const uint8_t *)s;
    /* A held-back tail is at most 3 bytes: look for its lead byte among the last 3. */
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        uint8_t b = u[len - back];
        if ((b & 0xC0) == 0x80) continue; /* continuation: keep looking for the lead */
        size_t n = seq_len(b);
        if (n <= back) return 0; /* ASCII, invalid lead, or a sequence that is already complete */
        /* Incomplete only if every byte present is a valid prefix. */
        if (back >= 2 && !second_ok(b, u[len - back + 1])) return 0;
        return back;
    }
    return 0;
}
