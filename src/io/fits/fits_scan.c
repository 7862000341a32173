/* fits_scan.c — a walk over a FITS file's own bytes before cfitsio parses any of them.
 *
 * cfitsio 4.2 trusts its input in places: a reserved integer keyword whose value is a long
 * non-number overflows a message buffer in ffc2j (an abort under _FORTIFY_SOURCE), an unquoted
 * 70-character TTYPEn overflows ffgtbp's column name, axis products wrap. So every header is
 * read here first, card by card, and held to the FITS standard (4.0, §3-§4, §7) wherever cfitsio
 * or tide will interpret it:
 *   - no control characters (bytes below 32) anywhere in a header; bytes above 126 are
 *     tolerated only in commentary cards and after a value's '/', where nothing parses them;
 *   - the value of every keyword that cfitsio reads itself (the structural, table, scaling and
 *     tile-compression keywords) has the type the standard gives it: a closed quoted string, a
 *     logical, an integer that fits in 64 bits, a finite real;
 *   - BITPIX is one of the six, NAXIS at most 999, every axis length and the data size are
 *     computed with overflow checks, and the data unit lies inside the file;
 *   - a card that cfitsio's looser lookup would take for one of those keywords is written as
 *     that keyword, and no second card gives one of them another value (fits_card_keys.h);
 *   - BSCALE (and a ZSCALE keyword) is finite and non-zero;
 *   - a tile-compressed image's table is checked against the bytes it holds (fits_tiles.c):
 *     its descriptors, and the streams of the codecs only cfitsio decodes (those of RICE_1,
 *     GZIP and NOCOMPRESS tiles are checked as tide decodes them, or by
 *     tide_fits_check_streams before cfitsio reads them; all of them in a gzipped file).
 * A file that passes is handed to cfitsio; one that does not is refused with a message naming
 * the file, the HDU, the card and what is wrong. Gzip-compressed files are inflated into an
 * anonymous memory file and scanned there. Files already scanned unchanged (same device,
 * inode, size and modification time) are not scanned again by this process. */
#define _GNU_SOURCE /* memfd_create */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/checked.h"
#include "fits_card_keys.h"
#include "fits_internal.h"
#include "fits_tiles.h"
#include "tide/status.h"

enum { CARD = 80, BLOCK = 2880, MAX_HEADER_CARDS = 1 << 20 };

/** The kinds of value a card can hold (FITS 4.0 §4.2). */
typedef enum { V_NONE, V_STR, V_LOG, V_INT, V_REAL, V_CPLX, V_BAD } vkind;

/** What the types of the keywords cfitsio interprets must be. */
typedef enum { K_OTHER, K_INT, K_STR, K_REAL, K_LOG, K_INT_OR_STR } ktype;

/* Parse the value field @p v (the 70 bytes after "= "). Returns the kind; *ival / *dval get an
 * integer's or real's value, *comment the offset of the '/' that starts the comment (or n). */
