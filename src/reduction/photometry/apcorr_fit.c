/* apcorr_fit.c — small weighted least squares by normal equations and Cholesky, with
 * iterated sigma clipping (host; at most 15 unknowns, a few hundred points). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "apcorr_internal.h"
#include "apcorr_math.h"
#include "tide/status.h"

/* The lower Cholesky factor of the m × m SPD G, in place; -1 if not positive definite. */
static int cholesky_factor(int m, double *G) {
    for (int j = 0; j < m; j++) {
        double d = G[j * m + j];
        for (int k = 0; k < j; k++)
            d -= G[j * m + k] * G[j * m + k];
        if (!(d > 1e-300))
            return -1;
        d = sqrt(d);
        G[j * m + j] = d;
        for (int i = j + 1; i < m; i++) {
            double s = G[i * m + j];
            for (int k = 0; k < j; k++)
                s -= G[i * m + k] * G[j * m + k];
            G[i * m + j] = s / d;
        }
    }
    return 0;
}

/* h = (L L^T)^-1 h for the lower factor L (m × m). */
static void cholesky_substitute(int m, const double *L, double *h) {
    for (int i = 0; i < m; i++) { /* L y = h */
        double s = h[i];
        for (int k = 0; k < i; k++)
            s -= L[i * m + k] * h[k];
        h[i] = s / L[i * m + i];
    }
    for (int i = m - 1; i >= 0; i--) { /* Lᵀ c = y */
        double s = h[i];
        for (int k = i + 1; k < m; k++)
            s -= L[k * m + i] * h[k];
        h[i] = s / L[i * m + i];
    }
}

/* Solve the m × m SPD system G c = h in place (Cholesky); -1 if not positive definite. */
static int cholesky_solve(int m, double *G, double *h) {
    if (cholesky_factor(m, G))
        return -1;
    cholesky_substitute(m, G, h);
    return 0;
}

/* The normal matrix sum_i T_i T_i^T over the kept points (all when keep is NULL), full. */
static int normal_matrix(const tide_apcorr_design *d, const unsigned char *keep, double *G) {
    const int m = d->m;
    memset(G, 0, sizeof(double) * (size_t)m * m);
    int nk = 0;
    for (int i = 0; i < d->n; i++) {
        if (keep && !keep[i])
            continue;
        const double *t = d->T + (size_t)i * m;
        for (int a = 0; a < m; a++)
            for (int b = 0; b <= a; b++)
                G[a * m + b] += t[a] * t[b];
        nk++;
    }
    for (int a = 0; a < m; a++)
        for (int b = a + 1; b < m; b++)
            G[a * m + b] = G[b * m + a];
    return nk;
}

int tide_apcorr_design_make(int n, const double *u, const double *v, int degree,
                            tide_apcorr_design *d) {
    memset(d, 0, sizeof *d);
    double t[TIDE_APCORR_MAX_COEF];
    const int m = tide_apcorr_terms(degree, 0.0, 0.0, t);
    d->n = n;
    d->m = m;
    d->T = malloc(sizeof(double) * ((size_t)n * m + 1));
    d->L = malloc(sizeof(double) * (size_t)m * m);
    if (!d->T || !d->L) {
        tide_apcorr_design_free(d);
        return tide_error(TIDE_E_NOMEM, "aperture corrections: fit design of %d points", n);
    }
    for (int i = 0; i < n; i++)
        tide_apcorr_terms(degree, u[i], v[i], d->T + (size_t)i * m);
    normal_matrix(d, NULL, d->L);
    if (n < m || cholesky_factor(m, d->L)) {
        free(d->L);
        d->L = NULL;
    }
    return 0;
}

void tide_apcorr_design_free(tide_apcorr_design *d) {
    free(d->T);
    free(d->L);
    memset(d, 0, sizeof *d);
}

/* The polynomial of @p coef at point i. */
static double model_at(const tide_apcorr_design *d, const double *coef, int i) {
    const double *t = d->T + (size_t)i * d->m;
    double f = 0.0;
    for (int a = 0; a < d->m; a++)
        f += coef[a] * t[a];
    return f;
}

int tide_apcorr_fit_poly(const tide_apcorr_design *d, const double *val, double sigma, int iters,
                         unsigned char *keep, double *coef, double *rms, int *nkept) {
    const int n = d->n, m = d->m;
    for (int it = 0; it <= iters; it++) {
        double G[TIDE_APCORR_MAX_COEF * TIDE_APCORR_MAX_COEF], h[TIDE_APCORR_MAX_COEF];
        memset(h, 0, sizeof h);
        int nk = 0;
        for (int i = 0; i < n; i++) {
            if (!keep[i])
                continue;
            const double *t = d->T + (size_t)i * m;
            for (int a = 0; a < m; a++)
                h[a] += t[a] * val[i];
            nk++;
        }
        if (nk < m)
            return -1;
        if (nk == n && d->L) { /* every point: the design's factor, the same bits */
            cholesky_substitute(m, d->L, h);
        } else {
            normal_matrix(d, keep, G);
            if (cholesky_solve(m, G, h))
                return -1;
        }
        memcpy(coef, h, sizeof(double) * m);
        double ss = 0.0;
        for (int i = 0; i < n; i++) {
            if (!keep[i])
                continue;
            const double f = model_at(d, coef, i);
            ss += (val[i] - f) * (val[i] - f);
        }
        const double r = nk > m ? sqrt(ss / (nk - m)) : 0.0;
        *rms = r;
        *nkept = nk;
        if (it == iters || !(r > 0.0))
            break;
        int changed = 0;
        for (int i = 0; i < n; i++) {
            if (!keep[i] || !isfinite(val[i]))
                continue;
            if (fabs(val[i] - model_at(d, coef, i)) > sigma * r && nk - changed > m + 1) {
                keep[i] = 0;
                changed++;
            }
        }
        if (!changed)
            break;
    }
    return 0;
}

int tide_apcorr_parabola_max(int n, const double *x, const double *y, double *xmax) {
    if (n < 3)
        return -1;
    /* centre the abscissae for conditioning */
    double xm = 0.0;
    for (int i = 0; i < n; i++)
        xm += x[i];
    xm /= n;
    double G[9] = {0}, h[3] = {0};
    for (int i = 0; i < n; i++) {
        const double d = x[i] - xm, t[3] = {1.0, d, d * d};
        for (int a = 0; a < 3; a++) {
            h[a] += t[a] * y[i];
            for (int b = 0; b < 3; b++)
                G[a * 3 + b] += t[a] * t[b];
        }
    }
    if (cholesky_solve(3, G, h))
        return -1;
    if (!(h[2] < 0.0))
        return -1;
    *xmax = xm - h[1] / (2.0 * h[2]);
    return 0;
}
