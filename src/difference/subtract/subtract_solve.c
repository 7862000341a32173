/* subtract_solve.c — the host solve of the subtraction's normal equations: Jacobi scaling,
 * Cholesky, a condition-number estimate, and a ridge when the system is ill-conditioned.
 * The systems are small (a few hundred unknowns) but solved a few times per subtraction, so
 * the O(n^3) and O(n^2) loops are written to vectorise: inner products with four partial
 * sums (a fixed order: the result does not depend on the machine's thread count), the back
 * substitution by rows of L (contiguous) instead of by columns. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "subtract_internal.h"
#include "tide/status.h"

/* sum_k a[k] b[k], k < n, with four interleaved partial sums (independent chains, so the
 * compiler can keep them in vector registers; the order is fixed by n alone). */
static inline double dot4(const double *a, const double *b, int n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += a[k] * b[k];
        s1 += a[k + 1] * b[k + 1];
        s2 += a[k + 2] * b[k + 2];
        s3 += a[k + 3] * b[k + 3];
    }
    for (; k < n; k++)
        s0 += a[k] * b[k];
    return (s0 + s1) + (s2 + s3);
}

/* In-place Cholesky A = L L^T (lower triangle, row-major; left-looking by rows, so every
 * inner product runs over two contiguous row prefixes); 0 on success, -1 if not positive.
 * Rows go in blocks of CHOL_BLK: a block's entries left of the block depend only on its own
 * row and on finished rows, so those rows run in parallel; then the block's triangle in
 * order. Every entry is the same expression whichever thread computes it, so the factor does
 * not depend on the thread count. */
#define CHOL_BLK 32
static int cholesky(int n, double *a) {
    for (int i0 = 0; i0 < n; i0 += CHOL_BLK) {
        int i1 = i0 + CHOL_BLK < n ? i0 + CHOL_BLK : n;
#pragma omp parallel for schedule(static) if (i0 >= 64)
        for (int i = i0; i < i1; i++) {
            double *ri = a + (size_t)i * n;
            for (int j = 0; j < i0; j++) {
                const double *rj = a + (size_t)j * n;
                ri[j] = (ri[j] - dot4(ri, rj, j)) / rj[j];
            }
        }
        for (int i = i0; i < i1; i++) {
            double *ri = a + (size_t)i * n;
            for (int j = i0; j < i; j++) {
                const double *rj = a + (size_t)j * n;
                ri[j] = (ri[j] - dot4(ri, rj, j)) / rj[j];
            }
            double d = ri[i] - dot4(ri, ri, i);
            if (!(d > 0.0) || !isfinite(d))
                return -1;
            ri[i] = sqrt(d);
        }
    }
    return 0;
}

/* Solve L L^T x = b in place for the leading m x m block of the n x n factor l. */
static void chol_solve(int n, int m, const double *l, double *x) {
    for (int i = 0; i < m; i++) {
        const double *ri = l + (size_t)i * n;
        x[i] = (x[i] - dot4(ri, x, i)) / ri[i];
    }
    /* L^T x = y by rows of L: once x[i] is final, remove its term from the earlier rows */
    for (int i = m - 1; i >= 0; i--) {
        const double *ri = l + (size_t)i * n;
        x[i] /= ri[i];
        double xi = x[i];
        for (int k = 0; k < i; k++)
            x[k] -= ri[k] * xi;
    }
}

/* Condition number of the symmetric positive definite S in the 1-norm, ||S||_1 ||S^-1||_1,
 * with ||S^-1||_1 from Hager's estimator (Hager 1984, SIAM J. Sci. Stat. Comput. 5, 311) as
 * refined by Higham (1988, ACM TOMS 14, 381; LAPACK's dlacn2/dpocon): a few solves with the
 * factor L instead of tens of power and inverse iterations. It is a lower bound, in practice
 * within a factor of a few; it only meets a threshold of 1e12 and the header's KCOND. */
