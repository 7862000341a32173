/* dipole_math.h — per-pixel model math and the Levenberg–Marquardt state machine of the dipole
 * fits, shared by the CPU and CUDA twins (DESIGN §3) so both do the same arithmetic.
 *
 * A fit alternates two things: a pass over the stamp's pixels that sums the normal equations
 * at the trial parameters (dip_accum, one lane's share; the lanes are merged by a fixed tree),
 * and dip_lm_step, which accepts or rejects the trial and proposes the next one. Every lane
 * of a warp runs dip_lm_step on the same merged sums, so the state stays warp-uniform.
 *
 * The Gaussian dipole is fitted in u = (ln A, ln s1, ln s2, theta, xc, yc, ln r, phi): the
 * lobes' midpoint, half their separation r and the angle phi from the negative lobe to the
 * positive one (xpos = xc + r cos phi, xneg = xc - r cos phi, ...). Why: lobes that overlap
 * (separation ~1-2 sigma) measure mostly the moment A r, and in (A, xpos, ..., yneg) the
 * valley of constant A r is a hyperbola along which Levenberg-Marquardt crawled, step after
 * step, until the iteration limit (7% of well-formed dipoles at separation 2-6 px, sigma 2,
 * peak S/N 100); in (ln A, ln r) that valley is a straight line, crossed in a few steps. The
 * lobe swap of a negative amplitude becomes phi + pi. */
#ifndef TIDE_DIPOLE_MATH_H
#define TIDE_DIPOLE_MATH_H
#include <math.h>
#include <stdint.h>
#include "core/gpu/hd.h"
#include "tide/dipole.h"

#define DIP_MAXP 8
#define DIP_NH (DIP_MAXP * (DIP_MAXP + 1) / 2) /* packed upper triangle of J^T W J */
#define DIP_NSUM (DIP_NH + DIP_MAXP + 2)       /* + J^T W r, chi2, npix */
#define DIP_LANES 32

/* The four fitted functions. */
enum { DIP_K_GDIP = 0, DIP_K_GPS = 1, DIP_K_PDIP = 2, DIP_K_PPS = 3 };

TIDE_HD static inline int dip_nparam(int kind) {
    return kind == DIP_K_GDIP ? 8 : kind == DIP_K_GPS ? 6 : kind == DIP_K_PDIP ? 5 : 3;
}

/* Index in the parameter vector of the x of the (first) lobe. */
TIDE_HD static inline int dip_ix(int kind) {
    return kind <= DIP_K_GPS ? 4 : 1;
}

/* Weight of one pixel: 1/var, or 0 when it must be ignored. */
TIDE_HD static inline double dip_weight(float d, float v, uint16_t m, uint16_t bits) {
    if ((m & bits) || !isfinite(d) || !isfinite(v) || !(v > 0.0f))
        return 0.0;
    return 1.0 / (double)v;
}

/* Quantities of the Gaussian shape that do not depend on the pixel. */
typedef struct dip_shape {
    double c, s, i1, i2, norm;
    double qp[DIP_MAXP]; /* dip_fit_shape: the model's parameters (dip_model's order) */
    double rc, rs;       /* dip_fit_shape, GDIP: r cos phi, r sin phi */
} dip_shape;

TIDE_HD static inline void dip_shape_make(const double *q, int kind, dip_shape *sh) {
    if (kind == DIP_K_GDIP || kind == DIP_K_GPS) {
        const double s1 = exp(q[1]), s2 = exp(q[2]);
        sh->c = cos(q[3]);
        sh->s = sin(q[3]);
        sh->i1 = 1.0 / (s1 * s1);
        sh->i2 = 1.0 / (s2 * s2);
        sh->norm = 1.0 / (6.283185307179586 * s1 * s2);
    } else {
        sh->c = sh->s = sh->i1 = sh->i2 = sh->norm = 0.0;
    }
}

/* Unit-sum elliptical Gaussian at offset (dx, dy) from its centre and its derivatives with
 * respect to (ln s1, ln s2, theta, xc, yc) in d[0..4]. With u, v the rotated offsets,
 * q = u²/s1² + v²/s2²: dG/dln s1 = G (u²/s1² - 1), dG/dtheta = -G u v (1/s1² - 1/s2²),
 * dG/dxc = G (u c/s1² - v s/s2²), dG/dyc = G (u s/s1² + v c/s2²). */
