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
#include "common/tile_test_image.h"
#include "tide_test.h"

#ifndef TIDE_HAVE_CUDA
int main(void) {
    TIDE_TEST_SKIP("built without CUDA");
}
#else
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Both twins on one image; returns the number of differing tiles. */
static int64_t compare(tide_ctx *gpu, int kind, int64_t w, int64_t h, int64_t t1, int64_t t2,
                       int seed, int timed) {
    void *img = tile_test_image(kind, w, h, &rng_state, 1);
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
            CHECK(compare(gpu, kind, 517, 389, tiles[t][0], tiles[t][1],
                          1 + (int)(trng_splitmix64(&rng_state) % 10000), 0) == 0);
    CHECK(compare(gpu, TIDE_ENC_F32, 4096, 4096, 0, 0, 4321, 1) == 0);
    CHECK(compare(gpu, TIDE_ENC_U16, 4096, 4096, 0, 0, 1, 1) == 0);
    tide_ctx_destroy(gpu);
    return TIDE_TEST_RESULT();
}
#endif
