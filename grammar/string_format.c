/* The formats' patterns (grammar/string_format.h), written from their specifications. */
#include "grammar/string_format.h"

#include <string.h>

#define D "[0-9]"
/* RFC 3339 full-date with the days of each month; February 29 only in leap years (divisible by 4,
 * centuries by 400). Year 0000 is refused: some readers (Python's date) have no year 0. */
#define YEAR "(" D D D "[1-9]|" D D "[1-9]0|" D "[1-9]00|[1-9]000)"
#define LEAP_YEAR "(" D D "(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
#define DATE                                                                                                  \
    "(" YEAR "-(0[13578]|1[02])-(0[1-9]|[12]" D "|3[01])|" YEAR "-(0[469]|11)-(0[1-9]|[12]" D "|30)|" YEAR \
    "-02-(0[1-9]|1" D "|2[0-8])|" LEAP_YEAR "-02-29)"
/* RFC 3339 full-time: the offset required, no leap second, upper-case Z and T only (the strict
 * reading; RFC 3339 allows lower case, not every reader does) */
#define TIME "([01]" D "|2[0-3]):[0-5]" D ":[0-5]" D "(\\." D "+)?(Z|[+-]([01]" D "|2[0-3]):[0-5]" D ")"
#define OCTET "(25[0-5]|2[0-4]" D "|1" D D "|[1-9]?" D ")"
#define V4 OCTET "(\\." OCTET "){3}"
#define H "[0-9A-Fa-f]{1,4}"
/* RFC 4291 section 2.2: eight groups, or "::" for one or more zero groups, an IPv4 tail counting
 * as two */
#define V6                                                                                               \
    "((" H ":){7}" H "|(" H ":){6}" V4 "|::((" H "(:" H "){0,6})?|(" H ":){0,5}" V4 ")|" H "::((" H    \
    "(:" H "){0,5})?|(" H ":){0,4}" V4 ")|" H ":" H "::((" H "(:" H "){0,4})?|(" H ":){0,3}" V4 ")|(" H \
    ":){2}" H "::((" H "(:" H "){0,3})?|(" H ":){0,2}" V4 ")|(" H ":){3}" H "::((" H "(:" H             \
    "){0,2})?|(" H ":)?" V4 ")|(" H ":){4}" H "::((" H "(:" H ")?)?|" V4 ")|(" H ":){5}" H "::(" H     \
    ")?|(" H ":){6}" H "::)"
/* RFC 1123 labels, the last starting with a letter (so no dotted quad reads as a name) */
#define LABEL "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
#define HOSTNAME "(" LABEL "\\.)*[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
/* an email's domain: at least two labels, the last alphabetic */
#define DOMAIN "(" LABEL "\\.)+[A-Za-z]{2,63}"
/* RFC 3986 */
#define PCT "%[0-9A-Fa-f]{2}"
#define PCHAR "([A-Za-z0-9._~!$&'()*+,;=:@-]|" PCT ")"
#define AUTHORITY "(([A-Za-z0-9._~!$&'()*+,;=:-]|" PCT ")*@)?([A-Za-z0-9._~!$&'()*+,;=-]|" PCT ")*(:" D "*)?"
#define PATH_ABEMPTY "(/" PCHAR "*)*"
#define HIER "(//" AUTHORITY PATH_ABEMPTY "|/(" PCHAR "+" PATH_ABEMPTY ")?|" PCHAR "+" PATH_ABEMPTY ")?"
#define QUERY_FRAG "(\\?(" PCHAR "|[/?])*)?(#(" PCHAR "|[/?])*)?"
#define URI "[A-Za-z][A-Za-z0-9+.-]*:" HIER QUERY_FRAG
#define NOSCHEME "([A-Za-z0-9._~!$&'()*+,;=@-]|" PCT ")+"
#define RELATIVE "(//" AUTHORITY PATH_ABEMPTY "|/(" PCHAR "+" PATH_ABEMPTY ")?|" NOSCHEME PATH_ABEMPTY ")?" QUERY_FRAG
/* RFC 3339 appendix A */
#define DUR_TIME "T(" D "+H(" D "+M(" D "+S)?)?|" D "+M(" D "+S)?|" D "+S)"
#define DURATION "P((" D "+D|" D "+M(" D "+D)?|" D "+Y(" D "+M(" D "+D)?)?)(" DUR_TIME ")?|" DUR_TIME "|" D "+W)"
#define POINTER "(/([^~/]|~[01])*)*"

typedef struct {
    const char *name, *pat;
    int64_t max_chars;
} format_entry;

static const format_entry k_formats[] = {
    {"date", "^" DATE "$", INT64_MAX},
    {"time", "^" TIME "$", INT64_MAX},
    {"date-time", "^" DATE "T" TIME "$", INT64_MAX},
    {"duration", "^" DURATION "$", INT64_MAX},
    /* a dot-atom local part of the common characters, a hostname's domain; at most 254 characters
     * (RFC 5321's path) */
    {"email", "^[A-Za-z0-9_%+-]+(\\.[A-Za-z0-9_%+-]+)*@" DOMAIN "$", 254},
    {"hostname", "^" HOSTNAME "$", 253},
    {"host-name", "^" HOSTNAME "$", 253}, /* draft 3 */
    {"ipv4", "^" V4 "$", INT64_MAX},
    {"ip-address", "^" V4 "$", INT64_MAX}, /* draft 3 */
    {"ipv6", "^" V6 "$", INT64_MAX},
    {"uuid", "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", INT64_MAX},
    {"uri", "^" URI "$", INT64_MAX},
    {"uri-reference", "^(" URI "|" RELATIVE ")$", INT64_MAX},
    {"json-pointer", "^" POINTER "$", INT64_MAX},
    {"relative-json-pointer", "^(0|[1-9]" D "*)(#|" POINTER ")$", INT64_MAX},
};

/* Formats JSON Schema defines (drafts 3 to 2020-12) that are not compiled: not regular (regex),
 * or needing tables (idn-*, iri). */
static const char *const k_unsupported[] = {"idn-email", "idn-hostname", "iri", "iri-reference", "uri-template",
                                            "regex", "color", "style", "phone"};

pf_format_kind pf_format_lookup(const char *name, size_t len, const char **pat, int64_t *max_chars) {
    for (size_t i = 0; i < sizeof k_formats / sizeof *k_formats; i++)
        if (strlen(k_formats[i].name) == len && !memcmp(k_formats[i].name, name, len)) {
            *pat = k_formats[i].pat;
            *max_chars = k_formats[i].max_chars;
            return PF_FORMAT_PATTERN;
        }
    for (size_t i = 0; i < sizeof k_unsupported / sizeof *k_unsupported; i++)
        if (strlen(k_unsupported[i]) == len && !memcmp(k_unsupported[i], name, len)) return PF_FORMAT_UNSUPPORTED;
    return PF_FORMAT_IGNORED;
}
