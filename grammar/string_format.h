/* JSON Schema's `format` as patterns for grammar/regex.h (docs/structured-output.md lists them):
 * each an anchored pattern of the format's specification (RFC 3339 date, time, date-time and
 * duration; RFC 4291 ipv6, dotted-quad ipv4, RFC 4122 uuid, RFC 6901 json-pointer) or, where the
 * specification is not regular or readers disagree, a strict subset of it (email, hostname, uri,
 * uri-reference): a string they accept is valid under every common reading. */
#ifndef PF_STRING_FORMAT_H
#define PF_STRING_FORMAT_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    PF_FORMAT_PATTERN,     /* *pat holds the format's pattern (static text), *max_chars its length cap */
    PF_FORMAT_UNSUPPORTED, /* a format the specifications define that is not compiled: an error */
    PF_FORMAT_IGNORED,     /* a name no specification defines (int32, ...): an annotation */
} pf_format_kind;

/* The format named name[0..len). */
pf_format_kind pf_format_lookup(const char *name, size_t len, const char **pat, int64_t *max_chars);

#endif
