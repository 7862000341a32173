/* test_wcsfit.c — the TAN-SIP least-squares fit: exact synthetic pairs (residuals < 1e-6 px,
 * the truth recovered to 1e-6 px over the frame), noisy centroids (0.05 px, 2000 stars: truth
 * RMS over the frame <= 0.01 px), the inverse AP/BP (sky → pixel round trip < 1e-3 px),
 * degenerate inputs, and the time of a 130,000-star fit. */
#include <stdint.h>

#include "common/test_rng.h"
#include "tide/tide.h"
#include "tide/wcsfit.h"
#include "tide_test.h"

enum { W = 2048, H = 2048 };

static double urand(uint64_t *s) {
    return trng_unit(trng_lcg64(s));
}

static double grand(uint64_t *s) {
    double u1 = urand(s), u2 = urand(s);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* A truth TAN-SIP of order 3 on a 2048² frame: 1.46"/px, rotated 12°, ~2.5 px of distortion
 * at the corners (like the simulator's), CRPIX at the centre (1-based 1024.5). */
static tide_wcs *make_truth(double ra0, double dec0) {
    tide_header h;
    tide_header_init(&h);
    double sc = 1.46 / 3600.0, th = 12.0 * 3.14159265358979 / 180.0;
    tide_header_set_str(&h, "CTYPE1", "RA---TAN-SIP", NULL);
    tide_header_set_str(&h, "CTYPE2", "DEC--TAN-SIP", NULL);
    tide_header_set_dbl(&h, "CRPIX1", 0.5 * (W + 1), NULL);
    tide_header_set_dbl(&h, "CRPIX2", 0.5 * (H + 1), NULL);
    tide_header_set_dbl(&h, "CRVAL1", ra0, NULL);
    tide_header_set_dbl(&h, "CRVAL2", dec0, NULL);
    tide_header_set_dbl(&h, "CD1_1", -sc * cos(th), NULL);
    tide_header_set_dbl(&h, "CD1_2", sc * sin(th), NULL);
    tide_header_set_dbl(&h, "CD2_1", sc * sin(th), NULL);
    tide_header_set_dbl(&h, "CD2_2", sc * cos(th), NULL);
    tide_header_set_int(&h, "A_ORDER", 3, NULL);
    tide_header_set_int(&h, "B_ORDER", 3, NULL);
    double rc = 1448.0, k = -2.0 / (rc * rc * rc), q = 0.5 / (rc * rc);
    tide_header_set_dbl(&h, "A_2_0", 0.3 * q, NULL);
    tide_header_set_dbl(&h, "A_1_1", -0.5 * q, NULL);
    tide_header_set_dbl(&h, "A_0_2", 0.2 * q, NULL);
    tide_header_set_dbl(&h, "B_2_0", -0.4 * q, NULL);
    tide_header_set_dbl(&h, "B_1_1", 0.6 * q, NULL);
    tide_header_set_dbl(&h, "B_0_2", 0.1 * q, NULL);
    tide_header_set_dbl(&h, "A_3_0", k, NULL);
    tide_header_set_dbl(&h, "A_1_2", 1.05 * k, NULL);
    tide_header_set_dbl(&h, "A_2_1", 0.1 * k, NULL);
    tide_header_set_dbl(&h, "B_2_1", 0.95 * k, NULL);
    tide_header_set_dbl(&h, "B_0_3", k, NULL);
    tide_header_set_dbl(&h, "B_3_0", -0.1 * k, NULL);
    tide_wcs *w = NULL;
    CHECK_OK(tide_wcs_from_header(&h, "truth", &w));
    tide_header_free(&h);
    return w;
}

/* RMS and max over a 50×50 grid over the frame of |sky2pix_fit(pix2sky_truth(p)) − p|. */
static void grid_error(const tide_wcs *truth, const tide_wcs *fit, double *rms, double *emax) {
    enum { G = 50, N = G * G };
    static double x[N], y[N], ra[N], de[N], x2[N], y2[N];
    for (int j = 0; j < G; j++)
        for (int i = 0; i < G; i++) {
            x[j * G + i] = -0.5 + (W) * (i + 0.5) / G;
            y[j * G + i] = -0.5 + (H) * (j + 0.5) / G;
        }
    CHECK_OK(tide_wcs_pix2sky(truth, N, x, y, ra, de));
    CHECK_OK(tide_wcs_sky2pix(fit, N, ra, de, x2, y2));
    double s = 0, m = 0;
    for (int i = 0; i < N; i++) {
        double e = hypot(x2[i] - x[i], y2[i] - y[i]);
        if (!(e <= m))
            m = e; /* NaN propagates */
        s += e * e;
    }
    *rms = sqrt(s / N);
    *emax = m;
}

int main(void) {
    tide_wcs *truth = make_truth(150.0, 2.2);
    if (!truth)
        return TIDE_TEST_RESULT();
    enum { NMAX = 130000 };
    double *x = malloc(sizeof(double) * NMAX), *y = malloc(sizeof(double) * NMAX);
    double *ra = malloc(sizeof(double) * NMAX), *de = malloc(sizeof(double) * NMAX);
    double *dx = malloc(sizeof(double) * NMAX), *dy = malloc(sizeof(double) * NMAX);
    double *wt = malloc(sizeof(double) * NMAX);
    uint64_t seed = 12345;

    /* (1) exact pairs */
    {
        int n = 500;
        for (int i = 0; i < n; i++) {
            x[i] = -0.5 + W * urand(&seed);
            y[i] = -0.5 + H * urand(&seed);
        }
        CHECK_OK(tide_wcs_pix2sky(truth, n, x, y, ra, de));
        tide_wcs *fit = NULL;
        tide_wcsfit_info info;
        CHECK_OK(tide_wcsfit_tansip(x, y, ra, de, NULL, n, W, H, NULL, &fit, &info, dx, dy));
        if (fit) {
            double rmax = 0;
            for (int i = 0; i < n; i++)
                rmax = fmax(rmax, hypot(dx[i], dy[i]));
            double grms, gmax;
            grid_error(truth, fit, &grms, &gmax);
            printf("exact: n %lld order %d inv %d (inverse max err %.2e px), crval iterations %d, "
                   "residual max %.2e px, grid rms %.2e max %.2e px, scale %.6f\"/px\n",
                   (long long)info.n, info.sip_order_used, info.inv_order, info.inv_maxerr_px,
                   info.crval_iter, rmax, grms, gmax, info.scale_arcsec);
            CHECK(rmax < 1e-6);
            CHECK(gmax < 1e-6);
            CHECK(info.sip_order_used == 3);
            CHECK(info.inv_maxerr_px < 1e-3);
            CHECK_CLOSE(info.scale_arcsec, 1.46, 0.01);
            CHECK(info.rms_ra_arcsec < 1e-6 && info.rms_dec_arcsec < 1e-6);
            /* pixel → sky → pixel through wcslib with the fitted AP/BP */
            static double ra2[500], de2[500], xb[500], yb[500];
            CHECK_OK(tide_wcs_pix2sky(fit, n, x, y, ra2, de2));
            CHECK_OK(tide_wcs_sky2pix(fit, n, ra2, de2, xb, yb));
            double rt = 0;
            for (int i = 0; i < n; i++)
                rt = fmax(rt, hypot(xb[i] - x[i], yb[i] - y[i]));
            printf("exact: wcslib round trip max %.2e px\n", rt);
            CHECK(rt < 1e-3);
            /* the device-side evaluator reads it too */
            tide_wcs_tansip t;
            CHECK_OK(tide_wcs_tansip_from_wcs(fit, &t));
            CHECK(t.order[0] == 3 && t.order[2] >= 4);
            tide_wcs_summary su;
            CHECK_OK(tide_wcs_summarize(fit, W, H, &su));
            CHECK(su.has_sip);
            CHECK_CLOSE(su.rotation_deg, 12.0, 0.5);
            tide_wcs_free(fit);
        }
        /* a pure TAN fit of the same pairs misses the distortion by pixels */
        tide_wcsfit_params p;
        tide_wcsfit_defaults(&p);
        p.sip_order = 0;
        CHECK_OK(tide_wcsfit_tansip(x, y, ra, de, NULL, n, W, H, &p, &fit, &info, NULL, NULL));
        if (fit) {
            printf("exact, TAN only: rms %.3f px\n", info.rms_px);
            CHECK(info.rms_px > 0.1);
            CHECK(info.sip_order_used == 0);
            tide_wcs_free(fit);
        }
        /* order 5 on the same exact pairs: still exact */
        p.sip_order = 5;
        CHECK_OK(tide_wcsfit_tansip(x, y, ra, de, NULL, n, W, H, &p, &fit, &info, dx, dy));
        if (fit) {
            double rmax = 0;
            for (int i = 0; i < n; i++)
                rmax = fmax(rmax, hypot(dx[i], dy[i]));
            printf("exact, order 5: residual max %.2e px\n", rmax);
            CHECK(rmax < 1e-6);
            CHECK(info.sip_order_used == 5);
            tide_wcs_free(fit);
        }
    }

    /* (1b) exact pairs across RA = 0 and near the pole */
    {
        const double centres[2][2] = {{0.05, -30.0}, {200.0, 89.7}};
        for (int c = 0; c < 2; c++) {
            tide_wcs *tr = make_truth(centres[c][0], centres[c][1]);
            if (!tr)
                continue;
            int n = 400;
            for (int i = 0; i < n; i++) {
                x[i] = -0.5 + W * urand(&seed);
                y[i] = -0.5 + H * urand(&seed);
            }
            CHECK_OK(tide_wcs_pix2sky(tr, n, x, y, ra, de));
            tide_wcs *fit = NULL;
            tide_wcsfit_info info;
            CHECK_OK(tide_wcsfit_tansip(x, y, ra, de, NULL, n, W, H, NULL, &fit, &info, dx, dy));
            if (fit) {
                double grms, gmax;
                grid_error(tr, fit, &grms, &gmax);
                printf("exact at (%.2f, %.2f): grid max %.2e px, rms RA %.1e\" Dec %.1e\"\n",
                       centres[c][0], centres[c][1], gmax, info.rms_ra_arcsec, info.rms_dec_arcsec);
                CHECK(gmax < 1e-6);
                CHECK(info.rms_ra_arcsec < 1e-6 && info.rms_dec_arcsec < 1e-6);
                tide_wcs_free(fit);
            }
            tide_wcs_free(tr);
        }
    }

    /* (2) noisy centroids, 2000 stars, 0.05 px, with weights; 3 % gross outliers excluded by
     * zero weight */
    {
        int n = 2000;
        for (int i = 0; i < n; i++) {
            x[i] = -0.5 + W * urand(&seed);
            y[i] = -0.5 + H * urand(&seed);
        }
        CHECK_OK(tide_wcs_pix2sky(truth, n, x, y, ra, de));
        for (int i = 0; i < n; i++) {
            double sig = 0.05;
            x[i] += sig * grand(&seed);
            y[i] += sig * grand(&seed);
            wt[i] = 1.0 / (sig * sig);
        }
        tide_wcs *fit = NULL;
        tide_wcsfit_info info;
        CHECK_OK(tide_wcsfit_tansip(x, y, ra, de, wt, n, W, H, NULL, &fit, &info, dx, dy));
        if (fit) {
            double grms, gmax;
            grid_error(truth, fit, &grms, &gmax);
            printf("noisy 0.05 px, 2000 stars: residual rms %.4f px (ra %.4f\" dec %.4f\"), "
                   "truth grid rms %.4f px max %.4f px\n",
                   info.rms_px, info.rms_ra_arcsec, info.rms_dec_arcsec, grms, gmax);
            CHECK(grms <= 0.01);
            CHECK_CLOSE(info.rms_px, 0.05 * sqrt(2.0), 0.01);
            tide_wcs_free(fit);
        }
    }

    /* (4) degenerate inputs */
    {
        tide_wcs *fit = (tide_wcs *)1;
        tide_wcsfit_params p;
        tide_wcsfit_defaults(&p);
        CHECK(tide_wcsfit_tansip(x, y, ra, de, NULL, 2, W, H, NULL, &fit, NULL, NULL, NULL) ==
              TIDE_E_NOSOLVE);
        CHECK(fit == NULL);
        CHECK(tide_wcsfit_tansip(x, y, ra, de, NULL, -1, W, H, NULL, &fit, NULL, NULL, NULL) ==
              TIDE_E_INVAL);
        CHECK(tide_wcsfit_tansip(x, y, ra, de, NULL, 10, 0, H, NULL, &fit, NULL, NULL, NULL) ==
              TIDE_E_INVAL);
        p.sip_order = 1;
        CHECK(tide_wcsfit_tansip(x, y, ra, de, NULL, 10, W, H, &p, &fit, NULL, NULL, NULL) ==
              TIDE_E_INVAL);
        p.sip_order = 6;
        CHECK(tide_wcsfit_tansip(x, y, ra, de, NULL, 10, W, H, &p, &fit, NULL, NULL, NULL) ==
              TIDE_E_INVAL);
        /* collinear: every star on one line */
        int n = 50;
        for (int i = 0; i < n; i++) {
            x[i] = 100.0 + 30.0 * i;
            y[i] = 50.0 + 20.0 * i;
        }
        CHECK_OK(tide_wcs_pix2sky(truth, n, x, y, ra, de));
        CHECK(tide_wcsfit_tansip(x, y, ra, de, NULL, n, W, H, NULL, &fit, NULL, NULL, NULL) ==
              TIDE_E_NOSOLVE);
        printf("collinear: %s\n", tide_error_detail());
        /* too few for order 3: lowered to 2 (30 stars = 5 per coefficient of order 2) */
        n = 30;
        for (int i = 0; i < n; i++) {
            x[i] = -0.5 + W * urand(&seed);
            y[i] = -0.5 + H * urand(&seed);
        }
        CHECK_OK(tide_wcs_pix2sky(truth, n, x, y, ra, de));
        tide_wcsfit_info info;
        CHECK_OK(tide_wcsfit_tansip(x, y, ra, de, NULL, n, W, H, NULL, &fit, &info, NULL, NULL));
        CHECK(info.sip_order_used == 2 && info.order_lowered);
        tide_wcs_free(fit);
        /* 10 stars: TAN */
        CHECK_OK(tide_wcsfit_tansip(x, y, ra, de, NULL, 10, W, H, NULL, &fit, &info, NULL, NULL));
        CHECK(info.sip_order_used == 0 && info.order_lowered);
        tide_wcs_free(fit);
        /* without auto_order the same is an error */
        p.sip_order = 3;
        p.auto_order = 0;
        CHECK(tide_wcsfit_tansip(x, y, ra, de, NULL, n, W, H, &p, &fit, NULL, NULL, NULL) ==
              TIDE_E_NOSOLVE);
        /* NaN pairs and zero weights are ignored */
        for (int i = 0; i < n; i++)
            wt[i] = 1.0;
        x[3] = NAN;
        de[4] = NAN;
        wt[5] = 0.0;
        CHECK_OK(tide_wcsfit_tansip(x, y, ra, de, wt, n, W, H, NULL, &fit, &info, dx, dy));
        CHECK(info.n == n - 3);
        CHECK(isnan(dx[3]) && isnan(dx[4]) && isfinite(dy[5]));
        tide_wcs_free(fit);
        /* stars in one corner only: order 3 would run away over the frame → lowered or kept
         * sane; never a folding WCS */
        n = 200;
        for (int i = 0; i < n; i++) {
            x[i] = 1800 + 248 * urand(&seed);
            y[i] = 1800 + 248 * urand(&seed);
        }
        CHECK_OK(tide_wcs_pix2sky(truth, n, x, y, ra, de));
        for (int i = 0; i < n; i++) {
            x[i] += 0.3 * grand(&seed);
            y[i] += 0.3 * grand(&seed);
        }
        int st = tide_wcsfit_tansip(x, y, ra, de, NULL, n, W, H, NULL, &fit, &info, NULL, NULL);
        printf("one corner: status %d, order %d, sip max %.2f px\n", st, info.sip_order_used,
               info.sip_max_px);
        CHECK(st == 0);
        if (!st)
            tide_wcs_free(fit);
    }

    /* timing: 130,000 stars, order 3, and 2000 */
    {
        int sizes[2] = {2000, NMAX};
        for (int t = 0; t < 2; t++) {
            int n = sizes[t];
            for (int i = 0; i < n; i++) {
                x[i] = -0.5 + W * urand(&seed);
                y[i] = -0.5 + H * urand(&seed);
            }
            CHECK_OK(tide_wcs_pix2sky(truth, n, x, y, ra, de));
            for (int i = 0; i < n; i++) {
                x[i] += 0.05 * grand(&seed);
                y[i] += 0.05 * grand(&seed);
            }
            tide_wcs *fit = NULL;
            tide_wcsfit_info info;
            double t0 = tide_now();
            CHECK_OK(tide_wcsfit_tansip(x, y, ra, de, NULL, n, W, H, NULL, &fit, &info, dx, dy));
            double ms = (tide_now() - t0) * 1e3;
            printf("timing: %d stars, order 3: %.1f ms (crval iterations %d, inverse order %d)\n",
                   n, ms, info.crval_iter, info.inv_order);
            tide_wcs_free(fit);
        }
    }
    tide_wcs_free(truth);
    free(x);
    free(y);
    free(ra);
    free(de);
    free(dx);
    free(dy);
    free(wt);
    return TIDE_TEST_RESULT();
}
