/* redact.c — tide_redact_uri (redact.h): the passwords of URIs and libpq conninfo strings
 * replaced by "***" in any text. It errs on the side of hiding: a password that is not
 * well-formed (unencoded '@', '/', '?' or spaces, which libpq rejects and then echoes in its
 * own message) is still covered. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "tide/redact.h"

typedef struct sink {
    char *out;
    size_t n, o;
} sink;

static void put(sink *k, const char *s, size_t len) {
    for (size_t i = 0; i < len && k->o + 1 < k->n; i++)
        k->out[k->o++] = s[i];
}

static int is_scheme_char(char c) {
    return isalnum((unsigned char)c) || c == '+' || c == '-' || c == '.';
}

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* The authority starting at @p a (after "://"): when it holds a password, the offsets of the
 * password's first character and of the '@' that ends it; 0 when there is none. */
static int uri_password(const char *a, size_t *pw, size_t *at) {
    size_t e = 0, ae;
    while (a[e] && !is_space(a[e]))
        e++; /* the token */
    for (ae = 0; ae < e && a[ae] != '/' && a[ae] != '?' && a[ae] != '#'; ae++)
        ; /* the authority */
    size_t last = (size_t)-1;
    for (size_t i = 0; i < ae; i++)
        if (a[i] == '@')
            last = i;
    if (last != (size_t)-1) { /* user:password@ (the last '@': a password may hold one) */
        const char *c = memchr(a, ':', last);
        if (!c)
            return 0;
        *pw = (size_t)(c - a) + 1;
        *at = last;
        return 1;
    }
    /* No '@' in the authority, yet "user:pa/ss@host": a ':' that is not a port's, then an
     * '@' later on the line. A bracketed IPv6 host is left alone. */
    if (a[0] == '[')
        return 0;
    const char *c = memchr(a, ':', ae);
    if (!c)
        return 0;
    size_t k = (size_t)(c - a) + 1;
    int port = 1;
    for (size_t i = k; i < ae; i++)
        port &= isdigit((unsigned char)a[i]) != 0;
    if (port)
        return 0;
    for (size_t i = ae; a[i] && a[i] != '\n'; i++)
        if (a[i] == '@') {
            *pw = k;
            *at = i;
            return 1;
        }
    return 0;
}

/* A "password = VALUE" keyword at @p p (after @p prev): the offsets of the value's start and
 * end (a quoted value with its quotes); 0 when @p p starts no such keyword. */
static int keyword_password(const char *p, char prev, size_t *v0, size_t *v1) {
    if (strncasecmp(p, "password", 8))
        return 0;
    size_t i = 8;
    while (p[i] == ' ' || p[i] == '\t')
        i++;
    if (p[i] != '=')
        return 0;
    i++;
    while (p[i] == ' ' || p[i] == '\t')
        i++;
    *v0 = i;
    if (p[i] == '\'') { /* libpq's quoted value, backslash escapes */
        for (i++; p[i] && p[i] != '\''; i++)
            if (p[i] == '\\' && p[i + 1])
                i++;
        if (p[i] == '\'')
            i++;
    } else if (prev == '?' || prev == '&') { /* a URI's query parameter */
        while (p[i] && !is_space(p[i]) && p[i] != '&' && p[i] != '#')
            i++;
    } else {
        while (p[i] && !is_space(p[i]))
            i++;
    }
    *v1 = i;
    return 1;
}

/* The first occurrence of the @p len bytes at @p w in @p s, or NULL. */
static char *find_n(char *s, const char *w, size_t len) {
    for (; *s; s++)
        if (!strncmp(s, w, len))
            return s;
    return NULL;
}

/* The next secret in @p in at or after @p i: its span [*a, *b) (may be empty: nothing to hide
 * there, the scan goes on after it); 0 when there is none. */
static int next_secret(const char *in, size_t i, size_t *a, size_t *b) {
    for (; in[i]; i++) {
        size_t pw, at, v0, v1;
        if (in[i] == ':' && in[i + 1] == '/' && in[i + 2] == '/' && i > 0 &&
            is_scheme_char(in[i - 1]) && uri_password(in + i + 3, &pw, &at)) {
            *a = i + 3 + pw;
            *b = i + 3 + at; /* the '@' stays */
            return 1;
        }
        if ((in[i] == 'p' || in[i] == 'P') &&
            keyword_password(in + i, i ? in[i - 1] : 0, &v0, &v1)) {
            *a = i + v0;
            *b = i + v1;
            return 1;
        }
    }
    return 0;
}

const char *tide_redact_uri(const char *in, char *out, size_t n) {
    if (!out || !n)
        return out;
    sink k = {out, n, 0};
    if (!in)
        in = "";
    size_t i = 0, a, b;
    while (next_secret(in, i, &a, &b)) {
        put(&k, in + i, a - i);
        i = b;
        if (b > a) {
            put(&k, "***", 3);
        } else if (in[a]) { /* an empty value: the scan goes on after the character there */
            put(&k, in + a, 1);
            i = a + 1;
        }
        if (!in[i])
            break;
    }
    put(&k, in + i, strlen(in + i));
    out[k.o] = 0;
    return out;
}

/* Every occurrence in @p out of the @p len bytes at @p w (4 or more: a shorter one would
 * garble the text) replaced by "***", in place (the text shrinks). */
static void hide(char *out, const char *w, size_t len) {
    if (len < 4)
        return;
    for (char *hit = out; (hit = find_n(hit, w, len)) != NULL;) {
        memmove(hit + 3, hit + len, strlen(hit + len) + 1);
        memcpy(hit, "***", 3);
        hit += 3;
    }
}

const char *tide_redact_uri_in(const char *text, const char *uri, char *out, size_t n) {
    if (!out || !n)
        return out;
    tide_redact_uri(text, out, n);
    size_t i = 0, a, b;
    while (uri && uri[i] && next_secret(uri, i, &a, &b)) {
        i = b > a || !uri[a] ? b : a + 1;
        if (b > a + 1 && uri[a] == '\'' && uri[b - 1] == '\'') /* a quoted value: its text */
            a++, b--;
        hide(out, uri + a, b - a);
        /* and its pieces, as a parser that split it at a delimiter shows them */
        for (size_t p = a, q; p < b; p = q + 1) {
            for (q = p; q < b && !strchr("/?#&@: ", uri[q]); q++)
                ;
            if (q - p < b - a)
                hide(out, uri + p, q - p);
        }
    }
    return out;
}
