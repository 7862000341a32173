/* xray_math.h — the per-trace numerics of tide xray, shared by the CPU twin and the CUDA
 * kernel (TIDE_HD): Savitzky–Golay coefficients, a one-sided Jacobi SVD, the Aberth–Ehrlich
 * polynomial root finder, and LPSVD (Kumaresan–Tufts backward linear prediction) of one trace
 * with the amplitudes and phases by linear least squares.
 *
 * Everything is float64 and sequential in a fixed order, so a trace gives the same answer on
 * every thread of every backend that runs these functions in that order. Workspaces are the
 * caller's (xray_lp_work_doubles), so a GPU block can hand in shared memory. */
#ifndef TIDE_XRAY_MATH_H
#define TIDE_XRAY_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "tide/xray.h"

/* ---- small dense linear algebra ------------------------------------------------------- */

/* Gaussian elimination's pieces, shared by xray_solve and its lane form (xray_lm.h). */

/** The pivot row of column @p k of the row-major n×n A (the largest |A[i][k]|, i >= k, the
 *  first of equals), or -1 when that column is zero there (A singular). */
TIDE_HD static inline int xray_solve_pivot(const double *A, int n, int k) {
    int piv = k;
    for (int i = k + 1; i < n; i++)
        if (fabs(A[i * n + k]) > fabs(A[piv * n + k]))
            piv = i;
    return fabs(A[piv * n + k]) > 0.0 ? piv : -1;
}

/** Swap rows @p k and @p piv of A (columns j0, j0 + step, ... < n) and, when j0 is 0, of b. */
TIDE_HD static inline void xray_solve_swap(double *A, double *b, int n, int k, int piv, int j0,
                                           int step) {
    for (int j = j0; j < n; j += step) {
        const double t = A[k * n + j];
        A[k * n + j] = A[piv * n + j];
        A[piv * n + j] = t;
    }
    if (j0 == 0) {
        const double t = b[k];
        b[k] = b[piv];
        b[piv] = t;
    }
}

/** Eliminate column @p k from row @p i > k with the pivot row k. */
TIDE_HD static inline void xray_solve_eliminate(double *A, double *b, int n, int k, int i) {
    const double f = A[i * n + k] / A[k * n + k];
    for (int j = k; j < n; j++)
        A[i * n + j] -= f * A[k * n + j];
    b[i] -= f * b[k];
}

/** Back substitution of the upper-triangular A: b becomes x. */
TIDE_HD static inline void xray_solve_back(const double *A, double *b, int n) {
    for (int k = n - 1; k >= 0; k--) {
        double s = b[k];
        for (int j = k + 1; j < n; j++)
            s -= A[k * n + j] * b[j];
        b[k] = s / A[k * n + k];
    }
}

/** Solve the n×n system A x = b in place by Gaussian elimination with partial pivoting
 *  (A row-major, destroyed; b becomes x). Returns 0, or -1 when A is singular. */
TIDE_HD static inline int xray_solve(double *A, double *b, int n) {
    for (int k = 0; k < n; k++) {
        const int piv = xray_solve_pivot(A, n, k);
        if (piv < 0)
            return -1;
        if (piv != k)
            xray_solve_swap(A, b, n, k, piv, 0, 1);
        for (int i = k + 1; i < n; i++)
            xray_solve_eliminate(A, b, n, k, i);
    }
    xray_solve_back(A, b, n);
    return 0;
}

/** Savitzky–Golay weights: the least-squares polynomial of degree @p order through @p window
 *  equally spaced samples (positions 0..window-1), evaluated at position @p at, is
 *  sum_j w[j] s[j]. Positions are scaled to [-1, 1] about the window's centre so the normal
 *  equations stay well conditioned. Returns 0, or -1 for order >= window or order > 10. */
TIDE_HD static inline int xray_savgol_weights(int window, int order, double at, double *w) {
    if (window < 1 || order < 0 || order >= window || order > 10)
        return -1;
    const double h = 0.5 * (window - 1), sc = h > 0 ? 1.0 / h : 1.0;
    const int p = order + 1;
    double G[121], a[11];
    for (int i = 0; i < p; i++)
        for (int k = 0; k < p; k++) {
            double s = 0.0;
            for (int j = 0; j < window; j++)
                s += pow((j - h) * sc, i + k);
            G[i * p + k] = s;
        }
    for (int i = 0; i < p; i++)
        a[i] = pow((at - h) * sc, i);
    if (xray_solve(G, a, p))
        return -1;
    for (int j = 0; j < window; j++) {
        double s = 0.0, x = 1.0;
        for (int i = 0; i < p; i++) {
            s += a[i] * x;
            x *= (j - h) * sc;
        }
        w[j] = s;
    }
    return 0;
}

/** The Savitzky–Golay weights of every position of a window (xray_savgol_apply's table):
 *  w[q * window + j] weighs sample j of the window for the value at position q. Returns 0, or
 *  -1 for order >= window or order > 10. */