TIDE_HD static inline double dip_gauss(const dip_shape *sh, double dx, double dy, double *d) {
    const double u = sh->c * dx + sh->s * dy, v = -sh->s * dx + sh->c * dy;
    const double a = u * sh->i1, b = v * sh->i2;
    const double g = sh->norm * exp(-0.5 * (u * a + v * b));
    d[0] = g * (u * a - 1.0);
    d[1] = g * (v * b - 1.0);
    d[2] = -g * u * v * (sh->i1 - sh->i2);
    d[3] = g * (a * sh->c - b * sh->s);
    d[4] = g * (a * sh->s + b * sh->c);
    return g;
}

/* Keys' cubic convolution kernel, a = -1/2, and its derivative. */
TIDE_HD static inline double dip_keys(double t, double *dk) {
    const double at = fabs(t), sg = t < 0.0 ? -1.0 : 1.0;
    if (at <= 1.0) {
        *dk = sg * (4.5 * at * at - 5.0 * at);
        return (1.5 * at - 2.5) * at * at + 1.0;
    }
    if (at < 2.0) {
        *dk = sg * (-1.5 * at * at + 5.0 * at - 4.0);
        return ((-0.5 * at + 2.5) * at - 4.0) * at + 2.0;
    }
    *dk = 0.0;
    return 0.0;
}

/* The PSF stamp shifted to (xc, yc) by cubic convolution, at offset (dx, dy) = (x - xc,
 * y - yc): P = sum_ij psf[j][i] k(dx - (i - h)) k(dy - (j - h)); d[0], d[1] = dP/dxc, dP/dyc. */
TIDE_HD static inline double dip_psf(const float *psf, int side, double dx, double dy, double *d) {
    const int h = (side - 1) / 2;
    const double fx = floor(dx), fy = floor(dy);
    if (!(fabs(fx) < 1e6 && fabs(fy) < 1e6)) {
        d[0] = d[1] = 0.0;
        return 0.0;
    }
    const int i0 = (int)fx + h - 1, j0 = (int)fy + h - 1;
    double kx[4], dkx[4];
    for (int a = 0; a < 4; a++)
        kx[a] = dip_keys(dx - (double)(i0 + a - h), &dkx[a]);
    double p = 0.0, px = 0.0, py = 0.0;
    for (int b = 0; b < 4; b++) {
        const int j = j0 + b;
        if (j < 0 || j >= side)
            continue;
        double dky;
        const double ky = dip_keys(dy - (double)(j - h), &dky);
        double rv = 0.0, rd = 0.0;
        for (int a = 0; a < 4; a++) {
            const int i = i0 + a;
            if (i < 0 || i >= side)
                continue;
            const double f = (double)psf[(int64_t)j * side + i];
            rv += f * kx[a];
            rd += f * dkx[a];
        }
        p += rv * ky;
        px += rd * ky;
        py += rv * dky;
    }
    d[0] = -px;
    d[1] = -py;
    return p;
}

/* Model value at stamp pixel (x, y) and its Jacobian J[0..DIP_MAXP-1] (zero past the model's
 * parameters). Parameter vectors: GDIP (A, ln s1, ln s2, theta, xp, yp, xn, yn), GPS (A, ln s1,
 * ln s2, theta, x, y), PDIP (F, xp, yp, xn, yn), PPS (F, x, y). */
TIDE_HD static inline double dip_model(int kind, const double *q, const dip_shape *sh,
                                       const float *psf, int psf_side, double x, double y,
                                       double *J) {
    for (int k = 0; k < DIP_MAXP; k++)
        J[k] = 0.0;
    double dp[5], dn[5];
    if (kind == DIP_K_GDIP) {
        const double gp = dip_gauss(sh, x - q[4], y - q[5], dp);
        const double gn = dip_gauss(sh, x - q[6], y - q[7], dn);
        const double A = q[0];
        J[0] = gp - gn;
        J[1] = A * (dp[0] - dn[0]);
        J[2] = A * (dp[1] - dn[1]);
        J[3] = A * (dp[2] - dn[2]);
        J[4] = A * dp[3];
        J[5] = A * dp[4];
        J[6] = -A * dn[3];
        J[7] = -A * dn[4];
        return A * J[0];
    }
    if (kind == DIP_K_GPS) {
        const double g = dip_gauss(sh, x - q[4], y - q[5], dp);
        const double A = q[0];
        J[0] = g;
        J[1] = A * dp[0];
        J[2] = A * dp[1];
        J[3] = A * dp[2];
        J[4] = A * dp[3];
        J[5] = A * dp[4];
        return A * g;
    }
    if (kind == DIP_K_PDIP) {
        const double pp = dip_psf(psf, psf_side, x - q[1], y - q[2], dp);
        const double pn = dip_psf(psf, psf_side, x - q[3], y - q[4], dn);
        const double F = q[0];
        J[0] = pp - pn;
        J[1] = F * dp[0];
        J[2] = F * dp[1];
        J[3] = -F * dn[0];
        J[4] = -F * dn[1];
        return F * J[0];
    }
    const double pp = dip_psf(psf, psf_side, x - q[1], y - q[2], dp);
    J[0] = pp;
    J[1] = q[0] * dp[0];
    J[2] = q[0] * dp[1];
    return q[0] * pp;
}

