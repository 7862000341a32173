/* fits_read.c — reading a 2-D image HDU (plain or tile-compressed) into a tide_image.
 *
 * cfitsio does the decoding: fits_read_pixll converts every BITPIX, applies BSCALE/BZERO in
 * double precision, decompresses tiles (and un-quantizes floats with the same dither sequence
 * funpack uses) and replaces BLANK / ZBLANK / NaN by the null value we give it (NaN). We then
 * turn every non-finite value into NaN with TIDE_MASK_NODATA. Plain (uncompressed, on-disk,
 * unsectioned) images of the common BITPIX, and tide's own MASK/VAR planes, are instead read
 * with parallel pread(2) by fits_fast_read.c, which reproduces those conversions bit for bit
 * (tests/unit/test_fits_fast.c) at memory speed rather than cfitsio's ~0.8 GB/s. RICE_1 and
 * GZIP_1/GZIP_2 compressed images are decoded by tide itself, in parallel over tiles
 * (fits_tile_read.c, tile_decode.c; tests/unit/test_tile_decode.c). */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fits_fast.h"
#include "fits_internal.h"
#include "fits_stack.h"
#include "fits_tile_bands.h"
#include "fits_tile_read.h"
#include "tide/status.h"
#include "tide/timer.h"

/* A short description of a non-image HDU for messages: "a binary table 'CAT' (12 rows)". */
static void describe_table(fitsfile *f, int type, char *out, size_t n) {
    char extname[FLEN_VALUE] = "";
    int cst = 0;
    LONGLONG rows = 0;
    fits_read_key_str(f, "EXTNAME", extname, NULL, &cst);
    cst = 0;
    fits_get_num_rowsll(f, &rows, &cst);
    fits_clear_errmsg();
    snprintf(out, n, "%s%s%s%s (%lld rows)",
             type == ASCII_TBL ? "an ASCII table" : "a binary table", extname[0] ? " '" : "",
             extname, extname[0] ? "'" : "", (long long)rows);
}

/* Check that the current HDU is a 2-D image; return its size. */
static int check_image_hdu(tide_fits_src *src, int hdu, int64_t *w, int64_t *h) {
    fitsfile *f = src->f;
    int type = IMAGE_HDU, cst = 0;
    if (fits_get_hdu_type(f, &type, &cst))
        return tide_fits_status(cst, src->root, hdu, "cannot read the HDU type");
    if (type != IMAGE_HDU) { /* a compressed image reports IMAGE_HDU */
        char what[160];
        describe_table(f, type, what, sizeof what);
        return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: is %s, not an image", src->root, hdu, what);
    }
    int bitpix = 0, naxis = 0;
    LONGLONG naxes[9] = {0};
    if (fits_get_img_paramll(f, 9, &bitpix, &naxis, naxes, &cst))
        return tide_fits_status(cst, src->root, hdu, "cannot read the image size");
    if (naxis == 0)
        return tide_error(TIDE_E_EMPTY, "%s[HDU %d]: empty HDU (NAXIS = 0): it holds no image",
                          src->root, hdu);
    if (naxis == 1)
        return tide_error(TIDE_E_UNSUPPORTED,
                          "%s[HDU %d]: is a 1-D image (NAXIS = 1, %lld values); tide reads 2-D "
                          "images",
                          src->root, hdu, (long long)naxes[0]);
    double planes = 1;
    for (int i = 0; i < naxis && i < 9; i++) {
        if (naxes[i] <= 0)
            return tide_error(TIDE_E_EMPTY, "%s[HDU %d]: empty image (NAXIS%d = %lld)", src->root,
                              hdu, i + 1, (long long)naxes[i]);
        if (i >= 2)
            planes *= (double)naxes[i];
    }
    if (planes > 1)
        return tide_error(TIDE_E_UNSUPPORTED,
                          "%s[HDU %d]: is a %d-D cube (%.0f planes of %lld x %lld); select one "
                          "plane with a section, e.g. %s[%d][*,*,1:1]",
                          src->root, hdu, naxis, planes, (long long)naxes[0], (long long)naxes[1],
                          src->root, hdu);
    int st = tide_fits_check_extent(src, hdu, NULL);
    if (st)
        return st;
    *w = naxes[0];
    *h = naxes[1];
    return TIDE_OK;
}

