/* refcat_csv.c — a small, strict CSV reader for reference catalogs (RFC 4180).
 *
 * One header row of column names, then one record per line; fields separated by commas;
 * a field may be enclosed in double quotes, inside which commas, line breaks and doubled
 * quotes ("") are literal. Lines end with LF or CRLF; empty lines are skipped. Every record
 * must have as many fields as the header. Any deviation is TIDE_E_FORMAT with "FILE:LINE". */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "refcat_internal.h"
#include "tide/instrument.h"
#include "tide/status.h"

/* A record being parsed: field texts NUL-separated in buf, offsets in off. */
typedef struct {
    char *buf;
    size_t len, cap;
    size_t *off;
    int nf, capf;
} record;

static int rec_putc(record *r, char c) {
    if (r->len + 1 >= r->cap) {
        size_t nc = r->cap ? 2 * r->cap : 256;
        char *nb = realloc(r->buf, nc);
        if (!nb)
            return -1;
        r->buf = nb;
        r->cap = nc;
    }
    r->buf[r->len++] = c;
    return 0;
}

static int rec_newfield(record *r) {
    if (r->nf == r->capf) {
        int nc = r->capf ? 2 * r->capf : 16;
        size_t *no = realloc(r->off, (size_t)nc * sizeof *no);
        if (!no)
            return -1;
        r->off = no;
        r->capf = nc;
    }
    r->off[r->nf++] = r->len;
    return 0;
}

/* Parse the record starting at *pos. Returns 1 when a record was read, 0 at the end of the
 * text, a negative status on error. *line is the 1-based line of the record's start on
 * return and is advanced past it. */
static int next_record(const char *path, const char *text, size_t n, size_t *pos, int64_t *line,
                       int64_t *rec_line, record *r) {
    size_t p = *pos;
    /* skip empty lines */
    while (p < n && (text[p] == '\n' || (text[p] == '\r' && p + 1 < n && text[p + 1] == '\n'))) {
        if (text[p] == '\r')
            p++;
        p++;
        (*line)++;
    }
    if (p >= n) {
        *pos = p;
        return 0;
    }
    *rec_line = *line;
    r->len = 0;
    r->nf = 0;
    if (rec_newfield(r))
        return tide_error(TIDE_E_NOMEM, "%s: no memory", path);
    int quoted = 0, was_quoted = 0, at_start = 1;
    for (;;) {
        if (p >= n) {
            if (quoted)
                return tide_error(TIDE_E_FORMAT, "%s:%lld: unterminated quoted field", path,
                                  (long long)*rec_line);
            break;
        }
        char c = text[p++];
        if (quoted) {
            if (c == '"') {
                if (p < n && text[p] == '"') {
                    p++;
                    if (rec_putc(r, '"'))
                        return tide_error(TIDE_E_NOMEM, "%s: no memory", path);
                } else {
                    quoted = 0;
                }
            } else {
                if (c == '\n')
                    (*line)++;
                if (rec_putc(r, c))
                    return tide_error(TIDE_E_NOMEM, "%s: no memory", path);
            }
            continue;
        }
        if (c == '"') {
            if (!at_start)
                return tide_error(TIDE_E_FORMAT, "%s:%lld: a quote inside an unquoted field", path,
                                  (long long)*line);
            quoted = was_quoted = 1;
            at_start = 0;
            continue;
        }
        if (c == ',' || c == '\n' || (c == '\r' && p < n && text[p] == '\n')) {
            if (rec_putc(r, 0))
                return tide_error(TIDE_E_NOMEM, "%s: no memory", path);
            if (c == ',') {
                if (rec_newfield(r))
                    return tide_error(TIDE_E_NOMEM, "%s: no memory", path);
                at_start = 1;
                was_quoted = 0;
                continue;
            }
            if (c == '\r')
                p++;
            (*line)++;
            *pos = p;
            return 1;
        }
        if (was_quoted)
            return tide_error(TIDE_E_FORMAT, "%s:%lld: text after a closing quote", path,
                              (long long)*line);
        at_start = 0;
        if (rec_putc(r, c))
            return tide_error(TIDE_E_NOMEM, "%s: no memory", path);
    }
    if (rec_putc(r, 0))
        return tide_error(TIDE_E_NOMEM, "%s: no memory", path);
    *pos = p;
    return 1;
}

