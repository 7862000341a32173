/* fits_tile_header.c — tide_fits_tile_header: a compressed HDU's image header converted by
 * tide (fits_tile_header.h). */
#include "fits_tile_header.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "tide/status.h"

/* The key of @p card (up to 8 characters, trailing blanks dropped). */
static void card_key(const char *card, char key[9]) {
    memcpy(key, card, 8);
    key[8] = 0;
    for (int c = 7; c >= 0 && (key[c] == ' ' || !key[c]); c--)
        key[c] = 0;
}

/* @p key is @p stem followed by digits only (and at least one). */
static int indexed(const char *key, const char *stem) {
    size_t n = strlen(stem);
    if (strncmp(key, stem, n) || !key[n])
        return 0;
    for (const char *d = key + n; *d; d++)
        if (!isdigit((unsigned char)*d))
            return 0;
    return 1;
}

/* Cards of the table or of the compression: not part of the image's header. */
static int dropped(const char *key, const char *card) {
    static const char *exact[] = {"XTENSION", "BITPIX",   "NAXIS",    "PCOUNT",   "GCOUNT",
                                  "TFIELDS",  "THEAP",    "CHECKSUM", "DATASUM",  "ZIMAGE",
                                  "ZCMPTYPE", "ZQUANTIZ", "ZDITHER0", "ZBLANK",   "ZSCALE",
                                  "ZZERO",    "ZMASKCMP", "ZSIMPLE",  "ZTENSION", "ZEXTEND",
                                  "ZBITPIX",  "ZNAXIS",   "ZPCOUNT",  "ZGCOUNT",  "ZHECKSUM",
                                  "ZDATASUM", "ZTHEAP",   "ZBLOCKED", "END"};
    static const char *stems[] = {"NAXIS", "ZNAXIS", "ZTILE", "ZNAME", "ZVAL",  "TTYPE", "TFORM",
                                  "TUNIT", "TDISP",  "TNULL", "TSCAL", "TZERO", "TDIM"};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        if (!strcmp(key, exact[i]))
            return 1;
    for (size_t i = 0; i < sizeof stems / sizeof *stems; i++)
        if (indexed(key, stems[i]))
            return 1;
    /* EXTNAME = 'COMPRESSED_IMAGE' is the table's default name, not the image's */
    return !strcmp(key, "EXTNAME") && strstr(card, "'COMPRESSED_IMAGE");
}

/* The card of @p raw with key @p from, renamed @p to (value and comment kept); 1 if absent. */
static int renamed(const tide_header *raw, const char *from, const char *to, tide_header *out) {
    int i = tide_header_find(raw, from);
    if (i < 0)
        return 1;
    char card[81];
    memcpy(card, raw->cards[i], 80);
    card[80] = 0;
    size_t n = strlen(to);
    memset(card, ' ', 8);
    memcpy(card, to, n);
    return tide_header_append_card(out, card);
}

int tide_fits_tile_header(const tide_header *raw, const char *path, int hdu, tide_header *out) {
    int64_t bitpix = 0, naxis = 0;
    if (tide_header_get_int(raw, "ZBITPIX", &bitpix) ||
        tide_header_get_int(raw, "ZNAXIS", &naxis) || naxis < 0 || naxis > 999)
        return tide_error(TIDE_E_FORMAT,
                          "%s[HDU %d]: the compressed image lacks an integer ZBITPIX or ZNAXIS",
                          path, hdu);
    int simple = tide_header_find(raw, "ZSIMPLE") >= 0, st = 0;
    if (simple) {
        st = tide_header_set_bool(out, "SIMPLE", 1, "file does conform to FITS standard");
    } else {
        char ext[72] = "IMAGE";
        if (tide_header_find(raw, "ZTENSION") >= 0)
            tide_header_get_str(raw, "ZTENSION", ext, sizeof ext);
        st = tide_header_set_str(out, "XTENSION", ext, "IMAGE extension");
    }
    if (!st)
        st = tide_header_set_int(out, "BITPIX", bitpix, "number of bits per data pixel");
    if (!st)
        st = tide_header_set_int(out, "NAXIS", naxis, "number of data axes");
    for (int i = 1; !st && i <= naxis; i++) {
        char zk[16], k[16];
        int64_t v = 0;
        snprintf(zk, sizeof zk, "ZNAXIS%d", i);
        snprintf(k, sizeof k, "NAXIS%d", i);
        if (tide_header_get_int(raw, zk, &v))
            return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: the compressed image lacks %s", path, hdu,
                              zk);
        st = tide_header_set_int(out, k, v, "length of data axis");
    }
    if (!st && simple && renamed(raw, "ZEXTEND", "EXTEND", out) == 1)
        st = 0;
    if (!st && !simple) {
        int64_t pc = 0, gc = 1;
        if (tide_header_find(raw, "ZPCOUNT") >= 0)
            tide_header_get_int(raw, "ZPCOUNT", &pc);
        if (tide_header_find(raw, "ZGCOUNT") >= 0)
            tide_header_get_int(raw, "ZGCOUNT", &gc);
        st = tide_header_set_int(out, "PCOUNT", pc, "required keyword; must = 0");
        if (!st)
            st = tide_header_set_int(out, "GCOUNT", gc, "required keyword; must = 1");
    }
    for (int i = 0; !st && i < raw->ncards; i++) {
        char key[9];
        card_key(raw->cards[i], key);
        if (!strcmp(key, "ZHECKSUM") || !strcmp(key, "ZDATASUM")) {
            st = renamed(raw, key, key[1] == 'H' ? "CHECKSUM" : "DATASUM", out);
            continue;
        }
        if (!dropped(key, raw->cards[i]))
            st = tide_header_append_card(out, raw->cards[i]);
    }
    return st < 0 ? tide_error_prefix(st, "%s[HDU %d]: ", path, hdu) : 0;
}
