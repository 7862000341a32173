/* subtract_solve.c — the host solve of the subtraction's normal equations: Jacobi scaling,
 * Cholesky, a condition-number estimate, and a ridge when the system is ill-conditioned.
 * The systems are small (a few hundred unknowns), so O(n^3) on one core is negligible. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "diff/subtract_internal.h"
#include "tide/status.h"

/* In-place Cholesky A = L L^T (lower triangle); 0 on success, -1 if not positive. */
static int cholesky(int n, double *a) {
    for (int j = 0; j < n; j++) {
        double d = a[(size_t)j * n + j];
        for (int k = 0; k < j; k++)
            d -= a[(size_t)j * n + k] * a[(size_t)j * n + k];
        if (!(d > 0.0) || !isfinite(d))
            return -1;
        d = sqrt(d);
        a[(size_t)j * n + j] = d;
        for (int i = j + 1; i < n; i++) {
            double s = a[(size_t)i * n + j];
            for (int k = 0; k < j; k++)
                s -= a[(size_t)i * n + k] * a[(size_t)j * n + k];
            a[(size_t)i * n + j] = s / d;
        }
    }
    return 0;
}

/* Solve L L^T x = b in place. */
static void chol_solve(int n, const double *l, double *x) {
    for (int i = 0; i < n; i++) {
        double s = x[i];
        for (int k = 0; k < i; k++)
            s -= l[(size_t)i * n + k] * x[k];
        x[i] = s / l[(size_t)i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = x[i];
        for (int k = i + 1; k < n; k++)
            s -= l[(size_t)k * n + i] * x[k];
        x[i] = s / l[(size_t)i * n + i];
    }
}

/* Normalise v; returns its former 2-norm. */
static double normalise(int n, double *v) {
    double q = 0.0;
    for (int i = 0; i < n; i++)
        q += v[i] * v[i];
    q = sqrt(q);
    if (q > 0.0)
        for (int i = 0; i < n; i++)
            v[i] /= q;
    return q;
}

/* Largest eigenvalue of S by power iteration, smallest by inverse iteration with L. */
static double condition(int n, const double *s, const double *l, double *v, double *w) {
    double lmax = 0.0, inv = 0.0;
    for (int i = 0; i < n; i++)
        v[i] = 1.0 + 0.01 * (i % 7);
    normalise(n, v);
    for (int it = 0; it < 30; it++) {
        for (int i = 0; i < n; i++) {
            double a = 0.0;
            for (int k = 0; k < n; k++)
                a += s[(size_t)i * n + k] * v[k];
            w[i] = a;
        }
        lmax = normalise(n, w);
        memcpy(v, w, (size_t)n * sizeof *v);
    }
    for (int i = 0; i < n; i++)
        v[i] = 1.0 - 0.01 * (i % 5);
    normalise(n, v);
    for (int it = 0; it < 30; it++) {
        chol_solve(n, l, v);
        inv = normalise(n, v);
    }
    return inv > 0.0 ? lmax * inv : INFINITY;
}

int tide_sub_solve(int n, const double *A, const double *rhs, double *x, double *cond,
                   int *regularised, const unsigned char *ridge_on) {
    size_t nn = (size_t)n * (size_t)n;
    double *s = malloc(nn * sizeof *s), *l = malloc(nn * sizeof *l);
    double *d = malloc((size_t)n * 3 * sizeof *d);
    if (!s || !l || !d) {
        free(s);
        free(l);
        free(d);
        return tide_error(TIDE_E_NOMEM, "subtract: solve of %d unknowns", n);
    }
    double *v = d + n, *w = d + 2 * n;
    /* Jacobi scaling: S = D A D with D = diag(A)^-1/2 (an unused unknown gets D = 1). */
    for (int i = 0; i < n; i++) {
        double a = A[(size_t)i * n + i];
        d[i] = a > 0.0 ? 1.0 / sqrt(a) : 1.0;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            s[(size_t)i * n + j] = A[(size_t)i * n + j] * d[i] * d[j];
    *regularised = 0;
    *cond = INFINITY;
    double ridge = 0.0;
    int st = TIDE_E_RANGE;
    for (int attempt = 0; attempt < 14; attempt++) {
        memcpy(l, s, nn * sizeof *l);
        for (int i = 0; i < n; i++)
            l[(size_t)i * n + i] += !ridge_on || ridge_on[i] ? ridge : 0.0;
        if (cholesky(n, l) == 0) {
            /* condition of the matrix actually solved */
            double *sr = malloc(nn * sizeof *sr);
            if (!sr) {
                st = tide_error(TIDE_E_NOMEM, "subtract: condition estimate");
                break;
            }
            memcpy(sr, s, nn * sizeof *sr);
            for (int i = 0; i < n; i++)
                sr[(size_t)i * n + i] += !ridge_on || ridge_on[i] ? ridge : 0.0;
            double c = condition(n, sr, l, v, w);
            free(sr);
            if (attempt == 0)
                *cond = c;
            if (c <= 1e12) {
                if (attempt > 0)
                    *regularised = 1;
                st = TIDE_OK;
                break;
            }
        }
        ridge = ridge == 0.0 ? 1e-12 : ridge * 10.0;
    }
    if (st == TIDE_OK) {
        for (int i = 0; i < n; i++)
            x[i] = rhs[i] * d[i];
        chol_solve(n, l, x);
        for (int i = 0; i < n; i++)
            x[i] *= d[i];
    } else if (st == TIDE_E_RANGE) {
        st = tide_error(TIDE_E_RANGE, "subtract: normal equations of %d unknowns could not be "
                        "solved even with a ridge of %g", n, ridge);
    }
    free(s);
    free(l);
    free(d);
    return st;
}
