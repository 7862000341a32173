/* psf_linalg.c — the small dense solvers of the PSF stage, on the host in double precision:
 * a symmetric eigensolver (Householder tridiagonalisation, then the implicit QL algorithm
 * with Wilkinson shifts; Golub & Van Loan, "Matrix Computations", §8.3) and a Cholesky solve
 * for the least-squares normal equations. The leading principal components are found by
 * Lanczos iteration in psf_lanczos.c. Every sum has a fixed order, so results are bitwise
 * repeatable. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "psf_internal.h"
#include "tide/status.h"

/* Reduce the symmetric a (n×n, row-major) to tridiagonal form Q^T a Q by Householder
 * reflections; d = diagonal, e[i] = element (i+1, i), q = Q. a is destroyed. */
static void tridiagonalise(int n, double *a, double *d, double *e, double *q, double *v,
                           double *p) {
    for (int i = 0; i < n * n; i++)
        q[i] = 0.0;
    for (int i = 0; i < n; i++)
        q[i * n + i] = 1.0;
    for (int k = 0; k + 2 < n; k++) {
        const int m = n - k - 1; /* rows k+1..n-1 */
        double norm = 0.0;
        for (int j = 0; j < m; j++)
            norm += a[(k + 1 + j) * n + k] * a[(k + 1 + j) * n + k];
        norm = sqrt(norm);
        if (norm == 0.0)
            continue;
        const double x0 = a[(k + 1) * n + k];
        const double alpha = x0 > 0.0 ? -norm : norm;
        for (int j = 0; j < m; j++)
            v[j] = a[(k + 1 + j) * n + k];
        v[0] -= alpha;
        double vn = 0.0;
        for (int j = 0; j < m; j++)
            vn += v[j] * v[j];
        vn = sqrt(vn);
        if (vn == 0.0)
            continue;
        for (int j = 0; j < m; j++)
            v[j] /= vn;
        /* H A H = A - 2 v w^T - 2 w v^T with p = A v, w = p - (v.p) v, H = I - 2 v v^T */
        double kvp = 0.0;
        for (int r = 0; r < m; r++) {
            const double *row = a + (size_t)(k + 1 + r) * n + k + 1;
            double s = 0.0;
            for (int c = 0; c < m; c++)
                s += row[c] * v[c];
            p[r] = s;
            kvp += v[r] * s;
        }
        for (int r = 0; r < m; r++)
            p[r] -= kvp * v[r];
        for (int r = 0; r < m; r++) {
            double *row = a + (size_t)(k + 1 + r) * n + k + 1;
            for (int c = 0; c < m; c++)
                row[c] -= 2.0 * (v[r] * p[c] + p[r] * v[c]);
        }
        a[(k + 1) * n + k] = a[k * n + k + 1] = alpha;
        for (int j = 1; j < m; j++)
            a[(k + 1 + j) * n + k] = a[k * n + k + 1 + j] = 0.0;
        /* Q <- Q H */
        for (int r = 0; r < n; r++) {
            double *row = q + (size_t)r * n + k + 1;
            double s = 0.0;
            for (int c = 0; c < m; c++)
                s += row[c] * v[c];
            s *= 2.0;
            for (int c = 0; c < m; c++)
                row[c] -= s * v[c];
        }
    }
    for (int i = 0; i < n; i++)
        d[i] = a[i * n + i];
    for (int i = 0; i + 1 < n; i++)
        e[i] = a[(i + 1) * n + i];
    e[n - 1] = 0.0;
}

/* sqrt(a^2 + b^2): the plain formula where the squares can neither overflow nor underflow
 * (everywhere the Lanczos tridiagonals go: their entries are the stamps' Gram eigenvalues),
 * hypot's careful scaling only outside (libm's hypot was a tenth of the Lanczos time). */
static inline double pyth(double a, double b) {
    const double s = fabs(a) + fabs(b);
    if (s > 1e150 || s < 1e-150)
        return hypot(a, b);
    return sqrt(a * a + b * b);
}

/* Implicit QL iterations on the tridiagonal (d, e), applying each plane rotation to the
 * columns of z (rows × n: the whole eigenvector matrix, or only its last row for the Ritz
 * residuals of the Lanczos convergence test). An off-diagonal element is negligible when it
 * is below machine epsilon relative to its diagonal neighbours or to the norm of the whole
 * matrix: the second test
 * matters for a rank-deficient Gram matrix (more stars than independent stamps), whose
 * many near-zero eigenvalues could never meet the first. Returns -1 when an eigenvalue
 * takes more than 64 iterations. */