static vkind parse_value(const char *v, int n, int64_t *ival, double *dval, int *comment) {
    int i = 0;
    *comment = n;
    while (i < n && v[i] == ' ')
        i++;
    vkind k;
    if (i == n || v[i] == '/') {
        *comment = i;
        return V_NONE;
    }
    if (v[i] == '\'') {
        for (i++;; i++) {
            if (i >= n)
                return V_BAD; /* no closing quote */
            if (v[i] == '\'') {
                if (i + 1 < n && v[i + 1] == '\'') {
                    i++;
                    continue;
                }
                i++;
                break;
            }
        }
        k = V_STR;
    } else if ((v[i] == 'T' || v[i] == 'F') && (i + 1 == n || v[i + 1] == ' ' || v[i + 1] == '/')) {
        i++;
        k = V_LOG;
    } else if (v[i] == '(') {
        while (i < n && v[i] != ')')
            i++;
        if (i == n)
            return V_BAD;
        i++;
        k = V_CPLX;
    } else {
        int s = i, digits = 0, real = 0;
        if (v[i] == '+' || v[i] == '-')
            i++;
        for (; i < n && isdigit((unsigned char)v[i]); i++)
            digits++;
        if (i < n && v[i] == '.') {
            real = 1;
            for (i++; i < n && isdigit((unsigned char)v[i]); i++)
                digits++;
        }
        if (!digits)
            return V_BAD;
        if (i < n && (v[i] == 'E' || v[i] == 'e' || v[i] == 'D' || v[i] == 'd')) {
            real = 1;
            i++;
            if (i < n && (v[i] == '+' || v[i] == '-'))
                i++;
            if (i == n || !isdigit((unsigned char)v[i]))
                return V_BAD;
            while (i < n && isdigit((unsigned char)v[i]))
                i++;
        }
        char num[72];
        snprintf(num, sizeof num, "%.*s", i - s, v + s);
        for (char *c = num; *c; c++)
            if (*c == 'D' || *c == 'd')
                *c = 'E';
        errno = 0;
        if (real) {
            *dval = strtod(num, NULL);
            k = V_REAL;
        } else {
            long long x = strtoll(num, NULL, 10);
            if (errno == ERANGE) { /* more than 64 bits: keep it as a real */
                *dval = strtod(num, NULL);
                k = V_REAL;
            } else {
                *ival = (int64_t)x;
                *dval = (double)x;
                k = V_INT;
            }
        }
    }
    while (i < n && v[i] == ' ')
        i++;
    if (i < n && v[i] != '/')
        return V_BAD; /* something after the value that is not a comment */
    *comment = i;
    return k;
}

/* Does @p key equal @p stem followed by 1-3 digits (TTYPE12, NAXIS3)? */
static int indexed(const char *key, const char *stem) {
    size_t n = strlen(stem);
    if (strncmp(key, stem, n))
        return 0;
    const char *d = key + n;
    int nd = 0;
    while (isdigit((unsigned char)d[nd]))
        nd++;
    return nd >= 1 && nd <= 3 && !d[nd];
}

/* The type the standard gives a keyword that cfitsio reads while opening an HDU or decoding
 * its data (K_OTHER: none that matters here). */
static ktype key_type(const char *k) {
    static const char *ints[] = {"BITPIX", "NAXIS", "PCOUNT", "GCOUNT", "TFIELDS", "THEAP",
                                 "EXTVER", "EXTLEVEL", "BLANK", "ZBITPIX", "ZNAXIS", "ZPCOUNT",
                                 "ZGCOUNT", "ZBLANK", "ZDITHER0", "ZTHEAP",
                                 /* tide's own: the HDUs of its MASK and VAR planes */
                                 "TIDEMASK", "TIDEVAR"};
    static const char *strs[] = {"XTENSION", "EXTNAME",  "ZCMPTYPE",
                                 "ZQUANTIZ", "ZTENSION", "ZMASKCMP"};
    static const char *reals[] = {"BSCALE", "BZERO", "ZSCALE", "ZZERO"};
    static const char *logs[] = {"SIMPLE",  "EXTEND",  "GROUPS", "ZIMAGE",
                                 "ZSIMPLE", "ZEXTEND", "INHERIT"};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (!strcmp(k, ints[i]))
            return K_INT;
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (!strcmp(k, strs[i]))
            return K_STR;
    for (size_t i = 0; i < sizeof reals / sizeof *reals; i++)
        if (!strcmp(k, reals[i]))
            return K_REAL;
    for (size_t i = 0; i < sizeof logs / sizeof *logs; i++)
        if (!strcmp(k, logs[i]))
            return K_LOG;
    if (indexed(k, "NAXIS") || indexed(k, "ZNAXIS") || indexed(k, "ZTILE") || indexed(k, "TBCOL"))
        return K_INT;
    if (indexed(k, "TTYPE") || indexed(k, "TFORM") || indexed(k, "TUNIT") || indexed(k, "TDISP") ||
        indexed(k, "TDIM") || indexed(k, "ZNAME") || indexed(k, "ZFORM") || indexed(k, "ZCTYP"))
        return K_STR;
    /* ZVALn: cfitsio reads every tile-compression parameter (BLOCKSIZE, BYTEPIX, SCALE,
     * SMOOTH, NOISEBIT) as a number */
    if (indexed(k, "TSCAL") || indexed(k, "TZERO") || indexed(k, "ZVAL"))
        return K_REAL;
    if (indexed(k, "TNULL"))
        return K_INT_OR_STR; /* an integer in binary tables, a string in ASCII tables */
    return K_OTHER;
}

