/* psf_moffat.c — an elliptical Moffat (Moffat 1969, A&A 3, 455) fitted to a PSF stamp by
 * Levenberg–Marquardt (Marquardt 1963; damping of the normal matrix's diagonal).
 *
 * Model: f(x, y) = A (1 + q)^-beta, q = cxx dx^2 + 2 cxy dx dy + cyy dy^2, integrated over each
 * pixel by nsub × nsub sub-samples (the stamp holds pixel-integrated values). The quadratic
 * form keeps the fit smooth through round shapes (no angle degeneracy at e = 0). From it:
 * with l1 <= l2 the eigenvalues of [[cxx, cxy], [cxy, cyy]], the semi-axes scale as
 * a = 1/sqrt(l1), b = 1/sqrt(l2), alpha^2 = a b, FWHM = 2 alpha sqrt(2^(1/beta) - 1) (the
 * geometric-mean FWHM, the simulator's convention), ellipticity 1 - b/a, theta the angle of
 * the major axis from +x towards +y. */
#include <math.h>
#include <string.h>

#include "phot/psf_internal.h"

#define NP 7 /* A, x0, y0, cxx, cxy, cyy, beta */
#define PI 3.14159265358979323846

/* Model and Jacobian at every pixel: chi2 of stamp - model; jtj and jtr if non-NULL. Pixels
 * within rsub of the stamp centre are integrated with nsub × nsub sub-samples; further out,
 * where the profile is nearly linear across a pixel, the centre value stands for the mean. */
static double evaluate(const float *st, int side, int nsub, double rsub, const double *p,
                       double *jtj, double *jtr) {
    const int h = side / 2;
    double chi2 = 0.0;
    if (jtj) memset(jtj, 0, sizeof(double) * NP * NP), memset(jtr, 0, sizeof(double) * NP);
    for (int j = 0; j < side; j++)
        for (int i = 0; i < side; i++) {
            const int ns = (double)((i - h) * (i - h) + (j - h) * (j - h)) <= rsub * rsub ? nsub : 1;
            const double step = 1.0 / ns, off = -0.5 + 0.5 * step, norm = step * step;
            double f = 0.0, g[NP] = {0};
            for (int b = 0; b < ns; b++) {
                const double dy = (double)j + off + step * b - p[2];
                for (int a = 0; a < ns; a++) {
                    const double dx = (double)i + off + step * a - p[1];
                    const double q = p[3] * dx * dx + 2.0 * p[4] * dx * dy + p[5] * dy * dy;
                    const double lq = log1p(q), base = exp(-p[6] * lq);
                    f += p[0] * base;
                    if (!jtj) continue;
                    const double dfdq = -p[0] * p[6] * base / (1.0 + q);
                    g[0] += base;
                    g[1] += dfdq * -2.0 * (p[3] * dx + p[4] * dy);
                    g[2] += dfdq * -2.0 * (p[4] * dx + p[5] * dy);
                    g[3] += dfdq * dx * dx;
                    g[4] += dfdq * 2.0 * dx * dy;
                    g[5] += dfdq * dy * dy;
                    g[6] += -p[0] * lq * base;
                }
            }
            const double r = (double)st[j * side + i] - f * norm;
            chi2 += r * r;
            if (!jtj) continue;
            for (int a = 0; a < NP; a++) {
                g[a] *= norm;
                jtr[a] += g[a] * r;
            }
            for (int a = 0; a < NP; a++)
                for (int b = 0; b <= a; b++) jtj[a * NP + b] += g[a] * g[b];
        }
    if (jtj)
        for (int a = 0; a < NP; a++)
            for (int b = a + 1; b < NP; b++) jtj[a * NP + b] = jtj[b * NP + a];
    return chi2;
}

static int valid(const double *p, int side) {
    return p[0] > 0 && p[3] > 0 && p[5] > 0 && p[3] * p[5] - p[4] * p[4] > 0 && p[6] > 1.01 &&
           p[6] < 60.0 && p[1] > -1 && p[1] < side && p[2] > -1 && p[2] < side;
}

