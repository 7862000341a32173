/* psf_linalg.c — the small dense solvers of the PSF stage, on the host in double precision:
 * a symmetric eigensolver (Householder tridiagonalisation, then the implicit QL algorithm
 * with Wilkinson shifts; Golub & Van Loan, "Matrix Computations", §8.3), the leading
 * principal components of the stars' deviations by Lanczos iteration with full
 * reorthogonalisation (Golub & Van Loan §10.1; the top few Ritz pairs of an at most
 * 50-step Krylov space, stopped once they have converged, instead of a full n³
 * eigendecomposition of a 500×500 Gram matrix), and a Cholesky solve for the least-squares
 * normal equations. Every sum has a fixed order (parallel loops
 * split rows, never a sum), so results are bitwise repeatable for any thread count. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "phot/psf_internal.h"
#include "tide/status.h"

/* Reduce the symmetric a (n×n, row-major) to tridiagonal form Q^T a Q by Householder
 * reflections; d = diagonal, e[i] = element (i+1, i), q = Q. a is destroyed. */
static void tridiagonalise(int n, double *a, double *d, double *e, double *q, double *v,
                           double *p) {
    for (int i = 0; i < n * n; i++) q[i] = 0.0;
    for (int i = 0; i < n; i++) q[i * n + i] = 1.0;
    for (int k = 0; k + 2 < n; k++) {
        const int m = n - k - 1; /* rows k+1..n-1 */
        double norm = 0.0;
        for (int j = 0; j < m; j++) norm += a[(k + 1 + j) * n + k] * a[(k + 1 + j) * n + k];
        norm = sqrt(norm);
        if (norm == 0.0) continue;
        const double x0 = a[(k + 1) * n + k];
        const double alpha = x0 > 0.0 ? -norm : norm;
        for (int j = 0; j < m; j++) v[j] = a[(k + 1 + j) * n + k];
        v[0] -= alpha;
        double vn = 0.0;
        for (int j = 0; j < m; j++) vn += v[j] * v[j];
        vn = sqrt(vn);
        if (vn == 0.0) continue;
        for (int j = 0; j < m; j++) v[j] /= vn;
        /* H A H = A - 2 v w^T - 2 w v^T with p = A v, w = p - (v.p) v, H = I - 2 v v^T */
        double kvp = 0.0;
        for (int r = 0; r < m; r++) {
            const double *row = a + (size_t)(k + 1 + r) * n + k + 1;
            double s = 0.0;
            for (int c = 0; c < m; c++) s += row[c] * v[c];
            p[r] = s;
            kvp += v[r] * s;
        }
        for (int r = 0; r < m; r++) p[r] -= kvp * v[r];
        for (int r = 0; r < m; r++) {
            double *row = a + (size_t)(k + 1 + r) * n + k + 1;
            for (int c = 0; c < m; c++) row[c] -= 2.0 * (v[r] * p[c] + p[r] * v[c]);
        }
        a[(k + 1) * n + k] = a[k * n + k + 1] = alpha;
        for (int j = 1; j < m; j++) a[(k + 1 + j) * n + k] = a[k * n + k + 1 + j] = 0.0;
        /* Q <- Q H */
        for (int r = 0; r < n; r++) {
            double *row = q + (size_t)r * n + k + 1;
            double s = 0.0;
            for (int c = 0; c < m; c++) s += row[c] * v[c];
            s *= 2.0;
            for (int c = 0; c < m; c++) row[c] -= s * v[c];
        }
    }
    for (int i = 0; i < n; i++) d[i] = a[i * n + i];
    for (int i = 0; i + 1 < n; i++) e[i] = a[(i + 1) * n + i];
    e[n - 1] = 0.0;
}

/* sqrt(a^2 + b^2): the plain formula where the squares can neither overflow nor underflow
 * (everywhere the Lanczos tridiagonals go: their entries are the stamps' Gram eigenvalues),
 * hypot's careful scaling only outside (libm's hypot was a tenth of the Lanczos time). */