static const char *type_words(ktype t) {
    switch (t) {
    case K_INT: return "an integer";
    case K_STR: return "a quoted string";
    case K_REAL: return "a number";
    case K_LOG: return "T or F";
    case K_INT_OR_STR: return "an integer (binary table) or a string (ASCII table)";
    default: return "a value";
    }
}

/** The structural values of one HDU, as its header states them. */
typedef struct hdu_keys {
    int64_t bitpix, naxis, naxes[1000], pcount, gcount;
    int have_bitpix, have_naxis, have_naxes[1000];
    int zimage, bintable;
    tide_key_set seen; /* the keywords of key_type's list set so far, with their values */
} hdu_keys;

/** A file being scanned: its descriptor and size. */
typedef struct scan_file {
    int fd;
    int64_t size;
    const char *path; /* for messages */
    int streams;      /* every tile stream checked, not only those cfitsio alone decodes */
} scan_file;

static int read_at(const scan_file *sf, int64_t off, void *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(sf->fd, (char *)buf + done, n - done, (off_t)(off + (int64_t)done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

/* Hold one card to the rules above; record the structural values in @p hk. */
static int check_card(const scan_file *sf, int hdu, int64_t cardno, const char *c, hdu_keys *hk) {
    char key[9];
    memcpy(key, c, 8);
    key[8] = 0;
    for (int i = 7; i >= 0 && key[i] == ' '; i--)
        key[i] = 0;
    const int commentary = !strcmp(key, "COMMENT") || !strcmp(key, "HISTORY") || !key[0] ||
                           memcmp(c + 8, "= ", 2) != 0;
    for (int i = 0; i < CARD; i++)
        if ((unsigned char)c[i] < 32)
            return tide_error(TIDE_E_FORMAT,
                              "%s[HDU %d]: header card %lld (%.8s) holds a control character "
                              "(byte %d at column %d); a FITS header is ASCII text",
                              sf->path, hdu, (long long)cardno + 1, key[0] ? key : "blank",
                              (unsigned char)c[i], i + 1);
    /* a card cfitsio would read as one of the keywords it interprets must be written as that
     * keyword, or the two readers disagree on the value (fits_card_keys.h) */
    char cname[72];
    int standard = tide_fits_cfitsio_key_name(c, cname);
    if (key_type(cname) != K_OTHER && !(standard && !strcmp(cname, key)))
        return tide_error(TIDE_E_FORMAT,
                          "%s[HDU %d]: header card %lld ('%.20s') is not written as a keyword "
                          "(upper case in columns 1-8, then '= ' in columns 9-10), but cfitsio "
                          "would read it as %s",
                          sf->path, hdu, (long long)cardno + 1, c, cname);
    if (commentary) {
        for (int i = 0; i < 8; i++)
            if ((unsigned char)c[i] > 126)
                return tide_error(TIDE_E_FORMAT,
                                  "%s[HDU %d]: header card %lld has a non-ASCII keyword name",
                                  sf->path, hdu, (long long)cardno + 1);
        return TIDE_OK;
    }
    int64_t iv = 0;
    double dv = 0;
    int cpos = 0;
    vkind vk = parse_value(c + 10, CARD - 10, &iv, &dv, &cpos);
    for (int i = 0; i < 10 + (vk == V_BAD ? CARD - 10 : cpos); i++)
        if ((unsigned char)c[i] > 126) {
            ktype t = key_type(key);
            if (t == K_OTHER && i >= 10)
                break; /* a value nobody parses but tide_header, which skips it */
            return tide_error(TIDE_E_FORMAT,
                              "%s[HDU %d]: header card %lld (%s) holds a non-ASCII byte (%d) in "
                              "its %s",
                              sf->path, hdu, (long long)cardno + 1, key, (unsigned char)c[i],
                              i < 8 ? "keyword name" : "value");
        }
    ktype t = key_type(key);
    if (t == K_OTHER)
        return TIDE_OK;
    int ok;
    switch (t) {
    case K_INT: ok = vk == V_INT; break;
    case K_STR: ok = vk == V_STR; break;
    case K_REAL: ok = (vk == V_INT || vk == V_REAL) && isfinite(dv); break;
    case K_LOG: ok = vk == V_LOG; break;
    default: ok = hk->bintable ? vk == V_INT : vk == V_STR; break; /* TNULLn */
    }
    if (!ok)
        return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: header card %lld: %s must be %s, not '%.*s'",
                          sf->path, hdu, (long long)cardno + 1, key, type_words(t),
                          vk == V_BAD ? 40 : cpos, c + 10);
    /* cfitsio's lookup may take either of two cards of one name (it starts where its last
     * read ended), tide's the first: a second value for one of these keywords is refused */
    int vs = 0, ve = vk == V_BAD ? CARD - 10 : cpos;
    while (vs < ve && c[10 + vs] == ' ')
        vs++;
    while (ve > vs && c[10 + ve - 1] == ' ')
        ve--;
    int64_t first = 0;
    int dup = tide_key_set_put(&hk->seen, key, c + 10 + vs, (size_t)(ve - vs), cardno, &first);
    if (dup < 0)
        return tide_error(TIDE_E_NOMEM, "%s: no memory", sf->path);
    if (dup)
        return tide_error(TIDE_E_FORMAT,
                          "%s[HDU %d]: header cards %lld and %lld both set %s, to different "
                          "values (cfitsio may read either)",
                          sf->path, hdu, (long long)first + 1, (long long)cardno + 1, key);
    if ((!strcmp(key, "BSCALE") || !strcmp(key, "ZSCALE")) && dv == 0)
        return tide_error(TIDE_E_FORMAT,
                          "%s[HDU %d]: header card %lld: %s = 0 would make every pixel the same "
                          "value",
                          sf->path, hdu, (long long)cardno + 1, key);
    if (!strcmp(key, "BITPIX") && !hk->have_bitpix) {
        hk->bitpix = iv;
        hk->have_bitpix = 1;
    } else if (!strcmp(key, "NAXIS") && !hk->have_naxis) {
        hk->naxis = iv;
        hk->have_naxis = 1;
    } else if (indexed(key, "NAXIS")) {
        int a = atoi(key + 5);
        if (a >= 1 && a <= 999 && !hk->have_naxes[a]) {
            hk->naxes[a] = iv;
            hk->have_naxes[a] = 1;
        }
    } else if (!strcmp(key, "PCOUNT")) {
        hk->pcount = iv;
    } else if (!strcmp(key, "GCOUNT")) {
        hk->gcount = iv;
    } else if (!strcmp(key, "ZIMAGE")) {
        const char *v = c + 10;
        while (*v == ' ')
            v++;
        hk->zimage |= *v == 'T'; /* cfitsio's ffbinit: any ZIMAGE = T card makes it one */
    } else if (!strcmp(key, "XTENSION")) {
        const char *v = c + 10;
        while (*v == ' ')
            v++;
        /* ffrhdu: the string without its quotes, leading and trailing blanks, and the names
         * from before the standard, 'A3DTABLE' and '3DTABLE', are binary tables too */
        char name[72] = "";
        if (*v == '\'') {
            v++;
            while (*v == ' ')
                v++;
            int n = 0, room = (int)(c + CARD - v); /* the card is not NUL-terminated */
            while (n < room && v[n] != '\'')
                n++;
            while (n > 0 && v[n - 1] == ' ')
                n--;
            memcpy(name, v, (size_t)n);
            name[n] = 0;
        }
        hk->bintable =
            !strcmp(name, "BINTABLE") || !strcmp(name, "A3DTABLE") || !strcmp(name, "3DTABLE");
    }
    return TIDE_OK;
}

/* The data unit's size in bytes (FITS 4.0 eq. 2), checked: |BITPIX|/8 * GCOUNT * (PCOUNT +
 * prod NAXISn), with NAXIS1 = 0 of random groups left out. */
static int data_bytes(const scan_file *sf, int hdu, const hdu_keys *hk, int64_t *bytes) {
    static const int valid[] = {8, 16, 32, 64, -32, -64};
    int ok = 0;
    for (int i = 0; i < 6; i++)
        ok |= hk->have_bitpix && hk->bitpix == valid[i];
    if (!ok)
        return tide_error(
            TIDE_E_FORMAT, "%s[HDU %d]: BITPIX %s%lld is not 8, 16, 32, 64, -32 or -64", sf->path,
            hdu, hk->have_bitpix ? "= " : "missing", hk->have_bitpix ? (long long)hk->bitpix : 0LL);
    if (!hk->have_naxis || hk->naxis < 0 || hk->naxis > 999)
        return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: NAXIS %s (it must be 0 to 999)", sf->path,
                          hdu, hk->have_naxis ? "out of range" : "missing");
    if (hk->pcount < 0 || hk->gcount < 0)
        return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: negative PCOUNT or GCOUNT", sf->path, hdu);
    int64_t prod = hk->naxis > 0 ? 1 : 0;
    for (int a = 1; a <= hk->naxis; a++) {
        if (!hk->have_naxes[a])
            return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: header lacks NAXIS%d", sf->path, hdu, a);
        if (hk->naxes[a] < 0)
            return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: NAXIS%d = %lld is negative", sf->path,
                              hdu, a, (long long)hk->naxes[a]);
        if (a == 1 && hk->naxes[a] == 0 && hk->naxis > 1)
            continue; /* random groups */
        if (tide_mul_i64(prod, hk->naxes[a], &prod))
            return tide_error(TIDE_E_FORMAT,
                              "%s[HDU %d]: the axis lengths (NAXIS1..NAXIS%lld) multiply past "
                              "2^63 values",
                              sf->path, hdu, (long long)hk->naxis);
    }
    int64_t gcount = hk->gcount ? hk->gcount : 1, n;
    if (hk->naxis == 0 && hk->pcount == 0) {
        *bytes = 0;
        return TIDE_OK;
    }
    if (tide_add_i64(prod, hk->pcount, &n) || tide_mul_i64(n, gcount, &n) ||
        tide_mul_i64(n, (hk->bitpix < 0 ? -hk->bitpix : hk->bitpix) / 8, &n))
        return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: the data unit's size overflows 64 bits",
                          sf->path, hdu);
    *bytes = n;
    return TIDE_OK;
}

