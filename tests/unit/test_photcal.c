/* test_photcal.c — zero-point fit, colour term, slope check, cuts, magnitudes and limiting
 * magnitudes on synthetic calibration stars with known truth (deterministic random numbers).
 * The truth test on a simulated frame is test_photcal_sim.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "tide/photcal.h"
#include "tide/status.h"
#include "tide_test.h"

#define ZP_TRUE 25.0
#define C_TRUE 0.1

/* splitmix64 → uniform (0, 1) and Gaussian (Box–Muller) */
static uint64_t rng_state = 12345;
static double unif(void) {
    return trng_open(trng_splitmix64(&rng_state));
}
static double gauss(void) {
    return sqrt(-2.0 * log(unif())) * cos(6.283185307179586 * unif());
}

enum { N = 600 };
typedef struct {
    double flux[N], ferr[N], mag[N], merr[N], col[N], x[N], y[N];
    int32_t flags[N];
    int outlier[N];
} stars;

/* Stars of reference magnitude 12..19 with colours -0.5..1.5, observed through
 * MAG_frame = MAG_ref + C_TRUE COLOR and MAG_frame = ZP_TRUE - 2.5 log10 FLUX, with sky-and-
 * Poisson flux errors, reference errors 0.01, and bad ones: 5 % outliers (+-0.3..1 mag),
 * 20 flagged saturated (4) that read 0.5 mag faint, 20 at the edge that read 0.4 mag faint. */
static void make_stars(stars *s, double nonlin) {
    rng_state = 12345;
    for (int i = 0; i < N; i++) {
        const double mref = 12.0 + 7.0 * unif(), col = -0.5 + 2.0 * unif();
        const double mtrue = mref + C_TRUE * col;
        double F = pow(10.0, -0.4 * (mtrue - ZP_TRUE));
        F = pow(F, nonlin);
        const double E = sqrt(F + 4.0e4);
        s->flux[i] = F + E * gauss();
        s->ferr[i] = E;
        s->merr[i] = 0.01;
        s->mag[i] = mref + 0.01 * gauss();
        s->col[i] = col;
        s->x[i] = 50 + 1900 * unif();
        s->y[i] = 50 + 1900 * unif();
        s->flags[i] = (i % 7 == 0) ? 1 : 0; /* neighbours: allowed by default */
        s->outlier[i] = 0;
        if (i % 20 == 3) {
            s->mag[i] += (unif() < 0.5 ? -1 : 1) * (0.3 + 0.7 * unif());
            s->outlier[i] = 1;
        }
        if (i % 30 == 5) {
            s->flags[i] = 4;
            s->flux[i] *= pow(10, -0.2);
            s->outlier[i] = 2;
        }
        if (i % 30 == 11) {
            s->x[i] = 5;
            s->flux[i] *= pow(10, -0.16);
            s->outlier[i] = 3;
        }
    }
}

static tide_photcal_input input_of(const stars *s) {
    tide_photcal_input in = {N,    s->flux, s->ferr,  s->mag, s->merr, s->col,
                             s->x, s->y,    s->flags, 2000,   2000};
    return in;
}