static inline double pyth(double a, double b) {
    const double s = fabs(a) + fabs(b);
    if (s > 1e150 || s < 1e-150) return hypot(a, b);
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
static int tridiagonal_ql(int n, int rows, double *d, double *e, double *z) {
    double anorm = 0.0;
    for (int i = 0; i < n; i++)
        anorm = fmax(anorm, fabs(d[i]) + fabs(e[i]) + (i > 0 ? fabs(e[i - 1]) : 0.0));
    const double eps = 2.220446049250313e-16;
    for (int l = 0; l < n; l++) {
        int iter = 0, m;
        for (;;) {
            for (m = l; m + 1 < n; m++) {
                const double dd = fabs(d[m]) + fabs(d[m + 1]);
                if (fabs(e[m]) <= eps * dd || fabs(e[m]) <= eps * anorm) break;
            }
            if (m == l) break;
            if (++iter > 64) return -1;
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
            if (deflated) continue;
            d[l] -= p;
            e[l] = g;
            e[m] = 0.0;
        }
    }
    return 0;
}

int psf_eigen_sym(int n, double *a, double *evals, double *evecs) {
    if (n <= 0) return 0;
    double *work = malloc(sizeof(double) * ((size_t)n * n + 4 * (size_t)n));
    if (!work) return tide_error(TIDE_E_NOMEM, "psf: eigensolver of %d×%d", n, n);
    double *z = work, *d = z + (size_t)n * n, *e = d + n, *v = e + n, *p = v + n;
    tridiagonalise(n, a, d, e, z, v, p);
    if (tridiagonal_ql(n, n, d, e, z)) {
        free(work);
        return tide_error(TIDE_E_INTERNAL, "psf: eigensolver did not converge (n = %d)", n);
    }
    /* Sort descending (selection sort: stable for ties, n is small). */
    int *order = (int *)v; /* v and p (2n doubles) hold n ints */
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 0; i < n; i++) {
        int best = i;
        for (int j = i + 1; j < n; j++)
            if (d[order[j]] > d[order[best]]) best = j;
        const int t = order[i];
        order[i] = order[best];
        order[best] = t;
    }
    for (int i = 0; i < n; i++) {
        evals[i] = d[order[i]];
        for (int k = 0; k < n; k++) evecs[(size_t)k * n + i] = z[(size_t)k * n + order[i]];
    }
    free(work);
    return 0;
}

