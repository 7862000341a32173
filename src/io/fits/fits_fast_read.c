/* fits_fast_read.c — reading a plain image's data unit with parallel pread(2).
 *
 * cfitsio reads through its small I/O buffers on one thread (~0.8 GB/s); a 600 MB frame in the
 * page cache can be copied at memory bandwidth. Here each thread preads blocks of the data unit
 * (its byte offset from fits_get_hduaddrll) and converts them while they are in cache.
 *
 * The conversions reproduce cfitsio's (getcole.c, fits_read_pixll to TFLOAT with a null value,
 * i.e. "null check" on), so the result is bitwise what the cfitsio path gives:
 *   - BITPIX -32, unscaled: a value whose exponent bits are all ones (NaN, Inf) is null; one
 *     whose exponent bits are all zero (zero, -0, denormals) becomes +0 ("underflow");
 *     others are copied.
 *   - BITPIX 8/16/32: the BLANK value (when the header has BLANK) is null; others become
 *     (float)(v * BSCALE + BZERO) computed in double, or (float)v when unscaled.
 * Null values become NaN with TIDE_MASK_NODATA, as tide_fits_read_image does after cfitsio.
 * FITS data are big-endian (FITS standard 4.0, sec. 5.1). */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fits_fast.h"
#include "fits_fast_math.h"
#include "fits_stack.h"
#include "tide/status.h"

/* Bytes read per pread: large enough to amortise the call, small enough to convert in cache. */
enum { FAST_BLOCK = 1 << 20 };

/* What a plane is read into: the pixels (nulls -> NaN + TIDE_MASK_NODATA), the variance
 * (nulls -> NaN; fits_read_pixll TFLOAT with null NaN) or the mask bits (OR-ed into the mask;
 * fits_read_pixll TUSHORT with null value 0, i.e. no null check). */
typedef enum { PLANE_PIX, PLANE_VAR, PLANE_MASK } plane_kind;

/* The conversion of one image: its stored type and the cfitsio scaling/null settings. */
typedef struct fast_conv {
    plane_kind kind;
    int bitpix;
    tide_fits_iconv ic; /* the integers' scaling and BLANK (fits_fast_math.h) */
} fast_conv;

static inline uint32_t be32(const unsigned char *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

static inline uint16_t be16(const unsigned char *b) {
    return (uint16_t)((unsigned)b[0] << 8 | (unsigned)b[1]);
}

/* Convert @p n stored values at @p raw into @p out / @p mask (@p out may alias @p raw for the
 * 4-byte types: each value is read before its slot is written). The mask is NULL for the
 * variance. */
static void convert(const fast_conv *c, const unsigned char *raw, int64_t n, float *out,
                    uint16_t *mask) {
    if (c->kind == PLANE_MASK) { /* BITPIX 16, BZERO 32768: v + 32768 is v with bit 15 flipped */
        for (int64_t i = 0; i < n; i++)
            mask[i] |= (uint16_t)(be16(raw + 2 * i) ^ 0x8000u);
        return;
    }
    switch (c->bitpix) {
    case -32:
        for (int64_t i = 0; i < n; i++) {
            int null;
            out[i] = tide_fits_f32_value(be32(raw + 4 * i), &null);
            if (null && mask)
                mask[i] = TIDE_MASK_NODATA;
        }
        break;
    case 32:
        for (int64_t i = 0; i < n; i++) {
            int null;
            out[i] = tide_fits_int_value(&c->ic, (int32_t)be32(raw + 4 * i), &null);
            if (null)
                mask[i] = TIDE_MASK_NODATA;
        }
        break;
    case 16:
        for (int64_t i = 0; i < n; i++) {
            int null;
            out[i] = tide_fits_int_value(&c->ic, (int16_t)be16(raw + 2 * i), &null);
            if (null)
                mask[i] = TIDE_MASK_NODATA;
        }
        break;
    default: /* 8: unsigned bytes */
        for (int64_t i = 0; i < n; i++) {
            int null;
            out[i] = tide_fits_int_value(&c->ic, raw[i], &null);
            if (null)
                mask[i] = TIDE_MASK_NODATA;
        }
        break;
    }
}

/* pread exactly @p n bytes at @p off (retrying short reads); 0 or an errno value (EIO for an
 * early end of file). */
static int pread_all(int fd, void *buf, size_t n, off_t off) {
    char *p = buf;
    while (n > 0) {
        ssize_t got = pread(fd, p, n, off);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return errno ? errno : EIO;
        }
        if (got == 0)
            return EIO;
        p += got;
        n -= (size_t)got;
        off += got;
    }
    return 0;
}

