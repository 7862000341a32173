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
#include <stdlib.h>
#include <string.h>

#include "phot/psf_internal.h"
#include "tide/status.h"

#define NP 7 /* A, x0, y0, cxx, cxy, cyy, beta */
#define PI 3.14159265358979323846

/* Per stamp row: chi2, J^T r (NP) and the lower triangle of J^T J (NP (NP+1) / 2). */
#define NROW (1 + NP + NP * (NP + 1) / 2)
/* Per pixel: the residual r and the model's gradient g (NP); one 64-byte line. */
#define NPIX (1 + NP)

/* Residual and gradient of pixel (i, j) into o[NPIX] (jac: with the gradient; np = 7, or 6
 * with beta held: its entry is then not formed). Pixels within rsub of the stamp centre are
 * integrated with nsub × nsub sub-samples; further out, where the profile is nearly linear
 * across a pixel, the centre value stands for the mean. Per sub-sample one log and one exp:
 * u = (1 + q)^-(beta+1), the profile is u (1 + q), and every derivative is a sum over the
 * sub-samples of u times a monomial in dx, dy (or of the profile times log(1 + q) for beta),
 * the parameters factored out of the sums:
 *   df/dx0 = 2 A beta (cxx Sx + cxy Sy),  df/dcxx = -A beta Sxx, ...  with S. = sum u (.). */
static void eval_pixel(const float *st, int side, int i, int j, int nsub, double rsub,
                       const double *p, int jac, double *o) {
    const int h = side / 2;
    const double A = p[0], cxx = p[3], cxy = p[4], cyy = p[5], b1 = -(p[6] + 1.0);
    const int ns = (double)((i - h) * (i - h) + (j - h) * (j - h)) <= rsub * rsub ? nsub : 1;
    const double step = 1.0 / ns, off = -0.5 + 0.5 * step, norm = step * step;
    double s0 = 0.0, sl = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0, syy = 0.0;
    for (int b = 0; b < ns; b++) {
        const double dy = (double)j + off + step * b - p[2];
        const double ey = cyy * dy * dy, hy = 2.0 * cxy * dy;
        for (int a = 0; a < ns; a++) {
            const double dx = (double)i + off + step * a - p[1];
            const double x1 = 1.0 + (cxx * dx * dx + hy * dx + ey);
            const double lq = log(x1), u = exp(b1 * lq), base = u * x1;
            s0 += base;
            if (!jac) continue;
            sl += lq * base;
            const double ux = u * dx, uy = u * dy;
            sx += ux;
            sy += uy;
            sxx += ux * dx;
            sxy += ux * dy;
            syy += uy * dy;
        }
    }
    o[0] = (double)st[j * side + i] - A * s0 * norm;
    if (!jac) return;
    const double k = A * p[6] * norm; /* -df/dq = A beta u */
    double *g = o + 1;
    g[0] = s0 * norm;
    g[1] = 2.0 * k * (cxx * sx + cxy * sy);
    g[2] = 2.0 * k * (cxy * sx + cyy * sy);
    g[3] = -k * sxx;
    g[4] = -2.0 * k * sxy;
    g[5] = -k * syy;
    g[6] = -A * sl * norm;
}

/* Row j's sums into o[NROW] from its pixels' residuals and gradients (pix: side × NPIX),
 * added in pixel order. */
static void sum_row(const double *pix, int side, int np, int jac, double *o) {
    for (int k = 0; k < NROW; k++) o[k] = 0.0;
    double *jtr = o + 1, *jtj = o + 1 + NP;
    for (int i = 0; i < side; i++) {
        const double *px = pix + (size_t)i * NPIX, r = px[0], *g = px + 1;
        o[0] += r * r;
        if (!jac) continue;
        for (int a = 0; a < np; a++) jtr[a] += g[a] * r;
        for (int a = 0, t = 0; a < NP; a++)
            for (int c = 0; c <= a; c++, t++)
                if (a < np) jtj[t] += g[a] * g[c];
    }
}

/* Scratch of one fit's evaluations: each pixel's residual and gradient, each row's sums. */
typedef struct moffat_scratch {
    double *pix;  /**< side² × NPIX */
    double *rows; /**< side × NROW */
} moffat_scratch;

