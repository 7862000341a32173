/* test_fits_image.c — reading images: every BITPIX with BSCALE/BZERO and BLANK, NaN/Inf,
 * HDU selection (first image, index, EXTNAME), sections, header transfer, and the bad-input
 * errors (missing, not FITS, empty, truncated, table, 1-D, cube). Files are made here with
 * cfitsio directly, so the expected values are known exactly. */
#define _GNU_SOURCE
#include <fitsio.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tide/tide.h"
#include "tide_test.h"

static char dir[256];

static const char *tmp(const char *name) {
    static char buf[8][512];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Create @p path (replacing it) with cfitsio; returns the open handle. */
static fitsfile *create(const char *path) {
    fitsfile *f = NULL;
    int st = 0;
    unlink(path);
    fits_create_diskfile(&f, path, &st);
    if (st) {
        fprintf(stderr, "cannot create %s: %d\n", path, st);
        exit(1);
    }
    return f;
}

static void done(fitsfile *f) {
    int st = 0;
    fits_close_file(f, &st);
    if (st) {
        fprintf(stderr, "close failed: %d\n", st);
        exit(1);
    }
}

/* Expect failure @p code whose detail mentions @p path and @p word. */
static void expect_error(int got, int code, const char *path, const char *word) {
    const char *d = tide_error_detail();
    if (got != code || !strstr(d, path) || (word && !strstr(d, word))) {
        fprintf(stderr, "expected %s (%d) mentioning '%s' and '%s'; got %d: %s\n",
                tide_strerror(code), code, path, word ? word : "", got, d);
        tide_test_failures++;
    }
}

/* Every BITPIX: raw integers with BSCALE/BZERO and BLANK, floats with NaN and Inf. */
static void test_bitpix(void) {
    const int bitpixes[] = {8, 16, 32, 64, -32, -64};
    const int W = 5, H = 4, N = 20;
    for (int b = 0; b < 6; b++) {
        int bp = bitpixes[b];
        const char *path = tmp("bitpix.fits");
        fitsfile *f = create(path);
        int st = 0;
        long naxes[2] = {W, H};
        fits_create_img(f, bp, 2, naxes, &st);
        double bscale = bp > 0 ? 2.5 : 1.0, bzero = bp > 0 ? -10.0 : 0.0;
        long long blank = bp == 8 ? 255 : bp == 16 ? -32768 : bp == 32 ? -7 : 123456789012LL;
        if (bp > 0) {
            fits_write_key(f, TDOUBLE, "BSCALE", &bscale, NULL, &st);
            fits_write_key(f, TDOUBLE, "BZERO", &bzero, NULL, &st);
            fits_write_key(f, TLONGLONG, "BLANK", &blank, NULL, &st);
            fits_set_bscale(f, 1.0, 0.0, &st); /* write raw values */
        }
        double raw[20];
        for (int i = 0; i < N; i++)
            raw[i] = bp == 8 ? (double)(i * 12) : (double)(i * 37 - 300) * (bp == 64 ? 1e6 : 1);
        if (bp > 0)
            raw[7] = (double)blank;
        else {
            raw[3] = NAN;
            raw[11] = INFINITY;
            raw[12] = -INFINITY;
            raw[5] = 0.1; /* not representable in float32: must round like a cast */
        }
        long long ll[20];
        for (int i = 0; i < N; i++)
            ll[i] = bp > 0 ? (long long)raw[i] : 0; /* only integer BITPIX writes them */
        if (bp > 0)
            fits_write_img(f, TLONGLONG, 1, N, ll, &st);
        else
            fits_write_img(f, TDOUBLE, 1, N, raw, &st);
        fits_write_key_str(f, "OBJECT", "M 13", "target", &st);
        if (st) {
            fprintf(stderr, "BITPIX %d: cfitsio %d\n", bp, st);
            tide_test_failures++;
        }
        done(f);

        tide_image im;
        tide_header h;
        CHECK_OK(tide_fits_read_image(NULL, path, &im, &h));
        CHECK(im.width == W && im.height == H && im.mask);
        int bad = 0;
        for (int i = 0; i < N && im.pix; i++) {
            int blankpix = (bp > 0 && i == 7) || (bp < 0 && (i == 3 || i == 11 || i == 12));
            float want = (float)(raw[i] * bscale + bzero);
            if (blankpix) {
                if (!isnan(im.pix[i]) || im.mask[i] != TIDE_MASK_NODATA)
                    bad++;
            } else if (im.pix[i] != want || im.mask[i] != 0)
                bad++;
        }
        if (bad)
            fprintf(stderr, "BITPIX %d: %d wrong pixels\n", bp, bad);
        CHECK(bad == 0);
        char obj[32] = "";
        int64_t bitpix = 0;
        CHECK_OK(tide_header_get_str(&h, "OBJECT", obj, sizeof obj));
        CHECK(!strcmp(obj, "M 13"));
        CHECK_OK(tide_header_get_int(&h, "BITPIX", &bitpix));
        CHECK(bitpix == bp);
        tide_header_free(&h);
        tide_image_free(NULL, &im);
    }
}

/* Primary empty, HDU 1 a table, HDU 2 'SCI' 6x5, HDU 3 'ERR' 6x5, HDU 4 1-D, HDU 5 cube. */
static const char *make_mef(void) {
    const char *path = tmp("mef.fits");
    fitsfile *f = create(path);
    int st = 0;
    fits_create_img(f, 8, 0, NULL, &st);
    char *tt[] = {"X"}, *tf[] = {"1E"}, *tu[] = {"pix"};
    fits_create_tbl(f, BINARY_TBL, 3, 1, tt, tf, tu, "CAT", &st);
    long naxes[3] = {6, 5, 2};
    float v[60];
    for (int i = 0; i < 60; i++)
        v[i] = (float)i;
    fits_create_img(f, FLOAT_IMG, 2, naxes, &st);
    fits_write_key_str(f, "EXTNAME", "SCI", NULL, &st);
    fits_write_img(f, TFLOAT, 1, 30, v, &st);
    fits_create_img(f, FLOAT_IMG, 2, naxes, &st);
    fits_write_key_str(f, "EXTNAME", "ERR", NULL, &st);
    for (int i = 0; i < 30; i++)
        v[i] = (float)(100 + i);
    fits_write_img(f, TFLOAT, 1, 30, v, &st);
    long n1 = 7;
    fits_create_img(f, FLOAT_IMG, 1, &n1, &st);
    fits_write_key_str(f, "EXTNAME", "SPEC", NULL, &st);
    fits_write_img(f, TFLOAT, 1, 7, v, &st);
    fits_create_img(f, FLOAT_IMG, 3, naxes, &st);
    fits_write_key_str(f, "EXTNAME", "CUBE", NULL, &st);
    fits_write_img(f, TFLOAT, 1, 60, v, &st);
    if (st) {
        fprintf(stderr, "mef: cfitsio %d\n", st);
        exit(1);
    }
    done(f);
    return path;
}

static void test_selection(void) {
    const char *path = make_mef();
    char spec[600];
    tide_image im;
    int hdu = -1;
    int64_t w = 0, h = 0;

    /* no selector: the first HDU holding an image is HDU 2 */
    CHECK_OK(tide_fits_read_image(NULL, path, &im, NULL));
    CHECK(im.width == 6 && im.height == 5 && im.pix && im.pix[29] == 29.0f);
    tide_image_free(NULL, &im);
    CHECK_OK(tide_fits_read_image_header(path, NULL, &hdu, &w, &h));
    CHECK(hdu == 2 && w == 6 && h == 5);

    snprintf(spec, sizeof spec, "%s[3]", path);
    CHECK_OK(tide_fits_read_image(NULL, spec, &im, NULL));
    CHECK(im.pix && im.pix[0] == 100.0f);
    tide_image_free(NULL, &im);
    snprintf(spec, sizeof spec, "%s[ERR]", path);
    CHECK_OK(tide_fits_read_image(NULL, spec, &im, NULL));
    CHECK(im.pix && im.pix[5] == 105.0f);
    tide_image_free(NULL, &im);

    /* a section: columns 2..4, rows 1..3 (FITS 1-based, inclusive) */
    snprintf(spec, sizeof spec, "%s[SCI][2:4,1:3]", path);
    tide_header hd;
    CHECK_OK(tide_fits_read_image(NULL, spec, &im, &hd));
    CHECK(im.width == 3 && im.height == 3);
    CHECK(im.pix && im.pix[0] == 1.0f && im.pix[4] == 8.0f && im.pix[8] == 15.0f);
    int64_t n1 = 0;
    CHECK_OK(tide_header_get_int(&hd, "NAXIS1", &n1));
    CHECK(n1 == 3);
    tide_header_free(&hd);
    tide_image_free(NULL, &im);

    /* a plane of the cube through a section */
    snprintf(spec, sizeof spec, "%s[CUBE][*,*,2:2]", path);
    CHECK_OK(tide_fits_read_image(NULL, spec, &im, NULL));
    CHECK(im.width == 6 && im.height == 5 && im.pix && im.pix[0] == 30.0f);
    tide_image_free(NULL, &im);

    snprintf(spec, sizeof spec, "%s[1]", path);
    expect_error(tide_fits_read_image(NULL, spec, &im, NULL), TIDE_E_FORMAT, path, "table");
    CHECK(im.pix == NULL);
    snprintf(spec, sizeof spec, "%s[0]", path);
    expect_error(tide_fits_read_image(NULL, spec, &im, NULL), TIDE_E_EMPTY, path, "HDU 0");
    snprintf(spec, sizeof spec, "%s[4]", path);
    expect_error(tide_fits_read_image(NULL, spec, &im, NULL), TIDE_E_UNSUPPORTED, path, "1-D");
    snprintf(spec, sizeof spec, "%s[CUBE]", path);
    expect_error(tide_fits_read_image(NULL, spec, &im, NULL), TIDE_E_UNSUPPORTED, path, "cube");
    snprintf(spec, sizeof spec, "%s[9]", path);
    expect_error(tide_fits_read_image(NULL, spec, &im, NULL), TIDE_E_NOTFOUND, path, "6 HDUs");
    snprintf(spec, sizeof spec, "%s[NOPE]", path);
    expect_error(tide_fits_read_image(NULL, spec, &im, NULL), TIDE_E_NOTFOUND, path, "NOPE");

    /* the inventory */
    tide_fits_hdu *list = NULL;
    int n = 0;
    CHECK_OK(tide_fits_inventory(spec, &list, &n));
    CHECK(n == 6);
    if (n == 6) {
        CHECK(list[0].kind == TIDE_HDU_EMPTY);
        CHECK(list[1].kind == TIDE_HDU_BINTABLE && list[1].nrows == 3 && list[1].ncols == 1);
        CHECK(!strcmp(list[1].extname, "CAT"));
        CHECK(list[2].kind == TIDE_HDU_IMAGE && list[2].bitpix == -32 && list[2].naxes[1] == 5);
        CHECK(list[4].naxis == 1 && list[5].naxis == 3 && list[5].naxes[2] == 2);
    }
    free(list);
}

static void test_bad_files(void) {
    tide_image im;
    const char *missing = tmp("no-such-file.fits");
    expect_error(tide_fits_read_image(NULL, missing, &im, NULL), TIDE_E_NOTFOUND, missing,
                 "no such file");

    const char *text = tmp("notfits.fits");
    FILE *fp = fopen(text, "w");
    for (int i = 0; i < 200; i++)
        fprintf(fp, "this is not a FITS file, line %d\n", i);
    fclose(fp);
    expect_error(tide_fits_read_image(NULL, text, &im, NULL), TIDE_E_FORMAT, text, "not a FITS");

    const char *empty = tmp("empty.fits");
    fp = fopen(empty, "w");
    fclose(fp);
    expect_error(tide_fits_read_image(NULL, empty, &im, NULL), TIDE_E_FORMAT, empty, "empty");

    /* a 100x100 float image cut in the middle of its data, and one cut inside its header */
    const char *trunc = tmp("trunc.fits");
    fitsfile *f = create(trunc);
    int st = 0;
    long naxes[2] = {100, 100};
    float *v = calloc(10000, sizeof *v);
    fits_create_img(f, FLOAT_IMG, 2, naxes, &st);
    fits_write_img(f, TFLOAT, 1, 10000, v, &st);
    done(f);
    free(v);
    CHECK(truncate(trunc, 2880 + 20000) == 0);
    expect_error(tide_fits_read_image(NULL, trunc, &im, NULL), TIDE_E_FORMAT, trunc, "truncated");
    tide_fits_hdu *list = NULL;
    int n = 0;
    expect_error(tide_fits_inventory(trunc, &list, &n), TIDE_E_FORMAT, trunc, "truncated");
    CHECK(truncate(trunc, 1000) == 0);
    expect_error(tide_fits_read_image(NULL, trunc, &im, NULL), TIDE_E_FORMAT, trunc, "truncated");

    /* only an empty primary: no image anywhere */
    const char *hollow = tmp("hollow.fits");
    f = create(hollow);
    fits_create_img(f, 8, 0, NULL, &st);
    done(f);
    expect_error(tide_fits_read_image(NULL, hollow, &im, NULL), TIDE_E_NOTFOUND, hollow,
                 "no HDU holds an image");

    /* all NaN: readable, every pixel masked (consumers decide that it is an error) */
    const char *nan = tmp("allnan.fits");
    f = create(nan);
    float nv[12];
    for (int i = 0; i < 12; i++)
        nv[i] = NAN;
    long nn[2] = {4, 3};
    fits_create_img(f, FLOAT_IMG, 2, nn, &st);
    fits_write_img(f, TFLOAT, 1, 12, nv, &st);
    done(f);
    CHECK_OK(tide_fits_read_image(NULL, nan, &im, NULL));
    int masked = 0;
    for (int i = 0; i < 12 && im.mask; i++)
        masked += im.mask[i] == TIDE_MASK_NODATA && isnan(im.pix[i]);
    CHECK(masked == 12);
    tide_image_free(NULL, &im);
}

/* Compressed images in the shared data decode to the very pixels of m13.fits. */
static void test_compressed_m13(void) {
    if (!getenv("TIDE_SHARED_DATA"))
        return;
    tide_image ref, im;
    char path[4096];
    snprintf(path, sizeof path, "%s", tide_test_data("compressed/m13.fits"));
    CHECK_OK(tide_fits_read_image(NULL, path, &ref, NULL));
    const char *codecs[] = {"rice", "gzip", "hcomp", "plio"};
    for (int c = 0; c < 4; c++) {
        char rel[64];
        snprintf(rel, sizeof rel, "compressed/m13_%s.fits", codecs[c]);
        tide_header h;
        CHECK_OK(tide_fits_read_image(NULL, tide_test_data(rel), &im, &h));
        CHECK(im.width == 300 && im.height == 300 && ref.pix && im.pix);
        if (im.pix && ref.pix)
            CHECK(!memcmp(im.pix, ref.pix, 300 * 300 * sizeof(float)));
        int64_t zb = 0;
        CHECK(tide_header_get_int(&h, "ZBITPIX", &zb) == TIDE_E_NOTFOUND); /* uncompressed view */
        tide_header_free(&h);
        tide_image_free(NULL, &im);
    }
    tide_fits_hdu *list = NULL;
    int n = 0;
    CHECK_OK(tide_fits_inventory(tide_test_data("compressed/m13_rice.fits"), &list, &n));
    CHECK(n == 2 && list && list[1].kind == TIDE_HDU_COMPRESSED);
    if (n == 2) {
        CHECK(!strcmp(list[1].compression, "RICE_1") && list[1].bitpix == 16);
        CHECK(list[1].naxes[0] == 300 && list[1].tile[0] == 300 && list[1].tile[1] == 1);
    }
    free(list);
    tide_image_free(NULL, &ref);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tide_fits_image_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_bitpix();
    test_selection();
    test_bad_files();
    test_compressed_m13();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    return TIDE_TEST_RESULT();
}
