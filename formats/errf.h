/* A failure's one-line message into a caller's err buffer (PF_ERR_LEN bytes). */
#ifndef PF_ERRF_H
#define PF_ERRF_H

/* Writes the message and returns -1, so a reader can `return pf_errf(err, ...)`. */
int pf_errf(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