/* Whether the current HDU is a case this path handles for a plane of @p kind; fills @p c. */
static int fast_case(tide_fits_src *src, plane_kind kind, fast_conv *c) {
    fitsfile *f = src->f;
    int cst = 0;
    char url[FLEN_FILENAME] = "";
    memset(c, 0, sizeof *c);
    c->kind = kind;
    if (src->file_size < 0 || src->section || fits_url_type(f, url, &cst) ||
        strcmp(url, "file://") || fits_is_compressed_image(f, &cst) ||
        fits_get_img_type(f, &c->bitpix, &cst)) {
        fits_clear_errmsg();
        return 0;
    }
    if (c->bitpix != 8 && c->bitpix != 16 && c->bitpix != 32 && c->bitpix != -32)
        return 0;
    if (fits_read_key(f, TDOUBLE, "BSCALE", &c->ic.bscale, NULL, &cst))
        c->ic.bscale = 1.0;
    cst = 0;
    if (fits_read_key(f, TDOUBLE, "BZERO", &c->ic.bzero, NULL, &cst))
        c->ic.bzero = 0.0;
    cst = 0;
    if (c->bitpix > 0)
        c->ic.has_blank = !fits_read_key(f, TLONGLONG, "BLANK", &c->ic.blank, NULL, &cst);
    cst = 0;
    fits_clear_errmsg();
    c->ic.scaled = c->ic.bscale != 1.0 || c->ic.bzero != 0.0;
    if (kind == PLANE_MASK) /* as tide_fits_write_image stores it (USHORT_IMG) */
        return c->bitpix == 16 && c->ic.bscale == 1.0 && c->ic.bzero == 32768.0;
    if (kind == PLANE_VAR && c->bitpix != -32)
        return 0; /* the integer conversions here mark the mask */
    if (c->bitpix == -32 && c->ic.scaled)
        return 0; /* cfitsio's scaled-float rules (underflow -> BZERO) are left to it */
    /* cfitsio clips a scaled value beyond FLT_MAX with NUM_OVERFLOW; leave such scales to it */
    if (c->ic.scaled && !(fabs(c->ic.bscale) * 2147483648.0 + fabs(c->ic.bzero) < 0.5 * FLT_MAX))
        return 0;
    return 1;
}

/* Read the current HDU, a plane of @p kind of @p im's size, into @p out / @p mask. */
static int fast_plane(tide_ctx *ctx, tide_fits_src *src, int hdu, tide_image *im, plane_kind kind,
                      float *out, uint16_t *mask) {
    fast_conv c;
    const int planes_ok = kind == PLANE_PIX ? out && mask : kind == PLANE_VAR ? !!out : !!mask;
    if (!planes_ok || im->location != TIDE_HOST || im->stride != im->width ||
        !fast_case(src, kind, &c))
        return 1;
    int cst = 0;
    LONGLONG headstart = 0, datastart = 0, dataend = 0;
    if (fits_get_hduaddrll(src->f, &headstart, &datastart, &dataend, &cst)) {
        fits_clear_errmsg();
        return 1;
    }
    const int64_t n = im->width * im->height;
    const int64_t esize = (c.bitpix < 0 ? -c.bitpix : c.bitpix) / 8;
    if ((int64_t)datastart + n * esize > src->file_size)
        return 1; /* tide_fits_check_extent reports this; let the cfitsio path say it */
    int fd = open(src->root, O_RDONLY);
    if (fd < 0)
        return 1;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (int64_t)sb.st_size != src->file_size) {
        close(fd); /* not the file cfitsio opened (or it changed): let cfitsio read */
        return 1;
    }
    const int64_t per_block = FAST_BLOCK / esize;
    const int64_t nblocks = (n + per_block - 1) / per_block;
    int nt = ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
    if (nt > nblocks)
        nt = (int)nblocks;
    if (nt < 1)
        nt = 1;
    int err = 0; /* first errno seen */
