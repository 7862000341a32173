/* tile_decode.c — tide_tile_decode_cpu: tile-compressed images decoded in parallel over
 * tiles, each tile as cfitsio's imcomp_decompress_tile does it (tile_decode.h). */
#include "tile_decode.h"

#include <libdeflate.h>
#include <math.h>
#include <stdarg.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rice_decode.h"
#include "tide/status.h"

static float g_randoms[TIDE_TILE_NRANDOM];
static int g_randoms_ready;

const float *tide_tile_random_table(void) {
    if (__atomic_load_n(&g_randoms_ready, __ATOMIC_ACQUIRE))
        return g_randoms; /* every dithered tile asks: no lock once it is made */
#pragma omp critical(tide_tile_randoms)
    if (!__atomic_load_n(&g_randoms_ready, __ATOMIC_ACQUIRE)) {
        tide_tile_randoms(g_randoms);
        __atomic_store_n(&g_randoms_ready, 1, __ATOMIC_RELEASE);
    }
    return g_randoms;
}

static int key_dbl(const tide_header *h, const char *key, double *v) {
    return tide_header_find(h, key) >= 0 && !tide_header_get_dbl(h, key, v);
}

int tide_tile_image_open(tide_tile_image *ti, int fd, const char *path, int hdu,
                         const tide_header *raw, int64_t data_start, int64_t file_size) {
    memset(ti, 0, sizeof *ti);
    tide_tile_layout *t = &ti->lay;
    t->path = path ? path : "(file)";
    t->hdu = hdu;
    t->fd = fd;
    t->data_start = data_start;
    int st = tide_tile_layout_read(t, raw, file_size);
    if (st)
        return st;
    if (t->codec == CODEC_HCOMP || t->codec == CODEC_PLIO || t->zbitpix == 64)
        return 1;
    for (int i = 2; i < t->ndim; i++)
        if (t->znaxis[i] != 1)
            return 1;
    ti->bscale = 1.0;
    ti->bzero = 0.0;
    key_dbl(raw, "BSCALE", &ti->bscale);
    key_dbl(raw, "BZERO", &ti->bzero);
    if (!t->zscale.col && key_dbl(raw, "ZSCALE", &ti->zscale)) {
        ti->zscale_key = 1;
        if (!key_dbl(raw, "ZZERO", &ti->zzero))
            ti->zzero = 0.0;
    }
    /* cfitsio: a ZBLANK column, else a ZBLANK keyword, else a BLANK keyword. */
    if (!t->zblank.col) {
        const char *k = tide_header_find(raw, "ZBLANK") >= 0  ? "ZBLANK"
                        : tide_header_find(raw, "BLANK") >= 0 ? "BLANK"
                                                              : NULL;
        if (k && !tide_header_get_int(raw, k, &ti->blank))
            ti->blank_key = 1;
    }
    char q[80] = "";
    if (tide_header_find(raw, "ZQUANTIZ") >= 0)
        tide_header_get_str(raw, "ZQUANTIZ", q, sizeof q);
    if (t->zbitpix < 0) {
        ti->lossless = !strncmp(q, "NONE", 4);
        ti->dither = !strcmp(q, "SUBTRACTIVE_DITHER_1")   ? TIDE_TILE_DITHER1
                     : !strcmp(q, "SUBTRACTIVE_DITHER_2") ? TIDE_TILE_DITHER2
                                                          : TIDE_TILE_SCALE;
    }
    ti->dither0 = 1;
    if (tide_header_find(raw, "ZDITHER0") >= 0 &&
        tide_header_get_int(raw, "ZDITHER0", &ti->dither0))
        ti->dither0 = 1;
    if (ti->dither0 < 1 || ti->dither0 > TIDE_TILE_NRANDOM) /* the layout check refuses these */
        ti->dither0 = 1;
    return 0;
}

static uint64_t be_u(const uint8_t *b, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | b[i];
    return v;
}

