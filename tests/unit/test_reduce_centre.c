/* test_reduce_centre.c — tide_pipe_centres (reduce_centre.c): on a detected synthetic frame a
 * tilted flat plateau, whose windowed centroid walks uphill away from its barycentre, is
 * centred on the barycentre, and a PSF-like star on its windowed centroid; the rule itself on
 * hand values (a star keeps XWIN however far its barycentre is; a resolved source moves only
 * when its window wandered); no PSF, a NaN XWIN and a table without the columns. */
#include "common/detect_synth.h"
#include "pipeline/reduce_internal.h"
#include "tide_test.h"

#define FWHM 3.0

/* A flat disc of radius @p r at (x0, y0), @p level at its middle, rising by @p slope of the
 * level per pixel in +x: no peak for a PSF-wide window to settle on. */
static void plateau(tide_image *im, double x0, double y0, double r, double level, double slope) {
    for (int64_t y = 0; y < im->height; y++)
        for (int64_t x = 0; x < im->width; x++) {
            const double dx = (double)x - x0, dy = (double)y - y0;
            if (dx * dx + dy * dy <= r * r)
                im->pix[y * im->stride + x] += (float)(level * (1.0 + slope * dx));
        }
}

static void test_rule(void) {
    const double sigw = FWHM / 2.3548200450309493;
    /* a star: its FWHM is the PSF's, whatever pulled its barycentre */
    CHECK(tide_pipe_centre_on_barycentre(3.0, 0.0, FWHM, FWHM) == 0);
    CHECK(tide_pipe_centre_on_barycentre(3.0, 0.0, 1.9 * FWHM, FWHM) == 0);
    /* resolved: moved only past half the window's sigma */
    CHECK(tide_pipe_centre_on_barycentre(0.4 * sigw, 0.0, 10 * FWHM, FWHM) == 0);
    CHECK(tide_pipe_centre_on_barycentre(0.4 * sigw, 0.4 * sigw, 10 * FWHM, FWHM) == 1);
    CHECK(tide_pipe_centre_on_barycentre(0.0, -0.6 * sigw, 2.1 * FWHM, FWHM) == 1);
    /* no PSF width, no FWHM: no rule */
    CHECK(tide_pipe_centre_on_barycentre(5.0, 0.0, 10 * FWHM, 0.0) == 0);
    CHECK(tide_pipe_centre_on_barycentre(5.0, 0.0, NAN, FWHM) == 0);
}

static void test_frame(tide_ctx *ctx) {
    tide_image im, rms;
    synth_frame(&im, &rms, 300, 200, 1.0, 29);
    const double px = 90.0, py = 100.0, sx = 220.3, sy = 99.6;
    plateau(&im, px, py, 20.0, 50.0, 0.02);
    synth_star(&im, sx, sy, synth_flux_for_snr(200.0, FWHM, 1.0), FWHM);
    tide_detect_params p;
    tide_detect_params_default(&p);
    p.fwhm_guess = FWHM;
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &im, &rms, NULL, &p, &t));
    tide_psf_model psf;
    memset(&psf, 0, sizeof psf);
    psf.fwhm = FWHM;
    for (int k = 0; k < 4; k++)
        psf.fwhm_corner[k] = FWHM;
    const int64_t n = t.nrows;
    double *x = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double *y = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int64_t nbary = -1;
    CHECK_OK(tide_pipe_centres(&t, &psf, im.width, im.height, x, y, &nbary));
    const double *X = tide_table_f64(&t, "X"), *Y = tide_table_f64(&t, "Y");
    const double *XW = tide_table_f64(&t, "XWIN"), *YW = tide_table_f64(&t, "YWIN");
    const double *FW = tide_table_f64(&t, "FWHM");
    int64_t ip = -1, is = -1;
    for (int64_t i = 0; i < n; i++) {
        if (fabs(X[i] - px) < 20.0 && fabs(Y[i] - py) < 20.0 && (ip < 0 || FW[i] > FW[ip]))
            ip = i;
        if (fabs(X[i] - sx) < 1.0 && fabs(Y[i] - sy) < 1.0)
            is = i;
    }
    CHECK(ip >= 0 && is >= 0);
    if (ip >= 0 && is >= 0) {
        const double wander = hypot(XW[ip] - X[ip], YW[ip] - Y[ip]);
        printf("plateau: barycentre (%.3f, %.3f), XWIN (%.3f, %.3f), %.2f px apart, FWHM %.1f; "
               "star: XWIN - barycentre %.3f px; %lld of %lld on the barycentre\n",
               X[ip], Y[ip], XW[ip], YW[ip], wander, FW[ip], hypot(XW[is] - X[is], YW[is] - Y[is]),
               (long long)nbary, (long long)n);
        /* the window walked uphill (+x) past half its sigma: the case the rule is for */
        CHECK(XW[ip] - X[ip] > 0.5 * FWHM / 2.3548200450309493);
        CHECK(FW[ip] > 2.0 * FWHM);
        CHECK(x[ip] == X[ip] && y[ip] == Y[ip]);
        CHECK(fabs(FW[is] - FWHM) < 0.1 * FWHM);
        CHECK(x[is] == XW[is] && y[is] == YW[is]);
        CHECK(nbary >= 1);
        /* without a PSF every source keeps its windowed centroid */
        CHECK_OK(tide_pipe_centres(&t, NULL, im.width, im.height, x, y, &nbary));
        CHECK(nbary == 0 && x[ip] == XW[ip] && y[ip] == YW[ip]);
        /* a source without a windowed centroid takes its barycentre */
        tide_table_f64(&t, "XWIN")[is] = NAN;
        CHECK_OK(tide_pipe_centres(&t, &psf, im.width, im.height, x, y, NULL));
        CHECK(x[is] == X[is] && y[is] == Y[is]);
    }
    CHECK_OK(tide_table_remove_column(&t, "FWHM"));
    CHECK(tide_pipe_centres(&t, &psf, im.width, im.height, x, y, NULL) == TIDE_E_INTERNAL);
    free(x);
    free(y);
    tide_table_free(&t);
    tide_image_free(NULL, &im);
    tide_image_free(NULL, &rms);
}

int main(void) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    if (!ctx)
        return 1;
    test_rule();
    test_frame(ctx);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
