/* test_psf.c — the PSF model against the simulator's truth: FWHM at the centre and the four
 * corners within 2 %, centre ellipticity and angle, the model reproducing the stars' pixels,
 * bitwise determinism, the eigen-PSF sign convention, the header summary, and the Gaussian
 * fallback with 3 stars.
 *
 * Candidates are the truth catalog's positions (stars and galaxies, as a detection pass would
 * give them) perturbed by 0.3 px of Gaussian noise; the frame is background-subtracted with
 * the simulator's known flat sky. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sim/sim_internal.h"
#include "tide/tide.h"
#include "tide_test.h"

typedef struct frame {
    tide_sim_sky *sky;
    tide_sim_frame f;
    tide_image sub, rms;
    int64_t n;
    double *x, *y, *flux;
} frame;

static double gauss(uint64_t seed, uint64_t i) {
    sim_rng r = sim_rng_make(seed, 991, i);
    return sim_rng_gauss(&r);
}

/* A simulated frame with a flat sky, background-subtracted, its sky-noise map and the
 * perturbed truth candidates. */
static void make_frame(tide_ctx *ctx, frame *fr, int64_t w, int64_t h, int64_t nstars, int noise,
                       uint64_t seed) {
    memset(fr, 0, sizeof *fr);
    tide_sim_params p;
    tide_sim_params_default(&p);
    p.width = w;
    p.height = h;
    p.nstars = nstars;
    p.ngalaxies = nstars / 20;
    p.sky_grad = 0.0;
    p.sky_quad = 0.0;
    p.noise = noise;
    p.with_mask = 1;
    p.seed = seed;
    CHECK_OK(tide_sim_sky_make(ctx, &p, &fr->sky));
    CHECK_OK(tide_sim_epoch(ctx, fr->sky, 1, &fr->f));
    CHECK_OK(tide_image_alloc(ctx, &fr->sub, w, h, TIDE_HOST, TIDE_IMAGE_MASK));
    CHECK_OK(tide_image_alloc(ctx, &fr->rms, w, h, TIDE_HOST, 0));
    const double sky = p.sky, sig = sqrt(sky * p.gain + p.rdnoise * p.rdnoise) / p.gain;
    for (int64_t k = 0; k < w * h; k++) {
        fr->sub.pix[k] = (float)(fr->f.image.pix[k] - p.bias - sky);
        fr->sub.mask[k] = fr->f.image.mask ? fr->f.image.mask[k] : 0;
        fr->rms.pix[k] = (float)sig;
    }
    const tide_table *t = &fr->f.truth;
    const double *X = tide_table_f64(t, "X_TRUE"), *Y = tide_table_f64(t, "Y_TRUE");
    const double *F = tide_table_f64(t, "FLUX");
    fr->n = t->nrows;
    fr->x = malloc(sizeof(double) * (size_t)fr->n * 3);
    fr->y = fr->x + fr->n;
    fr->flux = fr->y + fr->n;
    for (int64_t i = 0; i < fr->n; i++) {
        fr->x[i] = X[i] - 1.0 + 0.3 * gauss(seed, (uint64_t)i * 2);
        fr->y[i] = Y[i] - 1.0 + 0.3 * gauss(seed, (uint64_t)i * 2 + 1);
        fr->flux[i] = F[i];
    }
}

static void free_frame(tide_ctx *ctx, frame *fr) {
    tide_image_free(ctx, &fr->sub);
    tide_image_free(ctx, &fr->rms);
    tide_sim_frame_free(ctx, &fr->f);
    tide_sim_sky_free(fr->sky);
    free(fr->x);
}

/* Truth PSF at 0-based (x, y). */
static void truth_at(const frame *fr, double x, double y, double *fwhm, double *e, double *th) {
    sim_psf_at(&fr->sky->geom[0], fr->f.image.width, fr->f.image.height, x, y, fwhm, e, th);
    *th *= 180.0 / 3.14159265358979323846;
}

/* Median over the model's stars of the normalised residual RMS and of chi2/dof between the
 * frame's pixels and the flux-scaled tide_psf_eval_pixel at the star. */
