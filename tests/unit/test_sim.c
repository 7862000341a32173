/* test_sim.c — the simulator: determinism (seed, thread count), flux conservation of the
 * rendered PSF, positions, WCS truth against wcslib, noise statistics, bleeding, epoch 2 and
 * the reference catalog. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/rng.h"
#include "tide/tide.h"
#include "tide_test.h"

static void small_params(tide_sim_params *p) {
    tide_sim_params_default(p);
    p->width = 517;
    p->height = 403;
    p->nstars = 300;
    p->ngalaxies = 8;
    p->seed = 42;
}

/* Same seed, 1 vs 2 threads → identical pixels and truth; another seed → different. */
static void test_determinism(void) {
    tide_sim_params p;
    small_params(&p);
    p.with_mask = 1;
    tide_ctx *c1 = tide_test_ctx(TIDE_BACKEND_CPU, 1), *c2 = tide_test_ctx(TIDE_BACKEND_CPU, 2);
    tide_sim_frame a, b, c;
    CHECK_OK(tide_sim_run(c1, &p, &a, NULL));
    CHECK_OK(tide_sim_run(c2, &p, &b, NULL));
    size_t n = (size_t)(p.width * p.height);
    CHECK(memcmp(a.image.pix, b.image.pix, n * sizeof(float)) == 0);
    CHECK(memcmp(a.image.mask, b.image.mask, n * sizeof(uint16_t)) == 0);
    CHECK(a.truth.nrows == b.truth.nrows && a.truth.nrows > 250);
    CHECK(memcmp(tide_table_f64(&a.truth, "X_TRUE"), tide_table_f64(&b.truth, "X_TRUE"),
                 (size_t)a.truth.nrows * 8) == 0);
    CHECK(a.header.ncards == b.header.ncards);
    for (int i = 0; i < a.header.ncards && i < b.header.ncards; i++)
        CHECK(strcmp(a.header.cards[i], b.header.cards[i]) == 0);
    p.seed = 43;
    CHECK_OK(tide_sim_run(c1, &p, &c, NULL));
    CHECK(memcmp(a.image.pix, c.image.pix, n * sizeof(float)) != 0);
    tide_sim_frame_free(c1, &a);
    tide_sim_frame_free(c2, &b);
    tide_sim_frame_free(c1, &c);
    tide_ctx_destroy(c1);
    tide_ctx_destroy(c2);
}

/* Noiseless, sky 0, bias 0: an isolated star's pixels sum to FLUX (1 %), its centroid is at
 * X_TRUE, Y_TRUE (FITS 1-based). */
static void test_flux_and_position(void) {
    tide_sim_params p;
    tide_sim_params_default(&p);
    p.width = 1100;
    p.height = 1000;
    p.nstars = 40;
    p.ngalaxies = 0;
    p.noise = 0;
    p.defects = 0;
    p.sky = 0;
    p.bias = 0;
    p.mag_bright = 13;
    p.mag_faint = 19;
    p.e2_nmoving = p.e2_nvariable = p.e2_ntransient = 0;
    p.seed = 7;
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    tide_sim_frame f;
    CHECK_OK(tide_sim_run(ctx, &p, &f, NULL));
    const int64_t n = f.truth.nrows;
    const double *X = tide_table_f64(&f.truth, "X_TRUE"), *Y = tide_table_f64(&f.truth, "Y_TRUE");
    const double *F = tide_table_f64(&f.truth, "FLUX");
    const int16_t *sat = tide_table_column(&f.truth, "SATURATED")->data;
    int tested = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = X[i] - 1, y = Y[i] - 1, R = 40;
        if (sat[i] || x < R + 5 || y < R + 5 || x > p.width - R - 6 || y > p.height - R - 6)
            continue;
        int alone = 1;
        for (int64_t k = 0; k < n; k++)
            if (k != i && hypot(X[k] - X[i], Y[k] - Y[i]) < 2 * R)
                alone = 0;
        if (!alone)
            continue;
        double s = 0, sx = 0, sy = 0;
        for (int64_t j = (int64_t)(y - R); j <= (int64_t)(y + R); j++)
            for (int64_t k = (int64_t)(x - R); k <= (int64_t)(x + R); k++) {
                double v = f.image.pix[j * p.width + k];
                s += v;
                sx += v * k;
                sy += v * j;
            }
        CHECK(fabs(s / F[i] - 1) < 0.01);
        CHECK_CLOSE(sx / s, x, 0.02);
        CHECK_CLOSE(sy / s, y, 0.02);
        tested++;
    }
    printf("flux/position: %d isolated stars tested\n", tested);
    CHECK(tested >= 5);
    tide_sim_frame_free(ctx, &f);
    tide_ctx_destroy(ctx);
}