/* Shape and model parameters of a fit's trial u (for GDIP the fit's u, see the top of this
 * file; for the others u is dip_model's own vector). Once per pass over the pixels. */
TIDE_HD static inline void dip_fit_shape(const double *u, int kind, dip_shape *sh) {
    for (int k = 0; k < DIP_MAXP; k++)
        sh->qp[k] = u[k];
    sh->rc = sh->rs = 0.0;
    if (kind == DIP_K_GDIP) {
        const double r = exp(u[6]);
        sh->rc = r * cos(u[7]);
        sh->rs = r * sin(u[7]);
        sh->qp[0] = exp(u[0]);
        sh->qp[4] = u[4] + sh->rc;
        sh->qp[5] = u[5] + sh->rs;
        sh->qp[6] = u[4] - sh->rc;
        sh->qp[7] = u[5] - sh->rs;
    }
    dip_shape_make(sh->qp, kind, sh);
}

/* Packed upper-triangle index of (a, b), a <= b. */
TIDE_HD static inline int dip_hidx(int a, int b) {
    return a * DIP_MAXP - a * (a - 1) / 2 + (b - a);
}

/* Add one pixel (value d, weight w > 0) to a lane's sums at the trial of dip_fit_shape. For
 * GDIP the Jacobian is carried to u by the chain rule: d/d ln A = A d/dA (= m), d/dxc = d/dxp +
 * d/dxn, d/d ln r = rc (d/dxp - d/dxn) + rs (d/dyp - d/dyn), d/dphi = -rs (...) + rc (...). */
TIDE_HD static inline void dip_accum(int kind, const dip_shape *sh, const float *psf, int psf_side,
                                     double x, double y, double d, double w, double *S) {
    double J[DIP_MAXP];
    const double m = dip_model(kind, sh->qp, sh, psf, psf_side, x, y, J);
    if (kind == DIP_K_GDIP) {
        const double ax = J[4] - J[6], ay = J[5] - J[7];
        J[0] = m;
        J[4] = J[4] + J[6];
        J[5] = J[5] + J[7];
        J[6] = sh->rc * ax + sh->rs * ay;
        J[7] = -sh->rs * ax + sh->rc * ay;
    }
    const double r = d - m;
    /* Only the model's own parameters: the other entries of J are zero and would add 0. */
    const int np = dip_nparam(kind);
    for (int a = 0; a < np; a++) {
        const double wa = w * J[a];
        for (int b = a; b < np; b++)
            S[dip_hidx(a, b)] += wa * J[b];
        S[DIP_NH + a] += wa * r;
    }
    S[DIP_NH + DIP_MAXP] += w * r * r;
    S[DIP_NH + DIP_MAXP + 1] += 1.0;
}

/* Cholesky factor of the np×np matrix M (full, row-major, DIP_MAXP stride) into L, holding
 * fixed (fix[k] = 1, row and column of L zero) every parameter whose pivot is below
 * 1e-10 of its diagonal: the factor of the submatrix of the others. */