/* A numeric field of type @p type at @p b, as a double (cfitsio's ffgcvd) or an integer. */
static double field_dbl(const uint8_t *b, char type) {
    uint64_t u;
    switch (type) {
    case 'B': return b[0];
    case 'I': return (int16_t)be_u(b, 2);
    case 'J': return (int32_t)be_u(b, 4);
    case 'K': return (double)(int64_t)be_u(b, 8);
    case 'E': {
        uint32_t w = (uint32_t)be_u(b, 4);
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    default: {
        u = be_u(b, 8);
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    }
}

static int64_t field_int(const uint8_t *b, char type) {
    switch (type) {
    case 'B': return b[0];
    case 'I': return (int16_t)be_u(b, 2);
    case 'J': return (int32_t)be_u(b, 4);
    default: return (int64_t)be_u(b, 8);
    }
}

void tide_tile_conv_for(const tide_tile_image *ti, int64_t k, const uint8_t *row, int bytes,
                        tide_tile_conv *c) {
    const tide_tile_layout *t = &ti->lay;
    memset(c, 0, sizeof *c);
    /* Scaling as imcomp_decompress_tile: the row's ZSCALE/ZZERO (combined with BSCALE/BZERO
     * for floats), else the keywords, else none; an identity then falls back to BSCALE/BZERO. */
    double scale = 1.0, zero = 0.0;
    if (t->zscale.col) {
        scale = field_dbl(row + t->zscale.off, t->zscale.type);
        zero = t->zzero.col ? field_dbl(row + t->zzero.off, t->zzero.type) : 0.0;
        if (t->zbitpix < 0 && (ti->bscale != 1.0 || ti->bzero != 0.0)) {
            scale = scale * ti->bscale;
            zero = zero * ti->bscale + ti->bzero;
        }
    } else if (ti->zscale_key) {
        scale = ti->zscale;
        zero = ti->zzero;
    }
    if (scale == 1.0 && zero == 0.0) {
        scale = ti->bscale;
        zero = ti->bzero;
    }
    c->scale = scale;
    c->zero = zero;
    c->scaled = scale != 1.0 || zero != 0.0;
    int64_t tnull = 0;
    if (t->zblank.col) {
        c->has_null = 1;
        tnull = field_int(row + t->zblank.off, t->zblank.type);
    } else if (ti->blank_key) {
        c->has_null = 1;
        tnull = ti->blank;
    }
    /* cfitsio casts its int tnull to the tile's type */
    tnull = (int32_t)tnull;
    c->null = bytes == 1 ? (int64_t)(uint8_t)tnull : bytes == 2 ? (int64_t)(int16_t)tnull : tnull;
    if (t->zbitpix < 0 && ti->dither) {
        c->dither = ti->dither;
        int64_t row1 = k + 1 + ti->dither0 - 1; /* cfitsio: nrow + dither_offset - 1 >= 1 */
        c->first_rand = (int)((row1 - 1) % TIDE_TILE_NRANDOM);
    }
}

/* One thread's buffers. */
typedef struct {
    uint8_t *raw;  /* a decoded tile, up to 8 bytes a pixel */
    float *vals;   /* the tile's floats, in tile order (for tiles narrower than the image) */
    uint8_t *shuf; /* GZIP_2's shuffled bytes */
    struct libdeflate_decompressor *inflater;
    int64_t bad;
    int st;
    char msg[1024];
} tile_worker;

#define TILE_FAIL(t, k, ...) tile_fail((t), (k), __VA_ARGS__)

static int tile_fail(const tide_tile_layout *t, int64_t k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int tile_fail(const tide_tile_layout *t, int64_t k, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: tile %lld: %s", t->path, t->hdu, (long long)k + 1,
                      msg);
}

static inline int64_t raw_int(const uint8_t *raw, int bytes, int64_t i) {
    if (bytes == 1)
        return raw[i];
    if (bytes == 2) {
        int16_t s;
        memcpy(&s, raw + 2 * i, 2);
        return s;
    }
    int32_t s;
    memcpy(&s, raw + 4 * i, 4);
    return s;
}

/* The undithered conversion with the pixel size and the null and scale tests as constants,
 * so that each case is a loop of its own the compiler can vectorise. */
static inline __attribute__((always_inline)) void plain_loop(const tide_tile_conv *c,
                                                             const uint8_t *raw, const int bytes,
                                                             const int has_null, const int scaled,
                                                             int64_t n, float *v) {
    const int64_t null = c->null;
    const double scale = c->scale, zero = c->zero;
    for (int64_t i = 0; i < n; i++) {
        int64_t x = raw_int(raw, bytes, i);
        float f = scaled ? (float)tide_dadd(tide_dmul((double)x, scale), zero) : (float)x;
        v[i] = has_null && x == null ? NAN : f;
    }
}

#define PLAIN_CASES(B)                                                                             \
    case B:                                                                                        \
        if (c->has_null && c->scaled)                                                              \
            plain_loop(c, raw, B, 1, 1, n, v);                                                     \
        else if (c->has_null)                                                                      \
            plain_loop(c, raw, B, 1, 0, n, v);                                                     \
        else if (c->scaled)                                                                        \
            plain_loop(c, raw, B, 0, 1, n, v);                                                     \
        else                                                                                       \
            plain_loop(c, raw, B, 0, 0, n, v);                                                     \
        break

/* Integers of @p bytes bytes (host order) to floats under @p c (tide_tile_value). */
static void ints_to_floats(const tide_tile_conv *c, const uint8_t *raw, int bytes, int64_t n,
                           float *v) {
    if (!c->dither) {
        switch (bytes) {
            PLAIN_CASES(1);
            PLAIN_CASES(2);
        default: PLAIN_CASES(4);
        }
        return;
    }
    const float *r = tide_tile_random_table();
    int i0 = c->first_rand, idx = (int)(r[i0] * 500);
    for (int64_t i = 0; i < n; i++) {
        v[i] = tide_tile_value(c, raw_int(raw, bytes, i), r[idx]);
        tide_tile_rand_next(r, &i0, &idx);
    }
}

/* IEEE floats or doubles (host order) to floats (tide_tile_real_value). */
static void reals_to_floats(const uint8_t *raw, int bytes, int64_t n, int nullcheck, double scale,
                            double zero, float *v) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t u;
        if (bytes == 4) {
            uint32_t w;
            memcpy(&w, raw + 4 * i, 4);
            u = w;
        } else {
            memcpy(&u, raw + 8 * i, 8);
        }
        v[i] = tide_tile_real_value(u, bytes, nullcheck, scale, zero);
    }
}

