/* psf_lanczos.c — the leading principal components of the PSF stars' deviations by Lanczos
 * iteration with full reorthogonalisation (Golub & Van Loan, "Matrix Computations", §10.1):
 * the top few Ritz pairs of an at most 2k+40-step Krylov space, stopped once they have
 * converged, instead of a full n³ eigendecomposition of a 500×500 Gram matrix. The Gram
 * operator D D^T (or D^T D) is applied as two products with D, never formed.
 *
 * One team runs the whole iteration. A step is two products of ~10^5 multiply-adds and a
 * little sequential work; a team woken for each product cost more than the product (a step
 * took ~70 µs on one core of the GPU machine's host, ~60 steps per reduction), so the team
 * is opened once and the steps are separated by barriers only. Each product's outputs are
 * shared out across the team, never a sum: every value is summed in the same order for any
 * team size, and the results are bitwise those of one thread. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "psf_internal.h"
#include "tide/status.h"

/* Products smaller than this many multiply-adds run on one thread. Larger ones take the
 * whole team of the caller, never part of it: a team smaller than the previous region's
 * leaves pool threads asleep that the next full team must wake, and the region after a
 * smaller team ran several times slower on the GPU machine's host (CHANGES.md, issue 3). */
#define PSF_LANCZOS_MIN 16384
#define COLS 32 /* columns per block of mul_t's output */

/* out[c] = sum_r D[r][c] v[r] for the columns of block b: rows outer, columns inner
 * (contiguous), four rows per sweep, so each out[c] is summed in row order. */
static void mul_t_block(int n, int p, const double *D, const double *v, double *out, int b) {
    const int c0 = b * COLS, c1 = c0 + COLS < p ? c0 + COLS : p;
    double acc[COLS];
    for (int c = c0; c < c1; c++)
        acc[c - c0] = 0.0;
    int r = 0;
    for (; r + 4 <= n; r += 4) {
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
        for (int c = c0; c < c1; c++)
            acc[c - c0] += row[c] * vr;
    }
    for (int c = c0; c < c1; c++)
        out[c] = acc[c - c0];
}

/* out[r] = sum_c D[r][c] v[c] for the rows of group q (8q .. 8q+7), each summed in column
 * order. Eight rows at a time: eight independent accumulation chains share each load of v
 * (a row's sum is one chain of dependent adds, so the rows in flight hide the add latency). */
static void mul_group(int n, int p, const double *D, const double *v, double *out, int q) {
    const int r = 8 * q;
    if (r + 8 > n) {
        for (int rr = r; rr < n; rr++) {
            const double *row = D + (size_t)rr * p;
            double s = 0.0;
            for (int c = 0; c < p; c++)
                s += row[c] * v[c];
            out[rr] = s;
        }
        return;
    }
    const double *r0 = D + (size_t)r * p, *r1 = r0 + p, *r2 = r1 + p, *r3 = r2 + p;
    const double *r4 = r3 + p, *r5 = r4 + p, *r6 = r5 + p, *r7 = r6 + p;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0;
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
}

/* Inside the team (or alone): D^T v, its column blocks shared out; ends with a barrier. */
static void team_mul_t(int n, int p, const double *D, const double *v, double *out) {
#pragma omp for schedule(static)
    for (int b = 0; b < (p + COLS - 1) / COLS; b++)
        mul_t_block(n, p, D, v, out, b);
}

/* Inside the team (or alone): D v, its row groups shared out; ends with a barrier. */
static void team_mul(int n, int p, const double *D, const double *v, double *out) {
#pragma omp for schedule(static)
    for (int q = 0; q < (n + 7) / 8; q++)
        mul_group(n, p, D, v, out, q);
}

static double dot(int n, const double *a, const double *b) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
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
    if (psf_tridiagonal_ql(j, 1, d, e, z))
        return 0;
    double top = 0.0;
    for (int i = 0; i < j; i++)
        top = fmax(top, d[i]);
    const double tol = 1e-12 * top;
    for (int i = 0; i < j; i++) {
        if (!(fabs(beta[j - 1] * z[i]) > tol))
            continue;
        int above = 0; /* an unconverged pair matters when it is among the k largest */
        for (int l = 0; l < j; l++)
            above += d[l] > d[i] || (d[l] == d[i] && l < i);
        if (above < k)
            return 0;
    }
    return 1;
}

