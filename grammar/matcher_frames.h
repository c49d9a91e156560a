/* The matcher's frame kinds and phases (grammar/matcher.c), shared with the closing distance
 * (grammar/close_budget.c), which reads a parse stack's frames. Private to grammar/. */
#ifndef PF_MATCHER_FRAMES_H
#define PF_MATCHER_FRAMES_H

enum { K_HEAD, K_VALUE, K_OBJ, K_KEY, K_ARR, K_STR, K_NUM, K_LIT };
enum { O_OPEN, O_FIRST, O_NEXT, O_KEY, O_KEY_SPACED, O_COLON };
enum { V_TIGHT, V_SPACE }; /* a value's frame: V_SPACE after ':' or ',', where one space may come first */
enum { A_OPEN, A_FIRST, A_NEXT, A_ITEM };
enum { S_OPEN, S_BODY, S_ESC, S_HEX };
enum { N_START, N_MINUS, N_ZERO, N_INT, N_FRAC0, N_FRAC, N_EXP0, N_EXPS, N_EXP };

#endif