int psf_tridiagonal_ql(int n, int rows, double *d, double *e, double *z) {
    double anorm = 0.0;
    for (int i = 0; i < n; i++)
        anorm = fmax(anorm, fabs(d[i]) + fabs(e[i]) + (i > 0 ? fabs(e[i - 1]) : 0.0));
    const double eps = 2.220446049250313e-16;
    for (int l = 0; l < n; l++) {
        int iter = 0, m;
        for (;;) {
            for (m = l; m + 1 < n; m++) {
                const double dd = fabs(d[m]) + fabs(d[m + 1]);
                if (fabs(e[m]) <= eps * dd || fabs(e[m]) <= eps * anorm)
                    break;
            }
            if (m == l)
                break;
            if (++iter > 64)
                return -1;
            /* Wilkinson shift from the leading 2×2 block */
            double g = (d[l + 1] - d[l]) / (2.0 * e[l]);
            double r = pyth(g, 1.0);
            g = d[m] - d[l] + e[l] / (g + (g >= 0.0 ? r : -r));
            double s = 1.0, c = 1.0, p = 0.0;
            int i, deflated = 0;
            for (i = m - 1; i >= l; i--) {
                const double f = s * e[i], b = c * e[i];
                r = pyth(f, g);
                e[i + 1] = r;
                if (r == 0.0) { /* an off-diagonal underflowed: split the matrix there */
                    d[i + 1] -= p;
                    e[m] = 0.0;
                    deflated = 1;
                    break;
                }
                s = f / r;
                c = g / r;
                g = d[i + 1] - p;
                r = (d[i] - g) * s + 2.0 * c * b;
                p = s * r;
                d[i + 1] = g + p;
                g = c * r - b;
                for (int k = 0; k < rows; k++) {
                    const double zf = z[(size_t)k * n + i + 1], zi = z[(size_t)k * n + i];
                    z[(size_t)k * n + i + 1] = s * zi + c * zf;
                    z[(size_t)k * n + i] = c * zi - s * zf;
                }
            }
            if (deflated)
                continue;
            d[l] -= p;
            e[l] = g;
            e[m] = 0.0;
        }
    }
    return 0;
}

int psf_eigen_sym(int n, double *a, double *evals, double *evecs) {
    if (n <= 0)
        return 0;
    double *work = malloc(sizeof(double) * ((size_t)n * n + 4 * (size_t)n));
    if (!work)
        return tide_error(TIDE_E_NOMEM, "psf: eigensolver of %d×%d", n, n);
    double *z = work, *d = z + (size_t)n * n, *e = d + n, *v = e + n, *p = v + n;
    tridiagonalise(n, a, d, e, z, v, p);
    if (psf_tridiagonal_ql(n, n, d, e, z)) {
        free(work);
        return tide_error(TIDE_E_INTERNAL, "psf: eigensolver did not converge (n = %d)", n);
    }
    /* Sort descending (selection sort: stable for ties, n is small). */
    int *order = (int *)v; /* v and p (2n doubles) hold n ints */
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = 0; i < n; i++) {
        int best = i;
        for (int j = i + 1; j < n; j++)
            if (d[order[j]] > d[order[best]])
                best = j;
        const int t = order[i];
        order[i] = order[best];
        order[best] = t;
    }
    for (int i = 0; i < n; i++) {
        evals[i] = d[order[i]];
        for (int k = 0; k < n; k++)
            evecs[(size_t)k * n + i] = z[(size_t)k * n + order[i]];
    }
    free(work);
    return 0;
}

int psf_cholesky_solve(int n, double *a, double *b) {
    for (int j = 0; j < n; j++) {
        double s = a[j * n + j];
        for (int k = 0; k < j; k++)
            s -= a[j * n + k] * a[j * n + k];
        if (!(s > 0.0))
            return -1;
        const double ljj = sqrt(s);
        a[j * n + j] = ljj;
        for (int i = j + 1; i < n; i++) {
            double t = a[i * n + j];
            for (int k = 0; k < j; k++)
                t -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = t / ljj;
        }
    }
    for (int i = 0; i < n; i++) { /* L y = b */
        double t = b[i];
        for (int k = 0; k < i; k++)
            t -= a[i * n + k] * b[k];
        b[i] = t / a[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) { /* L^T x = y */
        double t = b[i];
        for (int k = i + 1; k < n; k++)
            t -= a[k * n + i] * b[k];
        b[i] = t / a[i * n + i];
    }
    return 0;
}
