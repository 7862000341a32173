/* header.c — FITS header cards: parse, look up and set keyword values (FITS 4.0 §4). */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/header.h"
#include "tide/status.h"

void tide_header_init(tide_header *h) {
    memset(h, 0, sizeof *h);
}

void tide_header_free(tide_header *h) {
    free(h->cards);
    memset(h, 0, sizeof *h);
}

static int reserve(tide_header *h, int n) {
    if (n <= h->capacity)
        return TIDE_OK;
    int cap = h->capacity ? h->capacity : 64;
    while (cap < n)
        cap *= 2;
    char(*c)[81] = realloc(h->cards, (size_t)cap * sizeof *c);
    if (!c)
        return tide_error(TIDE_E_NOMEM, "header: cannot hold %d cards", n);
    h->cards = c;
    h->capacity = cap;
    return TIDE_OK;
}

int tide_header_copy(tide_header *dst, const tide_header *src) {
    tide_header tmp;
    tide_header_init(&tmp);
    int st = reserve(&tmp, src->ncards);
    if (st)
        return st;
    if (src->ncards)
        memcpy(tmp.cards, src->cards, (size_t)src->ncards * sizeof *tmp.cards);
    tmp.ncards = src->ncards;
    tide_header_free(dst);
    *dst = tmp;
    return TIDE_OK;
}

int tide_header_append_card(tide_header *h, const char *card) {
    int st = reserve(h, h->ncards + 1);
    if (st)
        return st;
    char *c = h->cards[h->ncards];
    size_t n = strnlen(card, 80);
    memcpy(c, card, n);
    memset(c + n, ' ', 80 - n);
    c[80] = '\0';
    h->ncards++;
    return TIDE_OK;
}

int tide_header_parse(tide_header *h, const char *cards, int ncards) {
    for (int i = 0; i < ncards; i++) {
        const char *c = cards + (size_t)i * 80;
        if (!strncmp(c, "END     ", 8) || (!strncmp(c, "END", 3) && strlen(c) == 3))
            break;
        int st = tide_header_append_card(h, c);
        if (st)
            return st;
    }
    return TIDE_OK;
}

/* The card's key (up to 8 characters, trailing blanks removed) compared case-insensitively. */
static int key_matches(const char *card, const char *key) {
    size_t k = strlen(key);
    if (k > 8)
        return 0;
    for (size_t i = 0; i < 8; i++) {
        char want = i < k ? (char)toupper((unsigned char)key[i]) : ' ';
        if (card[i] != want)
            return 0;
    }
    return 1;
}

int tide_header_find(const tide_header *h, const char *key) {
    for (int i = 0; i < h->ncards; i++)
        if (key_matches(h->cards[i], key))
            return i;
    return -1;
}

int tide_header_remove(tide_header *h, const char *key) {
    int out = 0, removed = 0;
    for (int i = 0; i < h->ncards; i++) {
        if (key_matches(h->cards[i], key)) {
            removed++;
            continue;
        }
        if (out != i)
            memcpy(h->cards[out], h->cards[i], sizeof h->cards[0]);
        out++;
    }
    h->ncards = out;
    return removed;
}

/* Compose "KEY     = value / comment" and put it in place of the first card with that key. */
static int set_card(tide_header *h, const char *key, const char *value, const char *comment) {
    if (!key || !key[0] || strlen(key) > 8)
        return tide_error(TIDE_E_INVAL, "header: keyword '%s' is not 1-8 characters",
                          key ? key : "");
    char card[161];
    char ukey[9];
    size_t k = strlen(key);
    for (size_t i = 0; i <= k; i++)
        ukey[i] = (char)toupper((unsigned char)key[i]);
    int n = snprintf(card, sizeof card, "%-8s= %s", ukey, value);
    if (comment && comment[0] && n < 78)
        snprintf(card + n, sizeof card - (size_t)n, " / %s", comment);
    int i = tide_header_find(h, key);
    if (i < 0)
        return tide_header_append_card(h, card);
    size_t len = strnlen(card, 80);
    memcpy(h->cards[i], card, len);
    memset(h->cards[i] + len, ' ', 80 - len);
    return TIDE_OK;
}

int tide_header_set_str(tide_header *h, const char *key, const char *value, const char *comment) {
    /* Quotes are doubled inside FITS strings; strings shorter than 8 are padded to 8. */
    char q[80];
    size_t o = 0;
    q[o++] = '\'';
    for (const char *s = value; *s && o < 76; s++) {
        if (*s == '\'')
            q[o++] = '\'';
        q[o++] = *s;
    }
    while (o < 9)
        q[o++] = ' ';
    q[o++] = '\'';
    q[o] = '\0';
    return set_card(h, key, q, comment);
}