/* One Lanczos run: the operator, the Krylov basis and the recurrence. */
typedef struct lanczos {
    int n, p, L, m, k, star_side; /**< D is n × p; L the side iterated on; m steps at most */
    const double *D;
    double *V;            /**< the basis, (m + 1) × L */
    double *alpha, *beta; /**< the tridiagonal, m each */
    double *w, *tmp;      /**< the new vector (L), the product between D and D^T */
    double *work;         /**< 3m for the convergence test */
    double scale;         /**< the largest |alpha| so far */
    int steps;            /**< steps taken */
    int stop;             /**< set when the iteration ends */
} lanczos;

/* w = op(v_j): D (D^T v) on the star side (len n), D^T (D v) on the pixel side (len p). */
static void team_gram(lanczos *lz, const double *v) {
    if (lz->star_side) {
        team_mul_t(lz->n, lz->p, lz->D, v, lz->tmp);
        team_mul(lz->n, lz->p, lz->D, lz->tmp, lz->w);
    } else {
        team_mul(lz->n, lz->p, lz->D, v, lz->tmp);
        team_mul_t(lz->n, lz->p, lz->D, lz->tmp, lz->w);
    }
}

/* The sequential rest of step j once w = op(v_j): the three-term recurrence, full
 * reorthogonalisation, the convergence test and the next basis vector. */
static void close_step(lanczos *lz, int j) {
    const int L = lz->L;
    double *V = lz->V, *w = lz->w, *vj = V + (size_t)j * L;
    lz->alpha[j] = dot(L, w, vj);
    lz->scale = fmax(lz->scale, fabs(lz->alpha[j]));
    for (int i = 0; i < L; i++)
        w[i] -= lz->alpha[j] * vj[i];
    if (j > 0)
        for (int i = 0; i < L; i++)
            w[i] -= lz->beta[j - 1] * V[(size_t)(j - 1) * L + i];
    /* full reorthogonalisation, twice (Parlett's "twice is enough"; it holds for classical
     * Gram–Schmidt as for modified: Giraud, Langou & Rozložník 2005): all the projections
     * c = V^T w at once (eight independent sums at a time), then w -= V c, four vectors per
     * sweep, subtracted in order */
    for (int pass = 0; pass < 2; pass++) {
        double cq[2 * TIDE_PSF_MAX_K + 40]; /* j + 1 <= m <= 2k + 40 */
        for (int g = 0; g < (j + 1 + 7) / 8; g++)
            mul_group(j + 1, L, V, w, cq, g);
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
            for (int i = 0; i < L; i++)
                w[i] -= c * vq[i];
        }
    }
    lz->beta[j] = sqrt(dot(L, w, w));
    lz->steps = j + 1;
    if (j == lz->m - 1) {
        lz->stop = 1;
        return;
    }
    /* stop once the top k have converged (25-40 of the 2k+40 steps on stamps): tested every
     * 4 steps (a test costs a fraction of a step, but not nothing), from 2k+10 steps on, so
     * a direction the start vector barely holds has surfaced */
    const int k = lz->k;
    if ((j + 1 >= 2 * k + 10 && (j + 1 - 2 * k - 10) % 4 == 0 &&
         ritz_converged(j + 1, k, lz->alpha, lz->beta, lz->work)) ||
        lz->beta[j] <= 1e-13 * lz->scale) { /* or an invariant subspace: Krylov exhausted */
        lz->stop = 1;
        return;
    }
    for (int i = 0; i < L; i++)
        V[(size_t)(j + 1) * L + i] = w[i] / lz->beta[j];
}

/* The deterministic start vector, with no systematic structure: splitmix64 of the index. */
static void start_vector(int L, double *v) {
    double nrm = 0.0;
    for (int i = 0; i < L; i++) {
        uint64_t z = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        v[i] = (double)(z >> 11) / 9007199254740992.0 - 0.5;
        nrm += v[i] * v[i];
    }
    for (int i = 0; i < L; i++)
        v[i] /= sqrt(nrm);
}

