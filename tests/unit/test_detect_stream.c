/* test_detect_stream.c — the streamed matched filter (one basis correlation at a time,
 * detect.c matched_filter) against the one-pass form it replaces, on a CPU context: the
 * correlator's forward-once / run-one / run-one-view API must give bitwise
 * tide_correlator_run's outputs, and tide_det_snr_accum + tide_det_snr_finish bitwise
 * tide_det_snr's S/N map (same double sums in the same order). Awkward sizes, NaN / masked /
 * zero-rms pixels, 2..6 bases. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "reduction/detect/detect_kernels.h"
#include "tide/fft.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t rs = 7;
static double urand(void) {
    return trng_unit(trng_lcg64(&rs));
}

static int rows_equal(const tide_image *a, const tide_image *b) {
    for (int64_t y = 0; y < a->height; y++)
        if (memcmp(a->pix + y * a->stride, b->pix + y * b->stride, sizeof(float) * a->width))
            return 0;
    return 1;
}

static void run(tide_ctx *ctx, int64_t w, int64_t h, int nb, int deg, int64_t ks) {
    float *kb = malloc(sizeof(float) * (size_t)(nb * ks * ks));
    const float *kp[6];
    for (int b = 0; b < nb; b++) {
        kp[b] = kb + b * ks * ks;
        for (int64_t q = 0; q < ks * ks; q++)
            kb[b * ks * ks + q] = (float)(b == 0 ? urand() : 0.2 * (urand() - 0.5));
    }
    tide_det_filter f;
    memset(&f, 0, sizeof f);
    f.nbasis = nb;
    f.degree = deg;
    f.ncoef = (deg + 1) * (deg + 2) / 2;
    f.width = w + 3;
    f.height = h;
    f.nodata_bits = TIDE_MASK_NODATA;
    for (int b = 0; b < nb; b++)
        for (int k = 0; k < f.ncoef; k++)
            f.coef[b * f.ncoef + k] =
                b == 0 ? (k == 0 ? 1.0 : 0.05 * (urand() - 0.5)) : 0.2 * (urand() - 0.5);
    for (int a = 0; a < nb; a++)
        for (int b = 0; b < nb; b++) {
            double s = 0;
            for (int64_t q = 0; q < ks * ks; q++)
                s += (double)kp[a][q] * (double)kp[b][q];
            f.gram[a * nb + b] = s;
        }
    tide_image sub, rms, snr1 = {0}, snr2 = {0}, R[6], Rb = {0};
    memset(R, 0, sizeof R);
    CHECK_OK(tide_image_alloc(ctx, &sub, w, h, TIDE_HOST, TIDE_IMAGE_MASK));
    CHECK_OK(tide_image_alloc(ctx, &rms, w, h, TIDE_HOST, 0));
    CHECK_OK(tide_image_alloc(ctx, &snr1, w, h, TIDE_HOST, 0));
    CHECK_OK(tide_image_alloc(ctx, &snr2, w, h, TIDE_HOST, 0));
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const int64_t i = y * sub.stride + x;
            const double t = urand();
            sub.pix[i] = t < 0.01 ? NAN : (float)(urand() - 0.5 + (urand() < 0.01 ? 50 : 0));
            sub.mask[i] = t > 0.99 ? TIDE_MASK_NODATA : t > 0.98 ? TIDE_MASK_BAD : 0;
            rms.pix[y * rms.stride + x] = t > 0.01 && t < 0.015 ? 0.0f : (float)(1 + urand());
        }
    tide_correlate_options opt = {0};
    opt.mask_bits = TIDE_MASK_NODATA | TIDE_MASK_BAD;
    tide_correlator *c = NULL;
    CHECK_OK(tide_correlator_create(ctx, w, h, nb, kp, ks, ks, &opt, &c));
    CHECK(tide_correlator_streams(c) == (nb >= 2));
    /* one pass: all bases, tide_det_snr */
    CHECK_OK(tide_correlator_run(ctx, c, &sub, R));
    CHECK_OK(tide_det_snr_cpu(ctx, &sub, &rms, R, &f, &snr1));
    /* streamed */
    double *F = malloc(sizeof(double) * (size_t)(w * h));
    CHECK_OK(tide_correlator_forward(ctx, c, &sub));
    for (int b = 0; b < nb; b++) {
        CHECK_OK(tide_correlator_run_one(ctx, c, b, &Rb));
        CHECK(rows_equal(&Rb, &R[b]));
        tide_image view;
        CHECK_OK(tide_correlator_run_one_view(ctx, c, b, &view));
        CHECK(view.owns == 0 && view.location == TIDE_HOST);
        CHECK(rows_equal(&view, &R[b]));
        /* alternate: the accumulation reads the copy or the view */
        CHECK_OK(tide_det_snr_accum_cpu(ctx, b % 2 ? &view : &Rb, b, &f, F));
    }
    CHECK_OK(tide_det_snr_finish_cpu(ctx, &sub, &rms, F, &f, &snr2));
    if (!rows_equal(&snr1, &snr2))
        fprintf(stderr, "%lld x %lld, %d bases, degree %d: streamed S/N differs\n", (long long)w,
                (long long)h, nb, deg);
    CHECK(rows_equal(&snr1, &snr2));
    CHECK(tide_correlator_run_one(ctx, c, nb, &Rb) == TIDE_E_INVAL);
    free(F);
    tide_correlator_free(ctx, c);
    tide_image_free(ctx, &Rb);
    for (int b = 0; b < nb; b++)
        tide_image_free(ctx, &R[b]);
    tide_image_free(ctx, &sub);
    tide_image_free(ctx, &rms);
    tide_image_free(ctx, &snr1);
    tide_image_free(ctx, &snr2);
    free(kb);
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return 1;
    run(ctx, 300, 41, 6, 2, 9);
    run(ctx, 257, 130, 2, 1, 5);
    run(ctx, 97, 63, 4, 3, 13);
    run(ctx, 1, 1, 3, 0, 3);
    /* a single-kernel correlator does not stream */
    float k1[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
    const float *kp1 = k1;
    tide_correlator *c = NULL;
    tide_image im = {0};
    CHECK_OK(tide_image_alloc(ctx, &im, 16, 16, TIDE_HOST, 0));
    CHECK_OK(tide_correlator_create(ctx, 16, 16, 1, &kp1, 3, 3, NULL, &c));
    CHECK(tide_correlator_streams(c) == 0);
    CHECK(tide_correlator_forward(ctx, c, &im) == TIDE_E_UNSUPPORTED);
    tide_correlator_free(ctx, c);
    tide_image_free(ctx, &im);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
