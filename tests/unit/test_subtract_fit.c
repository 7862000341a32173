/* test_subtract_fit.c — the host side of the subtraction's fit against plain definitions:
 * the global normal equations as one product (tide_sub_assemble, both unknown orders)
 * against A[u][v] = sum_s Q_s[c_u][c_v] f_u(s) f_v(s) summed stamp by stamp, for constant and
 * varying kernels, a background of higher degree than the kernel, and dropped stamps; the
 * vectorised Cholesky solve against the residual, the leading-block solve (the refit with the
 * flux term fixed) against a fresh solve of the leading block, a singular system taking the
 * ridge; and the stamp pixel count read from Q (Q[var][ones]) against counting the weights. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/test_rng.h"
#include "difference/subtract/subtract_internal.h"
#include "difference/subtract/subtract_kernels.h"
#include "difference/subtract/subtract_math.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {
    return trng_unit(trng_xorshift64s(&rng));
}

/* the documented layout: a_0 (column 0, monomial 1), a_bp (column b, monomial p), then the
 * background (ones column nb, monomial k) */
static void ref_unknown(const fit_layout *L, int u, const double *pk, const double *pb, int *c,
                        double *f) {
    if (u == 0) {
        *c = 0;
        *f = 1.0;
    } else if (u < 1 + (L->nb - 1) * L->npk) {
        *c = 1 + (u - 1) / L->npk;
        *f = pk[(u - 1) % L->npk];
    } else {
        *c = L->nb;
        *f = pb[u - 1 - (L->nb - 1) * L->npk];
    }
}

static void check_assemble(tide_ctx *ctx, int nb, int sdeg, int bgdeg, int ns) {
    fit_layout L = {nb, tide_sub_npoly(sdeg), tide_sub_npoly(bgdeg), nb + 3, 0, sdeg, bgdeg, 0.0};
    L.n = 1 + (nb - 1) * L.npk + L.nbg;
    int n = L.n, nc = L.nc, t = nc - 1;
    int64_t npx = 25;
    tide_sub_geom g = {1000, 700, ns, 2, npx, nc, 3, 0};
    float *D = malloc(sizeof(float) * (size_t)(ns * nc * npx));
    float *Wt = malloc(sizeof(float) * (size_t)(ns * npx));
    double *Q = malloc(sizeof(double) * (size_t)(ns * nc * nc));
    int64_t *centre = malloc(sizeof(int64_t) * (size_t)ns);
    int *keep = malloc(sizeof(int) * (size_t)ns);
    for (int s = 0; s < ns; s++) {
        centre[s] = (int64_t)(urand() * 700) * 1000 + (int64_t)(urand() * 1000);
        keep[s] = s % 7 != 3;
        for (int64_t i = 0; i < nc * npx; i++)
            D[(size_t)s * nc * npx + i] = (float)(urand() * 2.0 - 1.0) * (float)(1 + i % 5);
        for (int64_t i = 0; i < npx; i++)
            Wt[s * npx + i] = (float)(0.5 + urand());
    }
    tide_sub_normal_cpu(ctx, &g, D, Wt, Q);
    double *A = calloc((size_t)n * n, sizeof *A), *rhs = calloc((size_t)n, sizeof *rhs);
    double *B = malloc(sizeof *B * (size_t)n * n), *rb = malloc(sizeof *rb * (size_t)n);
    for (int s = 0; s < ns; s++) {
        if (!keep[s])
            continue;
        double u = tide_sub_norm((double)(centre[s] % 1000), 1000);
        double v = tide_sub_norm((double)(centre[s] / 1000), 700);
        double pk[TIDE_SUB_MAXPOLY], pb[TIDE_SUB_MAXPOLY];
        tide_sub_monomials(u, v, sdeg, pk);
        tide_sub_monomials(u, v, bgdeg, pb);
        const double *q = Q + (size_t)s * nc * nc;
        for (int a = 0; a < n; a++) {
            int ca;
            double fa;
            ref_unknown(&L, a, pk, pb, &ca, &fa);
            rhs[a] += q[ca * nc + t] * fa;
            for (int b = 0; b < n; b++) {
                int cb;
                double fb;
                ref_unknown(&L, b, pk, pb, &cb, &fb);
                A[(size_t)a * n + b] += q[ca * nc + cb] * fa * fb;
            }
        }
    }
    double amax = 0.0, rmax = 0.0;
    for (int i = 0; i < n * n; i++)
        amax = fmax(amax, fabs(A[i]));
    for (int i = 0; i < n; i++)
        rmax = fmax(rmax, fabs(rhs[i]));
    for (int flux_last = 0; flux_last <= 1; flux_last++) {
        CHECK_OK(tide_sub_assemble(ctx, &L, &g, centre, Q, keep, flux_last, B, rb));
        double da = 0.0, dr = 0.0;
        for (int a = 0; a < n; a++) {
            int pa = flux_last ? (a == 0 ? n - 1 : a - 1) : a;
            dr = fmax(dr, fabs(rb[pa] - rhs[a]));
            for (int b = 0; b < n; b++) {
                int pb = flux_last ? (b == 0 ? n - 1 : b - 1) : b;
                da = fmax(da, fabs(B[(size_t)pa * n + pb] - A[(size_t)a * n + b]));
            }
        }
        printf("assemble nb %d, spatial %d, bg %d, %d stamps, flux last %d: n %d, |dA| %.3g "
               "(of %.3g), |drhs| %.3g (of %.3g)\n",
               nb, sdeg, bgdeg, ns, flux_last, n, da, amax, dr, rmax);
        CHECK(da <= 1e-13 * amax);
        CHECK(dr <= 1e-13 * rmax);
    }
    free(D);
    free(Wt);
    free(Q);
    free(centre);
    free(keep);
    free(A);
    free(rhs);
    free(B);
    free(rb);
}

