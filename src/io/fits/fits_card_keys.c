/* fits_card_keys.c — a card's keyword as cfitsio's lookup finds it; the keywords an HDU set. */
#include "fits_card_keys.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CARD = 80, NAME_MAX_LEN = 71 };

int tide_fits_cfitsio_key_name(const char *card, char *name) {
    const char *p = card;
    int n = 0;
    if (!memcmp(card, "HIERARCH ", 9)) {
        /* ffgknm: the name runs from the first non-blank after HIERARCH to the '=' */
        const char *eq = memchr(card, '=', CARD);
        if (eq) {
            p = card + 9;
            while (p < eq && *p == ' ')
                p++;
            n = (int)(eq - p);
            while (n > 0 && p[n - 1] == ' ')
                n--;
        } else {
            n = 8;
        }
    } else {
        /* ffgknm: up to the first blank or '=' (FLEN_KEYWORD - 1 = 74 bytes at most) */
        while (n < CARD && p[n] != ' ' && p[n] != '=')
            n++;
    }
    if (n > NAME_MAX_LEN)
        n = NAME_MAX_LEN;
    for (int i = 0; i < n; i++)
        name[i] = (char)toupper((unsigned char)p[i]); /* ffgcrd compares upper-cased */
    name[n] = 0;

    if (memcmp(card + 8, "= ", 2))
        return 0;
    int len = 8;
    while (len > 0 && card[len - 1] == ' ')
        len--;
    if (len == 0)
        return 0;
    for (int i = 0; i < len; i++) {
        unsigned char c = (unsigned char)card[i];
        if (!(isupper(c) || isdigit(c) || c == '-' || c == '_'))
            return 0;
    }
    return 1;
}

/** One keyword of a set: its name, the card that first set it, and that card's value. */
struct tide_key_entry {
    char key[9];
    int64_t card;
    char value[CARD];
    size_t len;
};

static size_t key_hash(const char *key) {
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (; *key; key++)
        h = (h ^ (unsigned char)*key) * 1099511628211u;
    return h;
}

static int grow(tide_key_set *s) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    struct tide_key_entry *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slot[i].key[0])
            continue;
        size_t j = key_hash(s->slot[i].key) & (cap - 1);
        while (slot[j].key[0])
            j = (j + 1) & (cap - 1);
        slot[j] = s->slot[i];
    }
    free(s->slot);
    s->slot = slot;
    s->cap = cap;
    return 0;
}

int tide_key_set_put(tide_key_set *s, const char *key, const char *value, size_t len, int64_t card,
                     int64_t *first_card) {
    if (len >= CARD)
        len = CARD - 1;
    if (2 * (s->n + 1) > s->cap && grow(s))
        return -1;
    size_t j = key_hash(key) & (s->cap - 1);
    for (; s->slot[j].key[0]; j = (j + 1) & (s->cap - 1)) {
        struct tide_key_entry *e = &s->slot[j];
        if (strcmp(e->key, key))
            continue;
        if (e->len == len && !memcmp(e->value, value, len))
            return 0;
        *first_card = e->card;
        return 1;
    }
    struct tide_key_entry *e = &s->slot[j];
    snprintf(e->key, sizeof e->key, "%s", key);
    memcpy(e->value, value, len);
    e->len = len;
    e->card = card;
    s->n++;
    return 0;
}

void tide_key_set_free(tide_key_set *s) {
    free(s->slot);
    s->slot = NULL;
    s->cap = s->n = 0;
}