static void test_zero_point(void) {
    static stars s;
    make_stars(&s, 1.0);
    tide_photcal_input in = input_of(&s);
    tide_photcal_params p = tide_photcal_defaults();
    p.color_term = C_TRUE;
    tide_photcal_result r;
    static uint8_t used[N];
    CHECK_OK(tide_photcal_fit(&in, &p, &r, used));
    printf("given c: ZP %.5f +- %.5f (error %+.5f), scatter %.4f, chi2/nu %.2f, %lld/%lld/%lld, "
           "slope %.4f\n",
           r.zp, r.ezp, r.zp - ZP_TRUE, r.scatter, r.chi2nu, (long long)r.nstars,
           (long long)r.ncand, (long long)r.nmatched, r.slope);
    CHECK(fabs(r.zp - ZP_TRUE) <= 4 * r.ezp);
    CHECK(r.ezp > 0.0003 && r.ezp < 0.002);
    CHECK(r.chi2nu > 0.7 && r.chi2nu < 1.4);
    CHECK(!r.slope_bad && fabs(r.slope - 1) < 0.01);
    CHECK(r.nmatched == N);
    int bad_used = 0, good_dropped = 0;
    for (int i = 0; i < N; i++) {
        bad_used += s.outlier[i] && used[i];
        good_dropped += !s.outlier[i] && !used[i] && s.flux[i] / s.ferr[i] >= 20 &&
                        s.flux[i] / s.ferr[i] <= 1000;
    }
    printf("outliers used %d, good stars in the S/N range dropped %d\n", bad_used, good_dropped);
    CHECK(bad_used == 0);
    CHECK(good_dropped <= 6); /* 3-sigma clipping drops ~0.3 % of good stars (and a few more) */

    /* The same stars, weights off: still unbiased, larger error. */
    tide_photcal_params q = p;
    q.weighted = 0;
    tide_photcal_result r2;
    CHECK_OK(tide_photcal_fit(&in, &q, &r2, NULL));
    CHECK(fabs(r2.zp - ZP_TRUE) <= 4 * r2.ezp && r2.ezp >= r.ezp);

    /* Colour term fitted. */
    q = p;
    q.color_mode = TIDE_PHOTCAL_COLOR_FIT;
    q.color_term = 0;
    CHECK_OK(tide_photcal_fit(&in, &q, &r2, NULL));
    printf("fitted c: %.4f +- %.4f, ZP %.5f +- %.5f\n", r2.color_term, r2.ecolor_term, r2.zp,
           r2.ezp);
    CHECK(r2.color_fitted);
    CHECK(fabs(r2.color_term - C_TRUE) <= 4 * r2.ecolor_term && r2.ecolor_term < 0.01);
    CHECK(fabs(r2.zp - ZP_TRUE) <= 4 * r2.ezp);

    /* No colour term: ZP absorbs -c·<COLOR> (MAG_ref - m_inst = ZP - c COLOR) and the
     * scatter grows. */
    q = p;
    q.color_term = 0;
    CHECK_OK(tide_photcal_fit(&in, &q, &r2, NULL));
    CHECK_CLOSE(r2.zp, ZP_TRUE - C_TRUE * 0.5, 0.01);
    CHECK(r2.scatter > r.scatter);

    /* Colour cut: only blue stars. */
    q = p;
    q.color_max = 0.0;
    CHECK_OK(tide_photcal_fit(&in, &q, &r2, NULL));
    CHECK(r2.ncand < r.ncand / 3 && fabs(r2.zp - ZP_TRUE) <= 4 * r2.ezp);

    /* Without the flag and edge cuts the bad stars come in (or are clipped: the result moves
     * toward faint but must stay within the clipping's reach). */
    q = p;
    q.flags_reject = 0;
    q.edge_margin = 0;
    CHECK_OK(tide_photcal_fit(&in, &q, &r2, NULL));
    CHECK(r2.ncand > r.ncand);
}

static void test_slope_and_errors(void) {
    static stars s;
    make_stars(&s, 1.06); /* a non-linear detector */
    tide_photcal_input in = input_of(&s);
    tide_photcal_params p = tide_photcal_defaults();
    p.color_term = C_TRUE;
    tide_photcal_result r;
    CHECK_OK(tide_photcal_fit(&in, &p, &r, NULL));
    printf("non-linear (F^1.06): slope %.4f, flagged %d\n", r.slope, r.slope_bad);
    CHECK(r.slope_bad);
    CHECK_CLOSE(r.slope, 1.0 / 1.06, 0.01);

    /* too few stars */
    make_stars(&s, 1.0);
    in = input_of(&s);
    in.n = 6;
    CHECK(tide_photcal_fit(&in, &p, &r, NULL) == TIDE_E_EMPTY);
    CHECK(strstr(tide_error_detail(), "calibration stars") != NULL);
    /* nothing matched */
    static double nanmag[N];
    for (int i = 0; i < N; i++)
        nanmag[i] = NAN;
    in = input_of(&s);
    in.ref_mag = nanmag;
    CHECK(tide_photcal_fit(&in, &p, &r, NULL) == TIDE_E_EMPTY);
    CHECK(r.nmatched == 0 && isnan(r.zp));
    /* bad arguments */
    in = input_of(&s);
    in.flux = NULL;
    CHECK(tide_photcal_fit(&in, &p, &r, NULL) == TIDE_E_INVAL);
    in = input_of(&s);
    p.clip_sigma = 0;
    CHECK(tide_photcal_fit(&in, &p, &r, NULL) == TIDE_E_INVAL);
    /* the colour term cannot be fitted when all stars have one colour */
    static double one_col[N];
    for (int i = 0; i < N; i++)
        one_col[i] = 0.7;
    p = tide_photcal_defaults();
    p.color_mode = TIDE_PHOTCAL_COLOR_FIT;
    in.ref_color = one_col;
    CHECK(tide_photcal_fit(&in, &p, &r, NULL) == TIDE_E_EMPTY);
}