/* An SPD system with a spread of scales: the solution against the residual, and the leading
 * block through the full factor against a fresh solve of that block. */
static void check_solve(int n) {
    double *M = malloc(sizeof *M * (size_t)n * n), *A = calloc((size_t)n * n, sizeof *A);
    double *b = malloc(sizeof *b * (size_t)n), *x = malloc(sizeof *x * (size_t)n);
    double *y = malloc(sizeof *y * (size_t)n);
    for (int i = 0; i < n * n; i++)
        M[i] = urand() - 0.5;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = i == j ? 0.1 : 0.0;
            for (int k = 0; k < n; k++)
                s += M[(size_t)i * n + k] * M[(size_t)j * n + k];
            A[(size_t)i * n + j] = s * pow(10.0, (i % 5) - 2) * pow(10.0, (j % 5) - 2);
        }
    for (int i = 0; i < n; i++)
        b[i] = urand() - 0.5;
    tide_sub_chol f;
    CHECK_OK(tide_sub_chol_factor(n, A, NULL, &f));
    CHECK(f.regularised == 0 && f.cond > 1.0 && f.cond < 1e12);
    /* the estimate against the exact 1-norm condition of the Jacobi-scaled matrix S = DAD
     * (S^-1 by Gauss-Jordan): Hager-Higham gives a lower bound, in practice within ~3x */
    {
        double *S = malloc(sizeof *S * (size_t)n * n), *I = calloc((size_t)n * n, sizeof *I);
        for (int i = 0; i < n; i++) {
            I[(size_t)i * n + i] = 1.0;
            for (int j = 0; j < n; j++)
                S[(size_t)i * n + j] =
                    A[(size_t)i * n + j] / sqrt(A[(size_t)i * n + i] * A[(size_t)j * n + j]);
        }
        double sn = 0.0, in = 0.0;
        for (int j = 0; j < n; j++) {
            double c = 0.0;
            for (int i = 0; i < n; i++)
                c += fabs(S[(size_t)i * n + j]);
            sn = fmax(sn, c);
        }
        for (int c = 0; c < n; c++) { /* SPD: no pivoting needed */
            const double p = S[(size_t)c * n + c];
            for (int j = 0; j < n; j++) {
                S[(size_t)c * n + j] /= p;
                I[(size_t)c * n + j] /= p;
            }
            for (int r = 0; r < n; r++) {
                const double q = S[(size_t)r * n + c];
                if (r == c || q == 0.0)
                    continue;
                for (int j = 0; j < n; j++) {
                    S[(size_t)r * n + j] -= q * S[(size_t)c * n + j];
                    I[(size_t)r * n + j] -= q * I[(size_t)c * n + j];
                }
            }
        }
        for (int j = 0; j < n; j++) {
            double c = 0.0;
            for (int i = 0; i < n; i++)
                c += fabs(I[(size_t)i * n + j]);
            in = fmax(in, c);
        }
        const double exact = sn * in;
        printf("condition n %d: estimate %.4g, exact 1-norm %.4g\n", n, f.cond, exact);
        CHECK(f.cond <= exact * (1.0 + 1e-9) && f.cond >= exact / 3.0);
        free(S);
        free(I);
    }
    tide_sub_chol_solve(&f, n, b, x);
    double res = 0.0, bn = 0.0;
    for (int i = 0; i < n; i++) {
        double s = -b[i];
        for (int j = 0; j < n; j++)
            s += A[(size_t)i * n + j] * x[j];
        res = fmax(res, fabs(s) / sqrt(A[(size_t)i * n + i]));
        bn = fmax(bn, fabs(b[i]) / sqrt(A[(size_t)i * n + i]));
    }
    /* leading block m = n - 1 */
    int m = n - 1;
    tide_sub_chol_solve(&f, m, b, x);
    double *S = malloc(sizeof *S * (size_t)m * m), cond;
    int reg;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            S[(size_t)i * m + j] = A[(size_t)i * n + j];
    CHECK_OK(tide_sub_solve(m, S, b, y, &cond, &reg, NULL));
    double dx = 0.0, xm = 0.0;
    for (int i = 0; i < m; i++) {
        dx = fmax(dx, fabs(x[i] - y[i]));
        xm = fmax(xm, fabs(y[i]));
    }
    printf("solve n %d: cond %.3g, scaled residual %.3g (rhs %.3g); leading block |dx| %.3g "
           "of %.3g\n",
           n, f.cond, res, bn, dx, xm);
    CHECK(res <= 1e-9 * bn);
    CHECK(dx <= 1e-9 * xm);
    tide_sub_chol_free(&f);
    /* singular: two equal rows and columns need the ridge */
    for (int j = 0; j < n; j++)
        A[(size_t)1 * n + j] = A[(size_t)0 * n + j];
    for (int i = 0; i < n; i++)
        A[(size_t)i * n + 1] = A[(size_t)i * n + 0];
    CHECK_OK(tide_sub_chol_factor(n, A, NULL, &f));
    CHECK(f.regularised == 1);
    tide_sub_chol_solve(&f, n, b, x);
    int finite = 1;
    for (int i = 0; i < n; i++)
        finite &= isfinite(x[i]);
    CHECK(finite);
    tide_sub_chol_free(&f);
    free(M);
    free(A);
    free(b);
    free(x);
    free(y);
    free(S);
}