/* Scan the HDU whose header starts at @p off; *next gets the offset after its data unit. */
static int scan_hdu(const scan_file *sf, int hdu, int64_t off, int64_t *next) {
    hdu_keys *hk = calloc(1, sizeof *hk);
    tide_header raw;
    tide_header_init(&raw);
    char block[BLOCK];
    if (!hk)
        return tide_error(TIDE_E_NOMEM, "%s: no memory", sf->path);
    hk->gcount = 1;
    int st = TIDE_OK;
    int64_t cardno = 0, pos = off;
    int end = 0;
    while (!st && !end) {
        if (pos + BLOCK > sf->size || read_at(sf, pos, block, BLOCK)) {
            st = tide_error(TIDE_E_FORMAT,
                            "%s[HDU %d]: truncated: its header is cut off at byte %lld (no END "
                            "card)",
                            sf->path, hdu, (long long)sf->size);
            break;
        }
        pos += BLOCK;
        for (int c = 0; c < BLOCK / CARD && !st; c++, cardno++) {
            const char *card = block + c * CARD;
            if (cardno == 0) {
                const char *want = hdu == 0 ? "SIMPLE  = " : "XTENSION= ";
                if (memcmp(card, want, 10)) {
                    st =
                        tide_error(TIDE_E_FORMAT, "%s[HDU %d]: the header does not start with %.8s",
                                   sf->path, hdu, want);
                    break;
                }
            }
            if (!memcmp(card, "END     ", 8)) {
                end = 1;
                break;
            }
            if (cardno >= MAX_HEADER_CARDS) {
                st = tide_error(TIDE_E_FORMAT,
                                "%s[HDU %d]: header of more than %d cards without END", sf->path,
                                hdu, MAX_HEADER_CARDS);
                break;
            }
            st = check_card(sf, hdu, cardno, card, hk);
            if (!st && hdu > 0)
                st = tide_header_append_card(&raw, card);
        }
    }
    int64_t bytes = 0;
    if (!st)
        st = data_bytes(sf, hdu, hk, &bytes);
    if (!st && (pos > sf->size || bytes > sf->size - pos))
        st = tide_error(TIDE_E_FORMAT,
                        "%s[HDU %d]: truncated: the data unit needs %lld bytes from byte %lld but "
                        "the file ends at byte %lld",
                        sf->path, hdu, (long long)bytes, (long long)pos, (long long)sf->size);
    /* before cfitsio ever moves to it: cfitsio divides by ZTILEn on the move. The streams
     * tide decodes itself are checked as it decodes them, or by tide_fits_check_streams before
     * cfitsio does; all of them here for a gzipped file or a section (cfitsio alone reads
     * those, a section as it opens the file). */
    if (!st && hk->bintable && hk->zimage)
        st = sf->streams ? tide_fits_check_tiles(sf->fd, sf->path, hdu, &raw, pos, sf->size)
                         : tide_fits_check_tile_table(sf->fd, sf->path, hdu, &raw, pos, sf->size);
    if (!st) {
        int64_t padded = bytes + (BLOCK - bytes % BLOCK) % BLOCK;
        *next = pos + padded;
    }
    tide_header_free(&raw);
    tide_key_set_free(&hk->seen);
    free(hk);
    return st;
}

