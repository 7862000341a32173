/* test_xray_math.c — the numerics under tide xray (xray_math.h): Savitzky–Golay weights against
 * the classical tables and polynomial exactness, the one-sided Jacobi SVD against a known
 * decomposition (singular values, orthogonality, reconstruction), the Aberth root finder on
 * polynomials with known roots (real, complex pairs, a degree-70 LPSVD-like one), the DFT
 * magnitudes and the zero-delay step finder. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "tide_test.h"
#include "xray/xray_internal.h"
#include "xray/xray_math.h"

static void savgol(void) {
    double w[7];
    /* Savitzky & Golay (1964): quadratic/cubic, 5 points: (-3, 12, 17, 12, -3) / 35 */
    CHECK(xray_savgol_weights(5, 3, 2.0, w) == 0);
    const double t5[5] = {-3, 12, 17, 12, -3};
    for (int j = 0; j < 5; j++)
        CHECK_CLOSE(w[j], t5[j] / 35.0, 1e-14);
    CHECK(xray_savgol_weights(5, 2, 2.0, w) == 0);
    for (int j = 0; j < 5; j++)
        CHECK_CLOSE(w[j], t5[j] / 35.0, 1e-14);
    /* 7 points quadratic: (-2, 3, 6, 7, 6, 3, -2) / 21 */
    CHECK(xray_savgol_weights(7, 2, 3.0, w) == 0);
    const double t7[7] = {-2, 3, 6, 7, 6, 3, -2};
    for (int j = 0; j < 7; j++)
        CHECK_CLOSE(w[j], t7[j] / 21.0, 1e-14);
    CHECK(xray_savgol_weights(5, 5, 2.0, w) < 0);
    /* a cubic passes through a cubic smoother unchanged, edges included (mode "interp") */
    double s[40], o[40], ww[49];
    for (int i = 0; i < 40; i++)
        s[i] = 0.5 - 0.2 * i + 0.03 * i * i - 0.001 * i * i * i;
    CHECK(xray_savgol(s, 40, 7, 3, ww, o) == 0);
    for (int i = 0; i < 40; i++)
        CHECK_CLOSE(o[i], s[i], 1e-10);
    CHECK(xray_savgol(s, 4, 5, 3, ww, o) < 0);
}

/* A = U diag(sv) Vᵀ with U, V from products of Givens rotations. */
static void jacobi(void) {
    enum { R = 30, C = 9 };
    double U[R * R], V[C * C], A[C * R], sv[C] = {9, 7, 5, 3, 2, 1, 0.5, 1e-3, 0};
    for (int i = 0; i < R * R; i++)
        U[i] = (i % (R + 1)) == 0;
    for (int i = 0; i < C * C; i++)
        V[i] = (i % (C + 1)) == 0;
    sim_rng g = sim_rng_make(3, 1, 0);
    for (int rep = 0; rep < 200; rep++) {
        const int n = rep % 2 ? C : R, p = (int)(sim_rng_uniform(&g) * n) % n,
                  q = (p + 1 + (int)(sim_rng_uniform(&g) * (n - 1))) % n;
        const double th = sim_rng_range(&g, 0, 6.283185307179586), c = cos(th), s = sin(th);
        double *M = rep % 2 ? V : U;
        for (int i = 0; i < n; i++) { /* rotate columns p, q (column-major n × n) */
            const double x = M[p * n + i], y = M[q * n + i];
            M[p * n + i] = c * x - s * y;
            M[q * n + i] = s * x + c * y;
        }
    }
    /* column j of A (length R) = sum_k U[:,k] sv[k] V[j,k] */
    for (int j = 0; j < C; j++)
        for (int i = 0; i < R; i++) {
            double a = 0;
            for (int k = 0; k < C; k++)
                a += U[k * R + i] * sv[k] * V[k * C + j];
            A[j * R + i] = a;
        }
    double A0[C * R], W[C * C], sig[C];
    memcpy(A0, A, sizeof A);
    const int sweeps = xray_jacobi_svd(A, R, R, C, W, sig);
    CHECK(sweeps > 0 && sweeps < 20);
    /* a column whose norm falls below 1e-14 ‖A‖_F (1.3e-13 here: xray_jacobi_start's zero) is
     * rotated no more, so the zero singular value ends anywhere below that */
    for (int k = 0; k < C; k++)
        CHECK_CLOSE(sig[k], sv[k], k == C - 1 ? 1.4e-13 : 1e-13);
    /* W orthogonal; the columns of A orthogonal; A W⁻¹ reconstructs A0 */
    for (int a = 0; a < C; a++)
        for (int b = 0; b < C; b++) {
            double d = 0, e = 0;
            for (int i = 0; i < C; i++)
                d += W[a * C + i] * W[b * C + i];
            for (int i = 0; i < R; i++)
                e += A[a * R + i] * A[b * R + i];
            CHECK_CLOSE(d, a == b, 1e-14);
            if (a != b)
                CHECK(fabs(e) <= 1e-13);
        }
    for (int j = 0; j < C; j++)
        for (int i = 0; i < R; i++) {
            double a = 0;
            for (int k = 0; k < C; k++)
                a += A[k * R + i] * W[k * C + j];
            CHECK_CLOSE(a, A0[j * R + i], 1e-13);
        }
}