/* Inside the team: the Ritz vector of pair q, y_q (mm × mm eigenvectors Y) over the basis,
 * as a unit pixel-space vector e (D^T u on the star side). */
static void team_ritz_vector(lanczos *lz, const double *Y, int mm, int q, double *e) {
    const int L = lz->L;
#pragma omp for schedule(static)
    for (int i = 0; i < L; i++) {
        double s = 0.0;
        for (int j = 0; j < mm; j++)
            s += Y[(size_t)j * mm + q] * lz->V[(size_t)j * L + i];
        lz->w[i] = s;
    }
    if (lz->star_side) {
        team_mul_t(lz->n, lz->p, lz->D, lz->w, e);
    } else {
#pragma omp for schedule(static)
        for (int c = 0; c < lz->p; c++)
            e[c] = lz->w[c];
    }
#pragma omp single
    {
        const double en = sqrt(dot(lz->p, e, e));
        for (int c = 0; c < lz->p; c++)
            e[c] = en > 0.0 ? e[c] / en : 0.0;
    }
}

int psf_pca_top(int n, int p, const double *D, int k, int threads, double *evals, double *evecs) {
    if (k <= 0)
        return 0;
    if (k > TIDE_PSF_MAX_K)
        return tide_error(TIDE_E_INVAL, "psf: %d eigenvectors (at most %d)", k, TIDE_PSF_MAX_K);
    lanczos lz = {.n = n, .p = p, .k = k, .D = D, .star_side = n <= p};
    const int L = lz.star_side ? n : p;
    int m = 2 * k + 40; /* Krylov dimension at most: the top k Ritz pairs converge before */
    if (m > L)
        m = L;
    lz.L = L, lz.m = m;
    double *V = malloc(sizeof(double) * ((size_t)(m + 1) * L + (size_t)2 * m * m + 7 * (size_t)m +
                                         (size_t)(n > p ? n : p) + L));
    if (!V)
        return tide_error(TIDE_E_NOMEM, "psf: Lanczos basis %d×%d", m + 1, L);
    double *T = V + (size_t)(m + 1) * L, *Y = T + (size_t)m * m, *alpha = Y + (size_t)m * m;
    double *beta = alpha + m, *theta = beta + m, *tmp = theta + 2 * m;
    double *w = tmp + (n > p ? n : p), *work = w + L;
    lz.V = V, lz.alpha = alpha, lz.beta = beta, lz.w = w, lz.tmp = tmp, lz.work = work;
    start_vector(L, V);
    const int team = (int64_t)n * p >= PSF_LANCZOS_MIN && threads > 1 ? threads : 1;
    int st = 0, mm = 0, kk = 0;
#pragma omp parallel num_threads(team) if (team > 1)
    {
        for (int j = 0; j < m; j++) {
            team_gram(&lz, V + (size_t)j * L);
#pragma omp single
            close_step(&lz, j);
            if (lz.stop) /* read by every thread after the single's barrier */
                break;
        }
#pragma omp master /* the calling thread: an error's detail is thread-local */
        {
            mm = lz.steps;
            for (int i = 0; i < mm * mm; i++)
                T[i] = 0.0;
            for (int j = 0; j < mm; j++) {
                T[j * mm + j] = alpha[j];
                if (j + 1 < mm)
                    T[j * mm + j + 1] = T[(j + 1) * mm + j] = beta[j];
            }
            st = psf_eigen_sym(mm, T, theta, Y);
            kk = k < mm ? k : mm;
        }
#pragma omp barrier
        for (int q = 0; q < kk && !st; q++)
            team_ritz_vector(&lz, Y, mm, q, evecs + (size_t)q * p);
    }
    if (!st) {
        for (int q = 0; q < kk; q++)
            evals[q] = theta[q];
        for (int q = kk; q < k; q++) {
            evals[q] = 0.0;
            for (int c = 0; c < p; c++)
                evecs[(size_t)q * p + c] = 0.0;
        }
    }
    free(V);
    return st;
}
