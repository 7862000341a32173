/* test_psf_parts.c — the PSF stage's pieces on inputs with known answers: the symmetric
 * eigensolver against a Jacobi reference, Cholesky, the Moffat fit on rendered profiles, the
 * Lanczos weights, the polynomial terms, the CPU measurement kernel (centroid, S/N, rejection
 * bits) and the recentred stamps of analytic stars, the sigma-clipped stack. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "reduction/psf/psf_internal.h"
#include "reduction/psf/psf_kernels.h"
#include "reduction/psf/psf_math.h"
#include "tide/tide.h"
#include "tide_test.h"

#define M_PI 3.14159265358979323846

static uint64_t rng_state = 12345;
static double urand(void) {
    return trng_unit(trng_xorshift64s(&rng_state));
}

/* Cyclic Jacobi eigenvalues of a symmetric matrix (reference; slow, exact enough). */
static void jacobi_evals(int n, double *a, double *ev) {
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++)
                off += a[p * n + q] * a[p * n + q];
        if (off < 1e-30)
            break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                if (fabs(a[p * n + q]) < 1e-300)
                    continue;
                const double th = 0.5 * (a[q * n + q] - a[p * n + p]) / a[p * n + q];
                const double t = (th >= 0 ? 1.0 : -1.0) / (fabs(th) + sqrt(th * th + 1.0));
                const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < n; k++) {
                    const double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) {
                    const double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
            }
    }
    for (int i = 0; i < n; i++)
        ev[i] = a[i * n + i];
    for (int i = 1; i < n; i++) /* descending */
        for (int j = i; j > 0 && ev[j - 1] < ev[j]; j--) {
            double t = ev[j];
            ev[j] = ev[j - 1];
            ev[j - 1] = t;
        }
}

static void test_eigen(void) {
    const int sizes[] = {1, 2, 3, 7, 40, 97};
    for (unsigned si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const int n = sizes[si];
        double *g = malloc(sizeof(double) * n * n * 4), *a = g + n * n, *v = a + n * n,
               *b = v + n * n;
        double *ev = malloc(sizeof(double) * n * 2), *er = ev + n;
        /* a Gram matrix of n random vectors in 30 dims: rank min(n, 30), zeros among the
         * eigenvalues, like the stars' */
        const int dim = 30;
        double *x = malloc(sizeof(double) * n * dim);
        for (int i = 0; i < n * dim; i++)
            x[i] = urand() - 0.5;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int k = 0; k < dim; k++)
                    s += x[i * dim + k] * x[j * dim + k];
                g[i * n + j] = s;
            }
        memcpy(a, g, sizeof(double) * n * n);
        memcpy(b, g, sizeof(double) * n * n);
        CHECK_OK(psf_eigen_sym(n, a, ev, v));
        jacobi_evals(n, b, er);
        double scale = fabs(er[0]) + 1e-300;
        for (int i = 0; i < n; i++)
            CHECK_CLOSE(ev[i] / scale, er[i] / scale, 1e-11);
        for (int i = 1; i < n; i++)
            CHECK(ev[i] <= ev[i - 1]);
        /* G v_i = lambda_i v_i, orthonormal */
        double worst = 0.0, orth = 0.0;
        for (int i = 0; i < n; i++) {
            for (int r = 0; r < n; r++) {
                double s = 0;
                for (int c = 0; c < n; c++)
                    s += g[r * n + c] * v[c * n + i];
                worst = fmax(worst, fabs(s - ev[i] * v[r * n + i]) / scale);
            }
            for (int j = 0; j <= i; j++) {
                double s = 0;
                for (int r = 0; r < n; r++)
                    s += v[r * n + i] * v[r * n + j];
                orth = fmax(orth, fabs(s - (i == j)));
            }
        }
        CHECK(worst < 1e-11);
        CHECK(orth < 1e-11);
        free(g), free(ev), free(x);
    }
}

/* Lanczos top-k against the dense solver on D^T D, star side (n < p) and pixel side (n > p),
 * rank-deficient included; bitwise repeatable and the same for 1 and 2 threads. */
