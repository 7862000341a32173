/* test_gpu_tile_inflate.c — the GPU decoder of GZIP_1 / GZIP_2 tiles (io/fits/
 * tile_inflate_cuda.cu, tide's own inflate_math.h one warp per tile) against its CPU twin
 * (tide_tile_decode_cpu with libdeflate), bit for bit:
 *  - images cfitsio writes with GZIP_1 and GZIP_2 of BITPIX 8, 16 (BLANK, BSCALE/BZERO), 32,
 *    -32 and -64 in tiles of whole rows, 17 x 23 (cut at the edges), 100 x 7 and one tile;
 *    floats quantized without dither, with SUBTRACTIVE_DITHER_1 and _2 (several seeds), and
 *    lossless (ZQUANTIZ NONE), with NaNs and a row of zeros (the tiles cfitsio cannot quantize
 *    go as gzipped floats: GZIP_COMPRESSED_DATA);
 *  - files fpack -g1 / -g2 writes (-q 4, -qz, -q 0) and ../shared/data/compressed/m13_gzip.fits;
 *  each decoded by the device alone (tide_tile_inflate_device must take every tile), by the
 *  entry point tide_tile_decode_cuda, and read by tide_fits_read_image on a CPU and on a CUDA
 *  context (TIDE_GPU_TILE_DECODE=1), and read straight into device memory
 *  (tide_fits_read_image_at, TIDE_DEVICE: pixels and no-data mask against the CPU's host
 *  read, the device path counted by its stage timer). Corrupted tiles (tile 2's descriptor cut to 2
 * bytes, a bit flipped in tile 2's member, random bytes, zeros) give the same status and detail on
 *  both twins, naming file, HDU and tile; run it under compute-sanitizer memcheck for reads
 *  out of bounds. Skipped (77) without a GPU. */
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
#include "common/tile_cfitsio_image.h"
#include "tide_test.h"

#ifndef TIDE_HAVE_CUDA
int main(void) {
    TIDE_TEST_SKIP("built without CUDA");
}
#else
static uint64_t rng_state = 0x6a09e667f3bcc909ull;
static uint64_t rnd(void) {
    return trng_splitmix64(&rng_state);
}

enum { W = TILE_TEST_W, H = TILE_TEST_H };

/* An image of the shared writer (tile_cfitsio_image.h). */
static int write_image(const char *path, int codec, int bitpix, long tx, long ty, int dither,
                       int seed) {
    return tile_test_write_cfitsio(path, codec, bitpix, tx, ty, dither, seed, &rng_state);
}

static int same_bits(const float *a, const float *b, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4)) {
            fprintf(stderr, "%s: pixel %lld: CPU %.9g, GPU %.9g\n", what, (long long)i, a[i], b[i]);
            return 0;
        }
    return 1;
}

static int g_fallback_tiles; /* images with GZIP_COMPRESSED_DATA tiles the device decoded */
static int g_device_reads;   /* images inflated straight into device memory */

/* Calls the context's stage timer @p stage has counted (0 when it has none). */
static int stage_calls(const tide_ctx *ctx, const char *stage) {
    for (int i = 0; i < tide_timer_count(ctx); i++) {
        const char *name = NULL;
        double ms = 0.0;
        int calls = 0;
        if (!tide_timer_get(ctx, i, &name, &ms, &calls) && name && !strcmp(name, stage))
            return calls;
    }
    return 0;
}

/* @p path read into device memory (tide_fits_read_image_at, TIDE_DEVICE: the data unit
 * inflated on the device with the no-data marking fused) against the CPU's host read @p ref:
 * pixels and mask bit for bit. */
static void device_read(tide_ctx *gpu, const char *path, const tide_image *ref, const char *what) {
    tide_image id, ih;
    tide_timer_clear(gpu);
    CHECK_OK(tide_fits_read_image_at(gpu, path, &id, NULL, TIDE_DEVICE));
    CHECK_OK(tide_image_clone(gpu, &ih, &id, TIDE_HOST));
    int same = ih.width == ref->width && ih.height == ref->height && ih.mask && ref->mask;
    for (int64_t y = 0; same && y < ref->height; y++)
        same = !memcmp(ih.pix + y * ih.stride, ref->pix + y * ref->stride,
                       sizeof(float) * (size_t)ref->width) &&
               !memcmp(ih.mask + y * ih.stride, ref->mask + y * ref->stride,
                       sizeof(uint16_t) * (size_t)ref->width);
    if (!same)
        fprintf(stderr, "%s: the device read differs from the host read\n", what);
    CHECK(same);
    g_device_reads +=
        stage_calls(gpu, "read.device") > 0 && !stage_calls(gpu, "read.device_refused");
    tide_image_free(gpu, &ih);
    tide_image_free(gpu, &id);
}

