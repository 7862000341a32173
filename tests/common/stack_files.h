/* stack_files.h — the files the stack-read tests (test_fits_read_stack, test_gpu_read_stack)
 * read in one call and one by one: a plain float frame with tide's MASK and VAR planes, a
 * plain 16-bit frame with BSCALE/BZERO and BLANK, RICE_1 written by tide, fpack's RICE of
 * the integers, its GZIP_2 and its quantized floats, two CCDs of a mosaic (by number and by
 * EXTNAME), a section, and a second plain float frame of the first one's size. */
#ifndef TIDE_TEST_STACK_FILES_H
#define TIDE_TEST_STACK_FILES_H
#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/test_rng.h"
#include "tide/tide.h"

enum { STACK_W = 301, STACK_H = 203, STACK_NSPEC = 11 };

/* A float image of noise, a ramp and a few NaNs, with a mask and (when @p var) a variance. */
static inline int stack_test_image(tide_image *im, uint64_t *rng, int var) {
    int st = tide_image_alloc(NULL, im, STACK_W, STACK_H, TIDE_HOST,
                              TIDE_IMAGE_MASK | (var ? TIDE_IMAGE_VAR : 0));
    for (int64_t i = 0; !st && i < STACK_W * STACK_H; i++) {
        im->pix[i] = (float)(100.0 + 0.01 * (double)i + 5.0 * trng_unit(trng_splitmix64(rng)));
        if (i % 997 == 5) {
            im->pix[i] = NAN;
            im->mask[i] = TIDE_MASK_NODATA;
        }
        if (i % 1301 == 7)
            im->mask[i] |= TIDE_MASK_SATURATED;
        if (var)
            im->var[i] = 25.0f + (float)(i % 7);
    }
    return st;
}

/* A plain BITPIX 16 image with BSCALE 0.5, BZERO 1000 and BLANK -32768 (one in 500). */
static inline int stack_test_int16(const char *path, uint64_t *rng) {
    fitsfile *f = NULL;
    int cst = 0;
    char spec[1100];
    snprintf(spec, sizeof spec, "!%s", path);
    long nax[2] = {STACK_W, STACK_H};
    short *v = malloc(sizeof *v * STACK_W * STACK_H);
    if (!v)
        return -1;
    for (long i = 0; i < STACK_W * STACK_H; i++)
        v[i] = i % 500 == 3 ? -32768 : (short)(trng_splitmix64(rng) % 20000) - 10000;
    fits_create_file(&f, spec, &cst);
    fits_create_img(f, SHORT_IMG, 2, nax, &cst);
    double bscale = 0.5, bzero = 1000.0;
    long blank = -32768;
    fits_write_key(f, TDOUBLE, "BSCALE", &bscale, NULL, &cst);
    fits_write_key(f, TDOUBLE, "BZERO", &bzero, NULL, &cst);
    fits_write_key(f, TLONG, "BLANK", &blank, NULL, &cst);
    fits_write_key_str(f, "OBJECT", "int16 frame", NULL, &cst);
    fits_set_bscale(f, 1.0, 0.0, &cst); /* the raw integers */
    fits_write_img(f, TSHORT, 1, STACK_W * STACK_H, v, &cst);
    fits_close_file(f, &cst);
    free(v);
    return cst;
}

/* Run @p cmd through the shell: 0 when it succeeds. */
static inline int stack_test_sh(const char *cmd) {
    const int rc = system(cmd);
    if (rc)
        fprintf(stderr, "failed (%d): %s\n", rc, cmd);
    return rc;
}

/* Write the files into @p dir and fill @p spec[STACK_NSPEC] (each up to 1100 bytes) with
 * specs that name them; 0 or -1. */
