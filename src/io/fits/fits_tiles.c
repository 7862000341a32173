/* fits_tiles.c — tide_fits_check_tiles: a tile-compressed image's keywords, table layout,
 * descriptors and streams checked against the file's bytes before cfitsio decodes anything
 * (fits_tiles.h says what is checked and why). */
#include "fits_tiles.h"

#include <ctype.h>
#include <errno.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/checked.h"
#include "fits_tiles_codec.h"
#include "rice_decode.h"
#include "tide/status.h"

#define RICE_MAX_BLOCK (1 << 20)
/* Rows are read this many bytes at a time (or one row's descriptors when a row is wider). */
#define ROW_CHUNK ((int64_t)1 << 20)

typedef tide_tile_layout tile_check;
typedef tide_tile_col tile_col;

/* One thread's buffers, and the first tile it found wrong (its detail copied, since the
 * error detail is per thread). */
typedef struct {
    uint8_t *stream; /* one tile's stream */
    size_t stream_cap;
    void *scratch; /* one decoded RICE tile */
    int64_t bad;   /* first failing tile, INT64_MAX when none */
    int st;
    char msg[1024];
} tile_worker;

#define FAIL(t, ...) tile_fail((t), TIDE_E_FORMAT, __VA_ARGS__)

static int tile_fail(const tile_check *t, int st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int tile_fail(const tile_check *t, int st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tide_error(st, "%s[HDU %d]: %s", t->path, t->hdu, msg);
}

/* An integer keyword: 0 and *v, 1 when absent and not @p required, else a failure. The
 * header parser saturates out-of-range integers, so the extremes are refused as such. */
static int key_int(const tile_check *t, const tide_header *h, const char *key, int required,
                   int64_t *v) {
    if (tide_header_find(h, key) < 0) {
        if (!required)
            return 1;
        return FAIL(t, "the compressed image lacks %s", key);
    }
    if (tide_header_get_int(h, key, v))
        return FAIL(t, "%s is not an integer", key);
    if (*v == INT64_MAX || *v == INT64_MIN)
        return FAIL(t, "%s is out of range", key);
    return 0;
}

static int key_str(const tide_header *h, const char *key, char *out, int n) {
    out[0] = 0;
    if (tide_header_find(h, key) < 0)
        return 1;
    return tide_header_get_str(h, key, out, n) ? -1 : 0;
}

/* Width in bytes of a binary-table field of TFORM @p tf; its type letter, repeat and, for
 * P/Q descriptors, element type. -1 when the TFORM is not one FITS defines. */
static int64_t tform_width(const char *tf, char *type, int64_t *repeat, char *etype) {
    while (*tf == ' ')
        tf++;
    int64_t r = 1;
    if (isdigit((unsigned char)*tf)) {
        r = 0;
        while (isdigit((unsigned char)*tf)) {
            if (tide_mul_i64(r, 10, &r) || tide_add_i64(r, *tf - '0', &r))
                return -1;
            tf++;
        }
    }
    char c = (char)toupper((unsigned char)*tf);
    *type = c;
    *repeat = r;
    *etype = 0;
    int64_t w;
    switch (c) {
    case 'L':
    case 'B':
    case 'A': w = 1; break;
    case 'I': w = 2; break;
    case 'J':
    case 'E': w = 4; break;
    case 'K':
    case 'D':
    case 'C': w = 8; break;
    case 'M': w = 16; break;
    case 'X': return (r + 7) / 8;
    case 'P': w = 8; break;
    case 'Q': w = 16; break;
    default: return -1;
    }
    if (c == 'P' || c == 'Q') {
        *etype = (char)toupper((unsigned char)tf[1]);
        if (!strchr("LXBIJKAEDCM", *etype) || !*etype)
            return -1;
    }
    int64_t total;
    if (tide_mul_i64(r, w, &total))
        return -1;
    return total;
}

static int elem_size(char t) {
    switch (t) {
    case 'L':
    case 'B':
    case 'A':
    case 'X': return 1;
    case 'I': return 2;
    case 'J':
    case 'E': return 4;
    case 'K':
    case 'D':
    case 'C': return 8;
    case 'M': return 16;
    default: return 0;
    }
}

/* The image's keywords: codec, ZBITPIX, axes, tiles and their products. */
static int read_image_keys(tile_check *t, const tide_header *h) {
    char s[80];
    int zimage = 0;
    if (tide_header_find(h, "ZIMAGE") < 0 || tide_header_get_bool(h, "ZIMAGE", &zimage) || !zimage)
        return FAIL(t, "not a tile-compressed image (ZIMAGE is not T)");
    if (key_str(h, "ZCMPTYPE", s, sizeof s) != 0)
        return FAIL(t, "the compressed image lacks ZCMPTYPE (or it is not a string)");
    if (!strcmp(s, "RICE_1") || !strcmp(s, "RICE_ONE"))
        t->codec = CODEC_RICE;
    else if (!strcmp(s, "GZIP_1"))
        t->codec = CODEC_GZIP1;
    else if (!strcmp(s, "GZIP_2"))
        t->codec = CODEC_GZIP2;
    else if (!strcmp(s, "HCOMPRESS_1"))
        t->codec = CODEC_HCOMP;
    else if (!strcmp(s, "PLIO_1"))
        t->codec = CODEC_PLIO;
    else if (!strcmp(s, "NOCOMPRESS")) /* tide decodes it (tile_decode.c) */
        t->codec = CODEC_NOCOMP;
    else if (!strcmp(s, "BZIP2_1"))
        return tile_fail(t, TIDE_E_UNSUPPORTED,
                         "ZCMPTYPE '%s' is not decoded by cfitsio's public build", s);
    else
        return FAIL(t, "unknown ZCMPTYPE '%.40s'", s);

    int64_t v;
    int st = key_int(t, h, "ZBITPIX", 1, &v);
    if (st)
        return st;
    if (v != 8 && v != 16 && v != 32 && v != 64 && v != -32 && v != -64)
        return FAIL(t, "ZBITPIX = %lld is not 8, 16, 32, 64, -32 or -64", (long long)v);
    t->zbitpix = (int)v;
    if ((st = key_int(t, h, "ZNAXIS", 1, &v)))
        return st;
    if (v < 1 || v > TIDE_TILE_MAX_DIM)
        return FAIL(t, "ZNAXIS = %lld is not in 1..%d", (long long)v, TIDE_TILE_MAX_DIM);
    t->ndim = (int)v;

    int64_t pix = 1, nominal = 1, maxpix = 1, ntiles = 1;
    for (int i = 0; i < t->ndim; i++) {
        char key[16];
        snprintf(key, sizeof key, "ZNAXIS%d", i + 1);
        if ((st = key_int(t, h, key, 1, &t->znaxis[i])))
            return st;
        if (t->znaxis[i] < 1)
            return FAIL(t, "%s = %lld (an axis must have at least 1 pixel)", key,
                        (long long)t->znaxis[i]);
        snprintf(key, sizeof key, "ZTILE%d", i + 1);
        st = key_int(t, h, key, 0, &t->ztile[i]);
        if (st < 0)
            return st;
        if (st == 1)
            t->ztile[i] = i == 0 ? t->znaxis[0] : 1;
        if (t->ztile[i] < 1)
            return FAIL(t, "%s = %lld (a tile must have at least 1 pixel)", key,
                        (long long)t->ztile[i]);
        /* cfitsio writes and reads ZTILEn > ZNAXISn: the tiles are cut at the image's edge. */
        int64_t clamped = t->ztile[i] < t->znaxis[i] ? t->ztile[i] : t->znaxis[i];
        t->ntile[i] = (t->znaxis[i] - 1) / t->ztile[i] + 1;
        if (tide_mul_i64(pix, t->znaxis[i], &pix))
            return FAIL(t, "ZNAXIS1 x ... x ZNAXIS%d overflows 64 bits", i + 1);
        if (tide_mul_i64(nominal, t->ztile[i], &nominal))
            return FAIL(t, "ZTILE1 x ... x ZTILE%d overflows 64 bits", i + 1);
        if (tide_mul_i64(maxpix, clamped, &maxpix) || tide_mul_i64(ntiles, t->ntile[i], &ntiles))
            return FAIL(t, "the tile count overflows 64 bits at axis %d", i + 1);
    }
    int64_t pixbytes = t->zbitpix < 0 ? -t->zbitpix / 8 : t->zbitpix / 8, bytes, tbytes;
    if (tide_mul_i64(pix, pixbytes, &bytes) || (uint64_t)bytes > SIZE_MAX)
        return FAIL(t, "the image's %lld pixels of %lld bytes overflow 64 bits", (long long)pix,
                    (long long)pixbytes);
    /* cfitsio sizes its tile buffers from the unclamped product (maxtilelen), up to 8 bytes a
     * pixel (HCOMPRESS of 32-bit data, doubles): bound that. */
    if (tide_mul_i64(nominal, pixbytes, &tbytes) || tbytes > TIDE_FITS_TILE_MAX_BYTES)
        return tile_fail(t, TIDE_E_FORMAT,
                         "a tile of %lld pixels of %lld bytes is larger than %lld bytes (the "
                         "largest tile tide decodes)",
                         (long long)nominal, (long long)pixbytes,
                         (long long)TIDE_FITS_TILE_MAX_BYTES);
    t->ntiles = ntiles;
    t->maxpix = maxpix;

    if (t->codec == CODEC_RICE) {
        /* As cfitsio: ZVAL1 the block size, ZVAL2 the bytes per pixel (default 4), swapped
         * when ZVAL1 < 16 and ZVAL2 > 8 (files that wrote them the other way round). */
        int64_t blk = 32, bp = 4;
        if ((st = key_int(t, h, "ZVAL1", 0, &blk)) < 0)
            return st;
        if ((st = key_int(t, h, "ZVAL2", 0, &bp)) < 0)
            return st;
        if (blk < 16 && bp > 8) {
            int64_t x = blk;
            blk = bp;
            bp = x;
        }
        if (blk < 1 || blk > RICE_MAX_BLOCK)
            return FAIL(t, "RICE block size (ZVAL1) = %lld is not in 1..%d", (long long)blk,
                        RICE_MAX_BLOCK);
        t->rice_block = (int)blk;
        t->rice_bytepix = bp == 1 ? 1 : bp == 2 ? 2 : 4; /* cfitsio decodes any other as 4 */
    }
    /* The dither sequence has 10000 values and cfitsio indexes it with ZDITHER0 unchecked
     * (a value below 1 reads before the table): the convention's range only, where tiles are
     * dithered (fpack -d writes ZDITHER0 = 0 for NOCOMPRESS floats, which are not). */
    if (t->zbitpix < 0 && t->codec != CODEC_NOCOMP && tide_header_find(h, "ZDITHER0") >= 0 &&
        key_str(h, "ZQUANTIZ", s, sizeof s) == 0 && !strncmp(s, "SUBTRACTIVE_DITHER_", 19)) {
        if ((st = key_int(t, h, "ZDITHER0", 1, &v)))
            return st;
        if (v < 1 || v > 10000)
            return FAIL(t, "ZDITHER0 = %lld is not in 1..10000 (the dither sequence's length)",
                        (long long)v);
    }
    if (t->codec == CODEC_HCOMP)
        for (int i = 2; i < t->ndim; i++)
            if (t->ztile[i] != 1)
                return FAIL(t, "HCOMPRESS_1 tiles are 2-D, but ZTILE%d = %lld", i + 1,
                            (long long)t->ztile[i]);
    return 0;
}

/* A stream column's TFORM: a 1P/1Q descriptor of the element type the codec needs. */
static int stream_col(tile_check *t, const tide_header *h, tile_col *c, const char *name,
                      const char *tf, const char *want) {
    char type, etype;
    int64_t rep;
    tform_width(tf, &type, &rep, &etype);
    if ((type != 'P' && type != 'Q') || rep != 1)
        return FAIL(t, "column %s has TFORM '%s', not a 1P or 1Q descriptor", name, tf);
    if (!strchr(want, etype))
        return FAIL(t, "column %s has TFORM '%s': its elements should be of type %s", name, tf,
                    want);
    char key[16];
    snprintf(key, sizeof key, "TSCAL%d", c->col);
    int scaled = tide_header_find(h, key) >= 0;
    snprintf(key, sizeof key, "TZERO%d", c->col);
    scaled |= tide_header_find(h, key) >= 0;
    if (scaled)
        return FAIL(t, "column %s has TSCAL/TZERO, which would change its stream", name);
    c->q = type == 'Q';
    c->type = etype;
    c->elem = elem_size(etype);
    return 0;
}

/* The table: its layout (row width, heap) and the columns cfitsio reads. */
static int read_table(tile_check *t, const tide_header *h, int64_t file_size) {
    char s[80];
    int64_t v;
    int st;
    if (key_str(h, "XTENSION", s, sizeof s) != 0 || strcmp(s, "BINTABLE"))
        return FAIL(t, "a compressed image must be a BINTABLE extension");
    if ((st = key_int(t, h, "BITPIX", 1, &v)))
        return st;
    if (v != 8)
        return FAIL(t, "the table's BITPIX is %lld, not 8", (long long)v);
    if ((st = key_int(t, h, "NAXIS", 1, &v)))
        return st;
    if (v != 2)
        return FAIL(t, "the table's NAXIS is %lld, not 2", (long long)v);
    if ((st = key_int(t, h, "NAXIS1", 1, &t->naxis1)) ||
        (st = key_int(t, h, "NAXIS2", 1, &t->naxis2)))
        return st;
    if (t->naxis1 < 0 || t->naxis2 < 0)
        return FAIL(t, "NAXIS1 = %lld, NAXIS2 = %lld", (long long)t->naxis1, (long long)t->naxis2);
    if (t->naxis2 != t->ntiles)
        return FAIL(t, "the table has %lld rows (NAXIS2) but the image %lld tiles",
                    (long long)t->naxis2, (long long)t->ntiles);
    t->pcount = 0;
    if ((st = key_int(t, h, "PCOUNT", 0, &t->pcount)) < 0)
        return st;
    if (st == 1)
        t->pcount = 0;
    if (t->pcount < 0)
        return FAIL(t, "PCOUNT = %lld", (long long)t->pcount);
    if ((st = key_int(t, h, "GCOUNT", 0, &v)) < 0)
        return st;
    if (st == 0 && v != 1)
        return FAIL(t, "GCOUNT = %lld, not 1", (long long)v);
    if (tide_mul_i64(t->naxis1, t->naxis2, &t->table_bytes) ||
        tide_add_i64(t->table_bytes, t->pcount, &t->data_end))
        return FAIL(t, "NAXIS1 x NAXIS2 + PCOUNT overflows 64 bits");
    int64_t end;
    if (t->data_start < 0 || tide_add_i64(t->data_start, t->data_end, &end) || end > file_size)
        return FAIL(t,
                    "truncated: the table and heap need %lld bytes from byte %lld but the "
                    "file ends at byte %lld",
                    (long long)t->data_end, (long long)t->data_start, (long long)file_size);
    t->theap = t->table_bytes;
    if ((st = key_int(t, h, "THEAP", 0, &t->theap)) < 0)
        return st;
    if (st == 1)
        t->theap = t->table_bytes;
    if (t->theap < t->table_bytes || t->theap > t->data_end)
        return FAIL(t, "THEAP = %lld is outside the data unit (table %lld bytes, heap to %lld)",
                    (long long)t->theap, (long long)t->table_bytes, (long long)t->data_end);

    int64_t tfields = 0;
    if ((st = key_int(t, h, "TFIELDS", 1, &tfields)))
        return st;
    if (tfields < 1 || tfields > 999)
        return FAIL(t, "TFIELDS = %lld is not in 1..999", (long long)tfields);
    int64_t width = 0;
    for (int n = 1; n <= tfields; n++) {
        char key[16], tf[80], name[80];
        snprintf(key, sizeof key, "TFORM%d", n);
        if (key_str(h, key, tf, sizeof tf) != 0)
            return FAIL(t, "%s is missing or not a string", key);
        char type, etype;
        int64_t rep, w = tform_width(tf, &type, &rep, &etype);
        if (w < 0)
            return FAIL(t, "%s = '%s' is not a binary-table format", key, tf);
        int64_t off = width;
        if (tide_add_i64(width, w, &width))
            return FAIL(t, "the row width overflows at %s", key);
        snprintf(key, sizeof key, "TTYPE%d", n);
        if (key_str(h, key, name, sizeof name) != 0)
            continue;
        tile_col *c = !strcasecmp(name, "COMPRESSED_DATA")        ? &t->cmp
                      : !strcasecmp(name, "GZIP_COMPRESSED_DATA") ? &t->gz
                      : !strcasecmp(name, "UNCOMPRESSED_DATA")    ? &t->unc
                                                                  : NULL;
        if (c && !c->col) { /* cfitsio takes the first column of a name */
            c->col = n;
            c->off = off;
            /* cfitsio converts UNCOMPRESSED_DATA from any numeric type as it reads it. */
            const char *want = c == &t->unc                               ? "BIJKED"
                               : (c == &t->cmp && t->codec == CODEC_PLIO) ? "I"
                                                                          : "B";
            if ((st = stream_col(t, h, c, name, tf, want)))
                return st;
        } else if (!c && (!strcasecmp(name, "ZSCALE") || !strcasecmp(name, "ZZERO") ||
                          !strcasecmp(name, "ZBLANK"))) {
            int zblank = !strcasecmp(name, "ZBLANK");
            if (rep < 1 || !strchr(zblank ? "BIJK" : "BIJKED", type))
                return FAIL(t, "column %s has TFORM '%s', not a scalar %s", name, tf,
                            zblank ? "integer" : "number");
            tide_tile_scalar *sc = zblank                        ? &t->zblank
                                   : !strcasecmp(name, "ZSCALE") ? &t->zscale
                                                                 : &t->zzero;
            if (!sc->col) { /* the first of a name, as cfitsio */
                sc->col = n;
                sc->off = off;
                sc->type = type;
            }
        }
    }
    if (width != t->naxis1)
        return FAIL(t, "NAXIS1 = %lld but the columns' TFORMs make rows of %lld bytes",
                    (long long)t->naxis1, (long long)width);
    if (!t->cmp.col)
        return FAIL(t, "the compressed image has no COMPRESSED_DATA column");
    if (t->gz.col && t->zbitpix > 0)
        return FAIL(t, "a GZIP_COMPRESSED_DATA column in an integer image (ZBITPIX = %d)",
                    t->zbitpix);
    return 0;
}

/* Read @p n bytes at @p off of the file: a short read means the file ends first. */
static int read_at(const tile_check *t, void *buf, size_t n, int64_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(t->fd, (char *)buf + got, n - got, (off_t)(off + (int64_t)got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return tide_error(TIDE_E_IO, "%s[HDU %d]: read error at byte %lld: %s", t->path, t->hdu,
                              (long long)(off + (int64_t)got), strerror(errno));
        if (r == 0)
            return FAIL(t, "truncated: the file ends at byte %lld",
                        (long long)(off + (int64_t)got));
        got += (size_t)r;
    }
    return 0;
}

static int64_t get_be(const uint8_t *b, int nbytes) {
    uint64_t v = 0;
    for (int i = 0; i < nbytes; i++)
        v = (v << 8) | b[i];
    return nbytes == 4 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
}

/* A row's descriptor of column @p c: its element count and heap offset, checked to lie in
 * the heap. */
int tide_tile_descriptor(const tile_check *t, const tile_col *c, const uint8_t *row, int64_t tile,
                         int64_t *nelem, int64_t *off) {
    int w = c->q ? 8 : 4;
    const uint8_t *d = row + (c->off - t->row_lo);
    *nelem = get_be(d, w);
    *off = get_be(d + w, w);
    int64_t bytes, end;
    if (*nelem < 0 || *off < 0 || tide_mul_i64(*nelem, c->elem, &bytes) ||
        tide_add_i64(t->theap, *off, &end) || tide_add_i64(end, bytes, &end) || end > t->data_end)
        return FAIL(t,
                    "tile %lld: column %d's descriptor (%lld elements at heap byte %lld) "
                    "points outside the heap of %lld bytes",
                    (long long)tile + 1, c->col, (long long)*nelem, (long long)*off,
                    (long long)(t->data_end - t->theap));
    return 0;
}

/* The stream of @p nelem elements of column @p c at heap offset @p off, in t->stream. */
static int load_stream(const tile_check *t, tile_worker *w, const tile_col *c, int64_t tile,
                       int64_t nelem, int64_t off, size_t *nbytes) {
    size_t n;
    if (tide_size_elems(nelem, (size_t)c->elem, &n) || n > (size_t)TIDE_FITS_TILE_MAX_BYTES)
        return FAIL(t, "tile %lld: a stream of %lld elements is larger than %lld bytes",
                    (long long)tile + 1, (long long)nelem, (long long)TIDE_FITS_TILE_MAX_BYTES);
    if (n > w->stream_cap) {
        void *p = realloc(w->stream, n);
        if (!p)
            return tide_error(TIDE_E_NOMEM, "%s[HDU %d]: no memory for a %zu-byte stream", t->path,
                              t->hdu, n);
        w->stream = p;
        w->stream_cap = n;
    }
    *nbytes = n;
    return read_at(t, w->stream, n, t->data_start + t->theap + off);
}

/* Pixel sizes a gzip tile may inflate to, as cfitsio writes them (floating-point images:
 * quantized to int32, or the values themselves). */
static int gzip_sizes(const tile_check *t, int sizes[2]) {
    switch (t->zbitpix) {
    case -64:
        sizes[0] = 4;
        sizes[1] = 8;
        return 2;
    case -32: sizes[0] = 4; return 1;
    case 8:
    case 16: /* cfitsio before 3.0 gzipped 8- and 16-bit tiles as 4-byte integers, and still
              * reads them (m13_gzip.fits of ../shared/data/compressed is one) */
        sizes[0] = t->zbitpix / 8;
        sizes[1] = 4;
        return 2;
    default: sizes[0] = t->zbitpix / 8; return 1;
    }
}

/* Tile @p k (0-based, axis 1 fastest): its sizes along axes 1 and 2 and its pixel count. */
void tide_tile_shape(const tile_check *t, int64_t k, int64_t *n1, int64_t *n2, int64_t *npix) {
    int64_t p = 1;
    *n1 = *n2 = 1;
    for (int i = 0; i < t->ndim; i++) {
        int64_t idx = k % t->ntile[i];
        k /= t->ntile[i];
        int64_t first = idx * t->ztile[i]; /* < znaxis: no overflow */
        int64_t len = t->znaxis[i] - first < t->ztile[i] ? t->znaxis[i] - first : t->ztile[i];
        if (i == 0)
            *n1 = len;
        else if (i == 1)
            *n2 = len;
        p *= len; /* <= the largest tile, which did not overflow */
    }
    *npix = p;
}

/* One tile's streams, from its row's bytes. */
/* Whether tide's own decoder (tile_decode.c and its CUDA twin) decodes the codec's tiles,
 * checking each stream as it goes. */
static int tide_decodes(int codec) {
    return codec == CODEC_RICE || codec == CODEC_GZIP1 || codec == CODEC_GZIP2 ||
           codec == CODEC_NOCOMP;
}

/* Tile @p k: its descriptors, and with @p streams its stream as cfitsio will read it. */
static int check_tile(const tile_check *t, tile_worker *w, int64_t k, const uint8_t *row,
                      int streams) {
    int64_t nelem, off, n1, n2, npix;
    int st = tide_tile_descriptor(t, &t->cmp, row, k, &nelem, &off);
    if (st)
        return st;
    tide_tile_shape(t, k, &n1, &n2, &npix);
    size_t nb;
    if (nelem == 0) { /* cfitsio then reads UNCOMPRESSED_DATA, else GZIP_COMPRESSED_DATA */
        if (t->unc.col) {
            if ((st = tide_tile_descriptor(t, &t->unc, row, k, &nelem, &off)))
                return st;
            if (nelem != npix)
                return FAIL(t, "tile %lld: UNCOMPRESSED_DATA holds %lld pixels, the tile %lld",
                            (long long)k + 1, (long long)nelem, (long long)npix);
            return 0;
        }
        if (t->gz.col) {
            if ((st = tide_tile_descriptor(t, &t->gz, row, k, &nelem, &off)))
                return st;
            if (nelem == 0)
                return FAIL(t,
                            "tile %lld has no data (empty COMPRESSED_DATA and "
                            "GZIP_COMPRESSED_DATA)",
                            (long long)k + 1);
            if (!streams)
                return 0;
            if ((st = load_stream(t, w, &t->gz, k, nelem, off, &nb)))
                return st;
            int size = -t->zbitpix / 8;
            st = tide_tile_check_gzip(w->stream, nb, npix, &size, 1);
            return st ? tide_error_prefix(st,
                                          "%s[HDU %d]: tile %lld: GZIP_COMPRESSED_DATA: ", t->path,
                                          t->hdu, (long long)k + 1)
                      : 0;
        }
        return FAIL(t, "tile %lld has no data (empty COMPRESSED_DATA, no uncompressed column)",
                    (long long)k + 1);
    }
    if (!streams)
        return 0;
    if ((st = load_stream(t, w, &t->cmp, k, nelem, off, &nb)))
        return st;
    int sizes[2], ns;
    switch (t->codec) {
    case CODEC_RICE:
        st = tide_rice_decode(w->stream, nb, t->rice_bytepix, t->rice_block, npix, w->scratch);
        break;
    case CODEC_GZIP1:
    case CODEC_GZIP2:
        ns = gzip_sizes(t, sizes);
        st = tide_tile_check_gzip(w->stream, nb, npix, sizes, ns);
        break;
    case CODEC_NOCOMP: /* the tile's pixels themselves, big-endian */
        if ((int64_t)nb != npix * (t->zbitpix < 0 ? -t->zbitpix : t->zbitpix) / 8)
            st = tide_error(TIDE_E_FORMAT,
                            "NOCOMPRESS stream of %zu bytes for %lld pixels of %d bits", nb,
                            (long long)npix, t->zbitpix < 0 ? -t->zbitpix : t->zbitpix);
        break;
    case CODEC_HCOMP: /* cfitsio decodes to 64-bit pixels beyond 16-bit images */
        st = tide_tile_check_hcompress(w->stream, nb, n1, n2, t->zbitpix != 8 && t->zbitpix != 16);
        break;
    default: st = tide_tile_check_plio(w->stream, (size_t)nelem); break;
    }
    return st ? tide_error_prefix(st, "%s[HDU %d]: tile %lld: ", t->path, t->hdu, (long long)k + 1)
              : 0;
}

/* Every row, read in chunks of whole rows (or, for rows wider than a chunk, the span of the
 * stream columns' descriptors alone); the rows of a chunk are checked by @p nw threads. The
 * tile reported is the first wrong one, whatever the threads' order: a thread skips only
 * tiles after one already found wrong. */
static int check_rows(tile_check *t, tile_worker *w, int nw, int streams) {
    int64_t lo = t->cmp.off, hi = t->cmp.off + (t->cmp.q ? 16 : 8);
    const tile_col *cols[2] = {&t->gz, &t->unc};
    for (int i = 0; i < 2; i++)
        if (cols[i]->col) {
            if (cols[i]->off < lo)
                lo = cols[i]->off;
            if (cols[i]->off + (cols[i]->q ? 16 : 8) > hi)
                hi = cols[i]->off + (cols[i]->q ? 16 : 8);
        }
    int wide = t->naxis1 > ROW_CHUNK;
    t->row_lo = wide ? lo : 0;
    int64_t per = wide ? 1 : ROW_CHUNK / (t->naxis1 ? t->naxis1 : 1);
    size_t cap = wide ? (size_t)(hi - lo) : (size_t)(per * t->naxis1);
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf)
        return tide_error(TIDE_E_NOMEM, "%s[HDU %d]: no memory for the table", t->path, t->hdu);
    int st = 0;
    int64_t bad = INT64_MAX;
    for (int64_t r0 = 0; r0 < t->naxis2 && !st && bad == INT64_MAX; r0 += per) {
        int64_t nr = t->naxis2 - r0 < per ? t->naxis2 - r0 : per;
        if (wide)
            st = read_at(t, buf, cap, t->data_start + r0 * t->naxis1 + lo);
        else
            st = read_at(t, buf, (size_t)(nr * t->naxis1), t->data_start + r0 * t->naxis1);
        if (st)
            break;
        int nt = nr < nw ? (int)nr : nw;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 4)
        for (int64_t r = 0; r < nr; r++) {
            int64_t k = r0 + r;
            if (k > __atomic_load_n(&bad, __ATOMIC_RELAXED))
                continue;
            tile_worker *me = &w[omp_get_thread_num()];
            int s = check_tile(t, me, k, wide ? buf : buf + r * t->naxis1, streams);
            if (s && k < me->bad) {
                me->bad = k;
                me->st = s;
                snprintf(me->msg, sizeof me->msg, "%s", tide_error_detail());
                int64_t cur = __atomic_load_n(&bad, __ATOMIC_RELAXED);
                while (k < cur && !__atomic_compare_exchange_n(&bad, &cur, k, 0, __ATOMIC_RELAXED,
                                                               __ATOMIC_RELAXED))
                    ;
            }
        }
    }
    free(buf);
    if (st)
        return st;
    for (int i = 0; i < nw; i++)
        if (w[i].bad == bad && bad != INT64_MAX)
            return tide_error(w[i].st, "%s", w[i].msg);
    return 0;
}