/* chi2 of stamp - model, and J^T J, J^T r if jtj is non-NULL. The pixels are computed by a
 * team when threads > 1 (one at a time in turn: the sub-sampled ones, a disc in the middle,
 * are most of the work), then each row's sums in pixel order and the rows in row order, so
 * the result does not depend on the thread count. */
static double evaluate(const float *st, int side, int nsub, double rsub, const double *p,
                       int np, int threads, moffat_scratch *sc, double *jtj, double *jtr) {
    const int jac = jtj != NULL;
    double chi2 = 0.0;
    if (jac) memset(jtj, 0, sizeof(double) * NP * NP), memset(jtr, 0, sizeof(double) * NP);
    double *pix = sc->pix, *rows = sc->rows;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
#pragma omp for schedule(static, 1)
        for (int k = 0; k < side * side; k++)
            eval_pixel(st, side, k % side, k / side, nsub, rsub, p, jac, pix + (size_t)k * NPIX);
#pragma omp for schedule(static)
        for (int j = 0; j < side; j++)
            sum_row(pix + (size_t)j * side * NPIX, side, np, jac, rows + (size_t)j * NROW);
    }
    for (int j = 0; j < side; j++) {
        const double *r = rows + (size_t)j * NROW;
        chi2 += r[0];
        if (!jac) continue;
        for (int a = 0; a < NP; a++) jtr[a] += r[1 + a];
        for (int a = 0, t = 0; a < NP; a++)
            for (int c = 0; c <= a; c++, t++) jtj[a * NP + c] += r[1 + NP + t];
    }
    if (jac)
        for (int a = 0; a < NP; a++)
            for (int c = a + 1; c < NP; c++) jtj[a * NP + c] = jtj[c * NP + a];
    return chi2;
}

static int valid(const double *p, int side) {
    return p[0] > 0 && p[3] > 0 && p[5] > 0 && p[3] * p[5] - p[4] * p[4] > 0 && p[6] > 1.01 &&
           p[6] < 60.0 && p[1] > -1 && p[1] < side && p[2] > -1 && p[2] < side;
}

/* The most any step can gain under the linear model at the current point: the undamped
 * Gauss–Newton decrease g^T H^-1 g (g = J^T r, H = J^T J; chi2(p + d) ~ chi2 - 2 d.g +
 * d^T H d, least at d = H^-1 g), or INFINITY when H is not positive definite. */
static double gn_gain(int np, const double *jtj, const double *jtr) {
    double a[NP * NP], x[NP];
    for (int r = 0; r < np; r++) {
        for (int c = 0; c < np; c++) a[r * np + c] = jtj[r * NP + c];
        x[r] = jtr[r];
    }
    if (psf_cholesky_solve(np, a, x)) return INFINITY;
    double g = 0.0;
    for (int k = 0; k < np; k++) g += x[k] * jtr[k];
    return g;
}

/* Levenberg–Marquardt from p (updated in place) on the stamp integrated with nsub × nsub
 * sub-samples within rsub; returns the final chi2. Stops when no step can gain more than
 * gtol of chi2 (gn_gain, tested before a trial is evaluated: the last steps of a fit are
 * otherwise rounding noise, each evaluated and rejected while lambda grows, and were half
 * the evaluations of a free-beta fit), when an accepted step gains less than gtol of chi2,
 * or when the next step would change no parameter by more than rtol of itself. */