static void test_pca_top(void) {
    const int cases[][2] = {{40, 121}, {200, 81}, {300, 361}, {7, 25}};
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int n = cases[c][0], p = cases[c][1], k = 5;
        double *D = malloc(sizeof(double) * n * p), *C = malloc(sizeof(double) * p * p * 2);
        double *V = C + p * p, *ev = malloc(sizeof(double) * p),
               *tv = malloc(sizeof(double) * k * p * 2);
        double tev[5], tev2[5];
        /* a few strong components plus noise, like stamp deviations */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < p; j++)
                D[i * p + j] = 3.0 * sin(0.1 * j) * (urand() - 0.5) +
                               2.0 * cos(0.37 * j) * (urand() - 0.5) +
                               1.0 * sin(0.05 * j * j) * (urand() - 0.5) + 0.05 * (urand() - 0.5);
        for (int a = 0; a < p; a++)
            for (int b = 0; b < p; b++) {
                double s2 = 0;
                for (int i = 0; i < n; i++)
                    s2 += D[i * p + a] * D[i * p + b];
                C[a * p + b] = s2;
            }
        CHECK_OK(psf_eigen_sym(p, C, ev, V));
        CHECK_OK(psf_pca_top(n, p, D, k, 1, tev, tv));
        CHECK_OK(psf_pca_top(n, p, D, k, 2, tev2, tv + k * p));
        CHECK(memcmp(tev, tev2, sizeof tev) == 0);
        CHECK(memcmp(tv, tv + k * p, sizeof(double) * k * p) == 0);
        const int kk = k < n ? k : n;
        for (int q = 0; q < kk; q++) {
            /* the 3 strong components exactly; the 2 in the noise bulk (small gaps) to a
             * Krylov space's accuracy */
            CHECK_CLOSE(tev[q] / ev[0], ev[q] / ev[0], q < 3 ? 1e-10 : 1e-6);
            double d = 0;
            for (int j = 0; j < p; j++)
                d += tv[q * p + j] * V[j * p + q];
            CHECK_CLOSE(fabs(d), 1.0, q < 3 ? 1e-8 : 1e-3); /* same direction up to sign */
        }
        free(D), free(C), free(ev), free(tv);
    }
    /* six components over weak noise, like stamp deviations: the top 5 converge well before
     * the 50 steps (the iteration stops at 20); still the dense solver's answer */
    {
        const int n = 150, p = 361, k = 5;
        double *D = malloc(sizeof(double) * n * p), *C = malloc(sizeof(double) * p * p * 2);
        double *V = C + p * p, *ev = malloc(sizeof(double) * p);
        double *tv = malloc(sizeof(double) * k * p * 2), tev[5], tev2[5];
        for (int i = 0; i < n; i++) {
            double g[6]; /* the star's coefficients of the six components */
            for (int c = 0; c < 6; c++)
                g[c] = urand() - 0.5;
            for (int j = 0; j < p; j++) {
                double d = 0.01 * (urand() - 0.5);
                for (int c = 0; c < 6; c++)
                    d += (6.0 - c) * sin(0.07 * (c + 1) * j + c) * g[c];
                D[i * p + j] = d;
            }
        }
        for (int a = 0; a < p; a++)
            for (int b = 0; b < p; b++) {
                double s2 = 0;
                for (int i = 0; i < n; i++)
                    s2 += D[i * p + a] * D[i * p + b];
                C[a * p + b] = s2;
            }
        CHECK_OK(psf_eigen_sym(p, C, ev, V));
        CHECK_OK(psf_pca_top(n, p, D, k, 1, tev, tv));
        CHECK_OK(psf_pca_top(n, p, D, k, 2, tev2, tv + k * p));
        CHECK(memcmp(tev, tev2, sizeof tev) == 0);
        CHECK(memcmp(tv, tv + k * p, sizeof(double) * k * p) == 0);
        for (int q = 0; q < k; q++) {
            CHECK_CLOSE(tev[q] / ev[0], ev[q] / ev[0], 1e-12);
            double d = 0;
            for (int j = 0; j < p; j++)
                d += tv[q * p + j] * V[j * p + q];
            CHECK_CLOSE(fabs(d), 1.0, 1e-10);
        }
        free(D), free(C), free(ev), free(tv);
    }
}

static void test_cholesky(void) {
    double a[9] = {4, 2, 0.4, 2, 5, 1, 0.4, 1, 3}, x[3] = {1, -2, 0.5}, b[3];
    for (int i = 0; i < 3; i++)
        b[i] = a[i * 3] * x[0] + a[i * 3 + 1] * x[1] + a[i * 3 + 2] * x[2];
    CHECK_OK(psf_cholesky_solve(3, a, b));
    for (int i = 0; i < 3; i++)
        CHECK_CLOSE(b[i], x[i], 1e-12);
    double s[4] = {1, 2, 2, 1}, r[2] = {1, 1};
    CHECK(psf_cholesky_solve(2, s, r) == -1); /* indefinite */
}

