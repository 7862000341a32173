/* wcs_header.c — write a tide_wcs back into a FITS header (wcshdo).
 *
 * The primary WCS keywords already in the header are removed first, so nothing stale
 * survives (a CDi_j matrix beside the new PCi_j, SIP coefficients of an older fit, CROTA2),
 * and wcshdo's cards are appended. Keywords of alternate WCSs (CTYPE1A...) and the date and
 * time keywords wcshdo would add (DATE-OBS, MJD-OBS, MJDREF...) are left to the header:
 * they are not part of the celestial solution. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <wcslib/wcshdr.h>
#include "tide/status.h"
#include "wcs_internal.h"

/* s matches "D+" (one or more digits) up to its end. */
static int all_digits(const char *s) {
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* s matches "D+_D+". */
static int digits_pair(const char *s) {
    const char *u = strchr(s, '_');
    if (!u || u == s)
        return 0;
    char a[9] = {0};
    memcpy(a, s, (size_t)(u - s) < 8 ? (size_t)(u - s) : 8);
    return all_digits(a) && all_digits(u + 1);
}

/* Is @p key (trimmed, upper case) a keyword of the primary celestial WCS or its SIP/TPV
 * distortion? Alternate-WCS keys end in a letter and do not match. */
static int is_wcs_key(const char *key) {
    static const char *exact[] = {"WCSAXES",  "LONPOLE", "LATPOLE", "RADESYS", "RADECSYS",
                                  "EQUINOX",  "WCSNAME", "A_ORDER", "B_ORDER", "AP_ORDER",
                                  "BP_ORDER", "A_DMAX",  "B_DMAX"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(key, exact[i]) == 0)
            return 1;
    static const char *indexed[] = {"CTYPE", "CRPIX", "CRVAL", "CDELT", "CUNIT",
                                    "CROTA", "CRDER", "CSYER", "CNAME", "CPDIS",
                                    "CQDIS", "CPERR", "CQERR", "DP",    "DQ"};
    for (size_t i = 0; i < sizeof indexed / sizeof indexed[0]; i++) {
        size_t n = strlen(indexed[i]);
        if (strncmp(key, indexed[i], n) == 0 && all_digits(key + n))
            return 1;
    }
    static const char *pairs[] = {"PC", "CD", "PV", "PS", "A_", "B_", "AP_", "BP_"};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        size_t n = strlen(pairs[i]);
        if (strncmp(key, pairs[i], n) == 0 && digits_pair(key + n))
            return 1;
    }
    /* AIPS-era PC001002 / CD001002. */
    if ((strncmp(key, "PC", 2) == 0 || strncmp(key, "CD", 2) == 0) && strlen(key) == 8 &&
        all_digits(key + 2))
        return 1;
    return 0;
}

/* The keyword of an 80-character card, trimmed. */
static void card_key(const char *card, char key[9]) {
    memcpy(key, card, 8);
    key[8] = 0;
    for (int j = 7; j >= 0 && key[j] == ' '; j--)
        key[j] = 0;
}

void tide_wcs_strip_header(tide_header *h) {
    for (int i = 0; i < h->ncards;) {
        char key[9];
        card_key(h->cards[i], key);
        if (key[0] && is_wcs_key(key)) {
            int removed = tide_header_remove(h, key);
            if (removed > 0)
                continue; /* card i is now another one */
        }
        i++;
    }
}

int tide_wcs_to_header(const tide_wcs *w, tide_header *h) {
    if (!w || !h)
        return tide_error(TIDE_E_INVAL, "tide_wcs_to_header: NULL argument");
    struct wcsprm *p;
    int slot = tide_wcs_acquire(w, &p);
    if (slot < 0)
        return slot;
    int nkey = 0;
    char *cards = NULL;
    /* 17 significant digits: a double survives the text round trip exactly. */
    int st = wcshdo(WCSHDO_safe | WCSHDO_P17, p, &nkey, &cards);
    if (st) {
        st = tide_error(TIDE_E_WCS, "%s: wcslib cannot write the WCS (wcshdo status %d): %s",
                        w->source, st, tide_wcs_errmsg(p));
        tide_wcs_release(w, slot);
        free(cards);
        return st;
    }
    tide_wcs_release(w, slot);

    tide_wcs_strip_header(h); /* nothing stale survives */
    for (int i = 0; i < nkey && !st; i++) {
        const char *c = cards + 80 * (size_t)i;
        char key[9], card[81];
        card_key(c, key);
        if (!key[0] || !is_wcs_key(key))
            continue;
        memcpy(card, c, 80);
        card[80] = 0;
        st = tide_header_append_card(h, card);
    }
    free(cards);
    return st;
}