TIDE_HD static inline int xray_savgol_table(int window, int order, double *w) {
    for (int q = 0; q < window; q++)
        if (xray_savgol_weights(window, order, (double)q, w + q * window))
            return -1;
    return 0;
}

/** Savitzky–Golay smoothing of @p s (n samples) into @p out (not aliasing s) with the weights
 *  @p w of xray_savgol_table, as scipy.signal.savgol_filter(s, window, order, mode="interp"):
 *  the centred weights in the interior, and for the first and last window/2 samples the
 *  polynomial of the first (last) window samples evaluated there. The table is the same for
 *  every trace: a batch computes it once. window odd, n >= window; returns -1 otherwise. */
TIDE_HD static inline int xray_savgol_apply(const double *s, int n, int window, const double *w,
                                            double *out) {
    if (window % 2 == 0 || n < window)
        return -1;
    const int h = window / 2;
    for (int i = 0; i < n; i++) {
        int start, q;
        if (i < h) {
            start = 0;
            q = i;
        } else if (i >= n - h) {
            start = n - window;
            q = i - start;
        } else {
            start = i - h;
            q = h;
        }
        double acc = 0.0;
        for (int j = 0; j < window; j++)
            acc += w[q * window + j] * s[start + j];
        out[i] = acc;
    }
    return 0;
}

/** Savitzky–Golay smoothing of one trace: xray_savgol_table into @p w (window*window doubles),
 *  then xray_savgol_apply. Returns -1 for an even window, n < window or a bad order. */
TIDE_HD static inline int xray_savgol(const double *s, int n, int window, int order, double *w,
                                      double *out) {
    if (window % 2 == 0 || n < window || xray_savgol_table(window, order, w))
        return -1;
    return xray_savgol_apply(s, n, window, w, out);
}

/* The one-sided Jacobi SVD's pieces, shared by xray_jacobi_svd and its lane form
 * (xray_svd_lanes.h). */

/** Σ x[i] y[i] over i < n, in index order. */
TIDE_HD static inline double xray_dot(const double *x, const double *y, int n) {
    double acc = 0.0;
    for (int i = 0; i < n; i++)
        acc += x[i] * y[i];
    return acc;
}

/** The three products of a Jacobi pair, x·x, y·y and x·y over i < n, each in index order
 *  (xray_dot's bits) in one pass over the two columns. */
TIDE_HD static inline void xray_dot3(const double *x, const double *y, int n, double *xx,
                                     double *yy, double *xy) {
    double a = 0.0, b = 0.0, c = 0.0;
    for (int i = 0; i < n; i++) {
        const double u = x[i], v = y[i];
        a += u * u;
        b += v * v;
        c += u * v;
    }
    *xx = a;
    *yy = b;
    *xy = c;
}

/** V = I (cols × cols), and the squared norm below which a column of A counts as zero:
 *  1e-28 of ‖A‖², because rotating rounding noise never ends. */
TIDE_HD static inline double xray_jacobi_start(const double *A, int lda, int rows, int cols,
                                               double *V) {
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < cols; i++)
            V[j * cols + i] = i == j ? 1.0 : 0.0;
    double frob = 0.0;
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++)
            frob += A[(int64_t)j * lda + i] * A[(int64_t)j * lda + i];
    return 1e-28 * frob;
}

/** The rotation (c, s) that makes columns p and q orthogonal, from al = a_p·a_p, be = a_q·a_q
 *  and ga = a_p·a_q; 0 when the pair is orthogonal already (|ga| <= 1e-15 sqrt(al be)) or a
 *  column is zero (below @p tiny). */
TIDE_HD static inline int xray_jacobi_rotation(double al, double be, double ga, double tiny,
                                               double *c, double *s) {
    if (!(fabs(ga) > 1e-15 * sqrt(al * be)) || ga == 0.0 || al <= tiny || be <= tiny)
        return 0;
    const double zeta = (be - al) / (2.0 * ga);
    const double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
    *c = 1.0 / sqrt(1.0 + t * t);
    *s = *c * t;
    return 1;
}

/** Rotate elements i0, i0 + step, ... < n of the columns x and y by (c, s). */
TIDE_HD static inline void xray_rotate(double *x, double *y, int i0, int n, int step, double c,
                                       double s) {
    for (int i = i0; i < n; i += step) {
        const double u = x[i], v = y[i];
        x[i] = c * u - s * v;
        y[i] = s * u + c * v;
    }
}

/** σ_j = ‖a_j‖, then the columns of A and V and the σ sorted by decreasing σ (selection sort:
 *  a handful of columns, and no allocation). */
