/* test_dipole_candidates.c — candidates on a synthetic difference image with known positive,
 * negative and dipole sources (and a masked artefact), stamp cutting, and the fits of the
 * dipole candidates' stamps recovering the lobes (CPU). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tide/dipole.h"
#include "tide/psf.h"
#include "tide/tide.h"
#include "tide_test.h"
#include "common/detect_synth.h"

#define W 256
#define H 256
#define FWHM 3.0

typedef struct src {
    double x, y, flux; /* flux < 0: negative */
    double xn, yn;     /* dipole negative lobe, NaN if none */
} src;

static const src truth[] = {
    {40.3, 50.7, 600.0, NAN, NAN},       {200.6, 30.2, 400.0, NAN, NAN},
    {120.1, 220.4, -500.0, NAN, NAN},    {30.8, 180.5, -700.0, NAN, NAN},
    {100.4, 100.6, 800.0, 104.1, 102.2}, {170.7, 140.3, 600.0, 167.2, 143.9},
    {60.2, 120.9, 900.0, 60.1, 116.4},
};
#define NT ((int)(sizeof truth / sizeof truth[0]))

static void make_diff(tide_image *d) {
    tide_image rms;
    synth_frame(d, &rms, W, H, 1.0, 4242);
    tide_image_free(NULL, &rms);
    d->var = malloc(sizeof(float) * W * H);
    for (int64_t i = 0; i < W * H; i++)
        d->var[i] = 1.0f;
    for (int k = 0; k < NT; k++) {
        synth_star(d, truth[k].x, truth[k].y, truth[k].flux, FWHM);
        if (!isnan(truth[k].xn))
            synth_star(d, truth[k].xn, truth[k].yn, -truth[k].flux, FWHM);
    }
    /* a masked artefact: huge values flagged NODATA, and a bad column */
    for (int y = 10; y < 16; y++)
        for (int x = 150; x < 156; x++) {
            d->pix[y * W + x] = 1e5f;
            d->mask[y * W + x] = TIDE_MASK_NODATA;
        }
}

