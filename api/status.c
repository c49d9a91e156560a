/* pf_status_name: the one name of each status, for messages, logs and the bindings. */
#include "api/status.h"

const char *pf_status_name(pf_status st) {
    static const char *const names[] = {"ok", "io", "format", "arg", "context", "utf8", "oom", "internal", "cancelled"};
    return (unsigned)st < sizeof names / sizeof names[0] ? names[st] : "unknown";
}