static double lm_fit(const float *stamp, int side, int nsub, double rsub, int np, double gtol,
                     double rtol, int threads, moffat_scratch *sc, double *p) {
    double jtj[NP * NP], jtr[NP], a[NP * NP], dlt[NP], trial[NP], tj[NP * NP], tr_[NP];
    double chi2 = evaluate(stamp, side, nsub, rsub, p, np, threads, sc, jtj, jtr);
    double lambda = 1e-3;
    int fresh = 1; /* jtj, jtr are new since the last gn_gain test */
    for (int it = 0; it < 200 && lambda < 1e10; it++) {
        if (fresh && gn_gain(np, jtj, jtr) <= gtol * chi2) break; /* converged */
        fresh = 0;
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
        memcpy(trial, p, sizeof trial);
        double rel = 0.0;
        for (int k = 0; k < np; k++) {
            trial[k] = p[k] + dlt[k];
            rel = fmax(rel, fabs(dlt[k]) / fmax(fabs(p[k]), 1e-3));
        }
        if (rel < rtol) break; /* converged */
        const double c2 = valid(trial, side) ? evaluate(stamp, side, nsub, rsub, trial, np,
                                                        threads, sc, tj, tr_)
                                             : INFINITY;
        if (c2 <= chi2) {
            memcpy(p, trial, sizeof trial);
            memcpy(jtj, tj, sizeof jtj);
            memcpy(jtr, tr_, sizeof jtr);
            fresh = 1;
            const double gain = chi2 - c2;
            chi2 = c2;
            lambda = fmax(lambda * 0.1, 1e-12);
            if (gain <= gtol * chi2) break; /* converged */
        } else {
            lambda *= 10.0;
        }
    }
    return chi2;
}

int psf_moffat_fit(const float *stamp, int side, double fwhm_guess, double beta_fixed,
                   const psf_moffat *start, int threads, psf_moffat *out) {
    memset(out, 0, sizeof *out);
    const int h = side / 2;
    double peak = 0.0;
    for (int k = 0; k < side * side; k++) peak = fmax(peak, stamp[k]);
    if (!(peak > 0.0) || side > TIDE_PSF_MAX_STAMP) return 0;
    int nsub = (int)ceil(15.0 / fwhm_guess);
    nsub = nsub < 3 ? 3 : (nsub > 9 ? 9 : nsub);
    nsub |= 1;
    const double beta0 = beta_fixed > 1.0 ? beta_fixed : 3.0;
    const int np = beta_fixed > 1.0 ? NP - 1 : NP; /* beta is the last parameter */
    const double alpha0 = fwhm_guess / (2.0 * sqrt(pow(2.0, 1.0 / beta0) - 1.0));
    double p[NP] = {peak, h, h, 1.0 / (alpha0 * alpha0), 0.0, 1.0 / (alpha0 * alpha0), beta0};
    if (start && start->ok) {
        const double q[NP] = {peak, start->x0, start->y0, start->cxx, start->cxy, start->cyy,
                              beta0};
        if (valid(q, side)) memcpy(p, q, sizeof p);
    }
    const double rsub = 2.5 * fwhm_guess;
    /* Every evaluation takes the caller's whole team, even the pixel-centre ones of ~15 µs on
     * one core: a smaller team leaves pool threads asleep that the next full team must wake
     * (psf_lanczos.c's note; on the GPU machine's host teams of 8 of 16 threads made the
     * summary's fits 1.3-1.5 ms, the whole team 1.05-1.15 ms). */
    double rows[TIDE_PSF_MAX_STAMP * NROW]; /* each row's sums (side <= TIDE_PSF_MAX_STAMP) */
    /* each pixel's terms, a 64-byte line per pixel so no two threads write one line */
    moffat_scratch sc = {aligned_alloc(64, sizeof(double) * NPIX * (size_t)side * side), rows};
    if (!sc.pix)
        return tide_error(TIDE_E_NOMEM, "psf: Moffat fit of a %d×%d stamp", side, side);
    /* With 5 × 5 or more sub-samples, first loosely converged on pixel-centre values
     * (1/nsub^2 of the cost): the fit of the integrated model then starts near its minimum
     * and takes ~2 fewer of its evaluations; the same objective and stopping rule as a
     * single integrated fit. (At 3 × 3 the saving does not pay for the extra fit.) */
    if (nsub >= 5) {
        double q[NP];
        memcpy(q, p, sizeof q);
        lm_fit(stamp, side, 1, rsub, np, 1e-6, 1e-5, threads, &sc, q);
        if (valid(q, side)) memcpy(p, q, sizeof p);
    }
    const double chi2 = lm_fit(stamp, side, nsub, rsub, np, 1e-12, 1e-9, threads, &sc, p);
    free(sc.pix);
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