/* Scan every HDU of the open file. Bytes after the last complete HDU are ignored (cfitsio does
 * the same) unless they begin another extension's header. */
static int scan_fd(int fd, const char *path, int64_t size, int streams) {
    scan_file sf = {fd, size, path, streams};
    int64_t off = 0;
    for (int hdu = 0;; hdu++) {
        if (hdu > 0) {
            char b[9];
            /* cfitsio takes any card named XTENSION, wherever its '=', as the start of an
             * extension: such bytes are scanned (and held to the fixed format) too */
            if (off >= size || size - off < 8 || read_at(&sf, off, b, 8) ||
                memcmp(b, "XTENSION", 8))
                return TIDE_OK;
        }
        int64_t next = 0;
        int st = scan_hdu(&sf, hdu, off, &next);
        if (st)
            return st;
        off = next;
    }
}

/* Inflate a gzip file into an anonymous memory file (so the scan and the tile check read it
 * with pread like a plain one). The output is bounded by the memory the system gives. */
static int inflate_to_memfd(const char *path, int *out_fd, int64_t *out_size) {
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return tide_error(TIDE_E_IO, "%s: cannot open: %s", path, strerror(errno));
    int fd = memfd_create("tide-scan", MFD_CLOEXEC);
    if (fd < 0) {
        gzclose(gz);
        return tide_error(TIDE_E_IO, "%s: cannot make a memory file to inflate into: %s", path,
                          strerror(errno));
    }
    enum { CHUNK = 1 << 16 };
    char *buf = malloc(CHUNK);
    int64_t total = 0;
    int st = buf ? TIDE_OK : tide_error(TIDE_E_NOMEM, "%s: no memory", path);
    while (!st) {
        int n = gzread(gz, buf, CHUNK);
        if (n < 0) {
            int zerr = 0;
            const char *m = gzerror(gz, &zerr);
            st = tide_error(TIDE_E_FORMAT, "%s: corrupt gzip stream (%s)", path, m ? m : "?");
            break;
        }
        if (n == 0)
            break;
        if (write(fd, buf, (size_t)n) != n) {
            st = tide_error(TIDE_E_NOMEM, "%s: cannot hold the inflated file: %s", path,
                            strerror(errno));
            break;
        }
        total += n;
    }
    gzclose(gz);
    free(buf);
    if (st) {
        close(fd);
        return st;
    }
    *out_fd = fd;
    *out_size = total;
    return TIDE_OK;
}

