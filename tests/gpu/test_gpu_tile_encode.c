/* test_gpu_tile_encode.c — the CUDA RICE_1 tile encoder (io/fits/tile_encode_cuda.cu) against
 * its CPU twin (tide_tile_encode_cpu), bit for bit: every tile's stream, ZSCALE, ZZERO and
 * status, for images of uint8, int16, uint16, int32 and float (noise on a slope; floats with
 * NaNs, infinities, zeros, constant and all-NaN rows, huge and tiny values) in row tiles,
 * 2-D tiles cut at the edges, tiles narrower than 9 pixels and one whole-image tile; and a
 * 4096 x 4096 float frame, timed on both. Skipped (77) without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/fits/tile_encode.h"
#include "tide/tide.h"
#include "tide_test.h"

#ifndef TIDE_HAVE_CUDA
int main(void) {
    TIDE_TEST_SKIP("built without CUDA");
}
#else
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double gauss(void) {
    double s = 0;
    for (int i = 0; i < 12; i++)
        s += (double)(rnd() >> 11) / 9007199254740992.0;
    return s - 6.0;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *make_image(int kind, int64_t w, int64_t h) {
    void *img = malloc((size_t)(w * h) * 4);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const double v = 1000 + 3 * x + 0.5 * y + 8 * gauss();
            const size_t i = (size_t)(y * w + x);
            switch (kind) {
            case TIDE_ENC_U8: ((uint8_t *)img)[i] = (uint8_t)((int)v % 256); break;
            case TIDE_ENC_I16: ((int16_t *)img)[i] = (int16_t)(v * 10 - 20000); break;
            case TIDE_ENC_U16: ((uint16_t *)img)[i] = (uint16_t)(v * 30); break;
            case TIDE_ENC_I32: ((int32_t *)img)[i] = (int32_t)(v * 1e5) - 50000000; break;
            default: {
                float f = (float)v;
                const uint64_t r = rnd() % 1000;
                if (r < 5)
                    f = NAN;
                else if (r < 6)
                    f = r % 2 ? INFINITY : -INFINITY;
                else if (r < 9)
                    f = 0.f;
                if (y % 50 == 5)
                    f = 42.5f; /* constant row */
                if (y % 50 == 6)
                    f = NAN; /* all null */
                if (y % 50 == 9)
                    f = (float)(v * 1e30);
                if (y % 50 == 10)
                    f = (float)(v * 1e-30);
                ((float *)img)[i] = f;
            }
            }
        }
    return img;
}

/* Both twins on one image; returns the number of differing tiles. */
static int64_t compare(tide_ctx *gpu, int kind, int64_t w, int64_t h, int64_t t1, int64_t t2,
                       int seed, int timed) {
    void *img = make_image(kind, w, h);
    tide_tile_enc_plan p;
    tide_tile_encoded c, g;
    CHECK_OK(tide_tile_enc_plan_init(&p, kind, w, h, w, t1, t2, seed));
    CHECK_OK(tide_tile_encoded_alloc(&c, &p));
    CHECK_OK(tide_tile_encoded_alloc(&g, &p));
    double t0 = now_ms();
    CHECK_OK(tide_tile_encode_cpu(&c, img, 0));
    const double ms_cpu = now_ms() - t0;
    CHECK_OK(tide_tile_encode_cuda(gpu, &g, img)); /* warm-up on the first call */
    t0 = now_ms();
    if (timed)
        CHECK_OK(tide_tile_encode_cuda(gpu, &g, img));
    const double ms_gpu = now_ms() - t0;
    int64_t bad = 0;
    for (int64_t k = 0; k < p.ntiles; k++) {
        const tide_tile_enc_out *a = &c.out[k], *b = &g.out[k];
        int same = a->status == b->status && a->nbytes == b->nbytes && a->has_null == b->has_null &&
                   !memcmp(&a->scale, &b->scale, 8) && !memcmp(&a->zero, &b->zero, 8) &&
                   !memcmp(c.slots + k * p.cap, g.slots + k * p.cap, (size_t)a->nbytes);
        if (!same && bad < 5)
            fprintf(stderr,
                    "kind %d %lldx%lld tiles %lldx%lld: tile %lld differs (status %d/%d, bytes "
                    "%lld/%lld, scale %.17g/%.17g, zero %.17g/%.17g)\n",
                    kind, (long long)w, (long long)h, (long long)t1, (long long)t2,
                    (long long)k + 1, a->status, b->status, (long long)a->nbytes,
                    (long long)b->nbytes, a->scale, b->scale, a->zero, b->zero);
        bad += !same;
    }
    if (timed)
        printf("%lldx%lld kind %d: CPU %.1f ms (%.0f Mpix/s), GPU %.1f ms (%.0f Mpix/s) with "
               "transfers\n",
               (long long)w, (long long)h, kind, ms_cpu, w * h / ms_cpu / 1e3, ms_gpu,
               w * h / ms_gpu / 1e3);
    tide_tile_encoded_free(&c);
    tide_tile_encoded_free(&g);
    free(img);
    return bad;
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    tide_ctx *gpu = tide_test_ctx(TIDE_BACKEND_CUDA, 0);
    if (!gpu)
        return TIDE_TEST_RESULT();
    const int64_t tiles[][2] = {{0, 0}, {17, 23}, {7, 5}, {517, 389}, {100, 7}};
    for (int kind = TIDE_ENC_U8; kind <= TIDE_ENC_F32; kind++)
        for (size_t t = 0; t < sizeof tiles / sizeof *tiles; t++)
            CHECK(compare(gpu, kind, 517, 389, tiles[t][0], tiles[t][1], 1 + (int)(rnd() % 10000),
                          0) == 0);
    CHECK(compare(gpu, TIDE_ENC_F32, 4096, 4096, 0, 0, 4321, 1) == 0);
    CHECK(compare(gpu, TIDE_ENC_U16, 4096, 4096, 0, 0, 1, 1) == 0);
    tide_ctx_destroy(gpu);
    return TIDE_TEST_RESULT();
}
#endif
