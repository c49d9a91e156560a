/* The spellings of one JSON number that readers write for it: a JSON Schema enum or const number
 * equals every number of the same mathematical value (2, 2.0 and 2e0 alike), and documents come
 * from writers that spell it their way (Python writes a float 2.0, an int 2, a large float 1e+16).
 * The matcher takes a literal by its text, so an enum number is given each of these texts. */
#ifndef PF_NUM_SPELL_H
#define PF_NUM_SPELL_H

#include <stddef.h>

#define PF_NUM_SPELL_MAX 6   /* spellings of one number at most */
#define PF_NUM_SPELL_LEN 72  /* bytes of one spelling at most, its NUL included */

/* The spellings of the valid JSON number text[0..n): the plain decimal ("20", "0.5"), an integral
 * value's "20.0", and Python's float repr where it takes an exponent ("1e-05", "1.5e+16"); each
 * has exactly the value of text. Written to out, their count returned (0 when text is not a JSON
 * number). A spelling longer than PF_NUM_SPELL_LEN - 1 bytes is left out. */
int pf_num_spellings(const char *text, size_t n, char out[PF_NUM_SPELL_MAX][PF_NUM_SPELL_LEN]);

#endif