/* Pixel-integrated elliptical Moffat rendered at high sub-sampling. */
static void render_moffat(float *st, int side, double x0, double y0, double fwhm, double beta,
                          double e, double th_deg, double flux) {
    const double alpha = fwhm / (2.0 * sqrt(pow(2.0, 1.0 / beta) - 1.0));
    const double a = alpha / sqrt(1 - e), b = alpha * sqrt(1 - e), th = th_deg * M_PI / 180;
    const double c = cos(th), s = sin(th);
    const double cxx = c * c / (a * a) + s * s / (b * b), cyy = s * s / (a * a) + c * c / (b * b);
    const double cxy = c * s * (1 / (a * a) - 1 / (b * b));
    const int ns = 15;
    double tot = 0;
    for (int j = 0; j < side; j++)
        for (int i = 0; i < side; i++) {
            double acc = 0;
            for (int q = 0; q < ns; q++)
                for (int p = 0; p < ns; p++) {
                    const double dx = i - 0.5 + (p + 0.5) / ns - x0,
                                 dy = j - 0.5 + (q + 0.5) / ns - y0;
                    acc += pow(1 + cxx * dx * dx + 2 * cxy * dx * dy + cyy * dy * dy, -beta);
                }
            st[j * side + i] = (float)(acc / (ns * ns));
            tot += acc / (ns * ns);
        }
    for (int k = 0; k < side * side; k++)
        st[k] = (float)(st[k] * flux / tot);
}

static void test_moffat(void) {
    const int side = 25;
    float st[25 * 25];
    struct {
        double fwhm, beta, e, th;
    } cases[] = {
        {3.0, 3.0, 0.05, 30}, {2.2, 2.5, 0.0, 0}, {5.0, 4.5, 0.2, -60}, {3.5, 2.0, 0.1, 89}};
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        render_moffat(st, side, 12.3, 11.8, cases[k].fwhm, cases[k].beta, cases[k].e, cases[k].th,
                      1.0);
        psf_moffat f;
        CHECK_OK(psf_moffat_fit(st, side, 3.0, 0.0, NULL, 1, &f));
        CHECK(f.ok);
        /* a team evaluating the rows gives the same fit to the bit, whatever its size */
        for (int th = 2; th <= 7; th += 5) {
            psf_moffat g;
            CHECK_OK(psf_moffat_fit(st, side, 3.0, 0.0, NULL, th, &g));
            CHECK(memcmp(&g, &f, sizeof g) == 0);
        }
        CHECK_CLOSE(f.fwhm, cases[k].fwhm, 0.003 * cases[k].fwhm);
        CHECK_CLOSE(f.beta, cases[k].beta, 0.02 * cases[k].beta);
        CHECK_CLOSE(f.ellip, cases[k].e, 0.003);
        CHECK_CLOSE(f.x0, 12.3, 1e-3);
        CHECK_CLOSE(f.y0, 11.8, 1e-3);
        if (cases[k].e > 0) {
            double d = fmod(f.theta_deg - cases[k].th + 270.0, 180.0) - 90.0;
            CHECK(fabs(d) < 0.5);
        }
        /* beta held fixed at the truth: same FWHM */
        CHECK_OK(psf_moffat_fit(st, side, 3.0, cases[k].beta, NULL, 1, &f));
        CHECK_CLOSE(f.fwhm, cases[k].fwhm, 0.003 * cases[k].fwhm);
        CHECK(f.beta == cases[k].beta);
        /* started from another stamp's fit (as the corners start from the centre's): the
         * same minimum to the stopping rule's precision */
        const psf_moffat cold = f;
        render_moffat(st, side, 12.0, 12.0, 1.15 * cases[k].fwhm, cases[k].beta, 0.5 * cases[k].e,
                      cases[k].th + 20.0, 1.0);
        psf_moffat other;
        CHECK_OK(psf_moffat_fit(st, side, 3.0, cases[k].beta, NULL, 1, &other));
        render_moffat(st, side, 12.3, 11.8, cases[k].fwhm, cases[k].beta, cases[k].e, cases[k].th,
                      1.0);
        CHECK_OK(psf_moffat_fit(st, side, 3.0, cases[k].beta, &other, 1, &f));
        CHECK(f.ok);
        CHECK_CLOSE(f.fwhm, cold.fwhm, 1e-7 * cold.fwhm);
        CHECK_CLOSE(f.ellip, cold.ellip, 1e-7);
    }
    memset(st, 0, sizeof st);
    psf_moffat f;
    CHECK_OK(psf_moffat_fit(st, side, 3.0, 0.0, NULL, 1, &f));
    CHECK(!f.ok);
}