int psf_cholesky_solve(int n, double *a, double *b) {
    for (int j = 0; j < n; j++) {
        double s = a[j * n + j];
        for (int k = 0; k < j; k++) s -= a[j * n + k] * a[j * n + k];
        if (!(s > 0.0)) return -1;
        const double ljj = sqrt(s);
        a[j * n + j] = ljj;
        for (int i = j + 1; i < n; i++) {
            double t = a[i * n + j];
            for (int k = 0; k < j; k++) t -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = t / ljj;
        }
    }
    for (int i = 0; i < n; i++) { /* L y = b */
        double t = b[i];
        for (int k = 0; k < i; k++) t -= a[i * n + k] * b[k];
        b[i] = t / a[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) { /* L^T x = y */
        double t = b[i];
        for (int k = i + 1; k < n; k++) t -= a[k * n + i] * b[k];
        b[i] = t / a[i * n + i];
    }
    return 0;
}

/* Products smaller than this many multiply-adds run on one thread: a Lanczos step calls them
 * hundreds of times, and waking a team of 16 threads for 50k operations cost more than the
 * work (psf.model went from ~5 to ~45 ms on the 16-core GPU host). The split never changes
 * the order of any sum, so results are the same either way. */
#define TIDE_PSF_PAR_MIN 2000000

/* out[c] = sum_r D[r][c] v[r] for every column c: columns split in blocks across threads,
 * rows outer and columns inner (contiguous), so each out[c] is still summed in row order. */
static void mul_t(int n, int p, const double *D, const double *v, double *out, int threads) {
    const int nb = (p + 63) / 64;
#pragma omp parallel for num_threads(threads > 0 ? threads : 1) schedule(static) \
    if ((int64_t)n * p >= TIDE_PSF_PAR_MIN)
    for (int b = 0; b < nb; b++) {
        const int c0 = b * 64, c1 = c0 + 64 < p ? c0 + 64 : p;
        double acc[64];
        for (int c = c0; c < c1; c++) acc[c - c0] = 0.0;
        int r = 0;
        for (; r + 4 <= n; r += 4) { /* four rows per sweep, still added in row order */
            const double *r0 = D + (size_t)r * p, *r1 = r0 + p, *r2 = r1 + p, *r3 = r2 + p;
            const double v0 = v[r], v1 = v[r + 1], v2 = v[r + 2], v3 = v[r + 3];
            for (int c = c0; c < c1; c++) {
                double a = acc[c - c0];
                a += r0[c] * v0;
                a += r1[c] * v1;
                a += r2[c] * v2;
                a += r3[c] * v3;
                acc[c - c0] = a;
            }
        }
        for (; r < n; r++) {
            const double *row = D + (size_t)r * p, vr = v[r];
            for (int c = c0; c < c1; c++) acc[c - c0] += row[c] * vr;
        }
        for (int c = c0; c < c1; c++) out[c] = acc[c - c0];
    }
}

/* out[r] = sum_c D[r][c] v[c], each row summed in column order. Eight rows at a time: eight
 * independent accumulation chains share each load of v (the same sums, bit for bit, as one
 * row at a time; a row's sum is one chain of dependent adds, so the rows in flight are what
 * hides the add latency: four left the adders half idle). */
static void mul(int n, int p, const double *D, const double *v, double *out, int threads) {
    const int nq = (n + 7) / 8;
#pragma omp parallel for num_threads(threads > 0 ? threads : 1) schedule(static) \
    if ((int64_t)n * p >= TIDE_PSF_PAR_MIN)
    for (int q = 0; q < nq; q++) {
        const int r = 8 * q;
        if (r + 8 <= n) {
            const double *r0 = D + (size_t)r * p, *r1 = r0 + p, *r2 = r1 + p, *r3 = r2 + p;
            const double *r4 = r3 + p, *r5 = r4 + p, *r6 = r5 + p, *r7 = r6 + p;
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0,
                   s7 = 0.0;
            for (int c = 0; c < p; c++) {
                const double vc = v[c];
                s0 += r0[c] * vc;
                s1 += r1[c] * vc;
                s2 += r2[c] * vc;
                s3 += r3[c] * vc;
                s4 += r4[c] * vc;
                s5 += r5[c] * vc;
                s6 += r6[c] * vc;
                s7 += r7[c] * vc;
            }
            out[r] = s0, out[r + 1] = s1, out[r + 2] = s2, out[r + 3] = s3;
            out[r + 4] = s4, out[r + 5] = s5, out[r + 6] = s6, out[r + 7] = s7;
        } else {
            for (int rr = r; rr < n; rr++) {
                const double *row = D + (size_t)rr * p;
                double s = 0.0;
                for (int c = 0; c < p; c++) s += row[c] * v[c];
                out[rr] = s;
            }
        }
    }
}

/* op(v): D (D^T v) on the star side (len n), D^T (D v) on the pixel side (len p). */
static void gram_op(int n, int p, const double *D, int star_side, const double *v, double *out,
                    double *tmp, int threads) {
    if (star_side) {
        mul_t(n, p, D, v, tmp, threads);
        mul(n, p, D, tmp, out, threads);
    } else {
        mul(n, p, D, v, tmp, threads);
        mul_t(n, p, D, tmp, out, threads);
    }
}

static double dot(int n, const double *a, const double *b) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Whether the top k Ritz pairs of the j-step Lanczos tridiagonal (alpha, beta) have
 * converged: the residual of Ritz pair i is |beta_{j-1} y_i[j-1]| (Golub & Van Loan §10.1.4),
 * y_i[j-1] the last component of the eigenvector of T_j; all of the k largest must be below
 * 1e-12 of the largest Ritz value (their vectors are then exact to 1e-12 over the relative
 * eigenvalue gap: below the float eigen-PSFs' precision, 6e-8, for any gap over 2e-5 of the
 * top, and closer pairs have no stable vectors anyway; 1e-14 took 4 more of ~30 steps on
 * stamps for the same stored model). Eigenvalues and last components only (QL on the last
 * row of the eigenvector matrix): O(j^2). work: 3j. */
static int ritz_converged(int j, int k, const double *alpha, const double *beta, double *work) {
    double *d = work, *e = d + j, *z = e + j;
    for (int i = 0; i < j; i++) {
        d[i] = alpha[i];
        e[i] = i + 1 < j ? beta[i] : 0.0;
        z[i] = i + 1 < j ? 0.0 : 1.0;
    }
    if (tridiagonal_ql(j, 1, d, e, z)) return 0;
    double top = 0.0;
    for (int i = 0; i < j; i++) top = fmax(top, d[i]);
    const double tol = 1e-12 * top;
    for (int i = 0; i < j; i++) {
        if (!(fabs(beta[j - 1] * z[i]) > tol)) continue;
        int above = 0; /* an unconverged pair matters when it is among the k largest */
        for (int l = 0; l < j; l++) above += d[l] > d[i] || (d[l] == d[i] && l < i);
        if (above < k) return 0;
    }
    return 1;
}

int psf_pca_top(int n, int p, const double *D, int k, int threads, double *evals,
                double *evecs) {
    if (k <= 0) return 0;
    if (k > TIDE_PSF_MAX_K)
        return tide_error(TIDE_E_INVAL, "psf: %d eigenvectors (at most %d)", k, TIDE_PSF_MAX_K);
    const int star_side = n <= p, L = star_side ? n : p;
    int m = 2 * k + 40; /* Krylov dimension at most: the top k Ritz pairs converge before */
    if (m > L) m = L;
    double *V = malloc(sizeof(double) * ((size_t)(m + 1) * L + (size_t)2 * m * m + 7 * (size_t)m +
                                         (size_t)(n > p ? n : p) + L));
    if (!V) return tide_error(TIDE_E_NOMEM, "psf: Lanczos basis %d×%d", m + 1, L);
    double *T = V + (size_t)(m + 1) * L, *Y = T + (size_t)m * m, *alpha = Y + (size_t)m * m;
    double *beta = alpha + m, *theta = beta + m, *tmp = theta + 2 * m;
    double *w = tmp + (n > p ? n : p), *work = w + L;
    /* deterministic start with no systematic structure: splitmix64 of the index */
    double nrm = 0.0;
    for (int i = 0; i < L; i++) {
        uint64_t z = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        V[i] = (double)(z >> 11) / 9007199254740992.0 - 0.5;
        nrm += V[i] * V[i];
    }
    for (int i = 0; i < L; i++) V[i] /= sqrt(nrm);
    int mm = m;
    double scale = 0.0;
    for (int j = 0; j < m; j++) {
        double *vj = V + (size_t)j * L;
        gram_op(n, p, D, star_side, vj, w, tmp, threads);
        alpha[j] = dot(L, w, vj);
        scale = fmax(scale, fabs(alpha[j]));
        for (int i = 0; i < L; i++) w[i] -= alpha[j] * vj[i];
        if (j > 0)
            for (int i = 0; i < L; i++) w[i] -= beta[j - 1] * V[(size_t)(j - 1) * L + i];
        /* full reorthogonalisation, twice (Parlett's "twice is enough"; it holds for
         * classical Gram–Schmidt as for modified: Giraud, Langou & Rozložník 2005): all
         * the projections c = V^T w at once (mul: eight independent sums at a time, where
         * one dot product after another waited on each add), then w -= V c, four vectors
         * per sweep, subtracted in order */
        for (int pass = 0; pass < 2; pass++) {
            double cq[2 * TIDE_PSF_MAX_K + 40]; /* j + 1 <= m <= 2k + 40 */
            mul(j + 1, L, V, w, cq, 1);
            int q = 0;
            for (; q + 4 <= j + 1; q += 4) {
                const double *v0 = V + (size_t)q * L, *v1 = v0 + L, *v2 = v1 + L, *v3 = v2 + L;
                const double c0 = cq[q], c1 = cq[q + 1], c2 = cq[q + 2], c3 = cq[q + 3];
                for (int i = 0; i < L; i++) {
                    double x = w[i];
                    x -= c0 * v0[i];
                    x -= c1 * v1[i];
                    x -= c2 * v2[i];
                    x -= c3 * v3[i];
                    w[i] = x;
                }
            }
            for (; q <= j; q++) {
                const double *vq = V + (size_t)q * L;
                const double c = cq[q];
                for (int i = 0; i < L; i++) w[i] -= c * vq[i];
            }
        }
        beta[j] = sqrt(dot(L, w, w));
        if (j == m - 1) break;
        /* stop once the top k have converged (25-40 of the 2k+40 steps on stamps): tested
         * every 4 steps (a test costs a fraction of a step, but not nothing), from 2k+10
         * steps on, so a direction the start vector barely holds has surfaced */
        if (j + 1 >= 2 * k + 10 && (j + 1 - 2 * k - 10) % 4 == 0 &&
            ritz_converged(j + 1, k, alpha, beta, work)) {
            mm = j + 1;
            break;
        }
        if (beta[j] <= 1e-13 * scale) { /* invariant subspace: the Krylov space is exhausted */
            mm = j + 1;
            break;
        }
        for (int i = 0; i < L; i++) V[(size_t)(j + 1) * L + i] = w[i] / beta[j];
    }
    for (int i = 0; i < mm * mm; i++) T[i] = 0.0;
    for (int j = 0; j < mm; j++) {
        T[j * mm + j] = alpha[j];
        if (j + 1 < mm) T[j * mm + j + 1] = T[(j + 1) * mm + j] = beta[j];
    }
    int st = psf_eigen_sym(mm, T, theta, Y);
    if (!st) {
        const int kk = k < mm ? k : mm;
        for (int q = 0; q < kk; q++) {
            for (int i = 0; i < L; i++) w[i] = 0.0;
            for (int j = 0; j < mm; j++) {
                const double y = Y[(size_t)j * mm + q];
                const double *vj = V + (size_t)j * L;
                for (int i = 0; i < L; i++) w[i] += y * vj[i];
            }
            double *e = evecs + (size_t)q * p;
            if (star_side) { /* pixel-side vector D^T u */
                mul_t(n, p, D, w, e, threads);
            } else {
                for (int c = 0; c < p; c++) e[c] = w[c];
            }
            const double en = sqrt(dot(p, e, e));
            for (int c = 0; c < p; c++) e[c] = en > 0.0 ? e[c] / en : 0.0;
            evals[q] = theta[q];
        }
        for (int q = kk; q < k; q++) {
            evals[q] = 0.0;
            for (int c = 0; c < p; c++) evecs[(size_t)q * p + c] = 0.0;
        }
    }
    free(V);
    return st;
}