TIDE_HD static inline void xray_jacobi_sort(double *A, int lda, int rows, int cols, double *V,
                                            double *sig) {
    for (int j = 0; j < cols; j++) {
        const double *a = A + (int64_t)j * lda;
        sig[j] = sqrt(xray_dot(a, a, rows));
    }
    for (int j = 0; j < cols - 1; j++) {
        int b = j;
        for (int k = j + 1; k < cols; k++)
            if (sig[k] > sig[b])
                b = k;
        if (b == j)
            continue;
        const double t = sig[j];
        sig[j] = sig[b];
        sig[b] = t;
        for (int i = 0; i < rows; i++) {
            const double x = A[(int64_t)j * lda + i];
            A[(int64_t)j * lda + i] = A[(int64_t)b * lda + i];
            A[(int64_t)b * lda + i] = x;
        }
        for (int i = 0; i < cols; i++) {
            const double x = V[j * cols + i];
            V[j * cols + i] = V[b * cols + i];
            V[b * cols + i] = x;
        }
    }
}

/** The j-th pair (p < q) of round @p round (0 <= round < xray_jacobi_rounds(cols)) of the
 *  round-robin tournament over @p cols columns (one more, a bye, when cols is odd): every pair
 *  of columns meets once in a sweep, and the pairs of one round are disjoint, so the lanes can
 *  rotate them side by side with the bits of rotating them one after another. Returns 0 when
 *  the pair is the bye's. */
TIDE_HD static inline int xray_jacobi_pair(int cols, int round, int j, int *p, int *q) {
    const int N = cols + (cols & 1), L = N - 1; /* players 0..N-1; N-1 stays put */
    int a, b;
    if (j == 0) {
        a = N - 1;
        b = round;
    } else {
        a = (round + j) % L;
        b = (round - j + L) % L;
    }
    if (a >= cols || b >= cols)
        return 0;
    *p = a < b ? a : b;
    *q = a < b ? b : a;
    return 1;
}

/** Rounds of a sweep and pairs of a round of xray_jacobi_pair. */
TIDE_HD static inline int xray_jacobi_rounds(int cols) {
    return cols + (cols & 1) - 1;
}
TIDE_HD static inline int xray_jacobi_round_pairs(int cols) {
    return (cols + 1) / 2;
}

/** One-sided (Hestenes) Jacobi SVD of the rows × cols matrix A stored by columns (column j at
 *  A + j*lda): on return column j of A is σ_j u_j, @p V (cols × cols, column j at V + j*cols)
 *  holds the right singular vectors and sig[j] = σ_j, sorted by decreasing σ (the columns of A
 *  and V are permuted with them). Sweeps over the column pairs in the round-robin order of
 *  xray_jacobi_pair until no pair is rotated (|a_p·a_q| <= 1e-15 ‖a_p‖‖a_q‖) or 80 sweeps.
 *  Returns the sweeps taken, or -1 when they ran out. */
TIDE_HD static inline int xray_jacobi_svd(double *A, int lda, int rows, int cols, double *V,
                                          double *sig) {
    const double tiny = xray_jacobi_start(A, lda, rows, cols, V);
    const int rounds = xray_jacobi_rounds(cols), npair = xray_jacobi_round_pairs(cols);
    int sweep = 0, conv = 0;
    for (; sweep < 80 && !conv; sweep++) {
        conv = 1;
        for (int rd = 0; rd < rounds; rd++)
            for (int j = 0; j < npair; j++) {
                int p, q;
                if (!xray_jacobi_pair(cols, rd, j, &p, &q))
                    continue;
                double *ap = A + (int64_t)p * lda, *aq = A + (int64_t)q * lda, c, s, al, be, ga;
                xray_dot3(ap, aq, rows, &al, &be, &ga);
                if (!xray_jacobi_rotation(al, be, ga, tiny, &c, &s))
                    continue;
                conv = 0;
                xray_rotate(ap, aq, 0, rows, 1, c, s);
                xray_rotate(V + p * cols, V + q * cols, 0, cols, 1, c, s);
            }
    }
    xray_jacobi_sort(A, lda, rows, cols, V, sig);
    return conv ? sweep : -1;
}

/** Step @p k of the Householder QR of column a (rows long): v = a[k:] - alpha e_k kept in
 *  a[k:] (H = I - 2 v vᵀ / (vᵀv)), alpha = -sign(a[k]) ‖a[k:]‖ into *alpha; returns vᵀv. */
TIDE_HD static inline double xray_qr_reflector(double *a, int k, int rows, double *alpha) {
    double nrm = 0.0;
    for (int i = k; i < rows; i++)
        nrm += a[i] * a[i];
    nrm = sqrt(nrm);
    *alpha = a[k] > 0 ? -nrm : nrm;
    a[k] -= *alpha;
    double vv = 0.0;
    for (int i = k; i < rows; i++)
        vv += a[i] * a[i];
    return vv;
}