TIDE_HD static inline void dip_chol(int np, const double *M, double *L, int *fix) {
    for (int i = 0; i < DIP_MAXP * DIP_MAXP; i++)
        L[i] = 0.0;
    for (int k = 0; k < DIP_MAXP; k++)
        fix[k] = 1;
    for (int k = 0; k < np; k++) {
        double piv = M[k * DIP_MAXP + k];
        for (int j = 0; j < k; j++)
            piv -= L[k * DIP_MAXP + j] * L[k * DIP_MAXP + j];
        const double diag = M[k * DIP_MAXP + k];
        fix[k] = !(diag > 0.0) || !(piv > 1e-10 * diag) || !isfinite(piv);
        if (fix[k])
            continue;
        const double lkk = sqrt(piv);
        L[k * DIP_MAXP + k] = lkk;
        for (int i = k + 1; i < np; i++) {
            double v = M[i * DIP_MAXP + k];
            for (int j = 0; j < k; j++)
                v -= L[i * DIP_MAXP + j] * L[k * DIP_MAXP + j];
            L[i * DIP_MAXP + k] = v / lkk;
        }
    }
}

/* Solve L L^T x = b for the parameters not fixed (x = 0 for fixed ones). */
TIDE_HD static inline void dip_cholsolve(int np, const double *L, const int *fix, const double *b,
                                         double *x) {
    double y[DIP_MAXP];
    for (int i = 0; i < np; i++) {
        if (fix[i]) {
            y[i] = 0.0;
            continue;
        }
        double v = b[i];
        for (int j = 0; j < i; j++)
            v -= L[i * DIP_MAXP + j] * y[j];
        y[i] = v / L[i * DIP_MAXP + i];
    }
    for (int i = np - 1; i >= 0; i--) {
        if (fix[i]) {
            x[i] = 0.0;
            continue;
        }
        double v = y[i];
        for (int j = i + 1; j < np; j++)
            v -= L[j * DIP_MAXP + i] * x[j];
        x[i] = v / L[i * DIP_MAXP + i];
    }
}

/* Levenberg–Marquardt state of one fit. */
typedef struct dip_lm {
    int kind, np, phase, status, done, niter, max_iter;
    double lambda, tol, chi2, npix, hi, pred;
    double p[DIP_MAXP], ptry[DIP_MAXP];
    double H[DIP_NH], g[DIP_MAXP];
} dip_lm;

/* Start a fit at q0 (amplitude ignored: the first pass fits it linearly). hi = side - 1. */
TIDE_HD static inline void dip_lm_init(dip_lm *st, int kind, const double *q0, int max_iter,
                                       double tol, double lambda0, int side) {
    st->kind = kind;
    st->np = dip_nparam(kind);
    st->phase = 0;
    st->status = TIDE_DIPOLE_MAXITER;
    st->done = 0;
    st->niter = 0;
    st->max_iter = max_iter;
    st->lambda = lambda0;
    st->tol = tol;
    st->chi2 = INFINITY;
    st->npix = 0.0;
    st->pred = 0.0;
    st->hi = (double)(side - 1);
    for (int k = 0; k < DIP_MAXP; k++)
        st->p[k] = st->ptry[k] = k < st->np ? q0[k] : 0.0;
    st->ptry[0] = kind == DIP_K_GDIP ? 0.0 : 1.0; /* amplitude 1 (GDIP fits ln A) */
}

/* Bounds of the GDIP half-separation r: below DIP_RMIN the lobes have merged (a fit that ends
 * there is TIDE_DIPOLE_UNRESOLVED); above the stamp side a lobe is far outside the stamp. */
#define DIP_LN_RMIN (-4.605170185988091) /* ln 0.01 pixel */

/* A fit whose accepted step lowered chi2 by less than DIP_CHI2_STAT (times the reduced chi2
 * when above 1) and whose next step predicts less again has converged for every statistical
 * purpose: the parameters are within ~0.03 sigma of the minimum of the local quadratic model
 * (the estimated distance to the minimum of MINUIT's MIGRAD, James & Roos 1975). Without it a
 * fit along a flat valley (overlapping lobes: moment well measured, separation not) ran to
 * the iteration limit on chi2 decreases of 1e-3 a step. */
#define DIP_CHI2_STAT 1e-3

/* Signal of the fitted dipole below which it is TIDE_DIPOLE_NOSIGNAL: S/N = sqrt(sum w m^2),
 * the chi2 the model removes from the data. */
#define DIP_MIN_SNR 8.0

/* A GDIP fit whose lobe separation is below DIP_UNRESOLVED Gaussian widths and below its own
 * error is TIDE_DIPOLE_UNRESOLVED. */
#define DIP_UNRESOLVED 0.25