int psf_moffat_fit(const float *stamp, int side, double fwhm_guess, double beta_fixed,
                   psf_moffat *out) {
    memset(out, 0, sizeof *out);
    const int h = side / 2;
    double peak = 0.0;
    for (int k = 0; k < side * side; k++) peak = fmax(peak, stamp[k]);
    if (!(peak > 0.0)) return 0;
    int nsub = (int)ceil(15.0 / fwhm_guess);
    nsub = nsub < 3 ? 3 : (nsub > 9 ? 9 : nsub);
    nsub |= 1;
    const double beta0 = beta_fixed > 1.0 ? beta_fixed : 3.0;
    const int np = beta_fixed > 1.0 ? NP - 1 : NP; /* beta is the last parameter */
    const double alpha0 = fwhm_guess / (2.0 * sqrt(pow(2.0, 1.0 / beta0) - 1.0));
    double p[NP] = {peak, h, h, 1.0 / (alpha0 * alpha0), 0.0, 1.0 / (alpha0 * alpha0), beta0};
    const double rsub = 2.5 * fwhm_guess;
    double jtj[NP * NP], jtr[NP], a[NP * NP], dlt[NP], trial[NP], tj[NP * NP], tr_[NP];
    double chi2 = evaluate(stamp, side, nsub, rsub, p, jtj, jtr), lambda = 1e-3;
    for (int it = 0; it < 200 && lambda < 1e10; it++) {
        for (int r = 0; r < np; r++)
            for (int c = 0; c < np; c++) a[r * np + c] = jtj[r * NP + c];
        for (int k = 0; k < np; k++) {
            a[k * np + k] *= 1.0 + lambda;
            dlt[k] = jtr[k];
        }
        if (psf_cholesky_solve(np, a, dlt)) {
            lambda *= 10.0;
            continue;
        }
        memcpy(trial, p, sizeof p);
        double rel = 0.0;
        for (int k = 0; k < np; k++) {
            trial[k] = p[k] + dlt[k];
            rel = fmax(rel, fabs(dlt[k]) / fmax(fabs(p[k]), 1e-3));
        }
        const double c2 = valid(trial, side) ? evaluate(stamp, side, nsub, rsub, trial, tj, tr_)
                                             : INFINITY;
        if (c2 <= chi2) {
            memcpy(p, trial, sizeof p);
            memcpy(jtj, tj, sizeof jtj);
            memcpy(jtr, tr_, sizeof jtr);
            const double gain = chi2 - c2;
            chi2 = c2;
            lambda = fmax(lambda * 0.1, 1e-12);
            if (rel < 1e-9 || gain <= 1e-12 * chi2) break; /* converged */
        } else {
            lambda *= 10.0;
        }
    }
    const double tr = p[3] + p[5], det = p[3] * p[5] - p[4] * p[4];
    const double disc = sqrt(fmax(0.0, 0.25 * (p[3] - p[5]) * (p[3] - p[5]) + p[4] * p[4]));
    const double l1 = 0.5 * tr - disc, l2 = 0.5 * tr + disc;
    const double alpha = pow(det, -0.25);
    out->amp = p[0];
    out->x0 = p[1];
    out->y0 = p[2];
    out->cxx = p[3];
    out->cxy = p[4];
    out->cyy = p[5];
    out->beta = p[6];
    out->fwhm = 2.0 * alpha * sqrt(pow(2.0, 1.0 / p[6]) - 1.0);
    out->ellip = l1 > 0 ? 1.0 - sqrt(l1 / l2) : 0.0;
    out->theta_deg = 0.5 * atan2(-2.0 * p[4], p[5] - p[3]) * 180.0 / PI;
    if (out->theta_deg <= -90.0) out->theta_deg += 180.0;
    out->rms = sqrt(chi2 / (side * side)) / peak;
    out->ok = isfinite(out->fwhm) && out->fwhm > 0 && l1 > 0;
    return 0;
}
