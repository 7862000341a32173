/* test_detect_psf.c — the matched filter with a PSF model (CPU): the S/N map does not depend
 * on how the local kernel is split over basis stamps or scaled by the coefficient fields
 * (energy normalisation from the Gram matrix), and equals the direct S/N with the local kernel
 * computed by brute force at sample pixels for a genuinely varying two-basis model. */
#include <stdint.h>

#include "common/detect_synth.h"
#include "tide/psf.h"
#include "tide/tide.h"
#include "tide_test.h"

#define KS 9
#define KH 4

static void gaussian(float *k, double fwhm) {
    double s = fwhm / 2.3548200450309493, sum = 0.0;
    for (int j = 0; j < KS; j++)
        for (int i = 0; i < KS; i++)
            sum += exp(-0.5 * ((i - KH) * (i - KH) + (j - KH) * (j - KH)) / (s * s));
    for (int j = 0; j < KS; j++)
        for (int i = 0; i < KS; i++)
            k[j * KS + i] =
                (float)(exp(-0.5 * ((i - KH) * (i - KH) + (j - KH) * (j - KH)) / (s * s)) / sum);
}

static void snr_map(tide_ctx *ctx, const tide_image *im, const tide_image *rms,
                    const tide_psf_model *psf, tide_detect_maps *m, tide_table *t) {
    tide_detect_params p;
    tide_detect_params_default(&p);
    p.fwhm_guess = 3.0;
    tide_table_init(t);
    CHECK_OK(tide_detect_ex(ctx, im, rms, psf, &p, t, m));
}

int main(void) {
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    tide_image im, rms;
    const int64_t W = 150, H = 110;
    synth_frame(&im, &rms, W, H, 1.5, 3);
    for (int k = 0; k < 30; k++)
        synth_star(&im, 5 + 140 * synth_unif(1, (uint64_t)k), 5 + 100 * synth_unif(2, (uint64_t)k),
                   synth_flux_for_snr(20 + 100 * synth_unif(3, (uint64_t)k), 3, 1.5), 3.0);
    for (int64_t i = 0; i < W * H; i++)
        rms.pix[i] = (float)(1.5 + 0.3 * (i % W) / (double)W);

    tide_detect_maps ref, m;
    tide_table tref, t;
    snr_map(ctx, &im, &rms, NULL, &ref, &tref);

    /* split over two identical half-bases with coefficients 1 + 0.5u and 1 - 0.5u + 0.2v^0 */
    float basis[2 * KS * KS];
    gaussian(basis, 3.0);
    for (int q = 0; q < KS * KS; q++) {
        basis[q] *= 0.5f;
        basis[KS * KS + q] = basis[q];
    }
    double coef[6] = {1.0, 0.5, 0.0, 1.0, -0.5, 0.0};
    tide_psf_model psf;
    memset(&psf, 0, sizeof psf);
    psf.width = W;
    psf.height = H;
    psf.stamp = KS;
    psf.nbasis = 2;
    psf.degree = 1;
    psf.ncoef = 3;
    psf.basis = basis;
    psf.coef = coef;
    psf.fwhm = 3.0;
    snr_map(ctx, &im, &rms, &psf, &m, &t);
    double worst = 0.0;
    for (int64_t i = 0; i < W * H; i++) {
        double a = ref.snr.pix[i], b = m.snr.pix[i];
        double e = fabs(a - b) / fmax(1.0, fabs(a));
        if (e > worst)
            worst = e;
    }
    printf("split basis: max S/N difference %.3g, rows %lld vs %lld\n", worst,
           (long long)tref.nrows, (long long)t.nrows);
    CHECK(worst < 2e-5);
    CHECK(t.nrows == tref.nrows);
    tide_detect_maps_free(ctx, &m);
    tide_table_free(&t);

    /* a scaled kernel (coefficient 2 + u) gives the same S/N */
    double coef1[3] = {2.0, 1.0, 0.0};
    gaussian(basis, 3.0);
    psf.nbasis = 1;
    psf.coef = coef1;
    snr_map(ctx, &im, &rms, &psf, &m, &t);
    worst = 0.0;
    for (int64_t i = 0; i < W * H; i++) {
        double e = fabs(ref.snr.pix[i] - m.snr.pix[i]) / fmax(1.0, fabs(ref.snr.pix[i]));
        if (e > worst)
            worst = e;
    }
    printf("scaled kernel: max S/N difference %.3g\n", worst);
    CHECK(worst < 2e-5);
    tide_detect_maps_free(ctx, &m);
    tide_table_free(&t);

    /* a varying two-basis model against brute force at sample pixels */
    float b2[2 * KS * KS];
    gaussian(b2, 3.0);
    for (int j = 0; j < KS; j++)
        for (int i = 0; i < KS; i++)
            b2[KS * KS + j * KS + i] =
                (float)(0.05 * ((i - KH) * (i - KH) - (j - KH) * (j - KH)) * b2[j * KS + i]);
    double coef2[6] = {1.0, 0.1, 0.0, 0.2, 0.8, -0.6};
    psf.nbasis = 2;
    psf.basis = b2;
    psf.coef = coef2;
    snr_map(ctx, &im, &rms, &psf, &m, &t);
    worst = 0.0;
    for (int64_t y = 3; y < H; y += 17)
        for (int64_t x = 2; x < W; x += 13) {
            double u = (2.0 * x - (W - 1)) / (W - 1), v = (2.0 * y - (H - 1)) / (H - 1);
            double c0 = coef2[0] + coef2[1] * u + coef2[2] * v;
            double c1 = coef2[3] + coef2[4] * u + coef2[5] * v;
            double F = 0.0, E = 0.0;
            for (int j = 0; j < KS; j++)
                for (int i = 0; i < KS; i++) {
                    double k = c0 * b2[j * KS + i] + c1 * b2[KS * KS + j * KS + i];
                    E += k * k;
                    int64_t xx = x + i - KH, yy = y + j - KH;
                    if (xx >= 0 && yy >= 0 && xx < W && yy < H)
                        F += k * im.pix[yy * W + xx];
                }
            double s = F / (rms.pix[y * W + x] * sqrt(E));
            double e = fabs(s - m.snr.pix[y * W + x]) / fmax(1.0, fabs(s));
            if (e > worst)
                worst = e;
        }
    printf("varying model vs brute force: max S/N difference %.3g\n", worst);
    CHECK(worst < 2e-4);
    tide_detect_maps_free(ctx, &m);
    tide_table_free(&t);

    /* a bad model is refused */
    psf.ncoef = 4;
    tide_table_init(&t);
    CHECK(tide_detect(ctx, &im, &rms, &psf, NULL, &t) == TIDE_E_INVAL);
    tide_table_free(&t);

    tide_detect_maps_free(ctx, &ref);
    tide_table_free(&tref);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
