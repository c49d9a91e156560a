/* Equal-valued spellings of a JSON number (grammar/num_spell.h): the number is read exactly into
 * significant digits and a decimal point position, then written back in each form. No floating
 * point: the value is the text's, not its nearest double. */
#include "grammar/num_spell.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    int neg;
    char sig[PF_NUM_SPELL_LEN]; /* significant digits, no leading or trailing zeros; "" for zero */
    int nsig;
    long point; /* value = 0.sig x 10^point */
} decimal;

/* Reads RFC 8259 number syntax; 0 when text is not one or has too many significant digits. */
static int read_decimal(const char *t, size_t n, decimal *d) {
    size_t i = 0;
    memset(d, 0, sizeof *d);
    if (i < n && t[i] == '-') d->neg = 1, i++;
    if (i >= n || t[i] < '0' || t[i] > '9' || (t[i] == '0' && i + 1 < n && t[i + 1] >= '0' && t[i + 1] <= '9'))
        return 0;
    char all[256];
    int na = 0;
    long int_digits = 0;
    for (; i < n && t[i] >= '0' && t[i] <= '9'; i++, int_digits++)
        if (na < (int)sizeof all) all[na++] = t[i];
        else return 0;
    if (i < n && t[i] == '.') {
        if (++i >= n || t[i] < '0' || t[i] > '9') return 0;
        for (; i < n && t[i] >= '0' && t[i] <= '9'; i++)
            if (na < (int)sizeof all) all[na++] = t[i];
            else return 0;
    }
    long e = 0;
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        int eneg = 0;
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-')) eneg = t[i++] == '-';
        if (i >= n || t[i] < '0' || t[i] > '9') return 0;
        for (; i < n && t[i] >= '0' && t[i] <= '9'; i++)
            if (e < 100000) e = e * 10 + (t[i] - '0');
        if (eneg) e = -e;
    }
    if (i != n) return 0;
    int a = 0, b = na;
    while (a < b && all[a] == '0') a++;
    while (b > a && all[b - 1] == '0') b--;
    if (b - a >= PF_NUM_SPELL_LEN) return 0;
    d->nsig = b - a;
    memcpy(d->sig, all + a, (size_t)d->nsig);
    d->point = int_digits - a + e;
    return 1;
}

static int add(char out[PF_NUM_SPELL_MAX][PF_NUM_SPELL_LEN], int k, const char *s, size_t len) {
    if (k >= PF_NUM_SPELL_MAX || len >= PF_NUM_SPELL_LEN) return k;
    for (int i = 0; i < k; i++)
        if (!strcmp(out[i], s)) return k;
    memcpy(out[k], s, len);
    out[k][len] = 0;
    return k + 1;
}

int pf_num_spellings(const char *text, size_t n, char out[PF_NUM_SPELL_MAX][PF_NUM_SPELL_LEN]) {
    decimal d;
    if (!read_decimal(text, n, &d)) return 0;
    int k = 0;
    if (d.nsig == 0) { /* zero: -0 equals 0 */
        static const char *const z[] = {"0", "0.0", "-0", "-0.0"};
        for (int i = 0; i < 4; i++) k = add(out, k, z[i], strlen(z[i]));
        return k;
    }
    char s[PF_NUM_SPELL_LEN * 2];
    size_t m = 0;
    const size_t room = PF_NUM_SPELL_LEN - 1;
    const char *sign = d.neg ? "-" : "";
    if (d.point >= d.nsig && d.point <= (long)room) { /* integral: "120" and "120.0" */
        m = (size_t)snprintf(s, sizeof s, "%s%.*s", sign, d.nsig, d.sig);
        while (m < room && (long)m - d.neg < d.point) s[m++] = '0';
        if ((long)m - d.neg == d.point) {
            k = add(out, k, s, m);
            memcpy(s + m, ".0", 2);
            k = add(out, k, s, m + 2);
        }
    } else if (d.point > 0 && d.point < d.nsig) { /* "1.25" */
        m = (size_t)snprintf(s, sizeof s, "%s%.*s.%.*s", sign, (int)d.point, d.sig, d.nsig - (int)d.point, d.sig + d.point);
        k = add(out, k, s, m);
    } else if (d.point <= 0 && -d.point + d.nsig + 3 <= (long)room) { /* "0.0025" */
        m = (size_t)snprintf(s, sizeof s, "%s0.", sign);
        for (long z = 0; z < -d.point; z++) s[m++] = '0';
        memcpy(s + m, d.sig, (size_t)d.nsig);
        k = add(out, k, s, m + (size_t)d.nsig);
    }
    long x = d.point - 1; /* the decimal exponent of the first digit */
    if ((x < -4 || x >= 16) && d.nsig <= 17 && x > -100000 && x < 100000) { /* Python's repr: 1.5e+16, 1e-05 */
        if (d.nsig > 1) m = (size_t)snprintf(s, sizeof s, "%s%c.%.*se%c%02ld", sign, d.sig[0], d.nsig - 1, d.sig + 1, x < 0 ? '-' : '+', x < 0 ? -x : x);
        else m = (size_t)snprintf(s, sizeof s, "%s%ce%c%02ld", sign, d.sig[0], x < 0 ? '-' : '+', x < 0 ? -x : x);
        k = add(out, k, s, m);
    }
    return k;
}