/** Column b reflected by step k's reflector v (in a[k:], vᵀv = @p vv): b -= 2 (v·b)/vv v. */
TIDE_HD static inline void xray_qr_reflect(const double *a, double *b, int k, int rows, double vv) {
    double d = 0.0;
    for (int i = k; i < rows; i++)
        d += a[i] * b[i];
    const double f = 2.0 * d / vv;
    for (int i = k; i < rows; i++)
        b[i] -= f * a[i];
}

/** The R factor of the Householder QR of the rows × cols matrix A (rows >= cols, by columns,
 *  destroyed) into @p R (cols × cols by columns, zeros below the diagonal). A and R have the
 *  same right singular vectors and singular values, so a Jacobi SVD of the small R does the
 *  work of one on A (the preconditioning of Drmač & Veselić). */
TIDE_HD static inline void xray_qr_r(double *A, int lda, int rows, int cols, double *R) {
    for (int k = 0; k < cols; k++) {
        double *a = A + (int64_t)k * lda, alpha;
        const double vv = xray_qr_reflector(a, k, rows, &alpha);
        for (int j = k + 1; j < cols && vv > 0; j++)
            xray_qr_reflect(a, A + (int64_t)j * lda, k, rows, vv);
        for (int i = 0; i < cols; i++)
            R[k * cols + i] = i < k ? a[i] : (i == k ? alpha : 0.0);
    }
}

/* ---- polynomial roots -------------------------------------------------------------------- */

/** The Aberth–Ehrlich iteration's start for the monic polynomial z^deg + a[1] z^(deg-1) + ...
 *  + a[deg]: a circle of the roots' geometric-mean radius, turned by 0.4 rad off the real
 *  axis, root @p i of it into zr[i], zi[i]. */
TIDE_HD static inline void xray_root_start(const double *a, int deg, int i, double *zr,
                                           double *zi) {
    double r0 = fabs(a[deg]) > 0 ? pow(fabs(a[deg]), 1.0 / deg) : 0.0;
    if (!(r0 > 1e-8) || !isfinite(r0))
        r0 = 1.0;
    const double th = 6.283185307179586 * i / deg + 0.4;
    zr[i] = r0 * cos(th);
    zi[i] = r0 * sin(th);
}

/** One Aberth–Ehrlich correction of root @p i from the current roots zr, zi (every other root
 *  read as it is: the simultaneous form, whose roots can move side by side): the new value
 *  into *nr, *ni. Returns 1 when root i has converged (its correction below 1e-15 of its
 *  modulus, or its residual within rounding of zero: *nr, *ni then the root or its last
 *  step), 0 when it moved, -1 when a value was not finite. */
TIDE_HD static inline int xray_root_step(const double *a, int deg, const double *zr,
                                         const double *zi, int i, double *nr, double *ni) {
    /* Horner for p and p', and the rounding bound of p: sum |a_k| |z|^(deg-k) */
    const double xr = zr[i], xi = zi[i], az = sqrt(xr * xr + xi * xi);
    double pr = 1.0, pi = 0.0, dr = 0.0, di = 0.0, bnd = 1.0;
    for (int k = 1; k <= deg; k++) {
        const double ndr = dr * xr - di * xi + pr, ndi = dr * xi + di * xr + pi;
        dr = ndr;
        di = ndi;
        const double npr = pr * xr - pi * xi + a[k], npi = pr * xi + pi * xr;
        pr = npr;
        pi = npi;
        bnd = bnd * az + fabs(a[k]);
    }
    *nr = xr;
    *ni = xi;
    if (!isfinite(pr) || !isfinite(pi) || !isfinite(dr) || !isfinite(di))
        return -1;
    if (sqrt(pr * pr + pi * pi) <= 4e-16 * bnd)
        return 1;
    /* ratio = p/p' */
    const double dd = dr * dr + di * di;
    if (!(dd > 0))
        return -1;
    const double rr = (pr * dr + pi * di) / dd, ri = (pi * dr - pr * di) / dd;
    double sr = 0.0, si = 0.0;
    for (int j = 0; j < deg; j++) {
        if (j == i)
            continue;
        const double ur = xr - zr[j], ui = xi - zi[j], uu = ur * ur + ui * ui;
        if (uu > 0) { /* one division, not two: divisions are most of the GPU's work */
            const double iu = 1.0 / uu;
            sr += ur * iu;
            si -= ui * iu;
        }
    }
    /* w = ratio / (1 - ratio * sum) */
    const double er = 1.0 - (rr * sr - ri * si), ei = -(rr * si + ri * sr);
    const double ee = er * er + ei * ei;
    if (!(ee > 0))
        return -1;
    const double wr = (rr * er + ri * ei) / ee, wi = (ri * er - rr * ei) / ee;
    *nr = xr - wr;
    *ni = xi - wi;
    if (!isfinite(*nr) || !isfinite(*ni))
        return -1;
    return sqrt(wr * wr + wi * wi) <= 1e-15 * az;
}