static void test_apply(void) {
    tide_table t;
    tide_table_init(&t);
    int ia;
    CHECK_OK(tide_table_add_column(&t, "FLUX_APER", TIDE_COL_F64, 3, "count", NULL, &ia));
    CHECK_OK(tide_table_add_column(&t, "FLUXERR_APER", TIDE_COL_F64, 3, "count", NULL, NULL));
    CHECK_OK(tide_table_add_column(&t, "FLUX_AUTO", TIDE_COL_F64, 1, "count", NULL, NULL));
    CHECK_OK(tide_table_add_column(&t, "FLUXERR_AUTO", TIDE_COL_F64, 1, "count", NULL, NULL));
    CHECK_OK(tide_table_add_column(&t, "MAG_AUTO", TIDE_COL_F32, 1, "mag", NULL, NULL));
    CHECK_OK(tide_table_add_column(&t, "MAGERR_AUTO", TIDE_COL_F32, 1, "mag", NULL, NULL));
    CHECK_OK(tide_table_add_column(&t, "FLUX_MAX", TIDE_COL_F32, 1, "count", NULL, NULL));
    CHECK_OK(tide_table_resize(&t, 3));
    double *fa = tide_table_f64(&t, "FLUX_APER"), *fae = tide_table_f64(&t, "FLUXERR_APER");
    double *fu = tide_table_f64(&t, "FLUX_AUTO"), *fue = tide_table_f64(&t, "FLUXERR_AUTO");
    const double F[3] = {1000.0, -5.0, NAN};
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 3; k++)
            fa[i * 3 + k] = F[i] * (k + 1), fae[i * 3 + k] = 10.0;
        fu[i] = F[i], fue[i] = 20.0;
    }
    const int ncols = t.ncols;
    CHECK_OK(tide_photcal_apply(&t, 25.0));
    CHECK(t.ncols == ncols + 2); /* MAG_APER, MAGERR_APER; MAG_AUTO reused; no MAG_MAX */
    CHECK(!tide_table_column(&t, "MAG_MAX"));
    const tide_column *ma = tide_table_column(&t, "MAG_APER");
    CHECK(ma && ma->repeat == 3 && ma->type == TIDE_COL_F32);
    const float *mag = tide_table_f32(&t, "MAG_APER"), *mage = tide_table_f32(&t, "MAGERR_APER");
    const float *mau = tide_table_f32(&t, "MAG_AUTO"), *maue = tide_table_f32(&t, "MAGERR_AUTO");
    CHECK_CLOSE(mag[0], 25.0 - 7.5, 1e-5);
    CHECK_CLOSE(mag[2], 25.0 - 2.5 * log10(3000.0), 1e-5);
    CHECK_CLOSE(mage[1], 1.0857362 * 10.0 / 2000.0, 1e-7);
    CHECK_CLOSE(mau[0], 17.5, 1e-5);
    CHECK_CLOSE(maue[0], 1.0857362 * 0.02, 1e-7);
    CHECK(mau[1] == 99.0f && maue[1] == 99.0f && mag[3] == 99.0f && mau[2] == 99.0f);
    CHECK(strstr(tide_table_column(&t, "MAG_AUTO")->comment, "ZP") != NULL);
    /* applying again with another ZP moves every magnitude by the difference */
    CHECK_OK(tide_photcal_apply(&t, 26.0));
    CHECK(t.ncols == ncols + 2);
    CHECK_CLOSE(tide_table_f32(&t, "MAG_AUTO")[0], 18.5, 1e-5);
    CHECK(tide_photcal_apply(&t, NAN) == TIDE_E_INVAL);
    tide_table_free(&t);
}