/* Keep a trial inside the box where the model is meaningful: centres within a pixel of the
 * stamp, widths between 0.3 px and the stamp side. */
TIDE_HD static inline void dip_clamp(dip_lm *st, double *q) {
    const int ix = dip_ix(st->kind);
    if (st->kind == DIP_K_GDIP) {
        /* midpoint within a pixel of the stamp, half-separation in [0.01, side] */
        for (int k = 4; k < 6; k++)
            q[k] = fmin(fmax(q[k], -1.0), st->hi + 1.0);
        q[6] = fmin(fmax(q[6], DIP_LN_RMIN), log(st->hi + 1.0));
    } else {
        for (int k = ix; k < st->np; k++)
            q[k] = fmin(fmax(q[k], -1.0), st->hi + 1.0);
    }
    if (st->kind <= DIP_K_GPS) {
        const double lo = -1.2039728043259361, hi = log(st->hi + 1.0);
        q[1] = fmin(fmax(q[1], lo), hi);
        q[2] = fmin(fmax(q[2], lo), hi);
    }
}

/* Propose ptry from the sums at p with the current damping. Returns 0 or SINGULAR. */
TIDE_HD static inline int dip_lm_propose(dip_lm *st) {
    double M[DIP_MAXP * DIP_MAXP], L[DIP_MAXP * DIP_MAXP], dq[DIP_MAXP];
    int fix[DIP_MAXP];
    const int np = st->np;
    for (int a = 0; a < np; a++)
        for (int b = a; b < np; b++) {
            const double h = st->H[dip_hidx(a, b)];
            M[a * DIP_MAXP + b] = M[b * DIP_MAXP + a] = h;
        }
    for (int a = 0; a < np; a++)
        M[a * DIP_MAXP + a] *= 1.0 + st->lambda;
    dip_chol(np, M, L, fix);
    if (fix[0])
        return TIDE_DIPOLE_SINGULAR;
    dip_cholsolve(np, L, fix, st->g, dq);
    /* Decrease of chi2 the linear model predicts: 2 dq.g - dq.H.dq = dq.g + lambda dq.D.dq. */
    double pred = 0.0;
    for (int k = 0; k < np; k++)
        pred += dq[k] * (st->g[k] + st->lambda * st->H[dip_hidx(k, k)] * dq[k]);
    st->pred = pred;
    for (int k = 0; k < np; k++)
        st->ptry[k] = st->p[k] + dq[k];
    dip_clamp(st, st->ptry);
    return 0;
}