static void compare(tide_ctx *cpu, tide_ctx *gpu, const char *path, const char *what) {
    tide_tile_image *ti = NULL;
    uint8_t *data = NULL;
    CHECK_OK(tide_fits_tile_load(path, &ti, &data));
    if (!ti) {
        fprintf(stderr, "%s: no image tide decodes\n", what);
        CHECK(0);
        return;
    }
    const int64_t w = ti->lay.znaxis[0], h = ti->lay.ndim > 1 ? ti->lay.znaxis[1] : 1;
    float *a = malloc(sizeof(float) * (size_t)(w * h)),
          *b = malloc(sizeof(float) * (size_t)(w * h));
    CHECK_OK(tide_tile_decode_cpu(ti, data, a, 0));
    memset(b, 0xA5, sizeof(float) * (size_t)(w * h));
    int dev = tide_tile_inflate_device(gpu, ti, data, b);
    if (dev)
        fprintf(stderr, "%s: the device did not decode every tile (%d)\n", what, dev);
    CHECK(dev == 0);
    CHECK(same_bits(a, b, w * h, what));
    if (ti->lay.gz.col)
        g_fallback_tiles++;
    memset(b, 0xA5, sizeof(float) * (size_t)(w * h));
    CHECK_OK(tide_tile_decode_cuda(gpu, ti, data, b));
    CHECK(same_bits(a, b, w * h, what));
    tide_image ic, ig;
    CHECK_OK(tide_fits_read_image(cpu, path, &ic, NULL));
    CHECK_OK(tide_fits_read_image(gpu, path, &ig, NULL));
    CHECK(same_bits(ic.pix, ig.pix, w * h, what));
    CHECK(!memcmp(ic.mask, ig.mask, sizeof(uint16_t) * (size_t)(w * h)));
    device_read(gpu, path, &ic, what);
    tide_image_free(cpu, &ic);
    tide_image_free(gpu, &ig);
    /* corrupted: the same verdict and detail on both, naming file, HDU and tile */
    const tide_tile_layout *t = &ti->lay;
    const int64_t cut_tile = t->ntiles > 1 ? 2 : 1;
    char cut_name[32];
    snprintf(cut_name, sizeof cut_name, "tile %lld:", (long long)cut_tile);
    uint8_t *keep = malloc((size_t)t->data_end);
    memcpy(keep, data, (size_t)t->data_end);
    float *clean = malloc(sizeof(float) * (size_t)(w * h)); /* the uncorrupted pixels */
    memcpy(clean, a, sizeof(float) * (size_t)(w * h));
    for (int mode = 0; mode < 5; mode++) {
        uint8_t *row = data + (cut_tile - 1) * t->naxis1;
        int64_t nelem = 0, off = 0;
        tide_tile_descriptor(t, &t->cmp, row, cut_tile - 1, &nelem, &off);
        if (mode == 0) { /* the stream cut to 2 bytes (P descriptor: nelem first) */
            row[0] = row[1] = row[2] = 0;
            row[3] = 2;
        } else if (mode == 1) { /* one bit of the member's middle: the CRC-32 catches it */
            if (nelem == 0)
                continue;
            data[t->theap + off + nelem / 2] ^= 0x08;
        } else {
            for (int64_t i = t->theap; i < t->data_end; i++)
                if (mode == 2 ? rnd() % 16 == 0 : 1)
                    data[i] = mode == 2 ? (uint8_t)rnd() : mode == 3 ? 0 : 0xFF;
        }
        int sc = tide_tile_decode_cpu(ti, data, a, 0);
        char dc[1024];
        snprintf(dc, sizeof dc, "%s", sc ? tide_error_detail() : "");
        int sg = tide_tile_decode_cuda(gpu, ti, data, b);
        CHECK(sc == sg);
        if (sc && sg)
            CHECK(!strcmp(dc, tide_error_detail()));
        if (!sc && !sg)
            CHECK(same_bits(a, b, w * h, what));
        const int dev = tide_tile_inflate_device(gpu, ti, data, b);
        CHECK(dev == 2 || (!sc && !sg));
        /* A flipped bit that the inflated bytes do not depend on is no corruption (seen on the
         * H200: a 42-byte member that libdeflate and tide's inflate both still inflate to the
         * same bytes, CRC-32 and all). Both twins may then take the tile, with clean pixels. */
        const int harmless = mode == 1 && !sc && !sg && same_bits(a, clean, w * h, what);
        if (mode <= 1 && !harmless) {
            if (sc != TIDE_E_FORMAT || !strstr(dc, cut_name) || !strstr(dc, path) ||
                !strstr(dc, "[HDU "))
                fprintf(stderr,
                        "%s, corruption %d: CPU %d, GPU entry %d, device %d, tile %lld of "
                        "%lld bytes at %lld: \"%s\"\n",
                        what, mode, sc, sg, dev, (long long)cut_tile, (long long)nelem,
                        (long long)off, dc);
            CHECK(sc == TIDE_E_FORMAT && strstr(dc, cut_name) && strstr(dc, path) &&
                  strstr(dc, "[HDU "));
        }
        memcpy(data, keep, (size_t)t->data_end);
    }
    free(keep);
    free(clean);
    free(a);
    free(b);
    tide_host_free(data);
    free(ti);
}