/* Monic polynomial of the given roots; checks each is found once, the first @p nsig within
 * @p tol and the others within @p tol_rest (clustered roots are ill-conditioned: the rounding
 * of the coefficients alone moves them by more than 1e-6), and every root found has a
 * residual within rounding. */
static void roots_case(const double *rr, const double *ri, int deg, int nsig, double tol,
                       double tol_rest) {
    double re[80] = {1}, im[80] = {0};
    for (int k = 0; k < deg; k++) /* multiply by (z - root_k) */
        for (int j = k + 1; j >= 1; j--) {
            const double nr = re[j] - (rr[k] * re[j - 1] - ri[k] * im[j - 1]);
            const double ni = im[j] - (rr[k] * im[j - 1] + ri[k] * re[j - 1]);
            re[j] = nr;
            im[j] = ni;
        }
    for (int j = 0; j <= deg; j++)
        CHECK(fabs(im[j]) < 1e-9); /* conjugate pairs: real coefficients */
    double zr[80], zi[80], nz[160];
    int done[80], used[80] = {0};
    CHECK(xray_roots(re, deg, zr, zi, done, nz) > 0);
    for (int k = 0; k < deg; k++) {
        int b = -1;
        double bd = 1e300;
        for (int i = 0; i < deg; i++) {
            const double d = hypot(zr[i] - rr[k], zi[i] - ri[k]);
            if (!used[i] && d < bd) {
                bd = d;
                b = i;
            }
        }
        const double t = k < nsig ? tol : tol_rest;
        if (!(bd < t))
            printf("root %d (%g, %g): nearest at %g\n", k, rr[k], ri[k], bd);
        CHECK(bd < t);
        if (b >= 0)
            used[b] = 1;
    }
    for (int i = 0; i < deg; i++) {
        double pr = 1, pi = 0, bnd = 1;
        const double az = hypot(zr[i], zi[i]);
        for (int k = 1; k <= deg; k++) {
            const double t = pr * zr[i] - pi * zi[i] + re[k];
            pi = pr * zi[i] + pi * zr[i];
            pr = t;
            bnd = bnd * az + fabs(re[k]);
        }
        CHECK(hypot(pr, pi) <= 1e-13 * bnd);
    }
}

static void roots(void) {
    const double r1[3] = {1, 2, 3}, i1[3] = {0, 0, 0};
    roots_case(r1, i1, 3, 3, 1e-12, 1e-12);
    const double r2[4] = {0.5, 0.5, -1.2, 2.0}, i2[4] = {0.8, -0.8, 0, 0};
    roots_case(r2, i2, 4, 4, 1e-12, 1e-12);
    /* LPSVD-like: two signal pairs just outside the unit circle, the rest spread inside */
    double rr[70], ri[70];
    const double sig[2][2] = {{0.09, 1.25}, {0.03, 0.45}};
    int n = 0;
    for (int k = 0; k < 2; k++) {
        const double m = exp(sig[k][0] * 0.1), a = sig[k][1] * 0.1;
        rr[n] = m * cos(a);
        ri[n++] = m * sin(a);
        rr[n] = m * cos(a);
        ri[n++] = -m * sin(a);
    }
    sim_rng g = sim_rng_make(5, 1, 0);
    while (n < 70) {
        const double m = sim_rng_range(&g, 0.6, 0.95), a = sim_rng_range(&g, 0.3, 3.0);
        rr[n] = m * cos(a);
        ri[n++] = m * sin(a);
        rr[n] = m * cos(a);
        ri[n++] = -m * sin(a);
    }
    roots_case(rr, ri, 70, 4, 1e-10, 1e-3);
}

static void dft_zero(void) {
    double s[64], o[32], tw[128];
    for (int j = 0; j < 64; j++)
        s[j] = 1.0 + 2.0 * cos(6.283185307179586 * 5 * j / 64.0);
    xray_dft_twiddles(64, tw);
    xray_dft_abs(s, 64, 32, tw, o);
    CHECK_CLOSE(o[0], 1.0, 1e-14);
    CHECK_CLOSE(o[5], 1.0, 1e-13);
    for (int k = 1; k < 32; k++)
        if (k != 5)
            CHECK(o[k] < 1e-13);
    double t[50];
    for (int j = 0; j < 50; j++)
        t[j] = j < 11 ? 0.01 * (j % 3) : 0.8 * cos(1.25 * 0.1 * (j - 11)) + 0.1;
    CHECK(xray_zero_from_trace(t, 50) == 11);
}

int main(void) {
    savgol();
    jacobi();
    roots();
    dft_zero();
    return TIDE_TEST_RESULT();
}