static void star_residuals(const tide_psf_model *m, const frame *fr, double *med_rel,
                           double *med_chi2) {
    const int side = m->stamp, h = side / 2, npix = side * side;
    float *st = malloc(sizeof(float) * (size_t)npix);
    double *rel = malloc(sizeof(double) * (size_t)m->nstars * 2), *chi = rel + m->nstars;
    const double sig = fr->rms.pix[0];
    for (int s = 0; s < m->nstars; s++) {
        CHECK_OK(tide_psf_eval_pixel(m, m->star_x[s], m->star_y[s], st));
        const int64_t cx = (int64_t)floor(m->star_x[s] + 0.5),
                      cy = (int64_t)floor(m->star_y[s] + 0.5);
        double smd = 0.0, smm = 0.0, pk = 0.0;
        for (int j = 0; j < side; j++)
            for (int i = 0; i < side; i++) {
                const double d = fr->sub.pix[(cy - h + j) * fr->sub.stride + cx - h + i];
                smd += st[j * side + i] * d;
                smm += (double)st[j * side + i] * st[j * side + i];
                if (st[j * side + i] > pk)
                    pk = st[j * side + i];
            }
        const double F = smd / smm;
        double q = 0.0, c2 = 0.0;
        for (int j = 0; j < side; j++)
            for (int i = 0; i < side; i++) {
                const double d = fr->sub.pix[(cy - h + j) * fr->sub.stride + cx - h + i];
                const double r = d - F * st[j * side + i];
                q += r * r;
                /* noise: sky plus the star's own Poisson (gain 1.2) */
                c2 += r * r / (sig * sig + fmax(0.0, F * st[j * side + i]) / 1.2);
            }
        rel[s] = sqrt(q / npix) / (F * pk);
        chi[s] = c2 / (npix - 1);
    }
    /* medians */
    for (int pass = 0; pass < 2; pass++) {
        double *a = pass ? chi : rel;
        for (int i = 1; i < m->nstars; i++)
            for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
                double t = a[j];
                a[j] = a[j - 1];
                a[j - 1] = t;
            }
    }
    *med_rel = rel[m->nstars / 2];
    *med_chi2 = chi[m->nstars / 2];
    free(st);
    free(rel);
}

