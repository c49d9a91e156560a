/* Unicode character classes for the pre-tokenizer and a strict UTF-8 codec.
 * The class tables are generated (tools/gen_unicode_tables.py -> engine/unicode_tables.c). */
#ifndef PF_UNICODE_H
#define PF_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Returned in *cp by pf_utf8_decode for an invalid sequence (not a code point). */
#define PF_UTF8_INVALID 0xFFFFFFFFu

bool pf_uni_is_letter(uint32_t cp); /* \p{L} */
bool pf_uni_is_number(uint32_t cp); /* \p{N} */
bool pf_uni_is_space(uint32_t cp);  /* \s = White_Space */

/* Decode the code point at s[0..len). Returns the number of bytes consumed: 0 only when len == 0;
 * otherwise 1..4. On an ill-formed sequence (overlong, surrogate, > U+10FFFF, bad or missing
 * continuation byte) *cp = PF_UTF8_INVALID and the return value is the length of the maximal
 * ill-formed subpart (Unicode's "substitution of maximal subparts" rule: always >= 1, never
 * swallows a byte that could start a valid sequence). */
size_t pf_utf8_decode(const char *s, size_t len, uint32_t *cp);
/* Encode cp (<= 0x10FFFF, not a surrogate) into out; returns 1..4, or 0 if cp is not encodable. */
size_t pf_utf8_encode(uint32_t cp, char out[4]);
bool pf_utf8_valid(const char *s, size_t len);
/* in[0..n) copied to out code point by code point (as pf_utf8_decode splits it), each one either
 * replaced by what sub(cp, at) writes at `at` (returning its length) or, where sub returns -1, kept
 * as its own bytes. Returns the bytes written. */
size_t pf_utf8_rewrite(const char *in, size_t n, int (*sub)(uint32_t cp, char *at), char *out);
/* Offset of the first byte of the first ill-formed sequence, or len if s is valid UTF-8. */
size_t pf_utf8_first_invalid(const char *s, size_t len);
/* Length (0..3) of a trailing incomplete-but-so-far-valid sequence at the end of s[0..len): the
 * bytes a stream decoder must hold back because the next chunk may complete them. */
size_t pf_utf8_incomplete_tail(const char *s, size_t len);

#endif