static void test_lanczos_terms(void) {
    double w[6];
    psf_lanczos_weights(0.0, w);
    CHECK_CLOSE(w[2], 1.0, 1e-15);
    for (int k = 0; k < 6; k++)
        if (k != 2)
            CHECK_CLOSE(w[k], 0.0, 1e-15);
    psf_lanczos_weights(0.5, w); /* symmetric about the half point */
    for (int k = 0; k < 3; k++)
        CHECK_CLOSE(w[k], w[5 - k], 1e-15);
    double s = 0;
    psf_lanczos_weights(0.37, w);
    for (int k = 0; k < 6; k++)
        s += w[k];
    CHECK_CLOSE(s, 1.0, 1e-14);
    double t[15];
    CHECK(tide_psf_terms(2, 0.5, -2.0, t) == 6);
    const double want[6] = {1, 0.5, -2, 0.25, -1, 4};
    for (int k = 0; k < 6; k++)
        CHECK_CLOSE(t[k], want[k], 1e-15);
    CHECK(tide_psf_terms(4, 0.3, 0.7, t) == 15);
    CHECK_CLOSE(t[14], pow(0.7, 4), 1e-15);
    CHECK_CLOSE(t[12], 0.3 * 0.3 * 0.7 * 0.7, 1e-15); /* u^2 v^2: degree 4, j = 2 */
    CHECK_CLOSE(t[11], 0.3 * 0.3 * 0.3 * 0.7, 1e-15);
}

/* Three analytic stars on a flat-noise image: centroids, S/N, rejection bits and the
 * recentred stamps (against the same Moffat rendered centred). */