static void test_truth(int noise) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    frame fr;
    const int64_t W = 2048, H = 2048;
    make_frame(ctx, &fr, W, H, 2000, noise, 11);
    tide_psf_params p;
    tide_psf_params_default(&p);
    tide_psf_model m;
    double t0 = tide_now();
    CHECK_OK(tide_psf_build(ctx, &fr.sub, &fr.rms, fr.n, fr.x, fr.y, fr.flux, &p, &m));
    double ms = (tide_now() - t0) * 1e3;
    CHECK(!m.gaussian_fallback);
    CHECK(m.nstars >= 80);
    CHECK(m.nbasis == 6 && m.degree == 2 && m.ncoef == 6 && m.stamp == 19);
    printf("%s: %d stars (%d ref) of %d candidates, rejected edge %d masked %d sat %d "
           "centroid %d snr %d crowded %d outlier %d size %d (median %.2f); resid %.4f; %.0f ms\n",
           noise ? "noisy" : "noiseless", m.nstars, m.nref, m.ncandidates, m.nreject[0],
           m.nreject[1], m.nreject[2], m.nreject[3], m.nreject[4], m.nreject[5], m.nreject[6],
           m.nreject[7], m.size_median, m.resid_rms, ms);
    const double px[5] = {0.5 * (W - 1), 0, W - 1, 0, W - 1};
    const double py[5] = {0.5 * (H - 1), 0, 0, H - 1, H - 1};
    for (int c = 0; c < 5; c++) {
        double tf, te, tt;
        truth_at(&fr, px[c], py[c], &tf, &te, &tt);
        const double f = c == 0 ? m.fwhm : m.fwhm_corner[c - 1];
        const double e = c == 0 ? m.ellipticity : m.ellip_corner[c - 1];
        printf("  (%6.0f,%6.0f): FWHM %.4f truth %.4f (%+.2f %%), e %.4f truth %.4f\n", px[c],
               py[c], f, tf, 100.0 * (f / tf - 1.0), e, te);
        CHECK(fabs(f / tf - 1.0) < 0.02);
        CHECK(fabs(e - te) < 0.03);
        if (c == 0) {
            double dth = fmod(m.theta - tt + 270.0, 180.0) - 90.0;
            printf("  centre: beta %.3f (truth 3), theta %.2f truth %.2f\n", m.beta, m.theta, tt);
            CHECK(fabs(dth) < 10.0);
            CHECK(fabs(m.beta - 3.0) < 0.3);
        }
    }
    double rel, chi2;
    star_residuals(&m, &fr, &rel, &chi2);
    printf("  star residuals: median RMS/peak %.5f, median chi2/dof %.3f\n", rel, chi2);
    CHECK(rel < (noise ? 0.04 : 0.005));
    if (noise)
        CHECK(chi2 < 1.3);

    /* eval: sum 1, symmetric peak at the centre pixel, clamping outside the frame */
    const int npix = m.stamp * m.stamp;
    float *a = malloc(sizeof(float) * (size_t)npix * 2), *b = a + npix;
    CHECK_OK(tide_psf_eval(&m, 100.0, 200.0, a));
    double s = 0.0;
    int imax = 0;
    for (int k = 0; k < npix; k++) {
        s += a[k];
        if (a[k] > a[imax])
            imax = k;
    }
    CHECK_CLOSE(s, 1.0, 1e-5);
    CHECK(imax == npix / 2);
    CHECK_OK(tide_psf_eval(&m, -500.0, 1e6, a));
    CHECK_OK(tide_psf_eval(&m, 0.0, H - 1.0, b));
    CHECK(memcmp(a, b, sizeof(float) * (size_t)npix) == 0);
    CHECK(tide_psf_eval(&m, NAN, 3.0, a) == TIDE_E_INVAL);

    /* sign convention: each eigen-PSF's largest-magnitude pixel is positive, unit norm */
    for (int q = 1; q < m.nbasis; q++) {
        const float *E = m.basis + (size_t)q * npix;
        int ib = 0;
        double nrm = 0.0;
        for (int k = 0; k < npix; k++) {
            nrm += (double)E[k] * E[k];
            if (fabsf(E[k]) > fabsf(E[ib]))
                ib = k;
        }
        CHECK(E[ib] > 0.0f);
        CHECK_CLOSE(nrm, 1.0, 1e-5);
    }

    if (noise) { /* determinism: a second build is bitwise the same */
        tide_psf_model m2;
        CHECK_OK(tide_psf_build(ctx, &fr.sub, &fr.rms, fr.n, fr.x, fr.y, fr.flux, &p, &m2));
        CHECK(m2.nbasis == m.nbasis && m2.ncoef == m.ncoef && m2.nstars == m.nstars);
        if (m2.nbasis == m.nbasis && m2.ncoef == m.ncoef) {
            CHECK(memcmp(m.basis, m2.basis, sizeof(float) * (size_t)npix * m.nbasis) == 0);
            CHECK(memcmp(m.coef, m2.coef, sizeof(double) * (size_t)m.ncoef * m.nbasis) == 0);
            CHECK(m.fwhm == m2.fwhm && m.fwhm_corner[3] == m2.fwhm_corner[3]);
        }
        tide_psf_free(&m2);

        tide_header hd;
        tide_header_init(&hd);
        CHECK_OK(tide_psf_to_header(&m, &hd));
        char model[32];
        double v;
        int64_t ns;
        CHECK_OK(tide_header_get_str(&hd, "PSFMODEL", model, sizeof model));
        CHECK(strcmp(model, "PCA") == 0);
        CHECK_OK(tide_header_get_dbl(&hd, "FWHMUR", &v));
        CHECK_CLOSE(v, m.fwhm_corner[3], 1e-6 * v);
        CHECK_OK(tide_header_get_int(&hd, "PSFNSTAR", &ns));
        CHECK(ns == m.nstars);
        tide_header_free(&hd);
    }
    free(a);
    tide_psf_free(&m);
    free_frame(ctx, &fr);
    tide_ctx_destroy(ctx);
}

