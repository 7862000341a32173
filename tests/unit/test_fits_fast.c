/* test_fits_fast.c — the direct paths of fits_fast_read.c / fits_fast_write.c against cfitsio.
 *
 * Images: for every BITPIX the fast reader takes (8, 16, 32 with BSCALE/BZERO and BLANK; -32
 * with NaN, +-Inf, -0, denormals, FLT_MAX), the fast reader must handle the file, and
 * tide_fits_read_image of the file must equal, bit for bit (pixels and mask), the read of the
 * same data through a section spec (FILE[0][*,*]), which goes through cfitsio. Cases it must
 * decline (-64, scaled -32, compressed) must still read through cfitsio. The MASK and VAR
 * planes of tide_fits_write_image must read back as cfitsio reads those HDUs.
 * Tables: every column type, vector columns, strings (empty, full width, embedded NUL), NaN,
 * written through the one-block writer and column by column through fits_write_col: the two
 * files must be byte-identical. */
#define _GNU_SOURCE
#include <fitsio.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fits/fits_fast.h"
#include "tide/tide.h"
#include "common/test_files.h"
#include "tide_test.h"

static char dir[256];

static const char *tmp(const char *name) {
    static char buf[8][512];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Large enough for several 1 MB read blocks (and so several threads) at every BITPIX. */
enum { W = 1531, H = 829 };

/* Write a W x H primary image of @p bitpix holding the raw values @p raw (of cfitsio type
 * @p dt), with optional BSCALE/BZERO/BLANK cards (NULL = absent), optionally compressed. */
static void write_raw(const char *path, int bitpix, int dt, const void *raw, const double *bscale,
                      const double *bzero, const long long *blank, int compress) {
    fitsfile *f = NULL;
    int st = 0;
    long naxes[2] = {W, H};
    unlink(path);
    fits_create_diskfile(&f, path, &st);
    if (compress) { /* an empty primary, then the image as a RICE_1 tile-compressed HDU */
        fits_create_img(f, BYTE_IMG, 0, NULL, &st);
        fits_set_compression_type(f, RICE_1, &st);
    }
    fits_create_img(f, bitpix, 2, naxes, &st);
    if (bscale)
        fits_write_key(f, TDOUBLE, "BSCALE", (void *)bscale, NULL, &st);
    if (bzero)
        fits_write_key(f, TDOUBLE, "BZERO", (void *)bzero, NULL, &st);
    if (blank)
        fits_write_key(f, TLONGLONG, "BLANK", (void *)blank, NULL, &st);
    fits_set_bscale(f, 1.0, 0.0, &st); /* the raw values go in unchanged */
    fits_write_img(f, dt, 1, (LONGLONG)W * H, (void *)raw, &st);
    fits_close_file(f, &st);
    if (st) {
        fprintf(stderr, "cannot write %s: cfitsio %d\n", path, st);
        exit(1);
    }
}

/* Whether the fast reader takes @p path (1 = yes, 0 = declines); checks its pixels against
 * tide_fits_read_image of the file and of a section of it (cfitsio). */
static int check_image(tide_ctx *ctx, const char *path, const char *what) {
    tide_image a, b;
    char spec[600];
    snprintf(spec, sizeof spec, "%s[0][*,*]", path);
    CHECK_OK(tide_fits_read_image(ctx, path, &a, NULL));
    CHECK_OK(tide_fits_read_image(ctx, spec, &b, NULL));
    int same = a.pix && b.pix && a.width == W && b.width == W && a.height == H && b.height == H &&
               !memcmp(a.pix, b.pix, (size_t)W * H * sizeof(float)) &&
               !memcmp(a.mask, b.mask, (size_t)W * H * sizeof(uint16_t));
    if (!same) {
        fprintf(stderr, "%s: fast and cfitsio reads differ\n", what);
        for (int64_t i = 0; a.pix && b.pix && i < (int64_t)W * H; i++)
            if (memcmp(&a.pix[i], &b.pix[i], 4) || a.mask[i] != b.mask[i]) {
                fprintf(stderr, "  first at %lld: %.9g/%u vs %.9g/%u\n", (long long)i, a.pix[i],
                        a.mask[i], b.pix[i], b.mask[i]);
                break;
            }
    }
    CHECK(same);
    tide_image_free(ctx, &a);
    tide_image_free(ctx, &b);

    /* Ask the fast reader directly whether it takes this file. */
    tide_fits_src src;
    int taken = -1;
    tide_image im;
    CHECK_OK(tide_fits_open(path, &src));
    CHECK_OK(tide_image_alloc(ctx, &im, W, H, TIDE_HOST, TIDE_IMAGE_MASK));
    if (src.f && im.pix) {
        int r = tide_fits_fast_read_pixels(ctx, &src, 0, &im);
        CHECK(r == 0 || r == 1);
        taken = r == 0;
    }
    tide_image_free(ctx, &im);
    tide_fits_close(&src);
    return taken;
}

static void test_images(tide_ctx *ctx) {
    const int64_t n = (int64_t)W * H;
    /* -32: every class of IEEE value, then a ramp */
    float *f32 = malloc((size_t)n * sizeof *f32);
    const float specials[] = {NAN,     INFINITY, -INFINITY, -0.0f,    0.0f, 1e-40f,
                              -1e-42f, FLT_MIN,  FLT_MAX,   -FLT_MAX, 1.5f, -2.25f};
    const int nspec = (int)(sizeof specials / sizeof *specials);
    for (int64_t i = 0; i < n; i++)
        f32[i] = i < nspec ? specials[i] : (float)((i % 9973) * 0.37 - 1000.0);
    f32[n - 1] = NAN; /* the last pixel of the last block */
    write_raw(tmp("f32.fits"), FLOAT_IMG, TFLOAT, f32, NULL, NULL, NULL, 0);
    CHECK(check_image(ctx, tmp("f32.fits"), "BITPIX -32") == 1);
    { /* the special values themselves, as cfitsio gives them */
        tide_image im;
        CHECK_OK(tide_fits_read_image(ctx, tmp("f32.fits"), &im, NULL));
        if (im.pix) {
            CHECK(isnan(im.pix[0]) && im.mask[0] == TIDE_MASK_NODATA);
            CHECK(isnan(im.pix[1]) && isnan(im.pix[2]) && im.mask[2] == TIDE_MASK_NODATA);
            CHECK(im.pix[3] == 0.0f && !signbit(im.pix[3]) && im.mask[3] == 0); /* -0 -> +0 */
            CHECK(im.pix[5] == 0.0f && im.pix[6] == 0.0f); /* denormals -> 0 (cfitsio) */
            CHECK(im.pix[7] == FLT_MIN && im.pix[8] == FLT_MAX && im.mask[8] == 0);
            CHECK(im.pix[10] == 1.5f && im.pix[11] == -2.25f);
            CHECK(isnan(im.pix[n - 1]) && im.mask[n - 1] == TIDE_MASK_NODATA);
        }
        tide_image_free(ctx, &im);
    }
    /* -32 scaled: declined, still read */
    double s2 = 2.0, z1 = 1.0;
    write_raw(tmp("f32s.fits"), FLOAT_IMG, TFLOAT, f32, &s2, &z1, NULL, 0);
    CHECK(check_image(ctx, tmp("f32s.fits"), "BITPIX -32 scaled") == 0);

    /* 16: signed with BLANK and scaling; unsigned (BZERO 32768); plain */
    short *i16 = malloc((size_t)n * sizeof *i16);
    for (int64_t i = 0; i < n; i++)
        i16[i] = (short)((i * 7919) % 65536 - 32768);
    i16[5] = -999;
    double bs = 0.37, bz = -12.5, u0 = 32768.0;
    long long bl = -999;
    write_raw(tmp("i16.fits"), SHORT_IMG, TSHORT, i16, &bs, &bz, &bl, 0);
    CHECK(check_image(ctx, tmp("i16.fits"), "BITPIX 16 scaled+BLANK") == 1);
    write_raw(tmp("u16.fits"), SHORT_IMG, TSHORT, i16, NULL, &u0, NULL, 0);
    CHECK(check_image(ctx, tmp("u16.fits"), "BITPIX 16 unsigned") == 1);
    write_raw(tmp("p16.fits"), SHORT_IMG, TSHORT, i16, NULL, NULL, &bl, 0);
    CHECK(check_image(ctx, tmp("p16.fits"), "BITPIX 16 BLANK") == 1);
    {
        tide_image im;
        CHECK_OK(tide_fits_read_image(ctx, tmp("i16.fits"), &im, NULL));
        if (im.pix) {
            CHECK(isnan(im.pix[5]) && im.mask[5] == TIDE_MASK_NODATA);
            CHECK(im.pix[1] == (float)((double)i16[1] * bs + bz));
        }
        tide_image_free(ctx, &im);
    }
    /* 16 compressed: declined, still read */
    write_raw(tmp("c16.fits"), SHORT_IMG, TSHORT, i16, NULL, NULL, NULL, 1);
    {
        tide_fits_src src;
        tide_image im;
        CHECK_OK(tide_fits_open(tmp("c16.fits"), &src));
        int type = 0, cst = 0;
        fits_movabs_hdu(src.f, 2, &type, &cst);
        CHECK_OK(tide_image_alloc(ctx, &im, W, H, TIDE_HOST, TIDE_IMAGE_MASK));
        CHECK(tide_fits_fast_read_pixels(ctx, &src, 1, &im) == 1);
        tide_image_free(ctx, &im);
        tide_fits_close(&src);
    }

    /* 32: large values (float rounding), BLANK, scaling */
    int *i32 = malloc((size_t)n * sizeof *i32);
    for (int64_t i = 0; i < n; i++)
        i32[i] = (int)((i * 2654435761u) ^ 0x5bd1e995u);
    i32[7] = 123456789;
    long long bl32 = 123456789;
    double bs32 = 1e-3, bz32 = 7.0;
    write_raw(tmp("i32.fits"), LONG_IMG, TINT, i32, &bs32, &bz32, &bl32, 0);
    CHECK(check_image(ctx, tmp("i32.fits"), "BITPIX 32 scaled+BLANK") == 1);
    write_raw(tmp("p32.fits"), LONG_IMG, TINT, i32, NULL, NULL, NULL, 0);
    CHECK(check_image(ctx, tmp("p32.fits"), "BITPIX 32") == 1);
    double huge = 1e35; /* v * 1e35 overflows a float: left to cfitsio */
    write_raw(tmp("h32.fits"), LONG_IMG, TINT, i32, &huge, NULL, NULL, 0);
    CHECK(check_image(ctx, tmp("h32.fits"), "BITPIX 32 huge scale") == 0);

    /* 8: BLANK and scaling */
    unsigned char *u8 = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
        u8[i] = (unsigned char)(i * 31);
    long long bl8 = 255;
    double bs8 = 0.5;
    write_raw(tmp("u8.fits"), BYTE_IMG, TBYTE, u8, &bs8, NULL, &bl8, 0);
    CHECK(check_image(ctx, tmp("u8.fits"), "BITPIX 8") == 1);

    /* -64: declined, still read */
    double *f64 = malloc((size_t)n * sizeof *f64);
    for (int64_t i = 0; i < n; i++)
        f64[i] = i % 101 ? (double)i * 1.1 : NAN;
    write_raw(tmp("f64.fits"), DOUBLE_IMG, TDOUBLE, f64, NULL, NULL, NULL, 0);
    CHECK(check_image(ctx, tmp("f64.fits"), "BITPIX -64") == 0);

    free(f32);
    free(i16);
    free(i32);
    free(u8);
    free(f64);
}

/* tide_fits_write_image's MASK and VAR planes: read back by the fast path exactly as cfitsio
 * reads those HDUs (mask = NODATA of the pixels | stored bits; var with NaN for NaN/Inf and
 * 0 for denormals). */
static void test_planes(tide_ctx *ctx) {
    const int64_t n = (int64_t)W * H;
    tide_image im;
    CHECK_OK(tide_image_alloc(ctx, &im, W, H, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    if (!im.pix)
        return;
    for (int64_t i = 0; i < n; i++) {
        im.pix[i] = i % 1009 ? (float)(i % 777) : NAN;
        im.mask[i] = (uint16_t)(i * 40503u);
        im.var[i] = (float)(i % 313) * 0.25f;
    }
    im.var[1] = NAN, im.var[2] = INFINITY, im.var[3] = 1e-41f, im.var[4] = -0.0f;
    im.mask[5] = 0xffff, im.mask[6] = 0x8000, im.mask[7] = 0;
    CHECK_OK(tide_fits_write_image(tmp("planes.fits"), &im, NULL));

    /* what cfitsio reads from the two extensions */
    uint16_t *bits = malloc((size_t)n * sizeof *bits);
    float *var = malloc((size_t)n * sizeof *var);
    fitsfile *f = NULL;
    int cst = 0, type = 0, any = 0;
    unsigned short zero = 0;
    float nan = NAN;
    LONGLONG fp[2] = {1, 1};
    fits_open_diskfile(&f, tmp("planes.fits"), READONLY, &cst);
    fits_movabs_hdu(f, 2, &type, &cst);
    fits_read_pixll(f, TUSHORT, fp, n, &zero, bits, &any, &cst);
    fits_movabs_hdu(f, 3, &type, &cst);
    fits_read_pixll(f, TFLOAT, fp, n, &nan, var, &any, &cst);
    fits_close_file(f, &cst);
    CHECK(cst == 0);

    tide_image back;
    CHECK_OK(tide_fits_read_image(ctx, tmp("planes.fits"), &back, NULL));
    CHECK(back.var != NULL);
    if (back.pix && back.var && cst == 0) {
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) {
            uint16_t want = (uint16_t)((isnan(im.pix[i]) ? TIDE_MASK_NODATA : 0) | bits[i]);
            if (back.mask[i] != want || memcmp(&back.var[i], &var[i], 4) ||
                memcmp(&back.pix[i], &im.pix[i], 4))
                bad++;
        }
        CHECK(bad == 0);
        CHECK(back.mask[5] == 0xffff && back.mask[6] == 0x8000);
        CHECK(isnan(back.var[1]) && isnan(back.var[2]) && back.var[3] == 0.0f);
        CHECK(back.var[4] == 0.0f && !signbit(back.var[4]));
    }
    tide_image_free(ctx, &back);

    /* and the fast path is what read them */
    tide_fits_src src;
    CHECK_OK(tide_fits_open(tmp("planes.fits"), &src));
    CHECK_OK(tide_image_alloc(ctx, &back, W, H, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    if (src.f && back.pix) {
        cst = 0;
        fits_movabs_hdu(src.f, 2, &type, &cst);
        CHECK(tide_fits_fast_read_aux(ctx, &src, 1, &back, 1) == 0);
        CHECK(!memcmp(back.mask, bits, (size_t)n * sizeof *bits));
        fits_movabs_hdu(src.f, 3, &type, &cst);
        CHECK(tide_fits_fast_read_aux(ctx, &src, 2, &back, 0) == 0);
        CHECK(!memcmp(back.var, var, (size_t)n * sizeof *var));
        fits_movabs_hdu(src.f, 1, &type, &cst); /* the float primary is no mask */
        CHECK(tide_fits_fast_read_aux(ctx, &src, 0, &back, 1) == 1);
    }
    tide_image_free(ctx, &back);
    tide_fits_close(&src);
    tide_image_free(ctx, &im);
    free(bits);
    free(var);
}
static void fill_table(tide_table *t, int64_t nrows) {
    static const struct {
        const char *name;
        tide_col_type type;
        int64_t repeat;
    } cols[] = {{"D", TIDE_COL_F64, 1},  {"E", TIDE_COL_F32, 1},  {"K", TIDE_COL_I64, 1},
                {"J", TIDE_COL_I32, 1},  {"I", TIDE_COL_I16, 1},  {"B", TIDE_COL_U8, 1},
                {"S", TIDE_COL_STR, 12}, {"DV", TIDE_COL_F64, 5}, {"EV", TIDE_COL_F32, 3},
                {"JV", TIDE_COL_I32, 2}, {"IV", TIDE_COL_I16, 3}, {"BV", TIDE_COL_U8, 7},
                {"S1", TIDE_COL_STR, 1}, {"KV", TIDE_COL_I64, 2}};
    tide_table_init(t);
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
        int idx = 0;
        CHECK_OK(tide_table_add_column(t, cols[c].name, cols[c].type, cols[c].repeat,
                                       c % 2 ? "count" : "", c % 3 ? "a comment" : "", &idx));
        if (c == 1)
            snprintf(t->cols[idx].disp, sizeof t->cols[idx].disp, "F10.4");
    }
    CHECK_OK(tide_table_resize(t, nrows));
    uint64_t x = 88172645463325252ull;
    for (int c = 0; c < t->ncols; c++) {
        tide_column *col = &t->cols[c];
        int64_t m = nrows * col->repeat;
        for (int64_t i = 0; i < m; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
            double v = (double)(int64_t)x / 1e12;
            switch (col->type) {
            case TIDE_COL_F64: ((double *)col->data)[i] = i % 17 == 3 ? NAN : v; break;
            case TIDE_COL_F32: ((float *)col->data)[i] = i % 13 == 5 ? NAN : (float)v; break;
            case TIDE_COL_I64: ((int64_t *)col->data)[i] = (int64_t)x; break;
            case TIDE_COL_I32: ((int32_t *)col->data)[i] = (int32_t)x; break;
            case TIDE_COL_I16: ((int16_t *)col->data)[i] = (int16_t)x; break;
            case TIDE_COL_U8: ((uint8_t *)col->data)[i] = (uint8_t)x; break;
            case TIDE_COL_STR: {
                char *s = (char *)col->data + i;
                int64_t pos = i % col->repeat;
                int64_t row = i / col->repeat;
                /* rows cycle through: empty, short, full width, embedded NUL */
                int kind = (int)(row % 4);
                char ch = (char)('A' + (x % 26));
                *s = kind == 0   ? 0
                     : kind == 1 ? (pos < 3 ? ch : 0)
                     : kind == 2 ? ch
                     : pos == 2  ? 0
                                 : ch;
                break;
            }
            }
        }
    }
}

static void test_tables(void) {
    tide_header h;
    tide_header_init(&h);
    CHECK_OK(tide_header_set_str(&h, "OBJECT", "M 31", "target"));
    CHECK_OK(tide_header_set_dbl(&h, "EXPTIME", 30.0, "s"));
    const int64_t sizes[] = {0, 1, 3, 12345};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        tide_table t;
        fill_table(&t, sizes[k]);
        CHECK_OK(tide_fits_write_table_by(tmp("t_fast.fits"), &t, &h, "OBJECTS", 0));
        CHECK_OK(tide_fits_write_table_by(tmp("t_cols.fits"), &t, &h, "OBJECTS", 1));
        if (!(tide_test_same_file(tmp("t_fast.fits"), tmp("t_cols.fits")) > 2880)) {
            fprintf(stderr, "table of %lld rows: files differ\n", (long long)sizes[k]);
            tide_test_failures++;
        }
        /* and the public writers take the fast path and read back */
        CHECK_OK(tide_catalog_write_fits(tmp("t_cat.fits"), &t, &h));
        CHECK(tide_test_same_file(tmp("t_cat.fits"), tmp("t_cols.fits")) > 2880);
        tide_table back;
        CHECK_OK(tide_fits_read_table(tmp("t_cat.fits"), &back, NULL));
        CHECK(back.nrows == t.nrows && back.ncols == t.ncols);
        if (back.nrows == t.nrows && back.ncols == t.ncols && t.nrows > 0) {
            CHECK(!memcmp(back.cols[0].data, t.cols[0].data, (size_t)t.nrows * 8));
            CHECK(!memcmp(back.cols[7].data, t.cols[7].data, (size_t)t.nrows * 5 * 8));
        }
        tide_table_free(&back);
        tide_table_free(&t);
    }
    tide_header_free(&h);
}

/* A table of more than one 64 MB span of rows (fits_fast_write.c writes it in two calls). */
static void test_table_spans(void) {
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_table_add_column(&t, "V", TIDE_COL_F64, 1000, "", "", NULL));
    CHECK_OK(tide_table_add_column(&t, "S", TIDE_COL_STR, 5, "", "", NULL));
    CHECK_OK(tide_table_add_column(&t, "I", TIDE_COL_I16, 1, "", "", NULL));
    const int64_t nrows = 8500; /* 8007 bytes a row: 68 MB */
    CHECK_OK(tide_table_resize(&t, nrows));
    if (t.nrows != nrows)
        return;
    for (int64_t i = 0; i < nrows * 1000; i++)
        ((double *)t.cols[0].data)[i] = (double)i * 0.001 - 7.0;
    for (int64_t r = 0; r < nrows; r++) {
        snprintf((char *)t.cols[1].data + r * 5, 5, "%lld", (long long)(r % 10000));
        ((int16_t *)t.cols[2].data)[r] = (int16_t)(r * 3);
    }
    CHECK_OK(tide_fits_write_table_by(tmp("big_fast.fits"), &t, NULL, "OBJECTS", 0));
    CHECK_OK(tide_fits_write_table_by(tmp("big_cols.fits"), &t, NULL, "OBJECTS", 1));
    CHECK(tide_test_same_file(tmp("big_fast.fits"), tmp("big_cols.fits")) > 2880);
    unlink(tmp("big_fast.fits"));
    unlink(tmp("big_cols.fits"));
    tide_table_free(&t);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tide_test_fits_fast_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    tide_ctx *ctx = NULL;
    tide_ctx_options opt = {0};
    opt.backend = TIDE_BACKEND_CPU;
    opt.threads = 3; /* more threads than this machine may have cores: blocks split unevenly */
    CHECK_OK(tide_ctx_create(&ctx, &opt));
    test_images(ctx);
    test_planes(ctx);
    test_tables();
    test_table_spans();
    tide_ctx_destroy(ctx);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return TIDE_TEST_RESULT();
}