/* Move to the HDU the spec means: the one it names, else the first that holds an image. */
static int locate_image(tide_fits_src *src, int *hdu, int64_t *w, int64_t *h) {
    *hdu = tide_fits_cur_hdu(src->f);
    if (src->explicit_hdu || src->section)
        return check_image_hdu(src, *hdu, w, h);
    char seen[512] = "";
    size_t len = 0;
    for (int i = 1;; i++) {
        int type = 0, cst = 0;
        if (fits_movabs_hdu(src->f, i, &type, &cst)) {
            if (cst == END_OF_FILE) {
                fits_clear_errmsg();
                return tide_error(TIDE_E_NOTFOUND, "%s: no HDU holds an image (%s)", src->root,
                                  len ? seen : "no HDUs");
            }
            return tide_fits_status(cst, src->root, i - 1, "cannot read the HDU");
        }
        *hdu = i - 1;
        int naxis = 0;
        if (type == IMAGE_HDU && !fits_get_img_dim(src->f, &naxis, &cst) && naxis > 0)
            return check_image_hdu(src, *hdu, w, h);
        /* an HDU past the end of the data would otherwise read as "no image" */
        int st = tide_fits_check_extent(src, *hdu, NULL);
        if (st)
            return st;
        if (len < sizeof seen - 64)
            len += (size_t)snprintf(seen + len, sizeof seen - len, "%sHDU %d %s", len ? ", " : "",
                                    i - 1, type == IMAGE_HDU ? "empty" : "table");
    }
}

/* Open @p spec at the image HDU it means (locate_image), the whole file checked. */
static int open_image(const char *spec, tide_fits_src *src, int *hdu, int64_t *w, int64_t *h) {
    *hdu = -1;
    *w = *h = 0;
    int st = tide_fits_open(spec, src);
    if (!st)
        st = locate_image(src, hdu, w, h);
    if (!st)
        st = tide_fits_check_file(src);
    return st;
}

int tide_fits_read_image_header(const char *spec, tide_header *hdr, int *hdu, int64_t *width,
                                int64_t *height) {
    if (hdr)
        tide_header_init(hdr);
    tide_fits_src src;
    int h;
    int64_t w, hh;
    int st = open_image(spec, &src, &h, &w, &hh);
    if (!st && hdr)
        st = tide_fits_get_header(src.f, src.root, h, hdr);
    tide_fits_close(&src);
    if (st)
        return st;
    if (hdu)
        *hdu = h;
    if (width)
        *width = w;
    if (height)
        *height = hh;
    return TIDE_OK;
}

/* tide_fits_write_image records where its MASK and VAR planes are in the image's header, as
 * a count of HDUs after the image's @p hdu (the primary's, or HDU 1 of a compressed file).
 * Returns the HDU (0-based) named by @p key when it exists with the image's size, else -1. */
static int tide_plane_hdu(tide_fits_src *src, const char *key, int hdu, int64_t w, int64_t h) {
    int cst = 0, n = -1;
    if (fits_read_key(src->f, TINT, key, &n, NULL, &cst) || n <= 0) {
        fits_clear_errmsg();
        return -1;
    }
    n += hdu;
    int type = 0, naxis = 0, bitpix = 0;
    LONGLONG naxes[2] = {0};
    if (fits_movabs_hdu(src->f, n + 1, &type, &cst) || type != IMAGE_HDU ||
        fits_get_img_paramll(src->f, 2, &bitpix, &naxis, naxes, &cst) || naxis != 2 ||
        naxes[0] != w || naxes[1] != h)
        n = -1;
    cst = 0;
    fits_movabs_hdu(src->f, hdu + 1, &type, &cst);
    fits_clear_errmsg();
    return n;
}

/* Read the planes the mask/var HDUs hold (the image's @p hdu is current on entry and on
 * exit). */