/* Big-endian values of @p bytes bytes to host order, in place (one byte swap each). */
static void swap_in_place(uint8_t *p, int bytes, int64_t n) {
    if (bytes == 2)
        for (int64_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, p + 2 * i, 2);
            v = __builtin_bswap16(v);
            memcpy(p + 2 * i, &v, 2);
        }
    else if (bytes == 4)
        for (int64_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, p + 4 * i, 4);
            v = __builtin_bswap32(v);
            memcpy(p + 4 * i, &v, 4);
        }
    else if (bytes == 8)
        for (int64_t i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, p + 8 * i, 8);
            v = __builtin_bswap64(v);
            memcpy(p + 8 * i, &v, 8);
        }
}

/* GZIP_2's planes (all first bytes, then all second bytes, ...: the most significant first)
 * back to values in host order, from @p in to @p out. */
static void unshuffle(const uint8_t *in, uint8_t *out, int bytes, int64_t n) {
    if (bytes == 2) {
        uint16_t *o = (uint16_t *)(void *)out;
        for (int64_t i = 0; i < n; i++)
            o[i] = (uint16_t)((unsigned)in[i] << 8 | in[n + i]);
    } else if (bytes == 4) {
        uint32_t *o = (uint32_t *)(void *)out;
        for (int64_t i = 0; i < n; i++)
            o[i] = (uint32_t)in[i] << 24 | (uint32_t)in[n + i] << 16 |
                   (uint32_t)in[2 * n + i] << 8 | in[3 * n + i];
    } else {
        uint64_t *o = (uint64_t *)(void *)out;
        for (int64_t i = 0; i < n; i++) {
            uint64_t v = 0;
            for (int b = 0; b < 8; b++)
                v = v << 8 | in[(int64_t)b * n + i];
            o[i] = v;
        }
    }
}

/* Inflate a gzip stream to exactly one of the sizes npix * {1, 2, 4, 8} that @p allowed
 * lists (a bit mask of byte counts); *bytes gets the pixel size found. */
static int inflate_tile(const tide_tile_layout *t, tile_worker *w, int64_t k, const uint8_t *s,
                        int64_t ns, int64_t npix, unsigned allowed, uint8_t *dst, int *bytes,
                        const char *col) {
    size_t got = 0;
    enum libdeflate_result r =
        libdeflate_gzip_decompress(w->inflater, s, (size_t)ns, dst, (size_t)npix * 8, &got);
    if (r == LIBDEFLATE_INSUFFICIENT_SPACE)
        return TILE_FAIL(t, k, "%s: the gzip stream inflates to more than %lld pixels of 8 bytes",
                         col, (long long)npix);
    if (r != LIBDEFLATE_SUCCESS)
        return TILE_FAIL(t, k, "%s: the gzip stream of %lld bytes is corrupt or cut short", col,
                         (long long)ns);
    for (int b = 1; b <= 8; b *= 2)
        if ((allowed & (unsigned)b) && got == (size_t)npix * (size_t)b) {
            *bytes = b;
            return 0;
        }
    return TILE_FAIL(t, k, "%s: the gzip stream inflates to %zu bytes, not a whole %lld-pixel tile",
                     col, got, (long long)npix);
}