static void test_limits(void) {
    enum { M = 500 };
    static double mag[M], snr[M];
    /* sky-limited: S/N = F / 30 with F = 10^(-0.4 (m - 25)): S/N 5 at m = 25 - 2.5 log10 150 */
    for (int i = 0; i < M; i++) {
        mag[i] = 15.0 + 10.0 * i / M;
        snr[i] = pow(10.0, -0.4 * (mag[i] - 25.0)) / 30.0;
    }
    tide_photcal_limits lim;
    CHECK_OK(tide_photcal_limits_fit(mag, snr, M, 3, 30, &lim));
    CHECK_CLOSE(lim.mag5, 25.0 - 2.5 * log10(150.0), 1e-9);
    CHECK_CLOSE(lim.mag3, 25.0 - 2.5 * log10(90.0), 1e-9);
    CHECK_CLOSE(lim.slope, -0.4, 1e-12);
    /* with the source's Poisson term and noise in S/N: within 0.05 mag of the exact root */
    rng_state = 99;
    for (int i = 0; i < M; i++) {
        const double f = pow(10.0, -0.4 * (mag[i] - 25.0));
        snr[i] = f / sqrt(900.0 + f) * (1 + 0.05 * gauss());
    }
    CHECK_OK(tide_photcal_limits_fit(mag, snr, M, 3, 30, &lim));
    /* f / sqrt(900 + f) = 5: f = (25 + sqrt(625 + 4·25·900)) / 2 */
    const double f5 = 0.5 * (25.0 + sqrt(625.0 + 100.0 * 900.0));
    printf("limits: 5 sigma %.4f (exact %.4f)\n", lim.mag5, 25.0 - 2.5 * log10(f5));
    CHECK_CLOSE(lim.mag5, 25.0 - 2.5 * log10(f5), 0.05);
    /* too few faint sources; S/N not falling */
    CHECK(tide_photcal_limits_fit(mag, snr, 5, 3, 30, &lim) == TIDE_E_EMPTY);
    for (int i = 0; i < M; i++)
        snr[i] = 10.0;
    CHECK(tide_photcal_limits_fit(mag, snr, M, 3, 30, &lim) == TIDE_E_EMPTY);
    CHECK(tide_photcal_limits_fit(mag, snr, M, 30, 3, &lim) == TIDE_E_INVAL);

    /* header cards */
    tide_photcal_result r;
    memset(&r, 0, sizeof r);
    r.zp = 26.5, r.ezp = 0.001, r.scatter = 0.02, r.nstars = 321, r.slope = NAN;
    tide_photcal_limits l = {20.1, 20.7, -0.4, 1.0, 100};
    tide_header h;
    tide_header_init(&h);
    CHECK_OK(tide_photcal_to_header(&r, &l, "refcat.fits", "r", &h));
    double v;
    int64_t iv;
    char sv[72];
    CHECK_OK(tide_header_get_dbl(&h, "ZP", &v));
    CHECK_CLOSE(v, 26.5, 1e-12);
    CHECK_OK(tide_header_get_int(&h, "CATNSTAR", &iv));
    CHECK(iv == 321);
    CHECK_OK(tide_header_get_dbl(&h, "MAGLIM5", &v));
    CHECK_CLOSE(v, 20.1, 1e-12);
    CHECK(tide_header_find(&h, "ZPSLOPE") < 0); /* NaN is not written */
    CHECK_OK(tide_header_get_str(&h, "REFBAND", sv, sizeof sv));
    CHECK(!strcmp(sv, "r"));
    tide_header_free(&h);
}

int main(void) {
    test_zero_point();
    test_slope_and_errors();
    test_apply();
    test_limits();
    return TIDE_TEST_RESULT();
}