#pragma omp parallel num_threads(nt)
    {
        /* 1- and 2-byte values are staged; 4-byte values are read into their own slots. */
        const int staged = esize < 4 || kind == PLANE_MASK;
        unsigned char *stage = staged ? malloc(FAST_BLOCK) : NULL;
        int my_err = staged && !stage ? ENOMEM : 0;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < nblocks; b++) {
            if (my_err)
                continue;
            int64_t i0 = b * per_block;
            int64_t cnt = n - i0 < per_block ? n - i0 : per_block;
            unsigned char *raw = stage ? stage : (unsigned char *)(out + i0);
            my_err = pread_all(fd, raw, (size_t)(cnt * esize), (off_t)(datastart + i0 * esize));
            if (!my_err)
                convert(&c, raw, cnt, out ? out + i0 : NULL, mask ? mask + i0 : NULL);
        }
        free(stage);
        if (my_err) {
#pragma omp critical(tide_fits_fast_read_err)
            if (!err)
                err = my_err;
        }
    }
    close(fd);
    const char *what = kind == PLANE_PIX ? "pixels" : kind == PLANE_VAR ? "variance" : "mask";
    if (err == ENOMEM)
        return tide_error(TIDE_E_NOMEM, "%s[HDU %d]: no memory to read the %s", src->root, hdu,
                          what);
    if (err)
        return tide_error(TIDE_E_IO, "%s[HDU %d]: cannot read the %s: %s", src->root, hdu, what,
                          strerror(err));
    return 0;
}

int tide_fits_fast_read_pixels(tide_ctx *ctx, tide_fits_src *src, int hdu, tide_image *im) {
    return fast_plane(ctx, src, hdu, im, PLANE_PIX, im->pix, im->mask);
}

int tide_fits_fast_read_aux(tide_ctx *ctx, tide_fits_src *src, int hdu, tide_image *im,
                            int is_mask) {
    if (is_mask)
        return fast_plane(ctx, src, hdu, im, PLANE_MASK, NULL, im->mask);
    return fast_plane(ctx, src, hdu, im, PLANE_VAR, im->var, NULL);
}

int tide_fits_fast_plain_unit(tide_fits_src *src, int hdu, int64_t w, int64_t h,
                              tide_fits_plain_unit *u) {
    fast_conv c;
    int cst = 0;
    LONGLONG headstart = 0, datastart = 0, dataend = 0;
    if (!fast_case(src, PLANE_PIX, &c) ||
        fits_get_hduaddrll(src->f, &headstart, &datastart, &dataend, &cst)) {
        fits_clear_errmsg();
        return 0;
    }
    const int64_t esize = (c.bitpix < 0 ? -c.bitpix : c.bitpix) / 8;
    if ((int64_t)datastart + w * h * esize > src->file_size)
        return 0;
    memset(u, 0, sizeof *u);
    snprintf(u->path, sizeof u->path, "%s", src->root);
    u->hdu = hdu;
    u->width = w;
    u->height = h;
    u->offset = (int64_t)datastart;
    u->bitpix = c.bitpix;
    u->ic = c.ic;
    return 1;
}