static void test_kernels_cpu(void) {
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    const int64_t W = 181, H = 143;
    tide_image im, rms;
    CHECK_OK(tide_image_alloc(ctx, &im, W, H, TIDE_HOST, TIDE_IMAGE_MASK));
    CHECK_OK(tide_image_alloc(ctx, &rms, W, H, TIDE_HOST, 0));
    for (int64_t k = 0; k < W * H; k++)
        rms.pix[k] = 2.0f;
    const int side = 19, big = 41, h = side / 2;
    const double sx[4] = {40.37, 100.81, 150.5, 5.0}, sy[4] = {50.62, 70.13, 100.5, 5.0};
    float *st = malloc(sizeof(float) * big * big);
    for (int s = 0; s < 3; s++) {
        const int ox = (int)floor(sx[s]) - big / 2, oy = (int)floor(sy[s]) - big / 2;
        render_moffat(st, big, sx[s] - ox, sy[s] - oy, 3.2, 3.0, 0.08, 20, 5e4);
        for (int j = 0; j < big; j++)
            for (int i = 0; i < big; i++)
                im.pix[(oy + j) * W + ox + i] += st[j * big + i];
    }
    im.mask[100 * W + 153] = TIDE_MASK_COSMIC; /* in star 2's stamp */
    psf_plan pl;
    memset(&pl, 0, sizeof pl);
    tide_psf_params_default(&pl.p);
    pl.p.fwhm_guess = 3.2;
    psf_kparams kp;
    memset(&kp, 0, sizeof kp);
    kp.half = h;
    kp.cwin = 6;
    const double sig = 3.2 / 2.3548200450309493;
    kp.inv2s2 = 1.0 / (2 * sig * sig);
    kp.max_shift = 3.2;
    kp.ap_r2 = 4.8 * 4.8;
    kp.mask_bits = 0xFFFF;
    double x0[4], y0[4], meas[4 * PSF_NMEAS];
    int32_t flags[4];
    for (int s = 0; s < 4; s++) {
        x0[s] = sx[s] + 0.4 * (s % 2 ? 1 : -1);
        y0[s] = sy[s] - 0.3;
    }
    CHECK_OK(psf_measure_cpu(ctx, &im, &rms, &kp, 4, x0, y0, meas, flags));
    CHECK(flags[0] == 0 && flags[1] == 0);
    CHECK(flags[2] == TIDE_PSF_REJ_MASKED);
    CHECK(flags[3] == TIDE_PSF_REJ_EDGE);
    for (int s = 0; s < 2; s++) {
        CHECK_CLOSE(meas[s * PSF_NMEAS + PSF_M_XC], sx[s], 2e-3);
        CHECK_CLOSE(meas[s * PSF_NMEAS + PSF_M_YC], sy[s], 2e-3);
        const double f = meas[s * PSF_NMEAS + PSF_M_FLUX];
        CHECK(f > 0.6 * 5e4 && f < 5e4);
        /* no noise in the pixels: S/N = flux / (2 sqrt(npix in the aperture)) */
        CHECK(meas[s * PSF_NMEAS + PSF_M_SNR] > f / (2.0 * sqrt(M_PI * 4.8 * 4.8 + 20)));
        CHECK_CLOSE(meas[s * PSF_NMEAS + PSF_M_NOISE], 2.0, 1e-6);
        CHECK(meas[s * PSF_NMEAS + PSF_M_FWHM] > 2.5 && meas[s * PSF_NMEAS + PSF_M_FWHM] < 4.5);
    }
    /* saturation */
    kp.saturation = 100.0;
    CHECK_OK(psf_measure_cpu(ctx, &im, &rms, &kp, 1, x0, y0, meas, flags));
    CHECK(flags[0] == TIDE_PSF_REJ_SATURATED);
    kp.saturation = 0.0;
    /* recentred stamps vs the centred analytic profile */
    double xc[2] = {sx[0], sx[1]}, yc[2] = {sy[0], sy[1]}, sums[2];
    float *stamps = malloc(sizeof(float) * side * side * 2),
          *ref = malloc(sizeof(float) * side * side);
    CHECK_OK(psf_extract_cpu(ctx, &im, &kp, 2, xc, yc, stamps, sums));
    render_moffat(ref, side, h, h, 3.2, 3.0, 0.08, 20, 1.0);
    double rs = 0;
    for (int k = 0; k < side * side; k++)
        rs += ref[k];
    for (int s = 0; s < 2; s++) {
        double worst = 0, pk = 0, tot = 0;
        for (int k = 0; k < side * side; k++) {
            worst = fmax(worst, fabs(stamps[s * side * side + k] - ref[k] / rs));
            pk = fmax(pk, ref[k] / rs);
            tot += stamps[s * side * side + k];
        }
        printf("stamp %d: worst |stamp - truth| / peak = %.4f\n", s, worst / pk);
        CHECK(worst / pk < 0.01); /* Lanczos-3 on a FWHM 3.2 profile */
        CHECK_CLOSE(tot, 1.0, 1e-5);
        CHECK(sums[s] > 0.95 * 5e4 && sums[s] < 5e4 * 1.001);
    }
    free(st), free(stamps), free(ref);
    tide_image_free(ctx, &im);
    tide_image_free(ctx, &rms);
    tide_ctx_destroy(ctx);
}

static void test_stack(void) {
    const int npix = 4, m = 7;
    float st[7 * 4];
    for (int i = 0; i < m; i++)
        for (int p = 0; p < npix; p++)
            st[i * npix + p] = (float)(1.0 + 0.01 * ((i * 3 + p) % 5));
    st[3 * npix + 1] = 50.0f; /* an outlier in one stamp */
    int which[7] = {0, 1, 2, 3, 4, 5, 6};
    float out[4];
    CHECK_OK(psf_stack_clip(st, npix, which, m, 3.0, 10, 2, out));
    double s = 0;
    for (int p = 0; p < npix; p++)
        s += out[p];
    CHECK_CLOSE(s, 1.0, 1e-6);
    CHECK(out[1] < 0.3); /* the 50 was clipped: all pixels ~1 → each ~0.25 */
    CHECK_CLOSE(out[1], 0.25, 0.01);
}

int main(void) {
    test_eigen();
    test_cholesky();
    test_pca_top();
    test_moffat();
    test_lanczos_terms();
    test_kernels_cpu();
    test_stack();
    return TIDE_TEST_RESULT();
}