static int read_tide_planes(tide_ctx *ctx, tide_fits_src *src, tide_image *im, int hdu,
                            int mask_hdu, int var_hdu) {
    int cst = 0, type, any = 0, fast = 1;
    LONGLONG fp[2] = {1, 1};
    LONGLONG n = (LONGLONG)im->width * im->height;
    if (mask_hdu > 0) {
        if (fits_movabs_hdu(src->f, mask_hdu + 1, &type, &cst))
            return tide_fits_status(cst, src->root, mask_hdu, "cannot read the mask");
        fast = tide_fits_fast_read_aux(ctx, src, mask_hdu, im, 1); /* fits_fast_read.c */
        if (fast < 0)
            return fast;
    }
    if (mask_hdu > 0 && fast) {
        int cs = tide_fits_check_streams(src, mask_hdu);
        if (cs)
            return cs;
        uint16_t *bits = malloc((size_t)n * sizeof *bits);
        if (!bits)
            return tide_error(TIDE_E_NOMEM, "%s[HDU %d]: no memory for the mask", src->root,
                              mask_hdu);
        unsigned short zero = 0;
        if (fits_movabs_hdu(src->f, mask_hdu + 1, &type, &cst) ||
            fits_read_pixll(src->f, TUSHORT, fp, n, &zero, bits, &any, &cst)) {
            free(bits);
            return tide_fits_status(cst, src->root, mask_hdu, "cannot read the mask");
        }
        for (LONGLONG i = 0; i < n; i++)
            im->mask[i] |= bits[i];
        free(bits);
    }
    if (var_hdu > 0 && im->var) {
        float nan = NAN;
        if (fits_movabs_hdu(src->f, var_hdu + 1, &type, &cst))
            return tide_fits_status(cst, src->root, var_hdu, "cannot read the variance");
        fast = tide_fits_fast_read_aux(ctx, src, var_hdu, im, 0);
        if (fast < 0)
            return fast;
        if (fast) {
            const int cs = tide_fits_check_streams(src, var_hdu);
            if (cs)
                return cs;
        }
        if (fast && fits_read_pixll(src->f, TFLOAT, fp, n, &nan, im->var, &any, &cst))
            return tide_fits_status(cst, src->root, var_hdu, "cannot read the variance");
    }
    fits_movabs_hdu(src->f, hdu + 1, &type, &cst);
    return TIDE_OK;
}

/* Lossy HCOMPRESS (ZVAL1 SCALE > 0) of an integer image decodes values outside the range of
 * the stored BITPIX. funpack writes the decoded tile into a BITPIX-typed image, clipping them,
 * and a clipped value equal to BLANK is then blank; reading straight into float would keep the
 * out-of-range values and miss those blanks. So such images are read as raw integers (no
 * scaling), clipped to the BITPIX range, compared with BLANK, then scaled in double precision
 * exactly as cfitsio scales (value * BSCALE + BZERO, cast to float once). Rows are read in
 * bands of whole tiles so that each tile is decoded once, on several threads
 * (fits_tile_bands.c). */
typedef struct hcomp_band {
    tide_image *im;
    double bscale, bzero;
    long long blank, lo, hi;
    int has_blank;
} hcomp_band;

static int read_hcomp_band(fitsfile *f, int64_t y0, int64_t nr, void *arg) {
    const hcomp_band *a = arg;
    const int64_t width = a->im->width;
    int *buf = malloc((size_t)(nr * width) * sizeof *buf);
    if (!buf)
        return MEMORY_ALLOCATION;
    int cst = 0, any = 0;
    fits_set_bscale(f, 1.0, 0.0, &cst); /* raw integers */
    LONGLONG fp[2] = {1, (LONGLONG)y0 + 1};
    if (!fits_read_pixll(f, TINT, fp, (LONGLONG)(nr * width), NULL, buf, &any, &cst)) {
        float *out = a->im->pix + y0 * width;
        for (int64_t i = 0; i < nr * width; i++) {
            long long v = buf[i] < a->lo ? a->lo : buf[i] > a->hi ? a->hi : buf[i];
            out[i] =
                a->has_blank && v == a->blank ? NAN : (float)((double)v * a->bscale + a->bzero);
        }
    }
    free(buf);
    return cst;
}