/* Take the merged sums S at ptry; set st->done when the fit has ended. */
TIDE_HD static inline void dip_lm_step(dip_lm *st, const double *S) {
    const double chi2 = S[DIP_NH + DIP_MAXP];
    if (st->phase == 0) {
        /* ptry had amplitude 1 and the model is linear in it: A = 1 + g0 / H00. */
        st->npix = S[DIP_NH + DIP_MAXP + 1];
        const double h00 = S[0];
        if (st->npix < 2.0 * st->np || !(h00 > 0.0) || !isfinite(chi2)) {
            st->status = TIDE_DIPOLE_BADINPUT;
            st->done = 1;
            return;
        }
        const double a = 1.0 + S[DIP_NH] / h00;
        if (st->kind == DIP_K_GDIP) {
            /* ln A: a negative best amplitude swaps the lobes (phi + pi) */
            if (!(a != 0.0) || !isfinite(a)) {
                st->status = TIDE_DIPOLE_BADINPUT;
                st->done = 1;
                return;
            }
            st->ptry[0] = log(fabs(a));
            if (a < 0.0)
                st->ptry[7] += 3.141592653589793;
        } else {
            st->ptry[0] = a;
        }
        st->phase = 1;
        return;
    }
    int take = 0, small = 0;
    if (st->phase == 1) {
        if (!isfinite(chi2)) {
            st->status = TIDE_DIPOLE_BADINPUT;
            st->done = 1;
            return;
        }
        take = 1;
        st->phase = 2;
    } else {
        st->niter++;
        if (chi2 < st->chi2) {
            /* Accepted. The gain ratio rho = actual / predicted decrease steers the damping
             * (Fletcher 1971; Madsen, Nielsen & Tingleff 2004, §3.2): a good model (rho >
             * 3/4) lowers it, a poor one (rho < 1/4: overshooting Gauss-Newton steps, as
             * when the model does not fit the data) raises it to at least 1e-3. */
            const double dchi = st->chi2 - chi2;
            const double rho = st->pred > 0.0 ? dchi / st->pred : 0.0;
            take = 1;
            if (rho > 0.75)
                st->lambda = fmax(st->lambda / 3.0, 1e-15);
            else if (rho < 0.25)
                st->lambda = fmax(st->lambda * 4.0, 1e-3);
            if (dchi < st->tol * fmax(chi2, 1.0)) {
                st->status = TIDE_DIPOLE_CONVERGED;
                st->done = 1;
            }
            small = dchi < DIP_CHI2_STAT * fmax(1.0, chi2 / fmax(st->npix - st->np, 1.0));
        } else {
            st->lambda *= 10.0;
            if (st->lambda > 1e10) {
                st->status = TIDE_DIPOLE_CONVERGED;
                st->done = 1;
            }
        }
    }
    if (take) {
        for (int k = 0; k < DIP_MAXP; k++)
            st->p[k] = st->ptry[k];
        for (int k = 0; k < DIP_NH; k++)
            st->H[k] = S[k];
        for (int k = 0; k < DIP_MAXP; k++)
            st->g[k] = S[DIP_NH + k];
        st->chi2 = chi2;
    }
    if (st->done)
        return;
    if (st->niter >= st->max_iter) {
        st->status = TIDE_DIPOLE_MAXITER;
        st->done = 1;
        return;
    }
    if (dip_lm_propose(st)) {
        st->status = TIDE_DIPOLE_SINGULAR;
        st->done = 1;
        return;
    }
    if (small && st->pred < DIP_CHI2_STAT * fmax(1.0, st->chi2 / fmax(st->npix - st->np, 1.0))) {
        st->status = TIDE_DIPOLE_CONVERGED; /* statistically converged, see DIP_CHI2_STAT */
        st->done = 1;
    }
}

/* The fit's parameters at the solution in dip_model's order, qp, and their errors err (square
 * roots of the diagonal of the covariance H^-1 over the constrained parameters, carried from
 * u to qp through the covariance for GDIP; NaN for unconstrained ones); *sep_err: error of the
 * lobe separation (GDIP; NaN otherwise). Returns 1 when the amplitude or a position is
 * unconstrained (the fit is singular). */
TIDE_HD static inline int dip_lm_errors(const dip_lm *st, double *qp, double *err,
                                        double *sep_err) {
    double M[DIP_MAXP * DIP_MAXP], L[DIP_MAXP * DIP_MAXP], C[DIP_MAXP * DIP_MAXP];
    int fix[DIP_MAXP];
    const int np = st->np, ix = dip_ix(st->kind);
    for (int a = 0; a < np; a++)
        for (int b = a; b < np; b++)
            M[a * DIP_MAXP + b] = M[b * DIP_MAXP + a] = st->H[dip_hidx(a, b)];
    dip_chol(np, M, L, fix);
    int bad = 0;
    for (int k = 0; k < np; k++) {
        double e[DIP_MAXP], x[DIP_MAXP];
        for (int j = 0; j < np; j++)
            e[j] = j == k ? 1.0 : 0.0;
        dip_cholsolve(np, L, fix, e, x);
        for (int j = 0; j < np; j++)
            C[j * DIP_MAXP + k] = fix[k] || fix[j] ? NAN : x[j];
        if (fix[k] && (k == 0 || k >= ix))
            bad = 1;
    }
    dip_shape sh;
    dip_fit_shape(st->p, st->kind, &sh);
    for (int k = 0; k < DIP_MAXP; k++)
        qp[k] = sh.qp[k];
    for (int k = 0; k < np; k++)
        err[k] = C[k * DIP_MAXP + k] > 0.0 ? sqrt(C[k * DIP_MAXP + k]) : NAN;
    *sep_err = NAN;
    if (st->kind == DIP_K_GDIP) {
        /* d(xp, yp, xn, yn)/d(xc, yc, ln r, phi) */
        const double T[4][4] = {{1.0, 0.0, sh.rc, -sh.rs},
                                {0.0, 1.0, sh.rs, sh.rc},
                                {1.0, 0.0, -sh.rc, sh.rs},
                                {0.0, 1.0, -sh.rs, -sh.rc}};
        for (int i = 0; i < 4; i++) {
            double v = 0.0;
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++)
                    v += T[i][a] * C[(4 + a) * DIP_MAXP + 4 + b] * T[i][b];
            err[4 + i] = v > 0.0 ? sqrt(v) : NAN;
        }
        err[0] *= sh.qp[0];
        *sep_err = 2.0 * exp(st->p[6]) * err[6];
    }
    return bad;
}

