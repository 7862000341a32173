/* test_gpu_photometry.c — every photometry kernel on the CUDA backend against its CPU twin
 * on an awkward frame (1031 × 517, random noise, masked and NaN pixels, a variance plane)
 * and awkward source lists (1237 positions, some off the frame, some NaN; radii 0.3 to
 * 11.9 px; the local annulus on): aperture sums, annulus background, Kron, PSF fits,
 * aperture-correction model and FLUX_OPT. Criteria: fluxes and errors within 1e-5 relative
 * (plus 1e-9 of the aperture's noise scale for sums near zero), flags identical, the
 * annulus background identical (same lane order, no FMA); the GPU bitwise identical from run
 * to run; host and device images giving the same bits. Skipped (77) without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "common/test_rng.h"
#include "tide/tide.h"
#include "tide_test.h"

#define W 1031
#define H 517
#define N 1237
#define SIDE 15

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static double urand(void) {
    return trng_open(trng_xorshift64(&rng));
}

static int fails_rel(const char *what, const double *a, const double *b, int64_t n, double rel,
                     double abs_floor) {
    int bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i]))
            continue;
        const double d = fabs(a[i] - b[i]), tol = rel * fmax(fabs(a[i]), fabs(b[i])) + abs_floor;
        if (!(d <= tol)) {
            if (bad < 5)
                fprintf(stderr, "%s[%lld]: cpu %.12g gpu %.12g\n", what, (long long)i, a[i], b[i]);
            bad++;
        }
        if (d / (fabs(a[i]) + 1e-30) > worst && fabs(a[i]) > 1)
            worst = d / fabs(a[i]);
    }
    printf("%-22s n=%lld max rel diff %.3g, %d outside tolerance\n", what, (long long)n, worst,
           bad);
    return bad;
}

static int same_i32(const char *what, const int32_t *a, const int32_t *b, int64_t n) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) {
            if (bad < 5)
                fprintf(stderr, "%s[%lld]: cpu %d gpu %d\n", what, (long long)i, a[i], b[i]);
            bad++;
        }
    return bad;
}

int main(void) {
    if (!tide_cuda_available(NULL))
        TIDE_TEST_SKIP("no usable GPU");
    tide_ctx *cpu, *gpu;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&cpu, &o));
    o.backend = TIDE_BACKEND_CUDA;
    CHECK_OK(tide_ctx_create(&gpu, &o));

    tide_image im;
    CHECK_OK(tide_image_alloc(cpu, &im, W, H, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    for (int64_t k = 0; k < (int64_t)W * H; k++) {
        im.pix[k] = (float)(10.0 * (urand() - 0.5) + 2.0);
        im.var[k] = (float)(20.0 + 5.0 * urand());
        const double u = urand();
        if (u < 0.002)
            im.mask[k] = TIDE_MASK_COSMIC;
        else if (u < 0.003)
            im.pix[k] = NAN;
    }
    /* some stars so that Kron, PSF and growth curves have something to measure */
    static double x[N], y[N], a[N], b[N], th[N], snr[N];
    for (int i = 0; i < N; i++) {
        x[i] = -5.0 + (W + 10.0) * urand();
        y[i] = -5.0 + (H + 10.0) * urand();
        a[i] = 1.0 + 3.0 * urand();
        b[i] = a[i] * (0.3 + 0.7 * urand());
        th[i] = 180.0 * urand() - 90.0;
        snr[i] = 5.0 * pow(400.0, urand());
    }
    x[3] = NAN;
    x[4] = 10.5;
    y[4] = 20.5; /* a pixel corner */
    for (int i = 0; i < 200; i++) {
        const double cx = 30 + (W - 60) * (i % 20) / 19.0, cy = 30 + (H - 60) * (i / 20) / 9.0;
        x[100 + i] = cx + 0.37;
        y[100 + i] = cy - 0.21;
        snr[100 + i] = 40.0 * pow(100.0, (i % 7) / 6.0);
        const double f = snr[100 + i] * 30.0;
        for (int dy = -8; dy <= 8; dy++)
            for (int dx = -8; dx <= 8; dx++) {
                const int64_t ii = (int64_t)cx + dx, jj = (int64_t)cy + dy;
                const double rx = ii - x[100 + i], ry = jj - y[100 + i];
                im.pix[jj * W + ii] += (float)(f * exp(-(rx * rx + ry * ry) / (2 * 1.6 * 1.6)) /
                                               (2 * 3.14159265 * 1.6 * 1.6));
            }
    }
    const double radii[4] = {0.3, 3.3, 7.25, 11.9};
    const int nr = 4;
    static double fc[N * 4], ec[N * 4], fg[N * 4], eg[N * 4], fg2[N * 4], eg2[N * 4];
    static double bc[N], bg[N], bec[N], beg[N];
    static int32_t flc[N], flg[N], afc[N * 4], afg[N * 4];
    tide_aper_params p;
    tide_aper_params_default(&p);
    p.gain = 2.0;
    p.bkgann_in = 13.0;
    p.bkgann_out = 19.0;
    p.mask_correct = 1; /* mirror replacement of the masked and NaN pixels, and its fallback */
    tide_aper_extra exc = {NULL, NULL, afc, bc, bec}, exg = {NULL, NULL, afg, bg, beg};
    CHECK_OK(
        tide_aperture_photometry_ex(cpu, &im, NULL, N, x, y, nr, radii, &p, fc, ec, flc, &exc));
    CHECK_OK(
        tide_aperture_photometry_ex(gpu, &im, NULL, N, x, y, nr, radii, &p, fg, eg, flg, &exg));
    CHECK(fails_rel("aperture flux", fc, fg, N * nr, 1e-5, 1e-9 * 100) == 0);
    CHECK(fails_rel("aperture fluxerr", ec, eg, N * nr, 1e-5, 0) == 0);
    CHECK(same_i32("aperture flags", flc, flg, N) == 0);
    CHECK(same_i32("aperture aper_flags", afc, afg, N * nr) == 0);
    CHECK(memcmp(bc, bg, sizeof bc) == 0); /* annulus median: same values, same order */
    CHECK(fails_rel("annulus bkg_err", bec, beg, N, 1e-12, 0) == 0);
    /* run to run, and device-resident images, bitwise */
    {
        tide_image dim;
        CHECK_OK(tide_image_clone(gpu, &dim, &im, TIDE_DEVICE));
        CHECK_OK(tide_aperture_photometry(gpu, &dim, NULL, N, x, y, nr, radii, &p, fg2, eg2, NULL));
        CHECK(memcmp(fg, fg2, sizeof fg) == 0 && memcmp(eg, eg2, sizeof eg) == 0);
        /* per-source radii */
        static double rr[N], frc[N], frg[N], erc[N], erg[N];
        for (int i = 0; i < N; i++)
            rr[i] = 0.5 + 12.0 * urand();
        rr[9] = -1.0;
        int32_t f1[N], f2[N];
        CHECK_OK(tide_aperture_photometry_r(cpu, &im, NULL, N, x, y, rr, &p, frc, erc, f1));
        CHECK_OK(tide_aperture_photometry_r(gpu, &dim, NULL, N, x, y, rr, &p, frg, erg, f2));
        CHECK(fails_rel("per-source radius flux", frc, frg, N, 1e-5, 1e-7) == 0);
        CHECK(same_i32("per-source radius flags", f1, f2, N) == 0);
        /* Kron */
        static double krc[N], krg[N], kfc[N], kfg[N], kec[N], keg[N];
        int32_t kflc[N], kflg[N];
        tide_kron_params kp;
        tide_kron_params_default(&kp);
        kp.aper.gain = 2.0;
        kp.aper.mask_correct = 1;
        CHECK_OK(tide_kron_photometry(cpu, &im, NULL, N, x, y, a, b, th, &kp, krc, kfc, kec, kflc));
        CHECK_OK(
            tide_kron_photometry(gpu, &dim, NULL, N, x, y, a, b, th, &kp, krg, kfg, keg, kflg));
        CHECK(fails_rel("kron radius", krc, krg, N, 1e-5, 1e-9) == 0);
        CHECK(fails_rel("kron flux", kfc, kfg, N, 1e-5, 1e-7) == 0);
        CHECK(fails_rel("kron fluxerr", kec, keg, N, 1e-5, 0) == 0);
        CHECK(same_i32("kron flags", kflc, kflg, N) == 0);
        /* PSF fits with Gaussian stamps */
        float *st = malloc(sizeof(float) * N * SIDE * SIDE);
        for (int i = 0; i < N; i++) {
            double s = 0;
            const double ox = isfinite(x[i]) ? x[i] - floor(x[i] + 0.5) : 0,
                         oy = y[i] - floor(y[i] + 0.5);
            for (int v = 0; v < SIDE; v++)
                for (int u = 0; u < SIDE; u++) {
                    const double rx = u - SIDE / 2 - ox, ry = v - SIDE / 2 - oy;
                    s += st[(size_t)i * SIDE * SIDE + v * SIDE + u] =
                        (float)exp(-(rx * rx + ry * ry) / 5.12);
                }
            for (int q = 0; q < SIDE * SIDE; q++)
                st[(size_t)i * SIDE * SIDE + q] /= (float)s;
        }
        static double pfc[N], pfg[N], pec[N], peg[N], pcc[N], pcg[N];
        int32_t pflc[N], pflg[N];
        tide_psffit_params pp;
        tide_psffit_params_default(&pp);
        pp.gain = 2.0;
        pp.fit_background = 1;
        CHECK_OK(tide_psf_photometry_stamps(cpu, &im, NULL, N, x, y, SIDE, st, &pp, pfc, pec, pcc,
                                            pflc));
        CHECK_OK(tide_psf_photometry_stamps(gpu, &dim, NULL, N, x, y, SIDE, st, &pp, pfg, peg, pcg,
                                            pflg));
        CHECK(fails_rel("psf flux", pfc, pfg, N, 1e-5, 1e-6) == 0);
        CHECK(fails_rel("psf fluxerr", pec, peg, N, 1e-5, 0) == 0);
        CHECK(fails_rel("psf chi2", pcc, pcg, N, 1e-5, 1e-9) == 0);
        CHECK(same_i32("psf flags", pflc, pflg, N) == 0);
        free(st);
        /* aperture corrections and FLUX_OPT */
        tide_apcorr_params ap;
        tide_apcorr_params_default(&ap);
        ap.fwhm = 2.3548 * 1.6;
        ap.snr_min_corr = 100.0;
        ap.degree = 1;
        tide_apcorr_model mc, mg;
        CHECK_OK(tide_apcorr_build(cpu, &im, NULL, N, x, y, snr, NULL, &ap, &mc));
        CHECK_OK(tide_apcorr_build(gpu, &dim, NULL, N, x, y, snr, NULL, &ap, &mg));
        CHECK(mc.nrad == mg.nrad && mc.ncoef == mg.ncoef);
        if (mc.nrad == mg.nrad && mc.ncoef == mg.ncoef) {
            CHECK(fails_rel("apcorr coef", mc.coef, mg.coef, (int64_t)mc.nrad * mc.ncoef, 1e-5,
                            1e-8) == 0);
            CHECK_CLOSE(mc.law_a, mg.law_a, 1e-5);
            CHECK_CLOSE(mc.law_b, mg.law_b, 1e-5);
        }
        static double oc[N], og[N], oec[N], oeg[N], orc[N], org[N];
        int32_t ofc[N], ofg[N];
        CHECK_OK(tide_optimal_photometry(cpu, &im, NULL, &mc, N, x, y, snr, &p, oc, oec, orc, ofc));
        CHECK_OK(
            tide_optimal_photometry(gpu, &dim, NULL, &mc, N, x, y, snr, &p, og, oeg, org, ofg));
        CHECK(fails_rel("FLUX_OPT", oc, og, N, 1e-5, 1e-6) == 0);
        CHECK(fails_rel("FLUXERR_OPT", oec, oeg, N, 1e-5, 0) == 0);
        CHECK(fails_rel("RAD_OPT", orc, org, N, 1e-12, 0) == 0);
        CHECK(same_i32("FLUX_OPT flags", ofc, ofg, N) == 0);
        tide_apcorr_free(&mc);
        tide_apcorr_free(&mg);
        tide_image_free(gpu, &dim);
    }
    tide_image_free(cpu, &im);
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return TIDE_TEST_RESULT();
}
