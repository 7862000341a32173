/* tile_cfitsio_image.h — the compressed test images the GPU tile-decoding tests write with
 * cfitsio (test_gpu_tile_decode: RICE_1; test_gpu_tile_inflate: GZIP_1/2), in one place. */
#ifndef TIDE_TEST_TILE_CFITSIO_IMAGE_H
#define TIDE_TEST_TILE_CFITSIO_IMAGE_H
#include <fitsio.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_rng.h"

enum { TILE_TEST_W = 517, TILE_TEST_H = 389 };

/* A TILE_TEST_W x TILE_TEST_H image of @p bitpix written by cfitsio, compressed with @p codec
 * in tiles @p tx x @p ty; floats quantized with @p dither (-1 none, 1, 2; 3 lossless) and
 * @p seed; the noise drawn from @p rng. Integers carry BLANK and (16-bit) BSCALE/BZERO,
 * floats NaNs and a row of zeros (a tile cfitsio cannot quantize: it stores it gzipped).
 * Returns cfitsio's status. */
static inline int tile_test_write_cfitsio(const char *path, int codec, int bitpix, long tx, long ty,
                                          int dither, int seed, uint64_t *rng) {
    fitsfile *f = NULL;
    int st = 0;
    char spec[600];
    snprintf(spec, sizeof spec, "!%s", path);
    long nax[2] = {TILE_TEST_W, TILE_TEST_H}, tile[2] = {tx, ty};
    fits_create_file(&f, spec, &st);
    fits_set_compression_type(f, codec, &st);
    fits_set_tile_dim(f, 2, tile, &st);
    if (bitpix < 0) {
        fits_set_quantize_level(f, dither == 3 ? 0.0f : 4.0f, &st);
        fits_set_quantize_method(f,
                                 dither == 2   ? SUBTRACTIVE_DITHER_2
                                 : dither == 1 ? SUBTRACTIVE_DITHER_1
                                               : NO_DITHER,
                                 &st);
        fits_set_dither_seed(f, seed, &st);
    }
    fits_create_img(f, bitpix, 2, nax, &st);
    double *v = malloc(sizeof(double) * TILE_TEST_W * TILE_TEST_H);
    for (int64_t i = 0; i < (int64_t)TILE_TEST_W * TILE_TEST_H; i++) {
        double s = 2000 + 300 * sin((double)(i % TILE_TEST_W) / 40.0) +
                   (double)(trng_splitmix64(rng) % 61) - 30;
        v[i] = bitpix == 8 ? fmod(s, 256) : bitpix == 16 ? s - 3000 : bitpix == 32 ? s * 1e5 : s;
        if (bitpix < 0 && trng_splitmix64(rng) % 173 == 0)
            v[i] = NAN;
        if (bitpix < 0 && i / TILE_TEST_W == 7)
            v[i] = 0.0;
    }
    if (bitpix == 16) {
        fits_write_key_lng(f, "BLANK", -1000, "", &st);
        fits_write_key_dbl(f, "BSCALE", 0.25, -15, "", &st);
        fits_write_key_dbl(f, "BZERO", 10, -15, "", &st);
        fits_set_bscale(f, 1.0, 0.0, &st);
        for (int64_t i = 0; i < (int64_t)TILE_TEST_W * TILE_TEST_H; i += 97)
            v[i] = -1000;
    }
    if (bitpix == 8 || bitpix == 16) { /* integers go as they are */
        void *raw = malloc((size_t)TILE_TEST_W * TILE_TEST_H * (bitpix == 8 ? 1 : 2));
        for (int64_t i = 0; raw && i < (int64_t)TILE_TEST_W * TILE_TEST_H; i++)
            if (bitpix == 8)
                ((unsigned char *)raw)[i] = (unsigned char)v[i];
            else
                ((short *)raw)[i] = (short)v[i];
        fits_write_img(f, bitpix == 8 ? TBYTE : TSHORT, 1, (LONGLONG)TILE_TEST_W * TILE_TEST_H, raw,
                       &st);
        free(raw);
    } else if (bitpix == 32) {
        int *raw = malloc(sizeof(int) * TILE_TEST_W * TILE_TEST_H);
        for (int64_t i = 0; raw && i < (int64_t)TILE_TEST_W * TILE_TEST_H; i++)
            raw[i] = (int)v[i];
        fits_write_img(f, TINT, 1, (LONGLONG)TILE_TEST_W * TILE_TEST_H, raw, &st);
        free(raw);
    } else if (bitpix == -32) {
        /* floats as floats: given doubles, cfitsio 4.2 writes a tile it cannot quantize (row 7,
         * all zeros) as gzipped doubles, which neither it nor funpack reads back (status 302) */
        float *raw = malloc(sizeof(float) * TILE_TEST_W * TILE_TEST_H);
        for (int64_t i = 0; raw && i < (int64_t)TILE_TEST_W * TILE_TEST_H; i++)
            raw[i] = (float)v[i];
        fits_write_img(f, TFLOAT, 1, (LONGLONG)TILE_TEST_W * TILE_TEST_H, raw, &st);
        free(raw);
    } else {
        fits_write_img(f, TDOUBLE, 1, (LONGLONG)TILE_TEST_W * TILE_TEST_H, v, &st);
    }
    fits_close_file(f, &st);
    free(v);
    return st;
}
#endif