/* Noiseless galaxies: each stamp sums to FLUX (the stamp is normalised after convolution). */
static void test_galaxy_flux(void) {
    tide_sim_params p;
    tide_sim_params_default(&p);
    p.width = 1200;
    p.height = 1100;
    p.nstars = 0;
    p.ngalaxies = 6;
    p.noise = 0;
    p.defects = 0;
    p.sky = 0;
    p.bias = 0;
    p.e2_nmoving = p.e2_nvariable = p.e2_ntransient = 0;
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    tide_sim_frame f;
    CHECK_OK(tide_sim_run(ctx, &p, &f, NULL));
    const double *X = tide_table_f64(&f.truth, "X_TRUE"), *Y = tide_table_f64(&f.truth, "Y_TRUE");
    const double *F = tide_table_f64(&f.truth, "FLUX");
    const float *re = tide_table_f32(&f.truth, "RE");
    int tested = 0;
    for (int64_t i = 0; i < f.truth.nrows; i++) {
        const double R = 60, x = X[i] - 1, y = Y[i] - 1;
        CHECK(re[i] > 0);
        if (x < R || y < R || x > p.width - R - 1 || y > p.height - R - 1)
            continue;
        int alone = 1;
        for (int64_t k = 0; k < f.truth.nrows; k++)
            if (k != i && hypot(X[k] - X[i], Y[k] - Y[i]) < 2 * R)
                alone = 0;
        if (!alone)
            continue;
        double s = 0;
        for (int64_t j = (int64_t)(y - R); j <= (int64_t)(y + R); j++)
            for (int64_t k = (int64_t)(x - R); k <= (int64_t)(x + R); k++)
                s += f.image.pix[j * p.width + k];
        CHECK(fabs(s / F[i] - 1) < 0.001);
        tested++;
    }
    printf("galaxy flux: %d tested\n", tested);
    CHECK(tested >= 2);
    tide_sim_frame_free(ctx, &f);
    tide_ctx_destroy(ctx);
}

/* Truth RA/Dec = the truth WCS at X_TRUE; wcslib (tide_wcs) built from the header agrees to
 * 1e-4 arcsec; the inverse round-trips. */