int tide_header_set_int(tide_header *h, const char *key, int64_t value, const char *comment) {
    char v[32];
    snprintf(v, sizeof v, "%20" PRId64, value);
    return set_card(h, key, v, comment);
}

int tide_header_set_dbl(tide_header *h, const char *key, double value, const char *comment) {
    char v[32];
    snprintf(v, sizeof v, "%20.15G", value);
    if (!strpbrk(v, ".EN")) /* keep it a real: 5 → 5. */
        snprintf(v, sizeof v, "%19.15G.", value);
    return set_card(h, key, v, comment);
}

int tide_header_set_bool(tide_header *h, const char *key, int value, const char *comment) {
    return set_card(h, key, value ? "                   T" : "                   F", comment);
}

int tide_header_add_text(tide_header *h, const char *key, const char *text) {
    char card[81];
    snprintf(card, sizeof card, "%-8s%.72s", key, text);
    return tide_header_append_card(h, card);
}

/* The raw value field of @p key (after "= ", before any comment), or an error. */
static int value_of(const tide_header *h, const char *key, const char **val, int *is_string,
                    char *buf, size_t buflen) {
    int i = tide_header_find(h, key);
    if (i < 0)
        return tide_error(TIDE_E_NOTFOUND, "header keyword %s is missing", key);
    const char *c = h->cards[i];
    if (c[8] != '=' || c[9] != ' ')
        return tide_error(TIDE_E_FORMAT, "header keyword %s has no value", key);
    const char *p = c + 10;
    while (*p == ' ')
        p++;
    size_t o = 0;
    if (*p == '\'') {
        *is_string = 1;
        for (p++; *p; p++) {
            if (*p == '\'') {
                if (p[1] == '\'') {
                    p++;
                } else {
                    break;
                }
            }
            if (o + 1 < buflen)
                buf[o++] = *p;
        }
        while (o > 0 && buf[o - 1] == ' ') /* trailing blanks are not significant */
            o--;
    } else {
        *is_string = 0;
        while (*p && *p != '/' && o + 1 < buflen)
            buf[o++] = *p++;
        while (o > 0 && buf[o - 1] == ' ')
            o--;
        if (o == 0)
            return tide_error(TIDE_E_FORMAT, "header keyword %s has an empty value", key);
    }
    buf[o] = '\0';
    *val = buf;
    return TIDE_OK;
}

int tide_header_get_str(const tide_header *h, const char *key, char *out, int outlen) {
    char buf[96];
    const char *v;
    int is_str;
    int st = value_of(h, key, &v, &is_str, buf, sizeof buf);
    if (st)
        return st;
    snprintf(out, (size_t)outlen, "%s", v);
    return TIDE_OK;
}

int tide_header_get_dbl(const tide_header *h, const char *key, double *out) {
    char buf[96];
    const char *v;
    int is_str;
    int st = value_of(h, key, &v, &is_str, buf, sizeof buf);
    if (st)
        return st;
    /* FITS allows a D exponent (Fortran); strtod does not. */
    for (char *p = buf; *p; p++)
        if (*p == 'D' || *p == 'd')
            *p = 'E';
    char *end;
    double d = strtod(v, &end);
    if (is_str || end == v || *end != '\0')
        return tide_error(TIDE_E_FORMAT, "header keyword %s = '%s' is not a number", key, v);
    *out = d;
    return TIDE_OK;
}

int tide_header_get_int(const tide_header *h, const char *key, int64_t *out) {
    char buf[96];
    const char *v;
    int is_str;
    int st = value_of(h, key, &v, &is_str, buf, sizeof buf);
    if (st)
        return st;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (is_str || end == v || *end != '\0')
        return tide_error(TIDE_E_FORMAT, "header keyword %s = '%s' is not an integer", key, v);
    *out = x;
    return TIDE_OK;
}

int tide_header_get_bool(const tide_header *h, const char *key, int *out) {
    char buf[96];
    const char *v;
    int is_str;
    int st = value_of(h, key, &v, &is_str, buf, sizeof buf);
    if (st)
        return st;
    if (is_str || (strcmp(v, "T") && strcmp(v, "F")))
        return tide_error(TIDE_E_FORMAT, "header keyword %s = '%s' is not T or F", key, v);
    *out = v[0] == 'T';
    return TIDE_OK;
}

char *tide_header_to_string(const tide_header *h, int *ncards) {
    char *s = malloc((size_t)h->ncards * 80 + 1);
    if (!s) {
        tide_error(TIDE_E_NOMEM, "header: cannot serialise %d cards", h->ncards);
        return NULL;
    }
    for (int i = 0; i < h->ncards; i++)
        memcpy(s + (size_t)i * 80, h->cards[i], 80);
    s[(size_t)h->ncards * 80] = '\0';
    if (ncards)
        *ncards = h->ncards;
    return s;
}