/* 3×3 matched S/N of stamp pixel t (box filter, white noise): sum w d / sqrt(sum w) over the
 * valid neighbours; NaN when none is valid. */
TIDE_HD static inline double dip_score(const float *pix, const float *var, const uint16_t *mask,
                                       uint16_t bits, int side, int t) {
    const int u = t % side, v = t / side;
    double swd = 0.0, sw = 0.0;
    for (int j = v - 1; j <= v + 1; j++) {
        if (j < 0 || j >= side)
            continue;
        for (int i = u - 1; i <= u + 1; i++) {
            if (i < 0 || i >= side)
                continue;
            const int k = j * side + i;
            const double w = dip_weight(pix[k], var[k], mask ? mask[k] : 0, bits);
            if (w > 0.0) {
                swd += w * (double)pix[k];
                sw += w;
            }
        }
    }
    return sw > 0.0 ? swd / sqrt(sw) : NAN;
}

/* Order for the start pixels: larger score first, lower index on ties (order-independent). */
TIDE_HD static inline int dip_better(double s, int t, double s2, int t2) {
    if (t2 < 0 || isnan(s2))
        return t >= 0 && !isnan(s);
    if (t < 0 || isnan(s))
        return 0;
    return s > s2 || (s == s2 && t < t2);
}

/* Starting parameters of @p kind from the start pixels (stamp indices) tp (positive or
 * brightest |S/N|) and tn (negative). */
TIDE_HD static inline void dip_start(int kind, int side, int tp, int tn, double sigma, double *q) {
    for (int k = 0; k < DIP_MAXP; k++)
        q[k] = 0.0;
    q[0] = 1.0;
    const int ix = dip_ix(kind);
    q[ix] = (double)(tp % side);
    q[ix + 1] = (double)(tp / side);
    if (kind == DIP_K_GDIP || kind == DIP_K_PDIP) {
        q[ix + 2] = (double)(tn % side);
        q[ix + 3] = (double)(tn / side);
    }
    if (kind <= DIP_K_GPS) {
        /* Slightly elliptical so the angle has a gradient from the first step. */
        q[1] = log(sigma * 1.05);
        q[2] = log(sigma / 1.05);
        q[3] = 0.0;
    }
    if (kind == DIP_K_GDIP) {
        /* to u: ln A (A = 1), midpoint, ln half-separation, angle from negative to positive */
        const double dx = 0.5 * (q[4] - q[6]), dy = 0.5 * (q[5] - q[7]);
        q[0] = 0.0;
        q[4] -= dx;
        q[5] -= dy;
        q[6] = log(fmax(sqrt(dx * dx + dy * dy), 0.5));
        q[7] = atan2(dy, dx);
    }
}

/* Why a fit that ran is not a dipole, or 0: TIDE_DIPOLE_NOSIGNAL when the model's S/N
 * sqrt(sum w m^2) (H00 for GDIP, whose J0 = m; F^2 H00 for PDIP) is below DIP_MIN_SNR;
 * TIDE_DIPOLE_SINGLESIGN when a lobe's centre lies outside the stamp (the data hold one sign:
 * the fit pushed the other lobe away); TIDE_DIPOLE_UNRESOLVED (GDIP) when the separation is
 * smaller than its own error or the lobes merged (r at its floor). */
TIDE_HD static inline int dip_reason(const dip_lm *dp, const double *qp, double sep_err) {
    const double snr = dp->kind == DIP_K_GDIP ? sqrt(fmax(dp->H[0], 0.0))
                                              : fabs(qp[0]) * sqrt(fmax(dp->H[0], 0.0));
    if (!(snr >= DIP_MIN_SNR))
        return TIDE_DIPOLE_NOSIGNAL;
    const int ix = dip_ix(dp->kind);
    for (int k = ix; k < ix + 4; k++)
        if (!(qp[k] >= -0.5 && qp[k] <= dp->hi + 0.5))
            return TIDE_DIPOLE_SINGLESIGN;
    if (dp->kind == DIP_K_GDIP) {
        const double sep = 2.0 * exp(dp->p[6]), sig = exp(0.5 * (qp[1] + qp[2]));
        if (dp->p[6] <= DIP_LN_RMIN + 1e-9 || (sep < DIP_UNRESOLVED * sig && !(sep >= sep_err)))
            return TIDE_DIPOLE_UNRESOLVED;
    }
    return 0;
}