/* Tile @p k into vals (tile order). */
static int decode_tile(const tide_tile_image *ti, const uint8_t *data, tile_worker *w, int64_t k,
                       int64_t npix, float *vals) {
    const tide_tile_layout *t = &ti->lay;
    const uint8_t *row = data + k * t->naxis1;
    const uint8_t *heap = data + t->theap;
    int64_t nelem, off;
    int st = tide_tile_descriptor(t, &t->cmp, row, k, &nelem, &off);
    if (st)
        return st;
    uint8_t *raw = w->raw;
    int bytes = 0;
    if (nelem == 0) { /* cfitsio reads UNCOMPRESSED_DATA, else GZIP_COMPRESSED_DATA */
        if (t->unc.col) {
            if ((st = tide_tile_descriptor(t, &t->unc, row, k, &nelem, &off)))
                return st;
            if (nelem != npix)
                return TILE_FAIL(t, k, "UNCOMPRESSED_DATA holds %lld values, the tile %lld",
                                 (long long)nelem, (long long)npix);
            /* Floats as fits_read_col(TFLOAT, null NaN) reads them (null-checked). Integers
             * (NOCOMPRESS tiles of integer images) get the image's BSCALE/BZERO and BLANK, as
             * funpack applies them; cfitsio's fits_read_pixll reads them raw, a bug
             * (docs/cfitsio-bugs.md). */
            const uint8_t *s = heap + off;
            char ty = t->unc.type;
            if (ty == 'E' || ty == 'D') {
                int b = ty == 'E' ? 4 : 8;
                memcpy(raw, s, (size_t)(npix * b));
                swap_in_place(raw, b, npix);
                reals_to_floats(raw, b, npix, 1, 1.0, 0.0, vals);
            } else if (ty == 'K' || t->zbitpix < 0) {
                for (int64_t i = 0; i < npix; i++)
                    vals[i] = (float)field_int(s + i * t->unc.elem, ty);
            } else {
                tide_tile_conv c;
                tide_tile_conv_for(ti, k, row, t->unc.elem, &c);
                for (int64_t i = 0; i < npix; i++)
                    vals[i] = tide_tile_value(&c, field_int(s + i * t->unc.elem, ty), 0.0f);
            }
            return 0;
        }
        if (t->gz.col) {
            if ((st = tide_tile_descriptor(t, &t->gz, row, k, &nelem, &off)))
                return st;
            if (nelem == 0)
                return TILE_FAIL(t, k, "no data (empty COMPRESSED_DATA and GZIP_COMPRESSED_DATA)");
            int want = -t->zbitpix / 8;
            if ((st = inflate_tile(t, w, k, heap + off, nelem, npix, (unsigned)want, raw, &bytes,
                                   "GZIP_COMPRESSED_DATA")))
                return st;
            swap_in_place(raw, bytes, npix);
            reals_to_floats(raw, bytes, npix, 1, 1.0, 0.0, vals);
            return 0;
        }
        return TILE_FAIL(t, k, "no data (empty COMPRESSED_DATA, no uncompressed column)");
    }
    const uint8_t *s = heap + off;
    switch (t->codec) {
    case CODEC_NOCOMP: /* the pixels themselves, big-endian (the check bounds the length) */
        bytes = (t->zbitpix < 0 ? -t->zbitpix : t->zbitpix) / 8;
        if (nelem != npix * bytes)
            return TILE_FAIL(t, k, "NOCOMPRESS stream of %lld bytes for %lld pixels of %d bytes",
                             (long long)nelem, (long long)npix, bytes);
        memcpy(raw, s, (size_t)nelem);
        swap_in_place(raw, bytes, npix);
        if (t->zbitpix < 0) {
            reals_to_floats(raw, bytes, npix, 1, 1.0, 0.0, vals);
            return 0;
        }
        break;
    case CODEC_RICE:
        st = tide_rice_decode(s, (size_t)nelem, t->rice_bytepix, t->rice_block, npix, raw);
        if (st)
            return tide_error_prefix(st, "%s[HDU %d]: tile %lld: ", t->path, t->hdu,
                                     (long long)k + 1);
        bytes = t->rice_bytepix;
        break;
    default: { /* GZIP_1 / GZIP_2 */
        /* cfitsio takes the pixel size from the inflated length; 8 bytes are doubles */
        uint8_t *dst = t->codec == CODEC_GZIP2 ? w->shuf : raw;
        unsigned allowed = t->zbitpix > 0 ? 1u | 2u | 4u : 4u | 8u;
        if ((st = inflate_tile(t, w, k, s, nelem, npix, allowed, dst, &bytes, "COMPRESSED_DATA")))
            return st;
        if (t->codec == CODEC_GZIP2 && bytes > 1)
            unshuffle(dst, raw, bytes, npix);
        else if (t->codec == CODEC_GZIP2)
            memcpy(raw, dst, (size_t)npix);
        else
            swap_in_place(raw, bytes, npix);
        break;
    }
    }
    tide_tile_conv c;
    tide_tile_conv_for(ti, k, row, bytes, &c);
    if (t->zbitpix < 0 && (ti->lossless || bytes == 8)) {
        if (bytes != 4 && bytes != 8)
            return TILE_FAIL(t, k, "lossless float tile of %d-byte values", bytes);
        reals_to_floats(raw, bytes, npix, c.has_null, c.scale, c.zero, vals);
    } else {
        ints_to_floats(&c, raw, bytes, npix, vals);
    }
    return 0;
}