/* Three bright isolated stars: the Gaussian fallback, FWHM measured on them. */
static void test_fallback(void) {
    tide_ctx *ctx = tide_test_ctx(TIDE_BACKEND_CPU, 0);
    frame fr;
    make_frame(ctx, &fr, 512, 512, 150, 1, 5);
    /* the three brightest unsaturated isolated-looking stars near the centre */
    const tide_table *t = &fr.f.truth;
    const int16_t *sat = tide_table_column(t, "SATURATED")->data;
    const int16_t *type = tide_table_column(t, "TYPE_ID")->data;
    double x3[3], y3[3], f3[3];
    int k = 0;
    for (int pass = 0; pass < 3; pass++) {
        int best = -1;
        for (int64_t i = 0; i < fr.n; i++) {
            const int s_i = sat[i], ty = type[i];
            int used = 0;
            for (int j = 0; j < k; j++)
                used |= x3[j] == fr.x[i];
            if (s_i || ty != 0 || used || fr.x[i] < 60 || fr.x[i] > 450 || fr.y[i] < 60 ||
                fr.y[i] > 450 || fr.flux[i] > 2e5)
                continue;
            if (best < 0 || fr.flux[i] > fr.flux[best])
                best = (int)i;
        }
        if (best < 0)
            break;
        x3[k] = fr.x[best];
        y3[k] = fr.y[best];
        f3[k] = fr.flux[best];
        k++;
    }
    CHECK(k == 3);
    tide_psf_params p;
    tide_psf_params_default(&p);
    p.snr_min = 10.0;
    tide_psf_model m;
    CHECK_OK(tide_psf_build(ctx, &fr.sub, &fr.rms, k, x3, y3, f3, &p, &m));
    double tf, te, tt;
    truth_at(&fr, 255.5, 255.5, &tf, &te, &tt);
    printf("fallback: %d stars, FWHM %.3f (truth %.3f), beta %g\n", m.nstars, m.fwhm, tf, m.beta);
    CHECK(m.gaussian_fallback == 1);
    CHECK(m.nbasis == 1 && m.beta == 0.0);
    CHECK(m.nstars >= 1 && m.nstars <= 3);
    CHECK(fabs(m.fwhm / tf - 1.0) < 0.1); /* measured, not the 3.0 guess at ... */
    const int npix = m.stamp * m.stamp;
    float *st = malloc(sizeof(float) * (size_t)npix);
    CHECK_OK(tide_psf_eval(&m, 10.0, 10.0, st));
    double s = 0.0;
    for (int i = 0; i < npix; i++)
        s += st[i];
    CHECK_CLOSE(s, 1.0, 1e-5);
    free(st);
    tide_header hd;
    tide_header_init(&hd);
    CHECK_OK(tide_psf_to_header(&m, &hd));
    char model[32];
    CHECK_OK(tide_header_get_str(&hd, "PSFMODEL", model, sizeof model));
    CHECK(strcmp(model, "GAUSSIAN") == 0);
    tide_header_free(&hd);
    tide_psf_free(&m);

    /* no candidates at all: the configured FWHM */
    p.fwhm_guess = 4.0;
    CHECK_OK(tide_psf_build(ctx, &fr.sub, &fr.rms, 0, NULL, NULL, NULL, &p, &m));
    CHECK(m.gaussian_fallback == 1 && m.fwhm == 4.0 && m.nstars == 0);
    tide_psf_free(&m);

    /* bad arguments */
    p.stamp = 20;
    CHECK(tide_psf_build(ctx, &fr.sub, &fr.rms, k, x3, y3, f3, &p, &m) == TIDE_E_INVAL);
    tide_psf_params_default(&p);
    CHECK(tide_psf_build(ctx, &fr.sub, &fr.rms, -1, x3, y3, f3, &p, &m) == TIDE_E_INVAL);
    free_frame(ctx, &fr);
    tide_ctx_destroy(ctx);
}

int main(void) {
    test_fallback();
    test_truth(0);
    test_truth(1);
    return TIDE_TEST_RESULT();
}