int main(void) {
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return 1;
    tide_image d = {0};
    make_diff(&d);
    tide_candidate_params cp;
    tide_candidate_params_default(&cp);
    cp.det.fwhm_guess = FWHM;
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_diff_candidates(ctx, &d, &cp, &t));
    printf("%lld candidates\n", (long long)t.nrows);
    const double *X = tide_table_f64(&t, "X"), *Y = tide_table_f64(&t, "Y");
    const double *XI = tide_table_f64(&t, "X_IMAGE"), *S = tide_table_f64(&t, "SNR");
    const double *XP = tide_table_f64(&t, "XPOS"), *YP = tide_table_f64(&t, "YPOS");
    const double *XN = tide_table_f64(&t, "XNEG"), *YN = tide_table_f64(&t, "YNEG");
    const double *FL = tide_table_f64(&t, "FLUX");
    const int32_t *K = tide_table_i32(&t, "KIND");
    CHECK(X && Y && XI && S && XP && YP && XN && YN && K && FL);
    if (!(X && Y && XI && S && XP && YP && XN && YN && K && FL))
        return TIDE_TEST_RESULT();
    for (int64_t i = 0; i < t.nrows; i++) {
        printf("  %lld: kind %2d (%.2f, %.2f) snr %.1f flux %.1f pos (%.2f, %.2f) neg (%.2f, "
               "%.2f)\n",
               (long long)i, K[i], X[i], Y[i], S[i], FL[i], XP[i], YP[i], XN[i], YN[i]);
        CHECK_CLOSE(XI[i], X[i] + 1.0, 0.0);
        if (i > 0)
            CHECK(S[i] <= S[i - 1]);
    }
    CHECK(t.nrows == NT);
    /* every injected change found once, with the right kind and lobes within 0.3 px */
    int found = 0;
    double *fx0 = malloc(sizeof(double) * NT), *fy0 = malloc(sizeof(double) * NT);
    int nd = 0;
    for (int k = 0; k < NT; k++) {
        const src *s = &truth[k];
        const int kind = !isnan(s->xn) ? TIDE_CAND_DIPOLE
                         : s->flux > 0 ? TIDE_CAND_POSITIVE
                                       : TIDE_CAND_NEGATIVE;
        int hit = 0;
        for (int64_t i = 0; i < t.nrows; i++) {
            if (K[i] != kind)
                continue;
            double ex, ey;
            if (kind == TIDE_CAND_NEGATIVE)
                ex = XN[i] - s->x, ey = YN[i] - s->y;
            else
                ex = XP[i] - s->x, ey = YP[i] - s->y;
            if (hypot(ex, ey) > 0.3)
                continue;
            if (kind == TIDE_CAND_DIPOLE) {
                CHECK(hypot(XN[i] - s->xn, YN[i] - s->yn) < 0.5);
                fx0[nd] = X[i];
                fy0[nd] = Y[i];
                nd++;
            }
            if (kind == TIDE_CAND_NEGATIVE)
                CHECK(FL[i] < 0.0);
            hit++;
        }
        CHECK(hit == 1);
        found += hit == 1;
    }
    printf("found %d of %d injected changes\n", found, NT);

    /* Stamps of the dipoles, cut and fitted: lobes within 0.1 px of the truth (the sources
     * are pixel-integrated Gaussians, the fit samples at pixel centres: FWHM 3 is well
     * enough sampled). */
    const int side = 21, np = side * side;
    float *sp = malloc(sizeof(float) * nd * np), *sv = malloc(sizeof(float) * nd * np);
    uint16_t *sm = malloc(sizeof(uint16_t) * nd * np);
    double cx[8], cy[8];
    CHECK_OK(tide_diff_cut_stamps(ctx, &d, nd, fx0, fy0, side, sp, sv, sm, cx, cy));
    for (int s = 0; s < nd; s++) {
        const int64_t x0 = (int64_t)floor(fx0[s] + 0.5), y0 = (int64_t)floor(fy0[s] + 0.5);
        CHECK(cx[s] == (double)x0 && cy[s] == (double)y0);
        CHECK(sp[s * np + 3 * side + 5] == d.pix[(y0 - 10 + 3) * W + x0 - 10 + 5]);
        CHECK(sv[s * np + 7] == 1.0f);
    }
    tide_dipole_fit fit[8];
    tide_dipole_params dp;
    tide_dipole_params_default(&dp);
    CHECK_OK(tide_dipole_fit_stamps(ctx, nd, side, sp, sv, sm, cx, cy, &dp, fit));
    int nfit = 0;
    for (int s = 0; s < nd; s++)
        for (int k = 0; k < NT; k++) {
            if (isnan(truth[k].xn) || hypot(fit[s].xpos - truth[k].x, fit[s].ypos - truth[k].y) > 1)
                continue;
            nfit++;
            printf("dipole fit: pos (%.3f, %.3f) truth (%.2f, %.2f), neg (%.3f, %.3f) truth "
                   "(%.2f, %.2f), flux %.1f ± %.1f truth %.1f, status %d, dchi2 %.1f\n",
                   fit[s].xpos, fit[s].ypos, truth[k].x, truth[k].y, fit[s].xneg, fit[s].yneg,
                   truth[k].xn, truth[k].yn, fit[s].flux, fit[s].flux_err, truth[k].flux,
                   fit[s].status, fit[s].chi2_ps - fit[s].chi2_dip);
            CHECK(fit[s].status == TIDE_DIPOLE_CONVERGED);
            CHECK(hypot(fit[s].xpos - truth[k].x, fit[s].ypos - truth[k].y) < 0.1);
            CHECK(hypot(fit[s].xneg - truth[k].xn, fit[s].yneg - truth[k].yn) < 0.1);
            CHECK(fabs(fit[s].flux - truth[k].flux) < 4 * fit[s].flux_err + 0.02 * truth[k].flux);
            CHECK(fit[s].chi2_ps - fit[s].chi2_dip > 100.0);
        }
    CHECK(nfit == 3);

    /* The pipeline path: fit every candidate, columns added to the table (1-based). */
    CHECK_OK(tide_diff_fit_candidates(ctx, &d, 21, NULL, NULL, &t));
    const double *DX = tide_table_f64(&t, "DIP_XPOS"), *DY = tide_table_f64(&t, "DIP_YPOS");
    const double *DC = tide_table_f64(&t, "DELTA_CHI2");
    const int32_t *FS = tide_table_i32(&t, "FIT_STATUS");
    CHECK(DX && DY && DC && FS);
    for (int64_t i = 0; DX && DY && DC && FS && i < t.nrows; i++) {
        if (K[i] == TIDE_CAND_DIPOLE) {
            CHECK(FS[i] == TIDE_DIPOLE_CONVERGED);
            CHECK(hypot(DX[i] - 1.0 - XP[i], DY[i] - 1.0 - YP[i]) < 0.3);
            CHECK(DC[i] > 100.0);
        } else {
            CHECK(DC[i] < 25.0); /* single sources: the point source fits as well */
        }
    }

    /* PSF dipoles with the local PSF of a model (a one-basis, constant model here: a
     * pixel-integrated Gaussian of the sources' FWHM). */
    tide_psf_model m;
    memset(&m, 0, sizeof m);
    float basis[25 * 25];
    double coef[1] = {1.0};
    tide_image g = {0};
    tide_image_alloc(NULL, &g, 25, 25, TIDE_HOST, 0);
    synth_star(&g, 12.0, 12.0, 1.0, FWHM);
    memcpy(basis, g.pix, sizeof basis);
    tide_image_free(NULL, &g);
    m.width = W;
    m.height = H;
    m.stamp = 25;
    m.nbasis = 1;
    m.degree = 0;
    m.ncoef = 1;
    m.basis = basis;
    m.coef = coef;
    tide_dipole_params pp;
    tide_dipole_params_default(&pp);
    pp.model = TIDE_DIPOLE_PSF;
    tide_table t3;
    tide_table_init(&t3);
    CHECK_OK(tide_diff_candidates(ctx, &d, &cp, &t3));
    CHECK_OK(tide_diff_fit_candidates(ctx, &d, 21, &m, &pp, &t3));
    const int32_t *K3 = tide_table_i32(&t3, "KIND"), *FS3 = tide_table_i32(&t3, "FIT_STATUS");
    const double *PX = tide_table_f64(&t3, "DIP_XPOS"), *PY = tide_table_f64(&t3, "DIP_YPOS");
    const double *NX = tide_table_f64(&t3, "DIP_XNEG"), *NY = tide_table_f64(&t3, "DIP_YNEG");
    const double *PF = tide_table_f64(&t3, "DIP_FLUX");
    int npsf = 0;
    for (int64_t i = 0; K3 && FS3 && PX && PY && NX && NY && PF && i < t3.nrows; i++) {
        if (K3[i] != TIDE_CAND_DIPOLE)
            continue;
        for (int k = 0; k < NT; k++) {
            if (isnan(truth[k].xn) || hypot(PX[i] - 1 - truth[k].x, PY[i] - 1 - truth[k].y) > 1)
                continue;
            npsf++;
            printf("psf dipole: pos (%.3f, %.3f) neg (%.3f, %.3f) flux %.1f status %d\n", PX[i] - 1,
                   PY[i] - 1, NX[i] - 1, NY[i] - 1, PF[i], FS3[i]);
            CHECK(FS3[i] == TIDE_DIPOLE_CONVERGED);
            CHECK(hypot(PX[i] - 1 - truth[k].x, PY[i] - 1 - truth[k].y) < 0.1);
            CHECK(hypot(NX[i] - 1 - truth[k].xn, NY[i] - 1 - truth[k].yn) < 0.1);
            CHECK(fabs(PF[i] - truth[k].flux) < 0.03 * truth[k].flux);
        }
    }
    CHECK(npsf == 3);
    tide_table_free(&t3);

    /* Stamps at the frame edge: outside pixels are NaN and NODATA. */
    double ex = 2.2, ey = 250.0;
    CHECK_OK(tide_diff_cut_stamps(ctx, &d, 1, &ex, &ey, side, sp, sv, sm, NULL, NULL));
    CHECK(isnan(sp[0]) && sm[0] == TIDE_MASK_NODATA && isnan(sv[0]));
    CHECK(sp[10 * side + 10] == d.pix[250 * W + 2] && sm[10 * side + 10] == 0);
    CHECK(tide_diff_cut_stamps(ctx, &d, 1, &ex, &ey, 20, sp, sv, sm, NULL, NULL) == TIDE_E_INVAL);
    /* No variance: an error. */
    float *keep = d.var;
    d.var = NULL;
    tide_table t2;
    tide_table_init(&t2);
    CHECK(tide_diff_candidates(ctx, &d, &cp, &t2) == TIDE_E_INVAL);
    d.var = keep;
    tide_table_free(&t2);

    free(sp);
    free(sv);
    free(sm);
    free(fx0);
    free(fy0);
    tide_table_free(&t);
    tide_image_free(NULL, &d);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