/* Files that passed, so that the several opens of one frame scan it once. */
typedef struct scanned {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
    int streams; /* scanned with every tile stream checked */
} scanned;
static scanned scanned_files[32];
static int scanned_next;
static pthread_mutex_t scanned_lock = PTHREAD_MUTEX_INITIALIZER;

static int same_file(const scanned *a, const struct stat *sb) {
    return a->dev == sb->st_dev && a->ino == sb->st_ino && a->size == sb->st_size &&
           a->mtime.tv_sec == sb->st_mtim.tv_sec && a->mtime.tv_nsec == sb->st_mtim.tv_nsec &&
           a->ctime.tv_sec == sb->st_ctim.tv_sec && a->ctime.tv_nsec == sb->st_ctim.tv_nsec;
}

int tide_fits_scan_file(const char *path, int gzipped, int streams) {
    streams |= gzipped; /* only cfitsio reads a gzipped file */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tide_error(errno == ENOENT ? TIDE_E_NOTFOUND : TIDE_E_IO, "%s: cannot open: %s",
                          path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tide_error(TIDE_E_IO, "%s: not a regular file", path);
    }
    /* Only a file that has not changed for a while is remembered: a file rewritten in place
     * within one clock tick of a scan would otherwise keep its stamps (ctime, which no user
     * can set back, is part of the key) */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const int settled = now.tv_sec - sb.st_ctim.tv_sec > 2;
    pthread_mutex_lock(&scanned_lock);
    int known = 0;
    for (int i = 0; settled && i < (int)(sizeof scanned_files / sizeof *scanned_files); i++)
        known |= same_file(&scanned_files[i], &sb) && scanned_files[i].streams >= streams;
    pthread_mutex_unlock(&scanned_lock);
    if (known) {
        close(fd);
        return TIDE_OK;
    }
    int st;
    if (gzipped) {
        int mfd = -1;
        int64_t size = 0;
        st = inflate_to_memfd(path, &mfd, &size);
        if (!st) {
            st = scan_fd(mfd, path, size, 1);
            close(mfd);
        }
    } else {
        st = scan_fd(fd, path, (int64_t)sb.st_size, streams);
    }
    close(fd);
    if (!st && settled) {
        pthread_mutex_lock(&scanned_lock);
        scanned *s = &scanned_files[scanned_next];
        scanned_next = (scanned_next + 1) % (int)(sizeof scanned_files / sizeof *scanned_files);
        s->dev = sb.st_dev;
        s->ino = sb.st_ino;
        s->size = sb.st_size;
        s->mtime = sb.st_mtim;
        s->ctime = sb.st_ctim;
        s->streams = streams;
        pthread_mutex_unlock(&scanned_lock);
    }
    return st;
}