static double condition(int n, const double *s, const double *l, double *v, double *w) {
    double snorm = 0.0; /* ||S||_1: the largest column sum (S is symmetric: rows) */
    for (int i = 0; i < n; i++) {
        const double *r = s + (size_t)i * n;
        double c = 0.0;
        for (int j = 0; j < n; j++)
            c += fabs(r[j]);
        snorm = c > snorm ? c : snorm;
    }
    double est = 0.0;
    int jlast = -1;
    for (int i = 0; i < n; i++)
        v[i] = 1.0 / n;
    for (int it = 0; it < 5; it++) {
        chol_solve(n, n, l, v); /* y = S^-1 x */
        double y1 = 0.0;
        for (int i = 0; i < n; i++)
            y1 += fabs(v[i]);
        if (it > 0 && y1 <= est)
            break; /* no better vertex */
        est = y1;
        for (int i = 0; i < n; i++) /* z = S^-T sign(y) = S^-1 sign(y) */
            w[i] = v[i] >= 0.0 ? 1.0 : -1.0;
        chol_solve(n, n, l, w);
        int j = 0;
        for (int i = 1; i < n; i++)
            j = fabs(w[i]) > fabs(w[j]) ? i : j;
        double ztx = 0.0; /* z^T x: the mean of z for the first x, z_jlast for x = e_jlast */
        if (it == 0)
            for (int i = 0; i < n; i++)
                ztx += w[i] / n;
        else
            ztx = w[jlast];
        if (j == jlast || fabs(w[j]) <= ztx)
            break; /* a local maximum of ||S^-1 x||_1 on the unit ball */
        for (int i = 0; i < n; i++)
            v[i] = i == j ? 1.0 : 0.0;
        jlast = j;
    }
    /* Higham's alternative vector guards against the estimator's rare gross underestimates */
    for (int i = 0; i < n; i++)
        v[i] = (i % 2 ? -1.0 : 1.0) * (1.0 + (n > 1 ? (double)i / (n - 1) : 0.0));
    chol_solve(n, n, l, v);
    double alt = 0.0;
    for (int i = 0; i < n; i++)
        alt += fabs(v[i]);
    alt = 2.0 * alt / (3.0 * n);
    est = alt > est ? alt : est;
    return est > 0.0 && isfinite(est) ? snorm * est : INFINITY;
}

int tide_sub_chol_factor(int n, const double *A, const unsigned char *ridge_on, tide_sub_chol *f) {
    memset(f, 0, sizeof *f);
    size_t nn = (size_t)n * (size_t)n;
    double *s = malloc(nn * sizeof *s), *l = malloc(nn * sizeof *l);
    double *d = malloc((size_t)n * 4 * sizeof *d);
    if (!s || !l || !d) {
        free(s);
        free(l);
        free(d);
        return tide_error(TIDE_E_NOMEM, "subtract: solve of %d unknowns", n);
    }
    double *v = d + n, *w = d + 2 * n, *sd = d + 3 * n;
    /* Jacobi scaling: S = D A D with D = diag(A)^-1/2 (an unused unknown gets D = 1). */
    for (int i = 0; i < n; i++) {
        double a = A[(size_t)i * n + i];
        d[i] = a > 0.0 ? 1.0 / sqrt(a) : 1.0;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            s[(size_t)i * n + j] = A[(size_t)i * n + j] * d[i] * d[j];
    for (int i = 0; i < n; i++)
        sd[i] = s[(size_t)i * n + i];
    f->cond = INFINITY;
    double ridge = 0.0;
    int st = TIDE_E_RANGE;
    for (int attempt = 0; attempt < 14; attempt++) {
        /* the ridge goes on S's diagonal for the attempt and comes off after it */
        for (int i = 0; i < n; i++)
            s[(size_t)i * n + i] = sd[i] + (!ridge_on || ridge_on[i] ? ridge : 0.0);
        memcpy(l, s, nn * sizeof *l);
        int ok = cholesky(n, l) == 0;
        double c = ok ? condition(n, s, l, v, w) : INFINITY; /* of the matrix solved */
        for (int i = 0; i < n; i++)
            s[(size_t)i * n + i] = sd[i];
        if (ok && attempt == 0)
            f->cond = c;
        if (ok && c <= 1e12) {
            f->regularised = attempt > 0;
            st = TIDE_OK;
            break;
        }
        ridge = ridge == 0.0 ? 1e-12 : ridge * 10.0;
    }
    free(s);
    if (st != TIDE_OK) {
        free(l);
        free(d);
        return tide_error(TIDE_E_RANGE,
                          "subtract: normal equations of %d unknowns could not "
                          "be solved even with a ridge of %g",
                          n, ridge);
    }
    f->n = n;
    f->l = l;
    f->d = d;
    return TIDE_OK;
}

void tide_sub_chol_solve(const tide_sub_chol *f, int m, const double *rhs, double *x) {
    for (int i = 0; i < m; i++)
        x[i] = rhs[i] * f->d[i];
    chol_solve(f->n, m, f->l, x);
    for (int i = 0; i < m; i++)
        x[i] *= f->d[i];
}

void tide_sub_chol_free(tide_sub_chol *f) {
    if (!f)
        return;
    free(f->l);
    free(f->d);
    memset(f, 0, sizeof *f);
}

int tide_sub_solve(int n, const double *A, const double *rhs, double *x, double *cond,
                   int *regularised, const unsigned char *ridge_on) {
    tide_sub_chol f;
    int st = tide_sub_chol_factor(n, A, ridge_on, &f);
    *cond = f.cond;
    *regularised = f.regularised;
    if (st)
        return st;
    tide_sub_chol_solve(&f, n, rhs, x);
    tide_sub_chol_free(&f);
    return TIDE_OK;
}
