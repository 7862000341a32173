/* test_cosmetics_fast.c — the fast paths of the CPU cosmetics twin give the very same numbers
 * as the per-pixel math of cosmetics_math.h (which the CUDA twin runs): the median networks
 * exhaustively by the 0-1 principle, and every CPU kernel that has a fast path against a
 * plain loop over the shared per-pixel functions, bit for bit, on awkward sizes, with ties,
 * NaN, infinities and signed zeros. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "reduction/cosmetics/cosmetics_internal.h"
#include "reduction/cosmetics/cosmetics_kernels.h"
#include "reduction/cosmetics/cosmetics_median.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t rs = 12345;
static uint32_t urand32(void) {
    return (uint32_t)(trng_xorshift64(&rs) >> 11);
}
static double urand(void) {
    return (urand32() & 0xFFFFFF) / 16777216.0;
}

/* Bitwise equality of two float arrays (NaN payloads included). */
static int same_bits(const float *a, const float *b, size_t n) {
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* Every 0/1 input: sort5 sorts; med25 of five sorted 0/1 columns is their 13th smallest. */
static void test_networks_exhaustive(void) {
    int bad = 0;
    for (int m = 0; m < 32; m++) {
        float v[5];
        int ones = 0;
        for (int i = 0; i < 5; i++) {
            v[i] = (float)((m >> i) & 1);
            ones += (m >> i) & 1;
        }
        tide_cos_sort5(v);
        for (int i = 0; i < 5; i++)
            bad += v[i] != (i >= 5 - ones ? 1.0f : 0.0f);
    }
    CHECK(bad == 0);
    /* columns with k ones (k = 0..5 each): 6^5 inputs */
    bad = 0;
    for (int code = 0; code < 7776; code++) {
        float v[25];
        int c = code, ones = 0;
        for (int col = 0; col < 5; col++, c /= 6) {
            const int k = c % 6;
            ones += k;
            for (int r = 0; r < 5; r++)
                v[5 * col + r] = r >= 5 - k ? 1.0f : 0.0f;
        }
        /* the 13th smallest is 1 iff at least 13 ones */
        bad += tide_cos_med25_sorted(v) != (ones >= 13 ? 1.0f : 0.0f);
    }
    CHECK(bad == 0);
}

/* A random frame: a few distinct levels (many ties), or continuous values, plus specials. */
static void fill(float *a, int64_t n, int kind) {
    for (int64_t i = 0; i < n; i++) {
        if (kind == 0)
            a[i] = (float)(urand32() % 4);
        else if (kind == 1)
            a[i] = (float)(1000.0 + 30.0 * (urand() - 0.5));
        else
            a[i] = (urand32() & 1) ? 0.0f : -0.0f;
    }
}

static void test_med5_rows(void) {
    const int64_t ws[] = {1, 2, 3, 4, 5, 6, 7, 9, 13, 64, 257};
    const int64_t hs[] = {1, 2, 3, 5, 6, 33};
    int bad = 0;
    for (size_t a = 0; a < sizeof ws / sizeof ws[0]; a++)
        for (size_t b = 0; b < sizeof hs / sizeof hs[0]; b++)
            for (int kind = 0; kind < 4; kind++) {
                const int64_t w = ws[a], h = hs[b], ld = w + 3;
                float *img = malloc(sizeof(float) * (size_t)(ld * h));
                float *got = malloc(sizeof(float) * (size_t)(w * h));
                float *cs = malloc(sizeof(float) * 5 * (size_t)w);
                fill(img, ld * h, kind == 3 ? 1 : kind);
                if (kind == 3) { /* specials in one row */
                    const int64_t y = h / 2;
                    img[y * ld + (w - 1) / 2] = NAN;
                    img[y * ld + 0] = INFINITY;
                    if (h > 2)
                        img[(h - 1) * ld + w - 1] = -INFINITY;
                }
                /* two calls on row ranges, as the blocked kernels make them; or column
                 * blocks [0, xa), [xa, xb), [xb, w) as the tile updates make them */
                const int64_t ym = h / 2;
                if (kind & 1) {
                    tide_cos_med5_rows(img, ld, w, h, 0, ym, got, w, cs);
                    tide_cos_med5_rows(img, ld, w, h, ym, h, got + ym * w, w, cs);
                } else {
                    const int64_t xa = w / 3, xb = (2 * w) / 3 + 1 > w ? w : (2 * w) / 3 + 1;
                    const int64_t xs[4] = {0, xa, xb, w};
                    for (int q = 0; q < 3; q++)
                        if (xs[q + 1] > xs[q])
                            tide_cos_med5_block(img, ld, w, h, 0, h, xs[q], xs[q + 1], got + xs[q],
                                                w, cs);
                }
                for (int64_t y = 0; y < h; y++)
                    for (int64_t x = 0; x < w; x++) {
                        const float want = cos_box_median(img, ld, w, h, x, y, 2);
                        bad += memcmp(&want, &got[y * w + x], sizeof(float)) != 0 &&
                               !(want == 0.0f && got[y * w + x] == 0.0f);
                    }
                free(img);
                free(got);
                free(cs);
            }
    CHECK(bad == 0);
}

/* The noise and Laplacian kernels against plain loops over the per-pixel math. */
static void test_lacosmic_kernels(tide_ctx *ctx) {
    const int64_t sizes[][2] = {{1, 1}, {4, 3}, {7, 5}, {61, 37}, {300, 70}};
    const tide_cos_noise nm = {1.7f, 25.0f, 990.0f};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int64_t w = sizes[s][0], h = sizes[s][1], n = w * h;
        const tide_cos_geom g = {w, h, w};
        float *W = malloc(sizeof(float) * (size_t)n), *N = malloc(sizeof(float) * (size_t)n);
        float *S = malloc(sizeof(float) * (size_t)n), *SP = malloc(sizeof(float) * (size_t)n);
        float *rN = malloc(sizeof(float) * (size_t)n), *rS = malloc(sizeof(float) * (size_t)n);
        float *rSP = malloc(sizeof(float) * (size_t)n);
        fill(W, n, 1);
        for (int64_t i = 0; i < n; i += 17) /* sharp hits */
            W[i] += (float)(500.0 * urand());
        CHECK_OK(tide_cos_noise_cpu(ctx, &g, W, &nm, N));
        CHECK_OK(tide_cos_laplace_cpu(ctx, &g, W, N, S, SP, 1.35f));
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++)
                rN[y * w + x] = cos_sigma(&nm, cos_box_median(W, w, w, h, x, y, 2));
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++)
                rS[y * w + x] =
                    tide_fdiv(cos_lplus(W, w, w, h, x, y), tide_fmul(2.0f, rN[y * w + x]));
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++) {
                const float v = rS[y * w + x];
                rSP[y * w + x] = v > 1.35f ? tide_fsub(v, cos_box_median(rS, w, w, h, x, y, 2)) : v;
            }
        CHECK(same_bits(N, rN, (size_t)n));
        CHECK(same_bits(S, rS, (size_t)n));
        CHECK(same_bits(SP, rSP, (size_t)n));
        free(W), free(N), free(S), free(SP), free(rN), free(rS), free(rSP);
    }
}