/** Roots of the monic polynomial z^deg + a[1] z^(deg-1) + ... + a[deg] (a[0] = 1 is ignored)
 *  by the Aberth–Ehrlich simultaneous iteration (xray_root_start, xray_root_step: each
 *  iteration corrects every unconverged root from the roots of the iteration before). Returns
 *  the iterations taken, or -1 when 1000 did not converge or a value was not finite.
 *  @p done: deg ints of scratch, @p nz: 2 deg doubles. */
TIDE_HD static inline int xray_roots(const double *a, int deg, double *zr, double *zi, int *done,
                                     double *nz) {
    if (deg <= 0)
        return 0;
    for (int i = 0; i < deg; i++) {
        xray_root_start(a, deg, i, zr, zi);
        done[i] = 0;
    }
    for (int it = 1; it <= 1000; it++) {
        int all = 1;
        for (int i = 0; i < deg; i++) {
            nz[i] = zr[i];
            nz[deg + i] = zi[i];
            if (done[i])
                continue;
            const int f = xray_root_step(a, deg, zr, zi, i, &nz[i], &nz[deg + i]);
            if (f < 0)
                return -1;
            done[i] = f;
            all &= f;
        }
        for (int i = 0; i < deg; i++) {
            zr[i] = nz[i];
            zi[i] = nz[deg + i];
        }
        if (all)
            return it;
    }
    return -1;
}

/* ---- LPSVD of one trace -------------------------------------------------------------------- */

/** Sizes of the Hankel matrix for @p n samples (cuPhoton's convention, for n = N + 1 samples:
 *  m = floor(0.75 N) prediction coefficients, N - m rows). */
TIDE_HD static inline void xray_lp_sizes(int n, int *m, int *rows) {
    const int N = n - 1;
    *m = (3 * N) / 4;
    *rows = N - *m;
}

/** Doubles of workspace xray_lpsvd_finish needs for @p n samples, @p m coefficients, @p r
 *  Hankel rows and @p p least-squares columns at most: its two parts'. */
#define XRAY_LP_FINISH_WORK(n, m, r, p) (XRAY_LP_ROOTS_WORK(m, r) + XRAY_LP_MODES_WORK(n, p))
/** Doubles of xray_lpsvd_finish's first part: y (r), the polynomial (m + 1), its roots and
 *  their next values (4m) and flags. */
#define XRAY_LP_ROOTS_WORK(m, r) ((r) + (m) + 1 + 4 * (m) + ((m) + 1) / 2 + 1)
/** Doubles of xray_lpsvd_modes: the least squares' matrix (n × p), V (p × p), σ and β (p
 *  each), the modes' decays, frequencies and flags. */
#define XRAY_LP_MODES_WORK(n, p)                                                                   \
    ((n) * (p) + (p) * (p) + 2 * (p) + 2 * TIDE_XRAY_MAX_COMPONENTS +                              \
     TIDE_XRAY_MAX_COMPONENTS / 2 + 1)
/** Doubles of workspace xray_lpsvd needs: Hᵀ (m × r), V and R (r × r each), σ (r), and the
 *  finish's. */
#define XRAY_LP_WORK(n, m, r, p) ((m) * (r) + 2 * (r) * (r) + (r) + XRAY_LP_FINISH_WORK(n, m, r, p))

/** Doubles of workspace xray_lpsvd needs for @p n samples. */
TIDE_HD static inline int64_t xray_lp_work_doubles(int n) {
    int m, r;
    xray_lp_sizes(n, &m, &r);
    return XRAY_LP_WORK((int64_t)n, (int64_t)m, (int64_t)r, (int64_t)TIDE_XRAY_MAX_COMPONENTS + 1);
}

/** The model of @p r at time t: sum_k A_k e^(-b_k t) cos(ω_k t + φ_k) + constant. */
TIDE_HD static inline double xray_model(const tide_xray_lp_result *r, double t) {
    double v = r->constant;
    for (int k = 0; k < r->nmodes; k++)
        v += r->amp[k] * exp(-r->decay[k] * t) * cos(r->omega[k] * t + r->phase[k]);
    return v;
}

/* Order the first @p n modes of @p res by decreasing amplitude (the maps' mode axis), each
 * mode's frequency, damping and phase moving with it. */
TIDE_HD static inline void xray_sort_modes(tide_xray_lp_result *res, int n) {
    for (int i = 0; i < n - 1; i++)
        for (int j = i + 1; j < n; j++)
            if (res->amp[j] > res->amp[i]) {
                double t = res->amp[i];
                res->amp[i] = res->amp[j];
                res->amp[j] = t;
                t = res->phase[i];
                res->phase[i] = res->phase[j];
                res->phase[j] = t;
                t = res->omega[i];
                res->omega[i] = res->omega[j];
                res->omega[j] = t;
                t = res->decay[i];
                res->decay[i] = res->decay[j];
                res->decay[j] = t;
            }
}

