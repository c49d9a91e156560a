/* A failure's one-line message into a caller's err buffer (PF_ERR_LEN bytes). */
#ifndef PF_ERRF_H
#define PF_ERRF_H

#include "formats/status.h"

/* The bytes of every err buffer below the public API (include/pocketflash.h's PF_ERR_LEN, the same). */
#define PF_ERR_LEN 256

/* Writes the message and returns -1, so a reader can `return pf_errf(err, ...)`. */
int pf_errf(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes the message and returns its kind rc, so a reader can `return pf_err_rc(err, PF_RC_OOM, ...)`. */
pf_rc pf_err_rc(char *err, pf_rc rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