static void test_wcs(void) {
    tide_sim_params p;
    small_params(&p);
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    tide_sim_sky *sky = NULL;
    tide_sim_frame f;
    CHECK_OK(tide_sim_sky_make(ctx, &p, &sky));
    CHECK_OK(tide_sim_epoch(ctx, sky, 1, &f));
    const int64_t n = f.truth.nrows;
    const double *X = tide_table_f64(&f.truth, "X_TRUE"), *Y = tide_table_f64(&f.truth, "Y_TRUE");
    const double *RA = tide_table_f64(&f.truth, "RA"), *DE = tide_table_f64(&f.truth, "DEC");
    double *x0 = malloc(n * 8), *y0 = malloc(n * 8), *ra = malloc(n * 8), *de = malloc(n * 8);
    double *xb = malloc(n * 8), *yb = malloc(n * 8);
    for (int64_t i = 0; i < n; i++) {
        x0[i] = X[i] - 1;
        y0[i] = Y[i] - 1;
    }
    CHECK_OK(tide_sim_pix2sky(sky, 1, n, x0, y0, ra, de));
    CHECK_OK(tide_sim_sky2pix(sky, 1, n, ra, de, xb, yb));
    double emax = 0, pmax = 0;
    for (int64_t i = 0; i < n; i++) {
        emax = fmax(emax, fabs(ra[i] - RA[i]) + fabs(de[i] - DE[i]));
        pmax = fmax(pmax, fabs(xb[i] - x0[i]) + fabs(yb[i] - y0[i]));
    }
    CHECK(emax < 1e-12);
    CHECK(pmax < 1e-8);
    tide_wcs *w = NULL;
    CHECK_OK(tide_wcs_from_header(&f.header, "sim", &w));
    if (w) {
        CHECK_OK(tide_wcs_pix2sky(w, n, x0, y0, ra, de));
        double amax = 0;
        for (int64_t i = 0; i < n; i++)
            amax = fmax(
                amax, hypot((ra[i] - RA[i]) * cos(DE[i] * 3.14159265358979 / 180), de[i] - DE[i]));
        printf("wcs: wcslib vs truth max %.3g arcsec\n", amax * 3600);
        CHECK(amax * 3600 < 1e-4);
        tide_wcs_free(w);
    }
    double inv;
    CHECK_OK(tide_header_get_dbl(&f.header, "SIPINVRS", &inv));
    CHECK(inv < 0.01);
    free(x0), free(y0), free(ra), free(de), free(xb), free(yb);
    tide_sim_frame_free(ctx, &f);
    tide_sim_sky_free(sky);
    tide_ctx_destroy(ctx);
}

/* An empty frame: mean = bias + sky, variance = sky/gain + (rn/gain)² + 1/12 (rounding). */
static void test_noise(void) {
    tide_sim_params p;
    tide_sim_params_default(&p);
    p.width = 600;
    p.height = 500;
    p.nstars = 0;
    p.ngalaxies = 0;
    p.defects = 0;
    p.sky_grad = p.sky_quad = 0;
    p.sky = 700;
    p.gain = 2.0;
    p.rdnoise = 6;
    p.e2_nmoving = p.e2_nvariable = p.e2_ntransient = 0;
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    tide_sim_frame f;
    CHECK_OK(tide_sim_run(ctx, &p, &f, NULL));
    double s = 0, s2 = 0, n = (double)(p.width * p.height);
    for (int64_t i = 0; i < p.width * p.height; i++)
        s += f.image.pix[i];
    double m = s / n;
    for (int64_t i = 0; i < p.width * p.height; i++)
        s2 += (f.image.pix[i] - m) * (f.image.pix[i] - m);
    double var = s2 / n, want = p.sky / p.gain + pow(p.rdnoise / p.gain, 2) + 1.0 / 12;
    printf("noise: mean %.3f (want %.1f), var %.3f (want %.3f)\n", m, p.bias + p.sky, var, want);
    CHECK_CLOSE(m, p.bias + p.sky, 0.1);
    CHECK(fabs(var / want - 1) < 0.02);
    tide_sim_frame_free(ctx, &f);
    tide_ctx_destroy(ctx);
}

/* Poisson sampler moments at small and large means. */
static void test_poisson(void) {
    const double lams[] = {0.5, 3, 11.9, 12.1, 30, 3000};
    for (int k = 0; k < 6; k++) {
        double s = 0, s2 = 0;
        const int n = 200000;
        for (int i = 0; i < n; i++) {
            sim_rng r = sim_rng_make(9, 99, (uint64_t)i);
            double v = sim_rng_poisson(&r, lams[k]);
            s += v;
            s2 += v * v;
        }
        double m = s / n, var = s2 / n - m * m, l = lams[k];
        CHECK(fabs(m - l) < 5 * sqrt(l / n));
        CHECK(fabs(var / l - 1) < 0.03);
    }
}