/* LPSVD: fit one trace @p s of @p n samples spaced @p dt (time 0 at s[0]) with at most
 *  @p components singular values (the model order) into @p res. Steps: Hankel matrix H[i][j] =
 * s[i+1+j] (rows × m), its SVD (Householder QR of Hᵀ, Jacobi on the R factor), order k =
 * min(components, rows, #σ > 1e-12 σmax), backward prediction coefficients c = V_k Σ_k⁻¹ U_kᵀ
 * s[0:rows], the roots w of wᵐ − c₁wᵐ⁻¹ − … − c_m (signal roots are 1/z of the modes' z =
 * e^((−b+iω)dt), so outside the unit circle; the extraneous ones fall inside, Kumaresan & Tufts
 * 1982), decay b = ln|w|/dt and ω = |arg w|/dt, keeping one root of each conjugate pair and real
 * roots, with b >= 0 (a real root with b·T < 0.01 over the span T is the constant, fitted on its
 * own); then amplitudes and phases by least squares (SVD) on [e^(−bt)cos ωt, −e^(−bt)sin ωt |
 * e^(−bt) for real roots | 1]. Modes are returned by decreasing amplitude. Sets res->status and
 * res->reason.
 *
 *  The steps are three calls, so that a GPU can run the SVD of R in a kernel of its own:
 *  xray_lpsvd_start (checks, Hankel, QR; its doc), xray_jacobi_svd of R, xray_lpsvd_finish;
 *  xray_lpsvd runs them in turn. */

/** LPSVD's checks: @p res initialised, and final (0 returned) for a trace that is skipped;
 *  1 when the trace goes on. */
