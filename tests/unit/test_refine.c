/* test_refine.c — astrometric refinement on the real thing: a simulated 2048² frame with SIP
 * order 3 (~2.5 px at the corners), reduced by the pipeline on the CPU, refined from a
 * perturbed TAN-only WCS (CRVAL off by 10", rotation off by 0.1°, scale off by 0.2 %, no SIP)
 * against the simulator's reference catalog: WCS error against the truth over a 50×50 grid
 * over the whole frame <= 0.05 px RMS. Also: verification of good and bad WCSs, degenerate
 * inputs, and the time of a 130,000-star refinement on synthetic positions. */
#include <stdint.h>
#include <string.h>

#include "common/test_rng.h"
#include "tide/crossmatch.h"
#include "tide/tide.h"
#include "tide/wcsfit.h"
#include "tide_test.h"

#define D2R (3.14159265358979323846 / 180.0)

static double urand(uint64_t *s) {
    return trng_unit(trng_lcg64(s));
}

static double grand(uint64_t *s) {
    double u1 = urand(s), u2 = urand(s);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* A TAN WCS from the linear part of @p h, perturbed: CRVAL moved by (dra, ddec) arcsec
 * (dra along RA·cos Dec), the CD matrix rotated by rot_deg and scaled by (1 + dscale). */
static tide_wcs *perturbed_tan(const tide_header *h, double dra, double ddec, double rot_deg,
                               double dscale) {
    double c1, c2, cd[2][2], r1, r2;
    CHECK_OK(tide_header_get_dbl(h, "CRPIX1", &c1));
    CHECK_OK(tide_header_get_dbl(h, "CRPIX2", &c2));
    CHECK_OK(tide_header_get_dbl(h, "CRVAL1", &r1));
    CHECK_OK(tide_header_get_dbl(h, "CRVAL2", &r2));
    CHECK_OK(tide_header_get_dbl(h, "CD1_1", &cd[0][0]));
    CHECK_OK(tide_header_get_dbl(h, "CD1_2", &cd[0][1]));
    CHECK_OK(tide_header_get_dbl(h, "CD2_1", &cd[1][0]));
    CHECK_OK(tide_header_get_dbl(h, "CD2_2", &cd[1][1]));
    double c = cos(rot_deg * D2R), s = sin(rot_deg * D2R), k = 1.0 + dscale;
    double rot[2][2] = {{c, -s}, {s, c}}, ncd[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            ncd[i][j] = k * (rot[i][0] * cd[0][j] + rot[i][1] * cd[1][j]);
    tide_header o;
    tide_header_init(&o);
    tide_header_set_str(&o, "CTYPE1", "RA---TAN", NULL);
    tide_header_set_str(&o, "CTYPE2", "DEC--TAN", NULL);
    tide_header_set_dbl(&o, "CRPIX1", c1, NULL);
    tide_header_set_dbl(&o, "CRPIX2", c2, NULL);
    tide_header_set_dbl(&o, "CRVAL1", r1 + dra / 3600.0 / cos(r2 * D2R), NULL);
    tide_header_set_dbl(&o, "CRVAL2", r2 + ddec / 3600.0, NULL);
    tide_header_set_dbl(&o, "CD1_1", ncd[0][0], NULL);
    tide_header_set_dbl(&o, "CD1_2", ncd[0][1], NULL);
    tide_header_set_dbl(&o, "CD2_1", ncd[1][0], NULL);
    tide_header_set_dbl(&o, "CD2_2", ncd[1][1], NULL);
    tide_wcs *w = NULL;
    CHECK_OK(tide_wcs_from_header(&o, "perturbed", &w));
    tide_header_free(&o);
    return w;
}

/* RMS and max over a 50×50 grid of |sky2pix_fit(truth(p)) − p|, pixels. */
static void grid_error(const tide_sim_sky *sky, const tide_wcs *fit, int64_t w, int64_t h,
                       double *rms, double *emax) {
    enum { G = 50, N = G * G };
    static double x[N], y[N], ra[N], de[N], x2[N], y2[N];
    for (int j = 0; j < G; j++)
        for (int i = 0; i < G; i++) {
            x[j * G + i] = -0.5 + w * (i + 0.5) / G;
            y[j * G + i] = -0.5 + h * (j + 0.5) / G;
        }
    CHECK_OK(tide_sim_pix2sky(sky, 1, N, x, y, ra, de));
    CHECK_OK(tide_wcs_sky2pix(fit, N, ra, de, x2, y2));
    double s = 0, m = 0;
    for (int i = 0; i < N; i++) {
        double e = hypot(x2[i] - x[i], y2[i] - y[i]);
        if (!(e <= m))
            m = e;
        s += e * e;
    }
    *rms = sqrt(s / N);
    *emax = m;
}

static void test_sim(tide_ctx *ctx) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    tide_sim_sky *sky = NULL;
    CHECK_OK(tide_sim_sky_make(ctx, &sp, &sky));
    if (!sky)
        return;
    tide_sim_frame fr;
    memset(&fr, 0, sizeof fr);
    tide_table ref;
    tide_table_init(&ref);
    CHECK_OK(tide_sim_epoch(ctx, sky, 1, &fr));
    CHECK_OK(tide_sim_refcat(sky, &ref));
    tide_pipeline_params pp;
    tide_pipeline_params_default(&pp);
    pp.gain = sp.gain;
    pp.rdnoise = sp.rdnoise;
    pp.bias = sp.bias;
    pp.saturate = sp.bias + sp.fullwell / sp.gain;
    tide_pipeline_result res;
    memset(&res, 0, sizeof res);
    double t0 = tide_now();
    CHECK_OK(tide_pipeline_run(ctx, &fr.image, &fr.header, &pp, &res));
    printf("sim + pipeline: %lld sources, %lld reference stars, %.0f ms\n",
           (long long)res.n_sources, (long long)ref.nrows, (tide_now() - t0) * 1e3);

    /* clean sources: no flags, S/N >= 5 */
    const tide_table *cat = &res.catalog;
    const double *xw = tide_table_f64(cat, "XWIN_IMAGE"), *yw = tide_table_f64(cat, "YWIN_IMAGE");
    const double *ex = tide_table_f64(cat, "ERRX2WIN_IMAGE");
    const double *ey = tide_table_f64(cat, "ERRY2WIN_IMAGE");
    const float *snr = tide_table_f32(cat, "SNR");
    tide_column *fc = tide_table_column(cat, "FLAGS");
    CHECK(xw && yw && ex && ey && snr && fc);
    if (!(xw && yw && ex && ey && snr && fc))
        goto out;
    const int16_t *flags = fc->data;
    int64_t n = 0, W = sp.width, H = sp.height;
    double *x = malloc(sizeof(double) * (size_t)(cat->nrows + 1));
    double *y = malloc(sizeof(double) * (size_t)(cat->nrows + 1));
    double *sg = malloc(sizeof(double) * (size_t)(cat->nrows + 1));
    for (int64_t i = 0; i < cat->nrows; i++) {
        if (flags[i] != 0 || !(snr[i] >= 5))
            continue;
        x[n] = xw[i] - 1.0; /* catalog 1-based → 0-based */
        y[n] = yw[i] - 1.0;
        sg[n] = sqrt(0.5 * (ex[i] + ey[i]));
        n++;
    }
    const double *rra = tide_table_f64(&ref, "RA"), *rde = tide_table_f64(&ref, "DEC");

    /* refine from the perturbed TAN */
    tide_wcs *init = perturbed_tan(&fr.header, 10.0, 0.0, 0.1, 0.002);
    double g0, g0m;
    grid_error(sky, init, W, H, &g0, &g0m);
    tide_wcs *fit = NULL;
    tide_refine_info info;
    CHECK_OK(
        tide_astrom_refine(ctx, init, W, H, x, y, sg, n, rra, rde, ref.nrows, NULL, &fit, &info));
    if (fit) {
        double g, gm;
        grid_error(sky, fit, W, H, &g, &gm);
        printf("refine from perturbed TAN (grid rms %.2f px, max %.2f px): %lld sources in, "
               "%lld matched, %lld used, %lld rejected, %d rounds (converged %d), order %d, "
               "radius %.2f\"\n  rms RA %.4f\" Dec %.4f\" (%.4f px); vs truth over the frame: "
               "rms %.4f px, max %.4f px; %.1f ms\n",
               g0, g0m, (long long)n, (long long)info.nmatched, (long long)info.nstars,
               (long long)info.nrejected, info.iterations, info.converged, info.sip_order_used,
               info.radius_arcsec, info.rms_ra_arcsec, info.rms_dec_arcsec, info.rms_px, g, gm,
               info.ms);
        CHECK(g <= 0.05);
        CHECK(gm <= 0.2);
        CHECK(info.sip_order_used == 3);
        CHECK(info.nstars >= 300);
        CHECK(info.rms_ra_arcsec < 0.3 && info.rms_dec_arcsec < 0.3);

        /* verify: the refined WCS is good; one 1' off is not */
        tide_verify_info vi;
        CHECK_OK(tide_astrom_verify(ctx, fit, W, H, x, y, n, rra, rde, ref.nrows, NULL, &vi));
        printf("verify refined: good %d, %lld matched of %lld refs inside (%.2f), random %.2f, "
               "median sep %.3f\"\n",
               vi.good, (long long)vi.nmatched, (long long)vi.nref_inside, vi.fraction,
               vi.expected_random, vi.median_sep_arcsec);
        CHECK(vi.good == 1);
        tide_wcs *bad = perturbed_tan(&fr.header, 60.0, -40.0, 0.0, 0.0);
        CHECK_OK(tide_astrom_verify(ctx, bad, W, H, x, y, n, rra, rde, ref.nrows, NULL, &vi));
        printf("verify 72\" off: good %d, %lld matched, random %.2f\n", vi.good,
               (long long)vi.nmatched, vi.expected_random);
        CHECK(vi.good == 0);
        tide_wcs_free(bad);
        tide_wcs_free(fit);
        fit = NULL;
    }

    /* larger initial errors: CRVAL off by 25", rotation 0.3°, scale 0.5 % */
    {
        tide_wcs *init2 = perturbed_tan(&fr.header, 20.0, -15.0, 0.3, 0.005);
        grid_error(sky, init2, W, H, &g0, &g0m);
        CHECK_OK(tide_astrom_refine(ctx, init2, W, H, x, y, sg, n, rra, rde, ref.nrows, NULL, &fit,
                                    &info));
        if (fit) {
            double g, gm;
            grid_error(sky, fit, W, H, &g, &gm);
            printf("refine from a worse TAN (grid rms %.2f px, max %.2f px): %lld used, "
                   "%d rounds; vs truth rms %.4f px, max %.4f px\n",
                   g0, g0m, (long long)info.nstars, info.iterations, g, gm);
            CHECK(g <= 0.05);
            /* the result is a standard SIP header */
            tide_header oh;
            tide_header_init(&oh);
            CHECK_OK(tide_wcs_to_header(fit, &oh));
            char ct[72];
            CHECK_OK(tide_header_get_str(&oh, "CTYPE1", ct, sizeof ct));
            CHECK(strcmp(ct, "RA---TAN-SIP") == 0);
            CHECK(tide_header_find(&oh, "A_3_0") >= 0 && tide_header_find(&oh, "BP_4_0") >= 0);
            tide_header_free(&oh);
            tide_wcs_free(fit);
            fit = NULL;
        }
        tide_wcs_free(init2);
    }

    /* refine from the header's WCS (the truth): stays at the truth */
    tide_wcs *hw = NULL;
    CHECK_OK(tide_wcs_from_header(&fr.header, "sim", &hw));
    if (hw) {
        tide_verify_info vi;
        CHECK_OK(tide_astrom_verify(ctx, hw, W, H, x, y, n, rra, rde, ref.nrows, NULL, &vi));
        CHECK(vi.good == 1);
        CHECK_OK(
            tide_astrom_refine(ctx, hw, W, H, x, y, sg, n, rra, rde, ref.nrows, NULL, &fit, &info));
        if (fit) {
            double g, gm;
            grid_error(sky, fit, W, H, &g, &gm);
            printf("refine from the header WCS: %lld used, rms %.4f px; vs truth rms %.4f px\n",
                   (long long)info.nstars, info.rms_px, g);
            CHECK(g <= 0.05);
            tide_wcs_free(fit);
            fit = NULL;
        }
        /* degenerate: no references, references of another field, bad arguments */
        CHECK(tide_astrom_refine(ctx, hw, W, H, x, y, sg, n, rra, rde, 0, NULL, &fit, &info) ==
              TIDE_E_NOSOLVE);
        CHECK(fit == NULL);
        int64_t nr = ref.nrows;
        double *ora = malloc(sizeof(double) * (size_t)nr),
               *ode = malloc(sizeof(double) * (size_t)nr);
        for (int64_t j = 0; j < nr; j++) {
            ora[j] = fmod(rra[j] + 3.0, 360.0);
            ode[j] = rde[j];
        }
        CHECK(tide_astrom_refine(ctx, hw, W, H, x, y, sg, n, ora, ode, nr, NULL, &fit, &info) ==
              TIDE_E_NOSOLVE);
        printf("other field: %s\n", tide_error_detail());
        CHECK_OK(tide_astrom_verify(ctx, hw, W, H, x, y, n, ora, ode, nr, NULL, &vi));
        CHECK(vi.good == 0);
        free(ora);
        free(ode);
        tide_refine_params rp;
        tide_refine_defaults(&rp);
        rp.sip_order = 1;
        CHECK(tide_astrom_refine(ctx, hw, W, H, x, y, sg, n, rra, rde, nr, &rp, &fit, &info) ==
              TIDE_E_INVAL);
        CHECK(tide_astrom_refine(ctx, NULL, W, H, x, y, sg, n, rra, rde, nr, NULL, &fit, &info) ==
              TIDE_E_INVAL);
        /* few sources: the order is lowered (to TAN here), which beats the perturbed TAN but
         * not the header's SIP: that one is refused as diverged, never returned */
        int64_t nf = n < 40 ? n : 40;
        CHECK_OK(
            tide_astrom_refine(ctx, init, W, H, x, y, sg, nf, rra, rde, nr, NULL, &fit, &info));
        printf("40 sources from the perturbed TAN: %lld used, order %d, rms %.3f px (initial "
               "%.3f px)\n",
               (long long)info.nstars, info.sip_order_used, info.rms_px, info.initial_rms_px);
        CHECK(info.sip_order_used < 3);
        tide_wcs_free(fit);
        fit = NULL;
        int st = tide_astrom_refine(ctx, hw, W, H, x, y, sg, nf, rra, rde, nr, NULL, &fit, &info);
        printf("40 sources from the header SIP: status %d %s\n", st, st ? tide_error_detail() : "");
        CHECK(st == 0 || (st == TIDE_E_NOSOLVE && fit == NULL));
        tide_wcs_free(fit);
        fit = NULL;
        /* a TAN cannot beat the header's SIP on all the stars: refused as diverged */
        tide_refine_defaults(&rp);
        rp.sip_order = 0;
        CHECK(tide_astrom_refine(ctx, hw, W, H, x, y, sg, n, rra, rde, nr, &rp, &fit, &info) ==
              TIDE_E_NOSOLVE);
        printf("TAN from the header SIP: %s\n", tide_error_detail());
        CHECK(fit == NULL);
        tide_wcs_free(hw);
    }
    tide_wcs_free(init);
    free(x);
    free(y);
    free(sg);
out:
    tide_pipeline_result_free(&res);
    tide_table_free(&ref);
    tide_sim_frame_free(ctx, &fr);
    tide_sim_sky_free(sky);
}

/* 130,000 synthetic sources on a 14200×10650 frame (the big frame): a TAN-SIP truth,
 * references = the truth sky of 80 % of them plus 20 % unrelated stars, centroids with
 * 0.05 px noise, refined from a perturbed TAN. */
static void test_big(tide_ctx *ctx, int64_t W, int64_t H, int64_t N, double scale_arcsec) {
    tide_header h;
    tide_header_init(&h);
    double sc = scale_arcsec / 3600.0, th = 30.0 * D2R;
    tide_header_set_str(&h, "CTYPE1", "RA---TAN-SIP", NULL);
    tide_header_set_str(&h, "CTYPE2", "DEC--TAN-SIP", NULL);
    tide_header_set_dbl(&h, "CRPIX1", 0.5 * (W + 1), NULL);
    tide_header_set_dbl(&h, "CRPIX2", 0.5 * (H + 1), NULL);
    tide_header_set_dbl(&h, "CRVAL1", 210.0, NULL);
    tide_header_set_dbl(&h, "CRVAL2", -35.0, NULL);
    tide_header_set_dbl(&h, "CD1_1", -sc * cos(th), NULL);
    tide_header_set_dbl(&h, "CD1_2", sc * sin(th), NULL);
    tide_header_set_dbl(&h, "CD2_1", sc * sin(th), NULL);
    tide_header_set_dbl(&h, "CD2_2", sc * cos(th), NULL);
    tide_header_set_int(&h, "A_ORDER", 3, NULL);
    tide_header_set_int(&h, "B_ORDER", 3, NULL);
    double rc = 0.5 * hypot((double)W, (double)H), k = -8.0 / (rc * rc * rc);
    tide_header_set_dbl(&h, "A_3_0", k, NULL);
    tide_header_set_dbl(&h, "A_1_2", k, NULL);
    tide_header_set_dbl(&h, "B_2_1", k, NULL);
    tide_header_set_dbl(&h, "B_0_3", k, NULL);
    tide_header_set_dbl(&h, "A_2_0", 1.0 / (rc * rc), NULL);
    tide_header_set_dbl(&h, "B_1_1", -1.0 / (rc * rc), NULL);
    tide_wcs *truth = NULL;
    CHECK_OK(tide_wcs_from_header(&h, "big truth", &truth));
    if (!truth)
        return;
    double *x = malloc(sizeof(double) * N), *y = malloc(sizeof(double) * N);
    double *ra = malloc(sizeof(double) * N), *de = malloc(sizeof(double) * N);
    double *sg = malloc(sizeof(double) * N);
    uint64_t seed = 777;
    for (int64_t i = 0; i < N; i++) {
        x[i] = -0.5 + W * urand(&seed);
        y[i] = -0.5 + H * urand(&seed);
    }
    CHECK_OK(tide_wcs_pix2sky(truth, N, x, y, ra, de));
    for (int64_t i = 0; i < N; i++) {
        x[i] += 0.05 * grand(&seed);
        y[i] += 0.05 * grand(&seed);
        sg[i] = 0.05;
        if (i % 5 == 4) { /* unrelated reference star */
            double xr = -0.5 + W * urand(&seed), yr = -0.5 + H * urand(&seed);
            CHECK_OK(tide_wcs_pix2sky(truth, 1, &xr, &yr, &ra[i], &de[i]));
        }
    }
    tide_wcs *init = perturbed_tan(&h, 2.0, -1.5, 0.01, 0.0002);
    tide_wcs *fit = NULL;
    tide_refine_info info;
    CHECK_OK(tide_astrom_refine(ctx, init, W, H, x, y, sg, N, ra, de, N, NULL, &fit, &info));
    if (fit) {
        enum { G = 50 };
        static double gx[G * G], gy[G * G], gr[G * G], gd[G * G], fx[G * G], fy[G * G];
        for (int j = 0; j < G; j++)
            for (int i = 0; i < G; i++) {
                gx[j * G + i] = -0.5 + W * (i + 0.5) / G;
                gy[j * G + i] = -0.5 + H * (j + 0.5) / G;
            }
        CHECK_OK(tide_wcs_pix2sky(truth, G * G, gx, gy, gr, gd));
        CHECK_OK(tide_wcs_sky2pix(fit, G * G, gr, gd, fx, fy));
        double s = 0;
        for (int i = 0; i < G * G; i++)
            s += pow(fx[i] - gx[i], 2) + pow(fy[i] - gy[i], 2);
        printf("%lld synthetic (%lldx%lld): %lld used of %lld matched, %d rounds, rms %.4f px, "
               "vs truth %.4f px, %.1f ms\n",
               (long long)N, (long long)W, (long long)H, (long long)info.nstars,
               (long long)info.nmatched, info.iterations, info.rms_px, sqrt(s / (G * G)), info.ms);
        CHECK(sqrt(s / (G * G)) < 0.01);
        CHECK(info.nstars > 0.7 * N);
        /* deterministic: a second run gives the same WCS to the last bit */
        tide_wcs *fit2 = NULL;
        tide_refine_info info2;
        CHECK_OK(tide_astrom_refine(ctx, init, W, H, x, y, sg, N, ra, de, N, NULL, &fit2, &info2));
        if (fit2) {
            static double fx2[G * G], fy2[G * G];
            CHECK_OK(tide_wcs_sky2pix(fit2, G * G, gr, gd, fx2, fy2));
            CHECK(memcmp(fx, fx2, sizeof fx2) == 0 && memcmp(fy, fy2, sizeof fy2) == 0);
            CHECK(info2.nstars == info.nstars);
            tide_wcs_free(fit2);
        }
        tide_wcs_free(fit);
    }
    tide_wcs_free(init);
    tide_wcs_free(truth);
    tide_header_free(&h);
    free(x);
    free(y);
    free(ra);
    free(de);
    free(sg);
}

int main(void) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    if (!ctx)
        return TIDE_TEST_RESULT();
    test_sim(ctx);
    test_big(ctx, 2048, 2048, 2000, 1.46);
    test_big(ctx, 14200, 10650, 130000, 0.3);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