/* Fill the dipole's fields of one stamp's output (all but ps_* and chi2_ps) from its
 * finished fit; (ox, oy) turn stamp coordinates into the frame's. */
TIDE_HD static inline void dip_finish_dipole(const dip_lm *dp, double ox, double oy,
                                             tide_dipole_fit *o) {
    double e[DIP_MAXP], qp[DIP_MAXP], se;
    const double nan = NAN;
    o->npix = (int64_t)dp->npix;
    o->niter = dp->niter;
    o->status = dp->status;
    o->xpos = o->ypos = o->xneg = o->yneg = o->flux = nan;
    o->xpos_err = o->ypos_err = o->xneg_err = o->yneg_err = o->flux_err = nan;
    o->sigma1 = o->sigma2 = o->theta = o->sigma1_err = o->sigma2_err = o->theta_err = nan;
    o->chi2_dip = nan;
    if (dp->status != TIDE_DIPOLE_BADINPUT && dp->phase == 2) {
        const int ix = dip_ix(dp->kind);
        if (dip_lm_errors(dp, qp, e, &se) && dp->status == TIDE_DIPOLE_CONVERGED)
            o->status = TIDE_DIPOLE_SINGULAR;
        const int why = dip_reason(dp, qp, se);
        if (why)
            o->status = why;
        const int sw = qp[0] < 0.0; /* a negative amplitude: swap the lobes */
        const int a = sw ? ix + 2 : ix, b = sw ? ix : ix + 2;
        o->flux = fabs(qp[0]);
        o->flux_err = e[0];
        o->xpos = qp[a] + ox;
        o->ypos = qp[a + 1] + oy;
        o->xneg = qp[b] + ox;
        o->yneg = qp[b + 1] + oy;
        o->xpos_err = e[a];
        o->ypos_err = e[a + 1];
        o->xneg_err = e[b];
        o->yneg_err = e[b + 1];
        o->chi2_dip = dp->chi2;
        if (dp->kind == DIP_K_GDIP) {
            o->sigma1 = exp(qp[1]);
            o->sigma2 = exp(qp[2]);
            o->sigma1_err = o->sigma1 * e[1];
            o->sigma2_err = o->sigma2 * e[2];
            double th = fmod(qp[3], 3.141592653589793);
            if (th <= -1.5707963267948966)
                th += 3.141592653589793;
            if (th > 1.5707963267948966)
                th -= 3.141592653589793;
            o->theta = th;
            o->theta_err = e[3];
        }
    }
}

/* Fill the point source's fields (ps_* and chi2_ps) of one stamp's output; NaN and status
 * BADINPUT when it was not fitted. */
TIDE_HD static inline void dip_finish_ps(const dip_lm *ps, int fit_ps, double ox, double oy,
                                         tide_dipole_fit *o) {
    double e[DIP_MAXP], qp[DIP_MAXP], se;
    const double nan = NAN;
    o->chi2_ps = nan;
    o->ps_x = o->ps_y = o->ps_flux = o->ps_x_err = o->ps_y_err = o->ps_flux_err = nan;
    o->ps_status = TIDE_DIPOLE_BADINPUT;
    o->ps_niter = 0;
    if (fit_ps) {
        o->ps_status = ps->status;
        o->ps_niter = ps->niter;
        if (ps->status != TIDE_DIPOLE_BADINPUT && ps->phase == 2) {
            const int ix = dip_ix(ps->kind);
            if (dip_lm_errors(ps, qp, e, &se) && ps->status == TIDE_DIPOLE_CONVERGED)
                o->ps_status = TIDE_DIPOLE_SINGULAR;
            o->ps_flux = ps->p[0];
            o->ps_flux_err = e[0];
            o->ps_x = ps->p[ix] + ox;
            o->ps_y = ps->p[ix + 1] + oy;
            o->ps_x_err = e[ix];
            o->ps_y_err = e[ix + 1];
            o->chi2_ps = ps->chi2;
        }
    }
}

#endif