static int read_hcompress_ints(tide_ctx *ctx, tide_fits_src *src, int hdu, tide_image *im) {
    fitsfile *f = src->f;
    int cst = 0, bitpix = 0;
    char cmp[FLEN_VALUE] = "";
    if (!fits_is_compressed_image(f, &cst) || fits_get_img_type(f, &bitpix, &cst) || bitpix < 0 ||
        bitpix > 16 || fits_read_key_str(f, "ZCMPTYPE", cmp, NULL, &cst) ||
        strncmp(cmp, "HCOMPRESS", 9)) {
        fits_clear_errmsg();
        return 1;
    }
    hcomp_band a = {im, 1.0, 0.0, 0, bitpix == 8 ? 0 : -32768, bitpix == 8 ? 255 : 32767, 0};
    if (fits_read_key(f, TDOUBLE, "BSCALE", &a.bscale, NULL, &cst))
        a.bscale = 1.0;
    cst = 0;
    if (fits_read_key(f, TDOUBLE, "BZERO", &a.bzero, NULL, &cst))
        a.bzero = 0.0;
    cst = 0;
    a.has_blank = !fits_read_key(f, TLONGLONG, "BLANK", &a.blank, NULL, &cst);
    cst = 0;
    if (!a.has_blank)
        a.has_blank = !fits_read_key(f, TLONGLONG, "ZBLANK", &a.blank, NULL, &cst);
    fits_clear_errmsg();
    int st = tide_fits_tile_bands(ctx, src, hdu, im->height, read_hcomp_band, &a);
    if (st != 1)
        return st;
    const int64_t rows = tide_fits_band_rows(f, im->width, im->height, 1);
    cst = 0;
    for (int64_t y0 = 0; y0 < im->height && !cst; y0 += rows)
        cst = read_hcomp_band(f, y0, im->height - y0 < rows ? im->height - y0 : rows, &a);
    if (cst)
        return tide_fits_status(cst, src->root, hdu,
                                cst == MEMORY_ALLOCATION ? "no memory to decode"
                                                         : "cannot read the pixels");
    return TIDE_OK;
}

/* The other compressed images cfitsio decodes (PLIO_1, HCOMPRESS_1 of floats and 32-bit
 * integers, any tide declines): fits_read_pixll(TFLOAT, null NaN) over bands of whole tile
 * rows on several threads. A value beyond FLT_MAX (NUM_OVERFLOW) is noted in *overflow. */
typedef struct float_band {
    tide_image *im;
    int overflow;
} float_band;

static int read_float_band(fitsfile *f, int64_t y0, int64_t nr, void *arg) {
    float_band *a = arg;
    int cst = 0, any = 0;
    float nan = NAN;
    LONGLONG fp[2] = {1, (LONGLONG)y0 + 1};
    fits_read_pixll(f, TFLOAT, fp, (LONGLONG)(nr * a->im->width), &nan,
                    a->im->pix + y0 * a->im->width, &any, &cst);
    if (cst == NUM_OVERFLOW) {
#pragma omp atomic write
        a->overflow = 1;
        cst = 0;
    }
    return cst;
}

/* Non-finite values (and, after a cfitsio overflow, the ±FLT_MAX it clipped to) become NaN
 * with TIDE_MASK_NODATA, in parallel over chunks: a serial pass was 120 ms of a 67 Mpix read
 * beside 220 ms of decoding on two threads. A chunk is first scanned with a branch-free test
 * of the exponent bits (vectorised), and only a chunk that holds such a value is rewritten. */
static void mark_nodata(const tide_ctx *ctx, tide_image *im, int overflow) {
    const int64_t n = im->width * im->height, chunk = (int64_t)1 << 16;
    const int64_t nchunk = (n + chunk - 1) / chunk;
    const int nt = ctx && ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (nchunk > 4)
    for (int64_t c = 0; c < nchunk; c++) {
        float *p = im->pix + c * chunk;
        uint16_t *m = im->mask + c * chunk;
        const int64_t len = n - c * chunk < chunk ? n - c * chunk : chunk;
        uint32_t any = 0;
        for (int64_t i = 0; i < len; i++) {
            uint32_t u;
            memcpy(&u, p + i, sizeof u);
            any |= (u & 0x7f800000u) == 0x7f800000u;
            if (overflow)
                any |= (u & 0x7fffffffu) == 0x7f7fffffu; /* |v| == FLT_MAX */
        }
        if (!any)
            continue;
        for (int64_t i = 0; i < len; i++)
            if (!isfinite(p[i]) || (overflow && fabsf(p[i]) == FLT_MAX)) {
                p[i] = NAN;
                m[i] = TIDE_MASK_NODATA;
            }
    }
}

