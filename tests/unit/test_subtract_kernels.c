/* test_subtract_kernels.c — the CUDA subtraction kernels' reformulations run on the host
 * against the CPU twins, bit for bit: the basis-convolved stamps computed by groups of
 * TIDE_SUB_CORR_R pixels with a sliding window (tide_sub_corr_group, as each GPU thread does)
 * against tide_sub_basis_stamps_cpu, for stamp widths that are and are not multiples of the
 * group, masked and NaN reference pixels; the normal matrices summed tile by tile of 32 pixels
 * from a padded tile (as each GPU block does, pairs decoded by tide_sub_pair) against
 * tide_sub_normal_cpu; and tide_sub_pair enumerating every pair of the triangle once. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "difference/subtract/subtract_kernels.h"
#include "difference/subtract/subtract_math.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double urand(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static void check_corr(tide_ctx *ctx, int hs, int kh, int nb) {
    int64_t w = 200, h = 150;
    tide_image ref;
    CHECK_OK(tide_image_alloc(ctx, &ref, w, h, TIDE_HOST, TIDE_IMAGE_MASK));
    for (int64_t i = 0; i < w * h; i++) {
        ref.pix[i] = (float)(100.0 * urand());
        ref.mask[i] = urand() < 0.01 ? TIDE_MASK_BAD : 0;
        if (urand() < 0.005)
            ref.pix[i] = NAN;
    }
    int ns = 3, kw = 2 * kh + 1, sw = 2 * hs + 1, pw = sw + 2 * kh;
    tide_sub_geom g = {w, h, ns, hs, (int64_t)sw * sw, nb + 3, kh, TIDE_MASK_BAD};
    int64_t centre[3] = {75 * w + 100, (hs + kh) * w + hs + kh,
                         (h - 1 - hs - kh) * w + w - 1 - hs - kh}; /* middle, two corners */
    float *k = malloc(sizeof(float) * (size_t)(nb * kw * kw));
    for (int i = 0; i < nb * kw * kw; i++)
        k[i] = (float)(urand() - 0.3);
    float *D = calloc((size_t)(ns * g.nc * g.npx), sizeof(float));
    CHECK_OK(tide_sub_basis_stamps_cpu(ctx, &ref, &g, k, nb, centre, D));
    float *patch = malloc(sizeof(float) * (size_t)(pw * pw));
    int64_t diff = 0;
    for (int s = 0; s < ns; s++) {
        int64_t x0 = centre[s] % w - hs - kh, y0 = centre[s] / w - hs - kh;
        for (int j = 0; j < pw; j++)
            for (int i = 0; i < pw; i++) {
                int64_t idx = (y0 + j) * w + x0 + i;
                float v = ref.pix[idx];
                patch[j * pw + i] = tide_sub_usable(v, ref.mask[idx], g.bits) ? v : 0.0f;
            }
        for (int b = 0; b < nb; b++) {
            const float *d = D + ((size_t)s * g.nc + (size_t)b) * g.npx;
            for (int py = 0; py < sw; py++)
                for (int px = 0; px < sw; px += TIDE_SUB_CORR_R) {
                    float acc[TIDE_SUB_CORR_R];
                    tide_sub_corr_group(patch, pw, py, px, k + (size_t)b * kw * kw, kw, acc);
                    for (int r = 0; r < TIDE_SUB_CORR_R && px + r < sw; r++)
                        diff += memcmp(&acc[r], &d[py * sw + px + r], sizeof(float)) != 0;
                }
        }
    }
    printf("basis stamps, stamp %d px, kernel %d px, %d kernels: %lld pixels differ\n", sw, kw, nb,
           (long long)diff);
    CHECK(diff == 0);
    free(k);
    free(D);
    free(patch);
    tide_image_free(ctx, &ref);
}

static void check_normal(tide_ctx *ctx, int nc, int64_t npx, int ns) {
    enum { TILE = 32, LD = TILE + 1 };
    tide_sub_geom g = {100, 100, ns, 1, npx, nc, 1, 0};
    float *D = malloc(sizeof(float) * (size_t)(ns * nc * npx));
    float *W = malloc(sizeof(float) * (size_t)(ns * npx));
    double *Q = malloc(sizeof(double) * (size_t)(ns * nc * nc));
    for (int64_t i = 0; i < ns * nc * npx; i++)
        D[i] = (float)((urand() - 0.5) * 1000.0);
    for (int64_t i = 0; i < ns * npx; i++)
        W[i] = urand() < 0.1 ? 0.0f : (float)(1.0 / (1.0 + 100.0 * urand()));
    CHECK_OK(tide_sub_normal_cpu(ctx, &g, D, W, Q));
    float *tile = malloc(sizeof(float) * (size_t)((nc + 1) * LD));
    int npairs = nc * (nc + 1) / 2;
    double *acc = malloc(sizeof(double) * (size_t)npairs);
    int64_t diff = 0;
    for (int s = 0; s < ns; s++) {
        for (int p = 0; p < npairs; p++)
            acc[p] = 0.0;
        for (int64_t i0 = 0; i0 < npx; i0 += TILE) {
            int nt = npx - i0 < TILE ? (int)(npx - i0) : TILE;
            for (int c = 0; c <= nc; c++)
                for (int i = 0; i < TILE; i++)
                    tile[c * LD + i] = i >= nt  ? 0.0f
                                       : c < nc ? D[((size_t)s * nc + c) * npx + i0 + i]
                                                : W[s * npx + i0 + i];
            for (int p = 0; p < npairs; p++) {
                int a, b;
                tide_sub_pair(p, nc, &a, &b);
                acc[p] =
                    tide_sub_normal_tile(acc[p], tile + nc * LD, tile + a * LD, tile + b * LD, nt);
            }
        }
        for (int p = 0; p < npairs; p++) {
            int a, b;
            tide_sub_pair(p, nc, &a, &b);
            const double *q = Q + (size_t)s * nc * nc;
            diff += memcmp(&acc[p], &q[a * nc + b], sizeof(double)) != 0;
            diff += memcmp(&acc[p], &q[b * nc + a], sizeof(double)) != 0;
        }
    }
    printf("normal matrices, %d columns, %lld px, %d stamps: %lld entries differ\n", nc,
           (long long)npx, ns, (long long)diff);
    CHECK(diff == 0);
    free(D);
    free(W);
    free(Q);
    free(tile);
    free(acc);
}

static void check_pairs(int nc) {
    int npairs = nc * (nc + 1) / 2, bad = 0;
    char *seen = calloc((size_t)(nc * nc), 1);
    for (int p = 0; p < npairs; p++) {
        int a, b;
        tide_sub_pair(p, nc, &a, &b);
        if (a < 0 || a > b || b >= nc || seen[a * nc + b]++)
            bad++;
    }
    int a, b;
    tide_sub_pair(npairs, nc, &a, &b);
    CHECK(a == -1);
    CHECK(bad == 0);
    free(seen);
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    check_corr(ctx, 15, 10, 9); /* 31 px: last group has 3 lanes past the stamp */
    check_corr(ctx, 3, 3, 5);   /* 7 px */
    check_corr(ctx, 7, 5, 4);   /* 15 px */
    check_corr(ctx, 10, 4, 3);  /* 21 px */
    check_corr(ctx, 8, 2, 3);   /* 17 px, a kernel narrower than a group */
    check_normal(ctx, 52, 961, 4);
    check_normal(ctx, 7, 49, 3);
    check_normal(ctx, 12, 32, 2);
    check_normal(ctx, 20, 33, 2);
    for (int nc = 1; nc <= 70; nc++)
        check_pairs(nc);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