int tide_tile_layout_read(tile_check *t, const tide_header *hdr, int64_t file_size) {
    int st = read_image_keys(t, hdr);
    return st ? st : read_table(t, hdr, file_size);
}

/* The check, of every stream (@p all) or only of those tide does not decode itself. */
static int check_tiles(int fd, const char *path, int hdu, const tide_header *hdr,
                       int64_t data_start, int64_t file_size, int threads, int all) {
    tile_check *t = calloc(1, sizeof *t);
    if (!t)
        return tide_error(TIDE_E_NOMEM, "%s[HDU %d]: out of memory", path, hdu);
    t->path = path ? path : "(file)";
    t->hdu = hdu;
    t->fd = fd;
    t->data_start = data_start;
    int st = tide_tile_layout_read(t, hdr, file_size);
    if (!st && t->codec == CODEC_RICE &&
        (tide_size_elems(t->maxpix, (size_t)t->rice_bytepix, &t->scratch_bytes) ||
         t->scratch_bytes > (size_t)TIDE_FITS_TILE_MAX_BYTES))
        st = FAIL(t, "a RICE tile of %lld pixels decodes to more than %lld bytes",
                  (long long)t->maxpix, (long long)TIDE_FITS_TILE_MAX_BYTES);
    if (st) {
        free(t);
        return st;
    }
    const int streams = all || !tide_decodes(t->codec);
    /* Threads: as asked (0: OpenMP's default), as many as there are tiles, and no more than
     * fit TIDE_FITS_TILE_MAX_BYTES of scratch tiles together. */
    int nw = threads > 0 ? threads : omp_get_max_threads();
    if ((int64_t)nw > t->ntiles)
        nw = (int)t->ntiles;
    if (t->scratch_bytes && (size_t)nw > (size_t)TIDE_FITS_TILE_MAX_BYTES / t->scratch_bytes)
        nw = (int)((size_t)TIDE_FITS_TILE_MAX_BYTES / t->scratch_bytes);
    if (nw < 1)
        nw = 1;
    tile_worker *w = calloc((size_t)nw, sizeof *w);
    st = w ? 0 : tide_error(TIDE_E_NOMEM, "%s[HDU %d]: out of memory", t->path, hdu);
    for (int i = 0; !st && i < nw; i++) {
        w[i].bad = INT64_MAX;
        if (streams && t->scratch_bytes && !(w[i].scratch = malloc(t->scratch_bytes)))
            st = tide_error(TIDE_E_NOMEM, "%s[HDU %d]: no memory for a %zu-byte tile", t->path, hdu,
                            t->scratch_bytes);
    }
    if (!st)
        st = check_rows(t, w, nw, streams);
    for (int i = 0; w && i < nw; i++) {
        free(w[i].scratch);
        free(w[i].stream);
    }
    free(w);
    free(t);
    return st;
}

int tide_fits_check_tiles_threads(int fd, const char *path, int hdu, const tide_header *hdr,
                                  int64_t data_start, int64_t file_size, int threads) {
    return check_tiles(fd, path, hdu, hdr, data_start, file_size, threads, 1);
}

int tide_fits_check_tiles(int fd, const char *path, int hdu, const tide_header *hdr,
                          int64_t data_start, int64_t file_size) {
    return check_tiles(fd, path, hdu, hdr, data_start, file_size, 0, 1);
}

int tide_fits_check_tile_table(int fd, const char *path, int hdu, const tide_header *hdr,
                               int64_t data_start, int64_t file_size) {
    return check_tiles(fd, path, hdu, hdr, data_start, file_size, 0, 0);
}
