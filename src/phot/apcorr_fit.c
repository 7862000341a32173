/* apcorr_fit.c — small weighted least squares by normal equations and Cholesky, with
 * iterated sigma clipping (host; at most 15 unknowns, a few hundred points). */
#include <math.h>
#include <string.h>
#include "phot/apcorr_internal.h"
#include "phot/apcorr_math.h"

/* Solve the m × m SPD system G c = h in place (Cholesky); -1 if not positive definite. */
static int cholesky_solve(int m, double *G, double *h) {
    for (int j = 0; j < m; j++) {
        double d = G[j * m + j];
        for (int k = 0; k < j; k++) d -= G[j * m + k] * G[j * m + k];
        if (!(d > 1e-300)) return -1;
        d = sqrt(d);
        G[j * m + j] = d;
        for (int i = j + 1; i < m; i++) {
            double s = G[i * m + j];
            for (int k = 0; k < j; k++) s -= G[i * m + k] * G[j * m + k];
            G[i * m + j] = s / d;
        }
    }
    for (int i = 0; i < m; i++) { /* L y = h */
        double s = h[i];
        for (int k = 0; k < i; k++) s -= G[i * m + k] * h[k];
        h[i] = s / G[i * m + i];
    }
    for (int i = m - 1; i >= 0; i--) { /* Lᵀ c = y */
        double s = h[i];
        for (int k = i + 1; k < m; k++) s -= G[k * m + i] * h[k];
        h[i] = s / G[i * m + i];
    }
    return 0;
}

int tide_apcorr_fit_poly(int n, const double *u, const double *v, const double *val,
                         int degree, double sigma, int iters, unsigned char *keep, double *coef,
                         double *rms, int *nkept) {
    double t[TIDE_APCORR_MAX_COEF];
    const int m = tide_apcorr_terms(degree, 0.0, 0.0, t);
    for (int it = 0; it <= iters; it++) {
        double G[TIDE_APCORR_MAX_COEF * TIDE_APCORR_MAX_COEF], h[TIDE_APCORR_MAX_COEF];
        memset(G, 0, sizeof G);
        memset(h, 0, sizeof h);
        int nk = 0;
        for (int i = 0; i < n; i++) {
            if (!keep[i]) continue;
            tide_apcorr_terms(degree, u[i], v[i], t);
            for (int a = 0; a < m; a++) {
                h[a] += t[a] * val[i];
                for (int b = 0; b <= a; b++) G[a * m + b] += t[a] * t[b];
            }
            nk++;
        }
        if (nk < m) return -1;
        for (int a = 0; a < m; a++)
            for (int b = a + 1; b < m; b++) G[a * m + b] = G[b * m + a];
        if (cholesky_solve(m, G, h)) return -1;
        memcpy(coef, h, sizeof(double) * m);
        double ss = 0.0;
        for (int i = 0; i < n; i++) {
            if (!keep[i]) continue;
            tide_apcorr_terms(degree, u[i], v[i], t);
            double f = 0.0;
            for (int a = 0; a < m; a++) f += coef[a] * t[a];
            ss += (val[i] - f) * (val[i] - f);
        }
        const double r = nk > m ? sqrt(ss / (nk - m)) : 0.0;
        *rms = r;
        *nkept = nk;
        if (it == iters || !(r > 0.0)) break;
        int changed = 0;
        for (int i = 0; i < n; i++) {
            if (!keep[i] || !isfinite(val[i])) continue;
            tide_apcorr_terms(degree, u[i], v[i], t);
            double f = 0.0;
            for (int a = 0; a < m; a++) f += coef[a] * t[a];
            if (fabs(val[i] - f) > sigma * r && nk - changed > m + 1) {
                keep[i] = 0;
                changed++;
            }
        }
        if (!changed) break;
    }
    return 0;
}

int tide_apcorr_parabola_max(int n, const double *x, const double *y, double *xmax) {
    if (n < 3) return -1;
    /* centre the abscissae for conditioning */
    double xm = 0.0;
    for (int i = 0; i < n; i++) xm += x[i];
    xm /= n;
    double G[9] = {0}, h[3] = {0};
    for (int i = 0; i < n; i++) {
        const double d = x[i] - xm, t[3] = {1.0, d, d * d};
        for (int a = 0; a < 3; a++) {
            h[a] += t[a] * y[i];
            for (int b = 0; b < 3; b++) G[a * 3 + b] += t[a] * t[b];
        }
    }
    if (cholesky_solve(3, G, h)) return -1;
    if (!(h[2] < 0.0)) return -1;
    *xmax = xm - h[1] / (2.0 * h[2]);
    return 0;
}
