#include "formats/errf.h"

#include <stdarg.h>
#include <stdio.h>

#include "formats/gguf.h"

int pf_errf(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, PF_ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

pf_rc pf_err_rc(char *err, pf_rc rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, PF_ERR_LEN, fmt, ap);
    va_end(ap);
    return rc;
}