int tide_tile_decode_cpu(const tide_tile_image *ti, const uint8_t *data, float *out, int threads) {
    const tide_tile_layout *t = &ti->lay;
    const int64_t width = t->znaxis[0], n0 = t->ntile[0], n1t = t->ndim > 1 ? t->ntile[1] : 1;
    int nw = threads > 0 ? threads : omp_get_max_threads();
    if ((int64_t)nw > t->ntiles)
        nw = (int)t->ntiles;
    if (nw < 1)
        nw = 1;
    size_t rawb = (size_t)t->maxpix * 8 + 8, valb = (size_t)t->maxpix * 8 + 8;
    tile_worker *w = calloc((size_t)nw, sizeof *w);
    int st = w ? 0 : tide_error(TIDE_E_NOMEM, "%s[HDU %d]: out of memory", t->path, t->hdu);
    for (int i = 0; !st && i < nw; i++) {
        w[i].bad = INT64_MAX;
        w[i].raw = malloc(rawb);
        w[i].vals = malloc(valb);
        w[i].shuf = t->codec == CODEC_GZIP2 ? malloc(rawb) : NULL;
        w[i].inflater = libdeflate_alloc_decompressor();
        if (!w[i].raw || !w[i].vals || !w[i].inflater || (t->codec == CODEC_GZIP2 && !w[i].shuf))
            st = tide_error(TIDE_E_NOMEM, "%s[HDU %d]: no memory for a %lld-pixel tile", t->path,
                            t->hdu, (long long)t->maxpix);
    }
    int64_t bad = INT64_MAX;
    if (!st) {
        if (t->zbitpix < 0 && ti->dither)
            tide_tile_random_table();
#pragma omp parallel for num_threads(nw) schedule(dynamic, 1)
        for (int64_t k = 0; k < t->ntiles; k++) {
            if (k > __atomic_load_n(&bad, __ATOMIC_RELAXED))
                continue;
            tile_worker *me = &w[omp_get_thread_num()];
            int64_t tw, th, npix;
            tide_tile_shape(t, k, &tw, &th, &npix);
            const int64_t x0 = (k % n0) * t->ztile[0];
            const int64_t y0 = t->ndim > 1 ? ((k / n0) % n1t) * t->ztile[1] : 0;
            /* a tile of whole rows is decoded in place */
            float *dst = tw == width ? out + y0 * width : me->vals;
            int s = decode_tile(ti, data, me, k, npix, dst);
            if (s) {
                if (k < me->bad) {
                    me->bad = k;
                    me->st = s;
                    snprintf(me->msg, sizeof me->msg, "%s", tide_error_detail());
                    int64_t cur = __atomic_load_n(&bad, __ATOMIC_RELAXED);
                    while (k < cur && !__atomic_compare_exchange_n(
                                          &bad, &cur, k, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                        ;
                }
                continue;
            }
            for (int64_t j = 0; dst == me->vals && j < th; j++)
                memcpy(out + (y0 + j) * width + x0, me->vals + j * tw, (size_t)tw * sizeof(float));
        }
    }
    for (int i = 0; w && i < nw; i++) {
        free(w[i].raw);
        free(w[i].vals);
        free(w[i].shuf);
        if (w[i].inflater)
            libdeflate_free_decompressor(w[i].inflater);
    }
    if (!st && bad != INT64_MAX)
        for (int i = 0; i < nw; i++)
            if (w[i].bad == bad) {
                st = tide_error(w[i].st, "%s", w[i].msg);
                break;
            }
    free(w);
    return st;
}
