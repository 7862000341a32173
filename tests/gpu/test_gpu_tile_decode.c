/* test_gpu_tile_decode.c — the CUDA RICE_1 tile decoder (io/fits/tile_decode_cuda.cu) against
 * its CPU twin (tide_tile_decode_cpu), bit for bit: images of BITPIX 8, 16, 32, -32 and -64
 * written by cfitsio with RICE_1 in tiles of whole rows, 17 x 23 (odd, cut at the edges) and
 * one tile; floats quantized without dither, with SUBTRACTIVE_DITHER_1 and _2, several
 * seeds, with NaNs and zeros; integers with BLANK and BSCALE/BZERO. Each is decoded by both
 * twins and read by tide_fits_read_image on a CPU and on a CUDA context. Corrupted tiles (a
 * cut stream, random bytes, zeros) give the same status and the same detail on both (the
 * CUDA side hands a wrong tile to the CPU twin), and never a read outside a tile's stream.
 * Skipped (77) without a GPU. */
#include <fitsio.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fits/fits_tile_read.h"
#include "io/fits/tile_decode.h"
#include "tide/tide.h"
#include "tide_test.h"

#ifndef TIDE_HAVE_CUDA
int main(void) {
    TIDE_TEST_SKIP("built without CUDA");
}
#else
static uint64_t rng_state = 0x853c49e6748fea9bull;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

enum { W = 517, H = 389 };

/* A RICE_1 image of @p bitpix in tiles @p tx x @p ty, quantized floats with @p dither
 * (-1 none, 1, 2) and @p seed. */
static int write_image(const char *path, int bitpix, long tx, long ty, int dither, int seed) {
    fitsfile *f = NULL;
    int st = 0;
    char spec[600];
    snprintf(spec, sizeof spec, "!%s", path);
    long nax[2] = {W, H}, tile[2] = {tx, ty};
    fits_create_file(&f, spec, &st);
    fits_set_compression_type(f, RICE_1, &st);
    fits_set_tile_dim(f, 2, tile, &st);
    if (bitpix < 0) {
        fits_set_quantize_level(f, 4.0f, &st);
        fits_set_quantize_method(f,
                                 dither == 2   ? SUBTRACTIVE_DITHER_2
                                 : dither == 1 ? SUBTRACTIVE_DITHER_1
                                               : NO_DITHER,
                                 &st);
        fits_set_dither_seed(f, seed, &st);
    }
    fits_create_img(f, bitpix, 2, nax, &st);
    double *v = malloc(sizeof(double) * W * H);
    for (int64_t i = 0; i < (int64_t)W * H; i++) {
        double s = 2000 + 300 * sin((double)(i % W) / 40.0) + (double)(rnd() % 61) - 30;
        v[i] = bitpix == 8 ? fmod(s, 256) : bitpix == 16 ? s - 3000 : bitpix == 32 ? s * 1e5 : s;
        if (bitpix < 0 && rnd() % 173 == 0)
            v[i] = NAN;
        if (bitpix < 0 && i / W == 7)
            v[i] = 0.0;
    }
    if (bitpix == 16) {
        fits_write_key_lng(f, "BLANK", -1000, "", &st);
        fits_write_key_dbl(f, "BSCALE", 0.25, -15, "", &st);
        fits_write_key_dbl(f, "BZERO", 10, -15, "", &st);
        fits_set_bscale(f, 1.0, 0.0, &st);
        for (int64_t i = 0; i < (int64_t)W * H; i += 97)
            v[i] = -1000;
    }
    /* cfitsio converts no type when it writes a compressed image: integers go as they are */
    if (bitpix == 8 || bitpix == 16) {
        void *raw = malloc((size_t)W * H * (bitpix == 8 ? 1 : 2));
        for (int64_t i = 0; raw && i < (int64_t)W * H; i++)
            if (bitpix == 8)
                ((unsigned char *)raw)[i] = (unsigned char)v[i];
            else
                ((short *)raw)[i] = (short)v[i];
        fits_write_img(f, bitpix == 8 ? TBYTE : TSHORT, 1, (LONGLONG)W * H, raw, &st);
        free(raw);
    } else if (bitpix == 32) {
        int *raw = malloc(sizeof(int) * W * H);
        for (int64_t i = 0; raw && i < (int64_t)W * H; i++)
            raw[i] = (int)v[i];
        fits_write_img(f, TINT, 1, (LONGLONG)W * H, raw, &st);
        free(raw);
    } else if (bitpix == -32) {
        /* floats as floats: given doubles, cfitsio 4.2 writes a tile it cannot quantize (row 7,
         * all zeros) as gzipped doubles, which neither it nor funpack reads back (status 302)
         * and tide refuses by name */
        float *raw = malloc(sizeof(float) * W * H);
        for (int64_t i = 0; raw && i < (int64_t)W * H; i++)
            raw[i] = (float)v[i];
        fits_write_img(f, TFLOAT, 1, (LONGLONG)W * H, raw, &st);
        free(raw);
    } else {
        fits_write_img(f, TDOUBLE, 1, (LONGLONG)W * H, v, &st);
    }
    fits_close_file(f, &st);
    free(v);
    return st;
}