/* A very bright star bleeds; the charge is conserved (frame tall enough) and it is flagged. */
static void test_bleed(void) {
    tide_sim_params p;
    tide_sim_params_default(&p);
    p.width = 300;
    p.height = 900;
    p.nstars = 1;
    p.mag_bright = 8.0;
    p.mag_faint = 8.001;
    p.ngalaxies = 0;
    p.noise = 0;
    p.defects = 0;
    p.sky = 0;
    p.bias = 0;
    p.with_mask = 1;
    p.e2_nmoving = p.e2_nvariable = p.e2_ntransient = 0;
    p.e2_dra = p.e2_ddec = 0;
    p.e2_rotation = 0;
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    tide_sim_frame f;
    /* A seed that puts the star well inside, so the trail stays on the frame. (The margin of
     * a 1-star frame holds no stars.) */
    for (p.seed = 1; p.seed < 50; p.seed++) {
        CHECK_OK(tide_sim_run(ctx, &p, &f, NULL));
        const double *yy = tide_table_f64(&f.truth, "Y_TRUE");
        if (f.truth.nrows == 1 && yy[0] > 300 && yy[0] < 600)
            break;
        tide_sim_frame_free(ctx, &f);
    }
    double s = 0;
    int64_t nbleed = 0;
    for (int64_t i = 0; i < p.width * p.height; i++) {
        s += f.image.pix[i];
        nbleed += (f.image.mask[i] & TIDE_MASK_BLEED) != 0;
    }
    const double *F = tide_table_f64(&f.truth, "FLUX");
    const double *Y = tide_table_f64(&f.truth, "Y_TRUE");
    const int16_t *sat = tide_table_column(&f.truth, "SATURATED")->data;
    CHECK(f.truth.nrows == 1);
    if (f.truth.nrows == 1) {
        printf("bleed: %lld bleed pixels, sum/flux %.4f, star at y %.1f\n", (long long)nbleed,
               s / F[0], Y[0]);
        CHECK(sat[0] == 1);
        CHECK(nbleed > 20);
        CHECK(Y[0] > 300 && Y[0] < 600);
        CHECK(fabs(s / F[0] - 1) < 0.01);
    }
    tide_sim_frame_free(ctx, &f);
    tide_ctx_destroy(ctx);
}

/* Epoch 2: same stars at the same RA/Dec and new pixel positions; the transient appears,
 * the moving object moves, the variable changes; reference catalog follows the colour term. */