static inline int stack_test_files(const char *dir, char spec[][1100]) {
    uint64_t rng = 0x5eed57ac4ull;
    char p[1100], cmd[4000];
    tide_image a, b;
    tide_header h;
    tide_header_init(&h);
    tide_header_set_str(&h, "OBJECT", "stack test", "a card to compare");
    int st = stack_test_image(&a, &rng, 1) || stack_test_image(&b, &rng, 0);
    snprintf(p, sizeof p, "%s/plain.fits", dir);
    st = st || tide_fits_write_image(p, &a, &h);
    snprintf(p, sizeof p, "%s/plain2.fits", dir);
    st = st || tide_fits_write_image(p, &b, &h);
    snprintf(p, sizeof p, "%s/rice.fits", dir);
    st = st || tide_fits_write_image_as(p, &a, &h, TIDE_FITS_RICE);
    snprintf(p, sizeof p, "%s/int16.fits", dir);
    st = st || stack_test_int16(p, &rng);
    tide_fits_mef *m = NULL;
    snprintf(p, sizeof p, "%s/mef.fits", dir);
    st = st || tide_fits_mef_begin(p, NULL, &h, &m) || tide_fits_mef_add_image(m, &a, &h, "CCD1") ||
         tide_fits_mef_add_image(m, &b, &h, "CCD2") || tide_fits_mef_commit(m);
    /* fpack: RICE of the integers (lossless), GZIP_2 of them, quantized floats (-q 4) */
    snprintf(cmd, sizeof cmd,
             "cd %s && fpack -O int16.rice.fits.fz int16.fits && fpack -g2 -O int16.gz2.fits.fz "
             "int16.fits && fpack -q 4 -O plain2.fz plain2.fits",
             dir);
    st = st || stack_test_sh(cmd);
    tide_image_free(NULL, &a);
    tide_image_free(NULL, &b);
    tide_header_free(&h);
    const char *rel[STACK_NSPEC] = {"plain.fits",
                                    "int16.fits",
                                    "rice.fits",
                                    "int16.rice.fits.fz",
                                    "int16.gz2.fits.fz",
                                    "plain2.fz",
                                    "mef.fits[1]",
                                    "mef.fits[CCD2]",
                                    "plain.fits[0][11:250,7:180]",
                                    "plain2.fits",
                                    "int16.rice.fits.fz[1][3:100,4:50]"};
    for (int i = 0; i < STACK_NSPEC; i++)
        snprintf(spec[i], 1100, "%s/%s", dir, rel[i]);
    return st ? -1 : 0;
}

/* A temporary directory @p dir (a mkdtemp template) with the files, their specs in @p spec
 * and pointers to them in @p all; 0, or -1 (reported on stderr). */
static inline int stack_test_setup(char *dir, char spec[][1100], const char *all[]) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    if (stack_test_files(dir, spec)) {
        fprintf(stderr, "cannot write the test files in %s\n", dir);
        return -1;
    }
    for (int i = 0; i < STACK_NSPEC; i++)
        all[i] = spec[i];
    return 0;
}

/* Whether the headers hold the same cards in the same order. */
static inline int stack_test_same_header(const tide_header *a, const tide_header *b) {
    if (a->ncards != b->ncards)
        return 0;
    for (int i = 0; i < a->ncards; i++)
        if (strcmp(a->cards[i], b->cards[i]))
            return 0;
    return 1;
}

/* Whether two host images hold the same bits in every plane (and the same planes). */
static inline int stack_test_same_image(const tide_image *a, const tide_image *b) {
    if (a->width != b->width || a->height != b->height || !a->mask != !b->mask ||
        !a->var != !b->var)
        return 0;
    for (int64_t y = 0; y < a->height; y++) {
        const size_t ra = (size_t)(y * a->stride), rb = (size_t)(y * b->stride),
                     w = (size_t)a->width;
        if (memcmp(a->pix + ra, b->pix + rb, w * sizeof(float)) ||
            (a->mask && memcmp(a->mask + ra, b->mask + rb, w * sizeof(uint16_t))) ||
            (a->var && memcmp(a->var + ra, b->var + rb, w * sizeof(float))))
            return 0;
    }
    return 1;
}

#endif