static int same_bits(const float *a, const float *b, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4)) {
            fprintf(stderr, "%s: pixel %lld: CPU %.9g, GPU %.9g\n", what, (long long)i, a[i], b[i]);
            return 0;
        }
    return 1;
}

static void compare(tide_ctx *cpu, tide_ctx *gpu, const char *path, const char *what) {
    tide_tile_image *ti = NULL;
    uint8_t *data = NULL;
    CHECK_OK(tide_fits_tile_load(path, &ti, &data));
    if (!ti)
        return;
    float *a = malloc(sizeof(float) * W * H), *b = malloc(sizeof(float) * W * H);
    CHECK_OK(tide_tile_decode_cpu(ti, data, a, 0));
    memset(b, 0xA5, sizeof(float) * W * H);
    CHECK_OK(tide_tile_decode_cuda(gpu, ti, data, b));
    CHECK(same_bits(a, b, (int64_t)W * H, what));
    /* whole reads on both contexts */
    tide_image ic, ig;
    CHECK_OK(tide_fits_read_image(cpu, path, &ic, NULL));
    CHECK_OK(tide_fits_read_image(gpu, path, &ig, NULL));
    CHECK(same_bits(ic.pix, ig.pix, (int64_t)W * H, what));
    CHECK(!memcmp(ic.mask, ig.mask, sizeof(uint16_t) * W * H));
    tide_image_free(cpu, &ic);
    tide_image_free(gpu, &ig);
    /* corrupted: the same verdict and detail on both */
    int64_t naxis1 = ti->lay.naxis1, theap = ti->lay.theap, end = ti->lay.data_end;
    const int64_t cut_tile = ti->lay.ntiles > 1 ? 2 : 1;
    char cut_name[32];
    snprintf(cut_name, sizeof cut_name, "tile %lld:", (long long)cut_tile);
    uint8_t *keep = malloc((size_t)end);
    memcpy(keep, data, (size_t)end);
    for (int mode = 0; mode < 4; mode++) {
        if (mode == 0) { /* tile 2's stream (tile 1's when it is the only one) cut to 2 bytes
                          * (P descriptor: nelem first) */
            uint8_t *d = data + (cut_tile - 1) * naxis1;
            d[0] = d[1] = d[2] = 0;
            d[3] = 2;
        } else {
            for (int64_t i = theap; i < end; i++)
                if (mode == 1 ? rnd() % 16 == 0 : 1)
                    data[i] = mode == 1 ? (uint8_t)rnd() : mode == 2 ? 0 : 0xFF;
        }
        int sc = tide_tile_decode_cpu(ti, data, a, 0);
        char dc[1024];
        snprintf(dc, sizeof dc, "%s", sc ? tide_error_detail() : "");
        int sg = tide_tile_decode_cuda(gpu, ti, data, b);
        CHECK(sc == sg);
        if (sc && sg)
            CHECK(!strcmp(dc, tide_error_detail()));
        if (!sc && !sg)
            CHECK(same_bits(a, b, (int64_t)W * H, what));
        if (mode == 0)
            CHECK(sc == TIDE_E_FORMAT && strstr(dc, cut_name));
        memcpy(data, keep, (size_t)end);
    }
    free(keep);
    free(a);
    free(b);
    free(data);
    free(ti);
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    setenv("TIDE_GPU_TILE_DECODE", "1", 1); /* whole reads on the CUDA context decode there */
    tide_ctx *cpu = NULL, *gpu = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));
    if (!cpu || !gpu)
        return TIDE_TEST_RESULT();
    char path[256];
    snprintf(path, sizeof path, "/tmp/tide_gpu_tile_%d.fits", (int)getpid());
    const int bitpix[] = {8, 16, 32, -32, -64};
    const long tiles[][2] = {{W, 1}, {17, 23}, {W, H}, {100, 7}};
    for (int b = 0; b < 5; b++)
        for (int t = 0; t < 4; t++)
            for (int d = -1; d <= 2; d++) {
                if (d == 0 || (bitpix[b] > 0 && d != -1))
                    continue;
                int seed = 1 + (int)(rnd() % 10000);
                if (write_image(path, bitpix[b], tiles[t][0], tiles[t][1], d, seed)) {
                    fprintf(stderr, "cfitsio could not write BITPIX %d tiles %ldx%ld\n", bitpix[b],
                            tiles[t][0], tiles[t][1]);
                    CHECK(0);
                    continue;
                }
                char what[160];
                snprintf(what, sizeof what, "BITPIX %d, tiles %ldx%ld, dither %d, seed %d",
                         bitpix[b], tiles[t][0], tiles[t][1], d, seed);
                compare(cpu, gpu, path, what);
            }
    unlink(path);
    tide_ctx_destroy(cpu);
    tide_ctx_destroy(gpu);
    return TIDE_TEST_RESULT();
}
#endif