TIDE_HD static inline int xray_lpsvd_check(const double *s, int n, double dt, int components,
                                           tide_xray_lp_result *res) {
    res->status = TIDE_XRAY_FAILED;
    res->reason = TIDE_XRAY_R_NONE;
    res->order = 0;
    res->nmodes = 0;
    res->refine_iter = 0;
    res->constant = NAN;
    res->chi2 = NAN;
    int m, r;
    xray_lp_sizes(n, &m, &r);
    if (n < 8 || r < 1 || components < 1 || !(dt > 0)) {
        res->status = TIDE_XRAY_SKIPPED;
        res->reason = TIDE_XRAY_R_SHORT;
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (!isfinite(s[i])) {
            res->status = TIDE_XRAY_SKIPPED;
            res->reason = TIDE_XRAY_R_NONFINITE;
            return 0;
        }
    double smax = 0.0;
    for (int i = 0; i < n; i++)
        smax = fmax(smax, fabs(s[i]));
    if (!(smax > 0)) {
        res->status = TIDE_XRAY_SKIPPED;
        res->reason = TIDE_XRAY_R_ZERO;
        return 0;
    }
    return 1;
}

/** LPSVD's first steps: the checks (@p res final, 0 returned, for a skipped trace) and the R
 *  factor of Hᵀ into @p Rf (r × r by columns; @p B: m × r doubles of scratch), 1 returned. */
TIDE_HD static inline int xray_lpsvd_start(const double *s, int n, double dt, int components,
                                           double *B, double *Rf, tide_xray_lp_result *res) {
    if (!xray_lpsvd_check(s, n, dt, components, res))
        return 0;
    int m, r;
    xray_lp_sizes(n, &m, &r);
    for (int i = 0; i < r; i++)
        for (int j = 0; j < m; j++)
            B[i * m + j] = s[i + 1 + j];
    /* Hᵀ = Q R: the Jacobi sweeps run on the r × r factor R (3× shorter columns); Hᵀ itself
     * is needed only as s again (xray_lpsvd_finish) */
    xray_qr_r(B, m, m, r, Rf);
    return 1;
}

/** LPSVD's model order from the singular values @p sig (r of them, sorted) of a Jacobi SVD
 *  that took @p sweeps: k = min(components, rank, TIDE_XRAY_MAX_COMPONENTS), the rank counting
 *  σ > 1e-12 σmax; res->order set, and 0 returned with res->reason when the SVD failed. */
TIDE_HD static inline int xray_lpsvd_order(const double *sig, int r, int components, int sweeps,
                                           tide_xray_lp_result *res) {
    if (sweeps < 0) {
        res->reason = TIDE_XRAY_R_SVD;
        return 0;
    }
    int k = components < r ? components : r;
    int rank = 0;
    for (int i = 0; i < r; i++)
        if (isfinite(sig[i]) && sig[i] > 1e-12 * sig[0])
            rank++;
    if (k > rank)
        k = rank;
    if (k > TIDE_XRAY_MAX_COMPONENTS)
        k = TIDE_XRAY_MAX_COMPONENTS;
    res->order = k;
    if (k < 1)
        res->reason = TIDE_XRAY_R_SVD;
    return k > 0 ? k : 0;
}

/** The backward prediction's y = Σ_{i<k} v_i (v_i · s0) / σ_i² (r values; c = Hᵀ y). */
TIDE_HD static inline void xray_lpsvd_y(const double *s, int r, int k, const double *V,
                                        const double *sig, double *y) {
    for (int q = 0; q < r; q++)
        y[q] = 0.0;
    for (int i = 0; i < k; i++) {
        double g = 0.0;
        for (int q = 0; q < r; q++)
            g += V[i * r + q] * s[q];
        g /= sig[i] * sig[i];
        for (int q = 0; q < r; q++)
            y[q] += g * V[i * r + q];
    }
}

/** Coefficient j + 1 of the prediction polynomial [1, -c]: -(Hᵀ y)_j. */
TIDE_HD static inline double xray_lpsvd_coef(const double *s, int r, const double *y, int j) {
    double a = 0.0;
    for (int q = 0; q < r; q++)
        a += s[q + 1 + j] * y[q];
    return -a;
}

/** The modes of LPSVD of trace @p s from the roots zr, zi (m of them) of its prediction
 *  polynomial of order @p k: selection (see xray_lpsvd), amplitudes, phases and the constant
 *  by least squares, χ² and the status. @p w has XRAY_LP_MODES_WORK doubles. */
TIDE_HD static inline void xray_lpsvd_modes(const double *s, int n, double dt, int k, int m,
                                            const double *zr, const double *zi, double *w,
                                            tide_xray_lp_result *res) {
    const int pmax = TIDE_XRAY_MAX_COMPONENTS + 1;
    double *X = w;
    double *Vx = X + (int64_t)n * pmax;
    double *sgx = Vx + pmax * pmax;
    double *beta = sgx + pmax;
    double *mb = beta + pmax, *mo = mb + TIDE_XRAY_MAX_COMPONENTS;
    int *mreal = (int *)(mo + TIDE_XRAY_MAX_COMPONENTS);
    /* select the modes */
    const double span = dt * (n - 1);
    int nm = 0;
    for (int i = 0; i < m && nm < TIDE_XRAY_MAX_COMPONENTS; i++) {
        const double mod = sqrt(zr[i] * zr[i] + zi[i] * zi[i]);
        if (!(mod > 0))
            continue;
        const double b = log(mod) / dt;
        const int real = fabs(zi[i]) <= 1e-8 * mod;
        if (!real && zi[i] < 0)
            continue; /* the conjugate of a kept root */
        if (real && zr[i] < 0)
            continue; /* a negative real root: a Nyquist sign flip, not a mode */
        if (!(b >= 0))
            continue;
        if (real && b * span < 0.01)
            continue; /* the constant, which has its own column */
        mb[nm] = b;
        mo[nm] = real ? 0.0 : atan2(zi[i], zr[i]) / dt;
        mreal[nm] = real;
        nm++;
    }
    /* order by decay (cuPhoton's order), then limit to what the order k can hold */
    for (int i = 0; i < nm - 1; i++)
        for (int j = i + 1; j < nm; j++)
            if (mb[j] < mb[i]) {
                double t = mb[i];
                mb[i] = mb[j];
                mb[j] = t;
                t = mo[i];
                mo[i] = mo[j];
                mo[j] = t;
                const int u = mreal[i];
                mreal[i] = mreal[j];
                mreal[j] = u;
            }
    int p = 0, used = 0;
    for (int i = 0; i < nm; i++) {
        const int need = mreal[i] ? 1 : 2;
        if (p + need > k)
            break;
        p += need;
        used++;
    }
    nm = used;
    const int np = p + 1;
    for (int j = 0; j < n; j++) {
        const double t = j * dt;
        int col = 0;
        for (int i = 0; i < nm; i++) {
            const double e = exp(-mb[i] * t);
            if (mreal[i]) {
                X[(int64_t)col++ * n + j] = e;
            } else {
                X[(int64_t)col++ * n + j] = e * cos(mo[i] * t);
                X[(int64_t)col++ * n + j] = -e * sin(mo[i] * t);
            }
        }
        X[(int64_t)col * n + j] = 1.0;
    }
    if (xray_jacobi_svd(X, n, n, np, Vx, sgx) < 0) {
        res->reason = TIDE_XRAY_R_LSQ;
        return;
    }
    for (int i = 0; i < np; i++)
        beta[i] = 0.0;
    for (int i = 0; i < np; i++) {
        if (!(sgx[i] > 1e-12 * sgx[0]))
            continue;
        double g = 0.0;
        for (int j = 0; j < n; j++)
            g += X[(int64_t)i * n + j] * s[j];
        g /= sgx[i] * sgx[i];
        for (int q = 0; q < np; q++)
            beta[q] += g * Vx[i * np + q];
    }
    int col = 0;
    for (int i = 0; i < nm; i++) {
        res->decay[i] = mb[i];
        res->omega[i] = mo[i];
        if (mreal[i]) {
            const double a = beta[col++];
            res->amp[i] = fabs(a);
            res->phase[i] = a < 0 ? 3.141592653589793 : 0.0;
        } else {
            const double a = beta[col], b = beta[col + 1];
            col += 2;
            res->amp[i] = sqrt(a * a + b * b);
            res->phase[i] = atan2(b, a);
        }
    }
    res->constant = beta[col];
    res->nmodes = nm;
    /* by decreasing amplitude: the maps' mode axis */
    xray_sort_modes(res, nm);
    double ss = 0.0;
    for (int j = 0; j < n; j++) {
        const double d = s[j] - xray_model(res, j * dt);
        ss += d * d;
    }
    res->chi2 = ss / n;
    if (!isfinite(res->chi2) || !isfinite(res->constant)) {
        res->reason = TIDE_XRAY_R_NONFINITE;
        return;
    }
    if (nm == 0) {
        res->reason = TIDE_XRAY_R_NOMODE;
        return;
    }
    res->status = TIDE_XRAY_OK;
}

/** The rest of LPSVD of trace @p s after the SVD of its R factor (xray_lpsvd_start): @p V and
 *  @p sig from xray_jacobi_svd of R, which took @p sweeps (< 0: it did not converge, the trace
 *  fails); order, prediction polynomial, its roots, xray_lpsvd_modes. @p w has
 *  XRAY_LP_FINISH_WORK doubles. See xray_lpsvd. */
TIDE_HD static inline void xray_lpsvd_finish(const double *s, int n, double dt, int components,
                                             const double *V, const double *sig, int sweeps,
                                             double *w, tide_xray_lp_result *res) {
    int m, r;
    xray_lp_sizes(n, &m, &r);
    const int k = xray_lpsvd_order(sig, r, components, sweeps, res);
    if (!k)
        return;
    double *y = w;                   /* r */
    double *c = y + r;               /* m + 1: the polynomial [1, -c] */
    double *zr = c + m + 1;          /* m */
    double *zi = zr + m;             /* m */
    double *nz = zi + m;             /* 2m */
    int *done = (int *)(nz + 2 * m); /* m ints in (m + 1) / 2 + 1 doubles */
    double *mw = nz + 2 * m + (m + 1) / 2 + 1;
    xray_lpsvd_y(s, r, k, V, sig, y);
    c[0] = 1.0;
    for (int j = 0; j < m; j++)
        c[j + 1] = xray_lpsvd_coef(s, r, y, j);
    if (xray_roots(c, m, zr, zi, done, nz) < 0) {
        res->reason = TIDE_XRAY_R_ROOTS;
        return;
    }
    xray_lpsvd_modes(s, n, dt, k, m, zr, zi, mw, res);
}

/** LPSVD of one trace in one call (the CPU twin): xray_lpsvd_start, xray_jacobi_svd of the R
 *  factor, xray_lpsvd_finish. @p w has xray_lp_work_doubles(n) doubles. */
TIDE_HD static inline void xray_lpsvd(const double *s, int n, double dt, int components, double *w,
                                      tide_xray_lp_result *res) {
    int m, r;
    xray_lp_sizes(n, &m, &r);
    double *B = w;            /* Hᵀ: r columns of length m */
    double *V = B + m * r;    /* r × r */
    double *Rf = V + r * r;   /* r × r: the R factor of Hᵀ */
    double *sig = Rf + r * r; /* r */
    if (xray_lpsvd_start(s, n, dt, components, B, Rf, res))
        xray_lpsvd_finish(s, n, dt, components, V, sig, xray_jacobi_svd(Rf, r, r, r, V, sig),
                          sig + r, res);
}

/** The DFT's twiddles for @p n points: tw[2p] = cos(2πp/n), tw[2p+1] = sin(2πp/n). */
TIDE_HD static inline void xray_dft_twiddles(int n, double *tw) {
    for (int p = 0; p < n; p++) {
        const double a = 6.283185307179586 * (double)p / n;
        tw[2 * p] = cos(a);
        tw[2 * p + 1] = sin(a);
    }
}

/** |DFT|/n of @p s (n samples) at bins 0..nb-1 (nb <= n/2), in float64, the angle of term
 *  (k, j) taken from the twiddles @p tw (xray_dft_twiddles) at k·j mod n, so every backend
 *  sums the same terms in the same order. */
TIDE_HD static inline void xray_dft_abs(const double *s, int n, int nb, const double *tw,
                                        double *out) {
    for (int kb = 0; kb < nb; kb++) {
        double re = 0.0, im = 0.0;
        int ph = 0;
        for (int j = 0; j < n; j++) {
            re += s[j] * tw[2 * ph];
            im -= s[j] * tw[2 * ph + 1];
            ph += kb;
            if (ph >= n)
                ph -= n;
        }
        out[kb] = sqrt(re * re + im * im) / n;
    }
}

#endif