static void test_epoch2_and_refcat(void) {
    tide_sim_params p;
    small_params(&p);
    p.width = 800;
    p.height = 700;
    p.e2_ntransient = 2;
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    tide_sim_sky *sky = NULL;
    tide_sim_frame f1, f2;
    tide_table ref;
    CHECK_OK(tide_sim_sky_make(ctx, &p, &sky));
    CHECK_OK(tide_sim_epoch(ctx, sky, 1, &f1));
    CHECK_OK(tide_sim_epoch(ctx, sky, 2, &f2));
    CHECK_OK(tide_sim_refcat(sky, &ref));
    const int16_t *t1 = tide_table_column(&f1.truth, "TYPE_ID")->data;
    const int16_t *t2 = tide_table_column(&f2.truth, "TYPE_ID")->data;
    const int64_t *id1 = tide_table_i64(&f1.truth, "ID"), *id2 = tide_table_i64(&f2.truth, "ID");
    const double *ra1 = tide_table_f64(&f1.truth, "RA"), *ra2 = tide_table_f64(&f2.truth, "RA");
    const double *m1 = tide_table_f64(&f1.truth, "MAG"), *m2 = tide_table_f64(&f2.truth, "MAG");
    const double *x2 = tide_table_f64(&f2.truth, "X_TRUE"),
                 *y2 = tide_table_f64(&f2.truth, "Y_TRUE");
    const double *de2 = tide_table_f64(&f2.truth, "DEC");
    int ntr1 = 0, ntr2 = 0, nmov = 0, nvar = 0, same = 0;
    for (int64_t i = 0; i < f1.truth.nrows; i++)
        ntr1 += t1[i] == TIDE_SIM_TRANSIENT;
    for (int64_t j = 0; j < f2.truth.nrows; j++) {
        ntr2 += t2[j] == TIDE_SIM_TRANSIENT;
        double xx, yy;
        tide_sim_sky2pix(sky, 2, 1, &ra2[j], &de2[j], &xx, &yy);
        CHECK(fabs(xx + 1 - x2[j]) < 1e-8 && fabs(yy + 1 - y2[j]) < 1e-8);
        for (int64_t i = 0; i < f1.truth.nrows; i++)
            if (id1[i] == id2[j]) {
                if (t2[j] == TIDE_SIM_MOVING)
                    nmov += fabs(ra1[i] - ra2[j]) > 1e-4;
                else if (t2[j] == TIDE_SIM_VARIABLE)
                    nvar += fabs(m1[i] - m2[j]) > 0.29;
                else
                    same += ra1[i] == ra2[j] && m1[i] == m2[j];
            }
    }
    printf("epoch2: %lld / %lld rows, %d common unchanged, transients %d→%d, moving %d, var %d\n",
           (long long)f1.truth.nrows, (long long)f2.truth.nrows, same, ntr1, ntr2, nmov, nvar);
    CHECK(ntr1 == 0 && ntr2 == 2);
    CHECK(nmov == 1 && nvar == 1);
    CHECK(same > 200);
    double trans1, trans2, fw1, fw2;
    CHECK_OK(tide_header_get_dbl(&f1.header, "SIMTRANS", &trans1));
    CHECK_OK(tide_header_get_dbl(&f2.header, "SIMTRANS", &trans2));
    CHECK_OK(tide_header_get_dbl(&f1.header, "SIMFWHM", &fw1));
    CHECK_OK(tide_header_get_dbl(&f2.header, "SIMFWHM", &fw2));
    CHECK(trans1 == 1.0 && fabs(trans2 - p.e2_transparency) < 1e-12);
    CHECK(fabs(fw2 / fw1 - p.e2_fwhm_scale) < 1e-9);
    /* Reference catalog: MAG + c·COLOR ≈ the truth magnitude within 5 sigma. */
    const int64_t *rid = tide_table_i64(&ref, "ID");
    const double *rm = tide_table_f64(&ref, "MAG"), *re = tide_table_f64(&ref, "MAGERR");
    const double *rc = tide_table_f64(&ref, "COLOR");
    int matched = 0, bad = 0;
    for (int64_t r = 0; r < ref.nrows; r++)
        for (int64_t i = 0; i < f1.truth.nrows; i++)
            if (id1[i] == rid[r]) {
                matched++;
                bad += fabs(rm[r] + p.color_term * rc[r] - m1[i]) > 5 * re[r];
                CHECK(m1[i] <= p.ref_maglim);
            }
    printf("refcat: %lld rows, %d in the frame, %d off by > 5 sigma\n", (long long)ref.nrows,
           matched, bad);
    CHECK(matched > 20 && bad == 0);
    tide_table_free(&ref);
    tide_sim_frame_free(ctx, &f1);
    tide_sim_frame_free(ctx, &f2);
    tide_sim_sky_free(sky);
    tide_ctx_destroy(ctx);
}

static void test_bad_params(void) {
    tide_sim_params p;
    tide_sim_params_default(&p);
    p.beta = 0.9;
    CHECK(tide_sim_params_check(&p) == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "beta") != NULL);
    tide_sim_params_default(&p);
    p.mag_faint = 5;
    CHECK(tide_sim_params_check(&p) == TIDE_E_INVAL);
    tide_sim_params_default(&p);
    p.width = 0;
    tide_sim_frame f;
    CHECK(tide_sim_run(NULL, &p, &f, NULL) == TIDE_E_INVAL);
}

int main(void) {
    test_poisson();
    test_determinism();
    test_flux_and_position();
    test_galaxy_flux();
    test_wcs();
    test_noise();
    test_bleed();
    test_epoch2_and_refcat();
    test_bad_params();
    return TIDE_TEST_RESULT();
}
