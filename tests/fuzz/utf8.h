/* Strict UTF-8 validity (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF),
 * written independently of engine/unicode.c as the fuzz targets' arbiter. */
#ifndef PF_FUZZ_UTF8_H
#define PF_FUZZ_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static bool fz_utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        int k;
        uint32_t cp;
        if (c < 0x80) { i++; continue; }
        else if (c >= 0xC2 && c <= 0xDF) { k = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { k = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { k = 3; cp = c & 0x07; }
        else return false;
        if (n - i <= (size_t)k) return false; /* truncated sequence */
        for (int j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += (size_t)k + 1;
    }
    return true;
}

#endif
