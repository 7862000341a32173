/* test_background_se.c — tide's background against Source Extractor's own check-images:
 * ../shared/data/sep/image.fits with default.sex there (BACK_SIZE 64, BACK_FILTERSIZE 3,
 * BACK_FILTERTHRESH 0) produced back.fits (BACKGROUND) and rms.fits (BACKGROUND_RMS).
 *
 * Tolerances (the issue asks "background within 1% RMS of back.fits"):
 *  - background: max |tide − back| <= 0.01 × median(rms) everywhere (the strict reading),
 *    and RMS(tide − back) <= 1e-3 × median(rms)          [measured 1.3e-4 and 3.4e-5];
 *  - RMS map: max |tide − rms| / rms <= 1e-3              [measured 3.1e-5].
 * The residual is not the algorithm: image.fits is int16 with BSCALE/BZERO, which cfitsio
 * scales in double and Source Extractor (like astropy) in float, so a few pixels differ by one
 * float ulp and move between histogram bins. On Source Extractor's own float pixels tide agrees
 * to 1.4e-7 (tests/peer/test_background_sep.py). */
#include <stdint.h>

#include "tide/tide.h"
#include "tide_test.h"

static int cmp_f(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return x > y ? 1 : (x < y ? -1 : 0);
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    tide_image im = {0}, back = {0}, rms = {0}, b = {0}, r = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s", tide_test_data("sep/image.fits"));
    CHECK_OK(tide_fits_read_image(ctx, path, &im, NULL));
    snprintf(path, sizeof path, "%s", tide_test_data("sep/back.fits"));
    CHECK_OK(tide_fits_read_image(ctx, path, &back, NULL));
    snprintf(path, sizeof path, "%s", tide_test_data("sep/rms.fits"));
    CHECK_OK(tide_fits_read_image(ctx, path, &rms, NULL));
    if (tide_test_failures)
        return TIDE_TEST_RESULT();

    tide_bkg_params p;
    tide_bkg_params_default(&p); /* = default.sex: BACK_SIZE 64, BACK_FILTERSIZE 3 */
    tide_bkg_summary s;
    CHECK_OK(tide_background_estimate(ctx, &im, &p, &b, &r, &s));
    CHECK(s.nx_mesh == 4 && s.ny_mesh == 4);

    const int64_t n = im.width * im.height;
    float *tmp = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        tmp[i] = rms.pix[i];
    qsort(tmp, (size_t)n, sizeof(float), cmp_f);
    const double med_rms = tmp[n / 2];
    double maxb = 0, ss = 0, maxr = 0;
    for (int64_t y = 0; y < im.height; y++)
        for (int64_t x = 0; x < im.width; x++) {
            const double db = fabs((double)b.pix[y * b.stride + x] - back.pix[y * back.stride + x]);
            const double dr = fabs((double)r.pix[y * r.stride + x] - rms.pix[y * rms.stride + x]) /
                              rms.pix[y * rms.stride + x];
            ss += db * db;
            if (!(db <= maxb))
                maxb = db;
            if (!(dr <= maxr))
                maxr = dr;
        }
    const double rmsb = sqrt(ss / (double)n);
    printf("background: max |tide-SE| = %.3g ADU = %.3g x median(rms); RMS = %.3g x median(rms)\n",
           maxb, maxb / med_rms, rmsb / med_rms);
    printf("rms map: max relative difference %.3g; global back %.6g rms %.6g\n", maxr,
           s.global_back, s.global_rms);
    CHECK(maxb <= 0.01 * med_rms);
    CHECK(rmsb <= 1e-3 * med_rms);
    CHECK(maxr <= 1e-3);
    free(tmp);
    tide_image_free(ctx, &im);
    tide_image_free(ctx, &back);
    tide_image_free(ctx, &rms);
    tide_image_free(ctx, &b);
    tide_image_free(ctx, &r);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
