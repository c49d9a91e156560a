/* The one status type of every layer below the public API: what failed, by kind, with a one-line
 * message in the caller's err buffer beside it (SQLite's discipline). The public pf_status has
 * the same values (api/status.h asserts it), so a failure keeps its kind from the layer where it
 * happened up to the caller. */
#ifndef PF_FORMATS_STATUS_H
#define PF_FORMATS_STATUS_H

typedef enum {
    PF_RC_OK = 0,
    PF_RC_IO,      /* a file could not be opened, read or written */
    PF_RC_FORMAT,  /* a file is malformed, truncated or of the wrong architecture */
    PF_RC_ARG,     /* a bad parameter */
    PF_RC_CONTEXT, /* the prompt (or a forward's rows) does not fit the context */
    PF_RC_UTF8,    /* the prompt is not valid UTF-8 */
    PF_RC_OOM,     /* an allocation failed */
    PF_RC_INTERNAL, /* a broken invariant: a bug */
    PF_RC_CANCELLED /* the caller stopped the call (a callback returned a negative value) */
} pf_rc;

#endif