/* Q[var][ones] (subtract.c's pixel count) against counting W > 0, weights 1/v of random v
 * over 9 decades, a third of the pixels excluded. */
static void check_count(tide_ctx *ctx) {
    int nb = 4, nc = nb + 3, ns = 6;
    int64_t npx = 41 * 41;
    tide_sub_geom g = {100, 100, ns, 20, npx, nc, 3, 0};
    float *D = calloc((size_t)(ns * nc * npx), sizeof *D);
    float *Wt = calloc((size_t)(ns * npx), sizeof *Wt);
    double *Q = malloc(sizeof *Q * (size_t)(ns * nc * nc));
    int64_t cnt[6] = {0};
    for (int s = 0; s < ns; s++)
        for (int64_t i = 0; i < npx; i++) {
            float *d = D + (size_t)s * nc * npx;
            d[(size_t)nb * npx + i] = 1.0f;
            if (urand() < 0.33)
                continue;
            float v = (float)pow(10.0, urand() * 9.0 - 3.0) * (float)(1.0 + urand());
            Wt[s * npx + i] = 1.0f / v;
            d[(size_t)(nb + 1) * npx + i] = v;
            cnt[s] += Wt[s * npx + i] > 0.0f;
        }
    tide_sub_normal_cpu(ctx, &g, D, Wt, Q);
    for (int s = 0; s < ns; s++) {
        double c = Q[((size_t)s * nc + nb + 1) * nc + nb];
        CHECK(llround(c) == cnt[s]);
        CHECK(fabs(c - (double)cnt[s]) < 0.01);
    }
    free(D);
    free(Wt);
    free(Q);
}

int main(void) {
    tide_ctx *ctx = NULL;
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    check_assemble(ctx, 5, 0, 0, 9);
    check_assemble(ctx, 7, 0, 1, 40);
    check_assemble(ctx, 9, 2, 1, 60);
    check_assemble(ctx, 6, 1, 3, 25); /* background of higher degree than the kernel */
    check_assemble(ctx, 4, 3, 2, 30);
    check_assemble(ctx, 3, 4, 4, 50);
    check_assemble(ctx, 49, 2, 1, 120); /* the default basis */
    check_solve(40);
    check_solve(291);
    check_count(ctx);
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
