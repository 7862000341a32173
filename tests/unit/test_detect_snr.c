/* test_detect_snr.c — the CPU S/N combination (per-row polynomials, vectorised chunks) against
 * the direct per-pixel formula (tide_det_snr_pixel): random PSF-model fields of
 * degree 0..3 with 1..6 bases, awkward frame sizes and strides, NaN / masked / zero-rms
 * pixels. The two differ only in the order of double-precision sums, so the float S/N must
 * agree to 2 ulp, and NaN exactly where the pixel function gives NaN. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "reduction/detect/detect_filter_math.h"
#include "reduction/detect/detect_kernels.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t rs = 99;
static double urand(void) {
    return trng_unit(trng_lcg64(&rs));
}

static void run(tide_ctx *ctx, int64_t w, int64_t h, int nb, int deg) {
    tide_det_filter f;
    memset(&f, 0, sizeof f);
    f.nbasis = nb;
    f.degree = deg;
    f.ncoef = (deg + 1) * (deg + 2) / 2;
    f.width = w + 7; /* the model may cover another frame size */
    f.height = h;
    f.nodata_bits = TIDE_MASK_NODATA;
    for (int b = 0; b < nb; b++)
        for (int k = 0; k < f.ncoef; k++)
            f.coef[b * f.ncoef + k] =
                b == 0 ? (k == 0 ? 1.0 : 0.05 * (urand() - 0.5)) : 0.2 * (urand() - 0.5);
    /* a Gram matrix of random vectors: symmetric positive definite */
    double vec[6][9];
    for (int b = 0; b < nb; b++)
        for (int q = 0; q < 9; q++)
            vec[b][q] = (b == 0 ? 0.3 : 0.05) * (urand() - 0.2);
    for (int a = 0; a < nb; a++)
        for (int b = 0; b < nb; b++) {
            double s = 0;
            for (int q = 0; q < 9; q++)
                s += vec[a][q] * vec[b][q];
            f.gram[a * nb + b] = s;
        }
    tide_image sub, rms, snr, R[6];
    memset(R, 0, sizeof R);
    CHECK_OK(tide_image_alloc(ctx, &sub, w, h, TIDE_HOST, TIDE_IMAGE_MASK));
    CHECK_OK(tide_image_alloc(ctx, &rms, w, h, TIDE_HOST, 0));
    CHECK_OK(tide_image_alloc(ctx, &snr, w, h, TIDE_HOST, 0));
    for (int b = 0; b < nb; b++)
        CHECK_OK(tide_image_alloc(ctx, &R[b], w, h, TIDE_HOST, 0));
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const int64_t i = y * sub.stride + x;
            const double t = urand();
            sub.pix[i] = t < 0.01 ? NAN : (float)(urand() - 0.5);
            sub.mask[i] = t > 0.99 ? TIDE_MASK_NODATA : 0;
            rms.pix[y * rms.stride + x] = t > 0.01 && t < 0.015 ? 0.0f : (float)(1 + urand());
            for (int b = 0; b < nb; b++)
                R[b].pix[y * R[b].stride + x] = (float)(10.0 * (urand() - 0.3));
        }
    CHECK_OK(tide_det_snr_cpu(ctx, &sub, &rms, R, &f, &snr));
    int64_t bad = 0;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            float r[6];
            for (int b = 0; b < nb; b++)
                r[b] = R[b].pix[y * R[b].stride + x];
            const float want =
                tide_det_snr_pixel(&f, x, y, r, sub.pix[y * sub.stride + x],
                                   rms.pix[y * rms.stride + x], sub.mask[y * sub.stride + x]);
            const float got = snr.pix[y * snr.stride + x];
            if (isnan(want) || isnan(got))
                bad += isnan(want) != isnan(got);
            else
                bad += !(fabsf(got - want) <=
                         2.0f * (nextafterf(fabsf(want), INFINITY) - fabsf(want)));
        }
    if (bad)
        fprintf(stderr, "%lld x %lld, %d bases, degree %d: %lld pixels differ\n", (long long)w,
                (long long)h, nb, deg, (long long)bad);
    CHECK(bad == 0);
    tide_image_free(ctx, &sub);
    tide_image_free(ctx, &rms);
    tide_image_free(ctx, &snr);
    for (int b = 0; b < nb; b++)
        tide_image_free(ctx, &R[b]);
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return 1;
    run(ctx, 1, 1, 1, 0);
    run(ctx, 257, 19, 1, 0);
    run(ctx, 300, 41, 6, 2);
    run(ctx, 513, 7, 4, 3);
    run(ctx, 33, 130, 2, 1);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