/* fpack @p opt of a cfitsio image of @p bitpix into @p fz. */
static int fpack_file(const char *fz, const char *opt, int bitpix) {
    char src[300], cmd[800];
    snprintf(src, sizeof src, "%s.src.fits", fz);
    fitsfile *f = NULL;
    char spec[320];
    snprintf(spec, sizeof spec, "!%s", src);
    int st = 0;
    long nax[2] = {W, H};
    fits_create_file(&f, spec, &st);
    fits_create_img(f, bitpix, 2, nax, &st);
    float *v = malloc(sizeof(float) * W * H);
    for (int64_t i = 0; i < (int64_t)W * H; i++) {
        v[i] = (float)(1000 + 300 * sin((double)(i % W) / 40.0) + (double)(rnd() % 61));
        if (bitpix < 0 && i % 997 == 0)
            v[i] = NAN;
    }
    fits_write_img(f, TFLOAT, 1, (LONGLONG)W * H, v, &st);
    fits_close_file(f, &st);
    free(v);
    snprintf(cmd, sizeof cmd, "fpack %s -O '%s' '%s' 2>/dev/null", opt, fz, src);
    int r = st ? st : system(cmd);
    unlink(src);
    return r;
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    setenv("TIDE_GPU_TILE_DECODE", "1", 1); /* whole reads on the CUDA context decode there */
    setenv("TIDE_DECODE_TIMES", "1", 1);    /* the device read's stage timers: which path */
    tide_ctx *cpu = NULL, *gpu = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));
    if (!cpu || !gpu)
        return TIDE_TEST_RESULT();
    char path[256];
    snprintf(path, sizeof path, "/tmp/tide_gpu_inflate_%d.fits", (int)getpid());
    const int codecs[] = {GZIP_1, GZIP_2};
    const int bitpix[] = {8, 16, 32, -32, -64};
    const long tiles[][2] = {{W, 1}, {17, 23}, {W, H}, {100, 7}};
    /* TIDE_TEST_SAMPLE=N: only every N-th of the images cfitsio writes (the first included),
     * each with its corruptions, and the fpack files and m13 all, so that the test fits a
     * call under compute-sanitizer's memcheck, which runs every kernel many times slower */
    const char *sv = getenv("TIDE_TEST_SAMPLE");
    const int sample = sv && atoi(sv) > 1 ? atoi(sv) : 1;
    int ncase = 0;
    for (int c = 0; c < 2; c++)
        for (int b = 0; b < 5; b++)
            for (int t = 0; t < 4; t++)
                for (int d = -1; d <= 3; d++) {
                    if (d == 0 || (bitpix[b] > 0 && d != -1))
                        continue;
                    if (ncase++ % sample)
                        continue;
                    int seed = 1 + (int)(rnd() % 10000);
                    if (write_image(path, codecs[c], bitpix[b], tiles[t][0], tiles[t][1], d,
                                    seed)) {
                        fprintf(stderr, "cfitsio could not write GZIP_%d BITPIX %d tiles %ldx%ld\n",
                                c + 1, bitpix[b], tiles[t][0], tiles[t][1]);
                        CHECK(0);
                        continue;
                    }
                    char what[160];
                    snprintf(what, sizeof what,
                             "GZIP_%d, BITPIX %d, tiles %ldx%ld, dither %d, seed %d", c + 1,
                             bitpix[b], tiles[t][0], tiles[t][1], d, seed);
                    compare(cpu, gpu, path, what);
                }
    CHECK(sample > 1 || g_fallback_tiles > 0); /* some images had gzipped fallback tiles */
    printf("%d images inflated straight into device memory\n", g_device_reads);
    CHECK(g_device_reads > 0);
    const struct {
        const char *opt;
        int bitpix;
    } packs[] = {{"-g1", 16},       {"-g2", 16},        {"-g2", 32},
                 {"-g1 -q 4", -32}, {"-g2 -qz 4", -32}, {"-g2 -q 0", -32}};
    if (system("command -v fpack >/dev/null") == 0)
        for (size_t i = 0; i < sizeof packs / sizeof *packs; i++) {
            char fz[300];
            snprintf(fz, sizeof fz, "%s.fz", path);
            if (fpack_file(fz, packs[i].opt, packs[i].bitpix)) {
                fprintf(stderr, "fpack %s failed\n", packs[i].opt);
                CHECK(0);
                continue;
            }
            char what[160];
            snprintf(what, sizeof what, "fpack %s, BITPIX %d", packs[i].opt, packs[i].bitpix);
            compare(cpu, gpu, fz, what);
            unlink(fz);
        }
    const char *m13 = tide_test_data("compressed/m13_gzip.fits");
    if (access(m13, R_OK) == 0)
        compare(cpu, gpu, m13, "m13_gzip.fits");
    unlink(path);
    tide_ctx_destroy(cpu);
    tide_ctx_destroy(gpu);
    return TIDE_TEST_RESULT();
}
#endif
