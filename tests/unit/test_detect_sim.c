/* test_detect_sim.c — detection against the simulator's truth (CPU), on a background
 * estimated by tide_background_estimate:
 *  - completeness >= 98% for isolated, unsaturated stars with background-limited matched-
 *    filter S/N >= 10 (Moffat: S/N = F sqrt((beta-1)^2 / (pi alpha^2 (2 beta - 1))) / sigma);
 *  - XWIN/YWIN RMS error <= 0.05 FWHM for those with S/N >= 50;
 *  - a pure-noise frame (no objects, no defects): <= 1 false detection per 10^6 pixels at 5σ.
 * Also prints the CPU time of tide_detect on the frame. */
#include <stdint.h>
#include <time.h>

#include "tide/background.h"
#include "tide/tide.h"
#include "tide_test.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* Background-subtract a frame with tide's estimate. */
static int subtract(tide_ctx *ctx, tide_image *im, tide_image *rms) {
    tide_image bkg;
    int st = tide_background_estimate(ctx, im, NULL, &bkg, rms, NULL);
    if (st)
        return st;
    for (int64_t i = 0; i < im->width * im->height; i++)
        im->pix[i] -= bkg.pix[i];
    tide_image_free(ctx, &bkg);
    return 0;
}

static void truth_test(tide_ctx *ctx, int64_t W, int64_t H) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = W;
    sp.height = H;
    sp.nstars = W * H / 2000;
    sp.ngalaxies = 0;
    sp.defects = 0;
    sp.seed = 7;
    tide_sim_frame fr;
    CHECK_OK(tide_sim_run(ctx, &sp, &fr, NULL));
    if (tide_test_failures)
        return;
    tide_image rms;
    CHECK_OK(subtract(ctx, &fr.image, &rms));
    if (tide_test_failures)
        return;
    tide_detect_params p;
    tide_detect_params_default(&p);
    p.fwhm_guess = sp.fwhm;
    tide_table t;
    tide_table_init(&t);
    double t0 = now_ms();
    CHECK_OK(tide_detect(ctx, &fr.image, &rms, NULL, &p, &t));
    double ms = now_ms() - t0;

    const tide_table *tr = &fr.truth;
    const double *xt = tide_table_f64(tr, "X_TRUE"), *yt = tide_table_f64(tr, "Y_TRUE");
    const double *ft = tide_table_f64(tr, "FLUX");
    const float *fw = tide_table_f32(tr, "FWHM");
    const int16_t *sat = tide_table_column(tr, "SATURATED")->data;
    const double *xw = tide_table_f64(&t, "XWIN"), *yw = tide_table_f64(&t, "YWIN");
    const double sigma = sqrt(sp.sky * sp.gain + sp.rdnoise * sp.rdnoise) / sp.gain;
    const double beta = sp.beta;
    int64_t n10 = 0, f10 = 0, n50 = 0;
    double se2 = 0.0, fsum = 0.0;
    for (int64_t i = 0; i < tr->nrows; i++) {
        double x = xt[i] - 1.0, y = yt[i] - 1.0;
        if (sat[i] || x < 5 || y < 5 || x > W - 6 || y > H - 6)
            continue;
        double alpha = fw[i] / (2.0 * sqrt(pow(2.0, 1.0 / beta) - 1.0));
        double snr =
            ft[i] *
            sqrt((beta - 1) * (beta - 1) / (3.141592653589793 * alpha * alpha * (2 * beta - 1))) /
            sigma;
        if (snr < 10.0)
            continue;
        int crowded = 0; /* a neighbour of >= 10% its flux within 2.5 FWHM, or brighter within 4 */
        for (int64_t j = 0; j < tr->nrows && !crowded; j++) {
            if (j == i)
                continue;
            double d = hypot(xt[j] - xt[i], yt[j] - yt[i]);
            crowded = (d < 2.5 * fw[i] && ft[j] > 0.1 * ft[i]) || (d < 4 * fw[i] && ft[j] > ft[i]);
        }
        if (crowded)
            continue;
        n10++;
        int64_t best = -1;
        double bd = 1.5 * 1.5;
        for (int64_t r = 0; r < t.nrows; r++) {
            double d = (xw[r] - x) * (xw[r] - x) + (yw[r] - y) * (yw[r] - y);
            if (d < bd) {
                bd = d;
                best = r;
            }
        }
        if (best < 0)
            continue;
        f10++;
        if (snr >= 50.0) {
            n50++;
            se2 += bd;
            fsum += fw[i];
        }
    }
    double comp = n10 ? (double)f10 / n10 : 0.0;
    double crms = n50 ? sqrt(se2 / (2.0 * n50)) : 1e9, fmean = n50 ? fsum / n50 : sp.fwhm;
    printf("sim %lld x %lld: %lld truth rows, %lld detections in %.1f ms (CPU, %d threads); "
           "completeness at S/N >= 10: %lld / %lld = %.2f%%; XWIN rms at S/N >= 50 (%lld stars): "
           "%.4f px = %.4f FWHM\n",
           (long long)W, (long long)H, (long long)tr->nrows, (long long)t.nrows, ms, ctx->threads,
           (long long)f10, (long long)n10, 100 * comp, (long long)n50, crms, crms / fmean);
    CHECK(n10 > 50);
    CHECK(comp >= 0.98);
    CHECK(n50 >= 20);
    CHECK(crms <= 0.05 * fmean);
    tide_table_free(&t);
    tide_image_free(ctx, &rms);
    tide_sim_frame_free(ctx, &fr);
}

static void noise_test(tide_ctx *ctx, int64_t W, int64_t H) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = W;
    sp.height = H;
    sp.nstars = 0;
    sp.ngalaxies = 0;
    sp.defects = 0;
    sp.e2_nmoving = sp.e2_ntransient = sp.e2_nvariable = 0;
    sp.seed = 8;
    tide_sim_frame fr;
    CHECK_OK(tide_sim_run(ctx, &sp, &fr, NULL));
    if (tide_test_failures)
        return;
    tide_image rms;
    CHECK_OK(subtract(ctx, &fr.image, &rms));
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_detect(ctx, &fr.image, &rms, NULL, NULL, &t));
    double per_mpx = t.nrows / (W * H / 1e6);
    printf("pure noise %lld x %lld (%lld truth rows): %lld detections at 5 sigma = %.2f per "
           "10^6 px\n",
           (long long)W, (long long)H, (long long)fr.truth.nrows, (long long)t.nrows, per_mpx);
    CHECK(fr.truth.nrows == 0);
    CHECK(per_mpx <= 1.0);
    tide_table_free(&t);
    tide_image_free(ctx, &rms);
    tide_sim_frame_free(ctx, &fr);
}

int main(void) {
    tide_ctx_options o = {0};
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return TIDE_TEST_RESULT();
    truth_test(ctx, 2048, 2048);
    noise_test(ctx, 2048, 2048);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