/* Field text with blanks trimmed (in place). */
static const char *field(record *r, int j) {
    char *s = r->buf + r->off[j];
    while (isspace((unsigned char)*s))
        s++;
    size_t l = strlen(s);
    while (l > 0 && isspace((unsigned char)s[l - 1]))
        s[--l] = 0;
    return s;
}

static int parse_value(const char *s, int k, double *v) {
    if (!*s || !strcasecmp(s, "nan")) {
        *v = NAN;
        return k <= TIDE_RC_DEC ? -1 : 0;
    }
    if (k <= TIDE_RC_DEC)
        return tide_parse_angle(s, k == TIDE_RC_RA, v) ? -1 : 0;
    char *end = NULL;
    errno = 0;
    *v = strtod(s, &end);
    return (end == s || *end || errno == ERANGE) ? -1 : 0;
}

static int read_text(const char *path, char **text, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return tide_error(TIDE_E_IO, "%s: cannot open the reference catalog: %s", path,
                          strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int st = buf ? 0 : tide_error(TIDE_E_NOMEM, "%s: no memory", path);
    while (!st) {
        if (len == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                st = tide_error(TIDE_E_NOMEM, "%s: no memory", path);
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                st = tide_error(TIDE_E_IO, "%s: cannot read the reference catalog", path);
            break;
        }
    }
    fclose(f);
    if (st) {
        free(buf);
        return st;
    }
    *text = buf;
    *n = len;
    return 0;
}

int tide_refcat_read_csv(const char *path, const tide_refcat_columns *cols, tide_table *out) {
    tide_table_init(out);
    char *text = NULL;
    size_t n = 0, pos = 0;
    int st = read_text(path, &text, &n);
    if (st)
        return st;
    record r = {0};
    int64_t line = 1, rline = 1;
    int idx[TIDE_RC_N];
    int got = next_record(path, text, n, &pos, &line, &rline, &r);
    if (got == 0)
        st = tide_error(TIDE_E_FORMAT, "%s:1: empty file (a CSV header row is expected)", path);
    else if (got < 0)
        st = got;
    const int nhead = r.nf;
    for (int k = 0; k < TIDE_RC_N && !st; k++) {
        int required;
        const char *want = tide_refcat_wanted(cols, k, &required);
        idx[k] = -1;
        for (int j = 0; j < r.nf && idx[k] < 0; j++)
            if (!strcasecmp(field(&r, j), want))
                idx[k] = j;
        if (idx[k] < 0 && required)
            st = tide_error(TIDE_E_NOTFOUND, "%s: no column '%s' in the reference catalog", path,
                            want);
    }
    /* Rows: at most one per line of the text; count them for one allocation. */
    int64_t maxrows = 1;
    for (size_t i = pos; i < n; i++)
        maxrows += text[i] == '\n';
    if (!st)
        st = tide_refcat_table_init(out, maxrows);
    int64_t nrows = 0;
    while (!st) {
        got = next_record(path, text, n, &pos, &line, &rline, &r);
        if (got <= 0) {
            st = got;
            break;
        }
        if (r.nf != nhead) {
            st = tide_error(TIDE_E_FORMAT, "%s:%lld: %d fields, the header has %d", path,
                            (long long)rline, r.nf, nhead);
            break;
        }
        if (nrows >= maxrows) { /* cannot happen: one record needs at least one line */
            st = tide_error(TIDE_E_INTERNAL, "%s:%lld: row count", path, (long long)rline);
            break;
        }
        for (int k = 0; k < TIDE_RC_N && !st; k++) {
            int req;
            if (idx[k] < 0)
                continue;
            const char *s = field(&r, idx[k]);
            double *d = out->cols[k].data;
            if (parse_value(s, k, &d[nrows]))
                st = tide_error(TIDE_E_FORMAT, "%s:%lld: column %s: '%s' is not %s", path,
                                (long long)rline, tide_refcat_wanted(cols, k, &req), s,
                                k <= TIDE_RC_DEC ? "an angle" : "a number");
        }
        nrows++;
    }
    free(r.buf);
    free(r.off);
    free(text);
    if (st) {
        tide_table_free(out);
        return st;
    }
    out->nrows = nrows;
    return 0;
}