/* The pixels of HDU @p hdu (w × h, current in @p src) into the host image @p im, allocated
 * here: fits_fast_read.c for plain images, tide's tile decoder, then cfitsio; the no-data
 * marking, then tide's own MASK and VAR planes. */
static int read_host_pixels(tide_ctx *ctx, tide_fits_src *src, int hdu, int64_t w, int64_t h,
                            int mask_hdu, int var_hdu, tide_image *im) {
    /* every pixel and variance value is read; the mask only gets the flagged ones */
    int st = tide_image_alloc(ctx, im, w, h, TIDE_HOST,
                              TIDE_IMAGE_MASK | (var_hdu > 0 ? TIDE_IMAGE_VAR : 0) |
                                  TIDE_IMAGE_UNINIT | TIDE_IMAGE_ZERO_MASK);
    if (st && !strstr(tide_error_detail(), src->root))
        tide_error_prefix(st, "%s[HDU %d]: ", src->root, hdu);
    /* Plain images: parallel pread straight into the planes (fits_fast_read.c), which also
     * marks the no-data pixels; cfitsio reads everything else. */
    int overflow = 0, direct = 1, fast = 1;
    if (!st) {
        fast = tide_fits_fast_read_pixels(ctx, src, hdu, im);
        if (fast < 0)
            st = fast;
    }
    if (!st && fast) { /* RICE_1 / GZIP_1 / GZIP_2 tiles: tide's decoder (tile_decode.c) */
        direct = tide_fits_tile_read_pixels(ctx, src, hdu, im);
        if (direct < 0)
            st = direct;
    }
    if (!st && fast && direct) /* cfitsio decodes from here on: its streams checked first */
        st = tide_fits_check_streams(src, hdu);
    if (!st && fast && direct) {
        direct = read_hcompress_ints(ctx, src, hdu, im);
        if (direct < 0)
            st = direct;
    }
    if (!st && fast && direct) {
        float_band fb = {im, 0};
        direct = tide_fits_tile_bands(ctx, src, hdu, h, read_float_band, &fb);
        overflow = fb.overflow;
        if (direct < 0)
            st = direct;
    }
    if (!st && fast && direct) {
        int cst = 0, any = 0;
        float nan = NAN;
        LONGLONG fp[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
        /* One call for the whole image: cfitsio walks tiles of compressed images in order, so
         * each tile is decoded once. */
        fits_read_pixll(src->f, TFLOAT, fp, (LONGLONG)w * h, &nan, im->pix, &any, &cst);
        if (cst == NUM_OVERFLOW) { /* |value| > FLT_MAX: cfitsio clipped it; treat as no data */
            cst = 0;
            overflow = 1;
            fits_clear_errmsg();
        }
        if (cst)
            st = tide_fits_status(cst, src->root, hdu,
                                  cst == END_OF_FILE ? "truncated: cannot read the pixels"
                                                     : "cannot read the pixels");
    }
    if (!st && fast)
        mark_nodata(ctx, im, overflow);
    if (!st && (mask_hdu > 0 || var_hdu > 0))
        st = read_tide_planes(ctx, src, im, hdu, mask_hdu, var_hdu);
    return st;
}

/* The pixels straight into a device image when tide's GPU decoder takes the file (RICE_1,
 * GZIP_1 or GZIP_2, no MASK/VAR planes of tide's own): 0, 1 (read on the host and upload
 * instead), or a negative TIDE_E_*. */
static int read_device_pixels(tide_ctx *ctx, tide_fits_src *src, int hdu, int64_t w, int64_t h,
                              tide_image *im) {
    int cst = 0;
    if (!fits_is_compressed_image(src->f, &cst)) {
        fits_clear_errmsg();
        return 1;
    }
    return tide_fits_tile_read_device(ctx, src, hdu, w, h, im);
}

int tide_fits_read_image_at(tide_ctx *ctx, const char *spec, tide_image *im, tide_header *hdr,
                            tide_location where) {
    memset(im, 0, sizeof *im);
    if (hdr)
        tide_header_init(hdr);
    if (where == TIDE_DEVICE && (!ctx || ctx->backend != TIDE_BACKEND_CUDA))
        return tide_error(TIDE_E_INVAL, "%s: a device image needs a CUDA context", spec);
    tide_fits_src src;
    int hdu;
    int64_t w, h;
    /* the device read's pieces (tide bench --decode's breakdown, tide_fits_times_on) */
    tide_ctx *tctx = where == TIDE_DEVICE ? ctx : NULL;
    double t0 = tide_now();
    int st = open_image(spec, &src, &hdu, &w, &h);
    int mask_hdu = -1, var_hdu = -1;
    int cmp_st = 0; /* a compressed image in HDU 1 stands for the primary (as fpack's) */
    if (!st && !src.section &&
        (hdu == 0 || (hdu == 1 && fits_is_compressed_image(src.f, &cmp_st)))) {
        mask_hdu = tide_plane_hdu(&src, "TIDEMASK", hdu, w, h);
        var_hdu = tide_plane_hdu(&src, "TIDEVAR", hdu, w, h);
    }
    tide_fits_time_since(tctx, "read.open", t0); /* open, scan, checks, tide's planes */
    int host = 1;
    if (!st && where == TIDE_DEVICE && mask_hdu <= 0 && var_hdu <= 0) {
        t0 = tide_now();
        host = read_device_pixels(ctx, &src, hdu, w, h, im);
        if (host < 0)
            st = host;
        tide_fits_time_since(tctx, host ? "read.device_refused" : "read.device", t0);
    }
    t0 = tide_now();
    if (!st && host) {
        tide_image hi;
        memset(&hi, 0, sizeof hi);
        st = read_host_pixels(ctx, &src, hdu, w, h, mask_hdu, var_hdu, &hi);
        if (!st && where == TIDE_DEVICE) {
            st = tide_image_clone(ctx, im, &hi, TIDE_DEVICE);
            tide_image_free(ctx, &hi);
        } else {
            *im = hi;
        }
    }
    if (!st && hdr)
        st = tide_fits_get_header(src.f, src.root, hdu, hdr);
    tide_fits_close(&src);
    tide_fits_time_since(tctx, "read.rest", t0); /* a host read if the device refused; close */
    if (st) {
        tide_image_free(ctx, im);
        if (hdr)
            tide_header_free(hdr);
    }
    return st;
}

int tide_fits_read_image(tide_ctx *ctx, const char *spec, tide_image *im, tide_header *hdr) {
    return tide_fits_read_image_at(ctx, spec, im, hdr, TIDE_HOST);
}

/* The decisions of tide_fits_read_image_at(..., TIDE_DEVICE), taken without reading pixels,
 * so that the stack reader sends each spec where that call would decode it. */
int tide_fits_device_route(const char *spec, tide_fits_plain_unit *u, tide_header *hdr) {
    if (hdr)
        tide_header_init(hdr);
    tide_fits_src src;
    int hdu;
    int64_t w, h;
    int st = open_image(spec, &src, &hdu, &w, &h);
    int route = TIDE_ROUTE_HOST, cmp = 0, cst = 0;
    if (!st)
        cmp = fits_is_compressed_image(src.f, &cst);
    /* tide's own MASK / VAR planes are read on the host, as read_image_at reads them */
    const int planes = !st && !src.section && (hdu == 0 || (hdu == 1 && cmp)) &&
                       (tide_plane_hdu(&src, "TIDEMASK", hdu, w, h) > 0 ||
                        tide_plane_hdu(&src, "TIDEVAR", hdu, w, h) > 0);
    if (!st && !planes && cmp) {
        char type[FLEN_VALUE] = "";
        cst = 0;
        if (!fits_read_key_str(src.f, "ZCMPTYPE", type, NULL, &cst) &&
            (!strcmp(type, "RICE_1") || !strcmp(type, "GZIP_1") || !strcmp(type, "GZIP_2")))
            route = TIDE_ROUTE_DECODE;
    } else if (!st && !planes && tide_fits_fast_plain_unit(&src, hdu, w, h, u)) {
        route = TIDE_ROUTE_PLAIN;
        if (hdr)
            st = tide_fits_get_header(src.f, src.root, hdu, hdr);
    }
    fits_clear_errmsg();
    tide_fits_close(&src);
    if (st && hdr)
        tide_header_free(hdr);
    return st ? st : route;
}