/* L.A.Cosmic with the CPU's tile updates of later iterations against full-frame iterations:
 * the same masks and per-iteration counts, on a frame with many cosmic rays (several
 * iterations find new pixels) after the other passes set saturation, bleed and hot bits;
 * with @p fwhm > 0 an undersampled frame of that FWHM, with the star-like release on. */
static void test_incremental(tide_ctx *ctx, int64_t w, int64_t h, double cr_rate, uint64_t seed,
                             double fwhm) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = w;
    sp.height = h;
    sp.nstars = (int64_t)(w * h / 2000);
    sp.cr_rate = cr_rate;
    sp.seed = seed;
    if (fwhm > 0)
        sp.fwhm = fwhm;
    tide_sim_frame f;
    CHECK_OK(tide_sim_run(ctx, &sp, &f, NULL));
    tide_image a, b;
    CHECK_OK(tide_image_alloc(ctx, &a, w, h, TIDE_HOST, TIDE_IMAGE_MASK));
    const size_t n = (size_t)(w * h);
    memcpy(a.pix, f.image.pix, n * sizeof(float));
    tide_cosmetics_params p;
    tide_cosmetics_params_default(&p);
    CHECK_OK(tide_cosmetics_params_from_header(&p, &f.header));
    p.bias = sp.bias;
    p.psf_fwhm = fwhm;
    p.cosmic = 0;
    CHECK_OK(tide_cosmetics_apply(ctx, &a, &p, NULL)); /* the bits L.A.Cosmic respects */
    CHECK_OK(tide_image_clone(ctx, &b, &a, TIDE_HOST));
    p.cosmic = 1;
    p.niter = 4;
    p.sigclip = 4.0;
    tide_cos_work wk;
    memset(&wk, 0, sizeof wk);
    wk.flag = malloc(n), wk.flag2 = malloc(n), wk.flag3 = malloc(n);
    wk.W = malloc(n * sizeof(float)), wk.N = malloc(n * sizeof(float));
    wk.S = malloc(n * sizeof(float)), wk.SP = malloc(n * sizeof(float));
    const tide_cos_geom g = {w, h, a.stride};
    tide_cosmetics_report ra, rb;
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    CHECK_OK(tide_cos_lacosmic_ex(ctx, &a, &g, &p, &wk, 1000.0f, &ra, 1));
    CHECK_OK(tide_cos_lacosmic_ex(ctx, &b, &g, &p, &wk, 1000.0f, &rb, 0));
    CHECK(ra.cosmic_iterations == rb.cosmic_iterations);
    CHECK(ra.cosmic_iterations >= 2 && ra.cosmic_per_iter[0] > 20 && ra.cosmic_per_iter[1] > 0);
    for (int i = 0; i < ra.cosmic_iterations; i++)
        CHECK(ra.cosmic_per_iter[i] == rb.cosmic_per_iter[i]);
    int64_t diff = 0;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            diff += a.mask[y * a.stride + x] != b.mask[y * b.stride + x];
    if (diff || ra.cosmic_iterations < 2)
        fprintf(stderr,
                "incremental %lld x %lld: %d iterations (%lld, %lld, ...), %lld mask "
                "differences\n",
                (long long)w, (long long)h, ra.cosmic_iterations, (long long)ra.cosmic_per_iter[0],
                (long long)ra.cosmic_per_iter[1], (long long)diff);
    CHECK(diff == 0);
    free(wk.flag), free(wk.flag2), free(wk.flag3), free(wk.W), free(wk.N), free(wk.S);
    free(wk.SP);
    tide_image_free(ctx, &a);
    tide_image_free(ctx, &b);
    tide_sim_frame_free(ctx, &f);
}

int main(void) {
    test_networks_exhaustive();
    test_med5_rows();
    tide_ctx *c1 = tide_test_ctx(TIDE_BACKEND_CPU, 1), *c2 = tide_test_ctx(TIDE_BACKEND_CPU, 2);
    test_lacosmic_kernels(c1);
    test_lacosmic_kernels(c2);
    test_incremental(c2, 700, 517, 4000, 5, 0.0);
    test_incremental(c1, 131, 1000, 20000, 6, 0.0);
    test_incremental(c2, 700, 517, 4000, 7, 1.6);
    tide_ctx_destroy(c1);
    tide_ctx_destroy(c2);
    return TIDE_TEST_RESULT();
}
