/* subtract_internal.h — host-side pieces of the subtraction shared between its files:
 * the kernel basis (subtract_basis.c) and the dense solve (subtract_solve.c). */
#ifndef TIDE_SUBTRACT_INTERNAL_H
#define TIDE_SUBTRACT_INTERNAL_H
#include <stdint.h>

/** An Alard-Lupton kernel basis: nb kernels of kw x kw (kw = 2 kh + 1), row-major, host. */
typedef struct tide_sub_basis {
    int nb, kh, kw;
    float *k; /**< nb * kw * kw */
} tide_sub_basis;

/** Build the basis: for each Gaussian g (sigma sigmas[g]) the kernels
 *  exp(-(u^2+v^2)/(2 s^2)) u^i v^j, i + j <= degrees[g] (u, v pixel offsets), made
 *  flux-conserving as in Alard (2000): kernel 0 (Gaussian 0, i = j = 0) has unit sum and
 *  every other kernel k has K_k - sum(K_k) K_0, so zero sum; those are orthonormalised on the
 *  kernel pixels (Gram-Schmidt), dropping ones the others span, so b->nb may be less than
 *  the number of terms. */
int tide_sub_basis_make(int kh, int ngauss, const double *sigmas, const int *degrees,
                        tide_sub_basis *b);
void tide_sub_basis_free(tide_sub_basis *b);

/** Solve the symmetric positive (semi)definite n x n system A x = rhs (A row-major, not
 *  modified) by Cholesky after Jacobi scaling. *cond receives the 2-norm condition number of
 *  the scaled matrix (power and inverse iteration). When the factorisation fails or cond >
 *  1e12, a ridge (growing by 10x from 1e-12 of the scaled diagonal) is added until it
 *  succeeds; *regularised is then 1. The ridge goes only on unknowns with ridge_on[i] != 0
 *  (NULL: all), so the flux term and the background can stay unbiased (the ridge pulls the
 *  others towards 0, i.e. the kernel towards the shape of basis 0). TIDE_E_RANGE when even
 *  that fails. */
int tide_sub_solve(int n, const double *A, const double *rhs, double *x, double *cond,
                   int *regularised, const unsigned char *ridge_on);

/** A factorised system (tide_sub_chol_factor): the Cholesky factor L of the Jacobi-scaled
 *  matrix (plus the ridge, if one was needed), row-major n x n lower triangle, and the
 *  scaling d. */
typedef struct tide_sub_chol {
    int n;
    double *l, *d;
    double cond;     /**< 2-norm condition number of the scaled matrix, before any ridge */
    int regularised; /**< 1 when a ridge was added */
} tide_sub_chol;

/** The factorisation half of tide_sub_solve (same scaling, condition check and ridge). */
int tide_sub_chol_factor(int n, const double *A, const unsigned char *ridge_on, tide_sub_chol *f);
/** Solve the system of the leading m x m block of the factorised matrix (m <= f->n; m = n is
 *  the whole system): the leading block of a Cholesky factor is the factor of the leading
 *  block, so fixing the last unknowns needs no new factorisation. */
void tide_sub_chol_solve(const tide_sub_chol *f, int m, const double *rhs, double *x);
void tide_sub_chol_free(tide_sub_chol *f);

struct tide_ctx;
struct tide_subtract_result;
struct tide_subtract_params;
struct tide_sub_geom;

/** The unknowns of the fit: a_0 (the flux term, constant), a_bp for kernels b = 1..nb-1 and
 *  spatial monomials p (u = 1 + (b-1) npk + p), then the background monomials. The design
 *  matrix has nc = nb + 3 columns (subtract_kernels.h). */
typedef struct fit_layout {
    int nb, npk, nbg, nc, n; /* basis, spatial terms, background terms, D columns, unknowns */
    int sdeg, bgdeg;
    double sky_ref; /* the convolved frame's sky level (the stamp sums' flux ratio) */
} fit_layout;

/** The global normal equations A a = rhs (A n x n, full, row-major) over the stamps with
 *  keep[s] != 0: A[u][v] = sum_s Q_s[c_u][c_v] f_u(s) f_v(s), rhs[u] = sum_s Q_s[c_u][t] f_u(s)
 *  (c_u the design column of unknown u, f_u(s) its spatial monomial at stamp s's centre, t the
 *  target column; Alard 2000). Computed as one product (column pairs x stamps) times (stamps x
 *  monomial products), so each sum runs over the stamps in order whatever the thread count.
 *  With @p flux_last the flux unknown a_0 is stored last (row and column n-1, unknown u >= 1
 *  at u - 1), so a solve with a_0 fixed is the leading (n-1) block of the same factor.
 *  @p Q: the per-stamp normal matrices where the context computes (the product runs there,
 *  tide_sub_pairs, with the same result on both backends); the rest host memory. */
int tide_sub_assemble(struct tide_ctx *ctx, const fit_layout *L, const struct tide_sub_geom *g,
                      const int64_t *centre, const double *Q, const int *keep, int flux_last,
                      double *A, double *rhs);

/** Fit with stamp clipping (subtract_fit.c): keep[s] in/out (stamps used), a[n] receives the
 *  solution; fills r->chi2, nfit, nstamps, cond, regularised, flux_from_stamps. @p Q: the
 *  per-stamp normal matrices on the host; @p Qb: the same where the context computes (the
 *  assembly's, tide_sub_assemble; Q itself on a CPU context). */
int tide_sub_fit_clip(struct tide_ctx *ctx, const fit_layout *L, const struct tide_sub_geom *g,
                      const int64_t *centre, const double *Q, const double *Qb, const int64_t *npix,
                      const struct tide_subtract_params *p, int *keep, double *a,
                      struct tide_subtract_result *r);
/** r->kernel_terms (npk kernels K_p = sum_b a_bp K_b) and r->bg_coef from the solution. */
int tide_sub_kernel_terms(const fit_layout *L, const tide_sub_basis *B, const double *a,
                          struct tide_subtract_result *r);
/** The decorrelation afterburner (subtract_decorr.c): convolve r->diff.pix in place with the
 *  kernel whose spectrum is sqrt((vt + k0^2 vr) / (vt + |K(k)|^2 vr)), K = r->kernel_center,
 *  k0 its sum (Reiss & Lupton 2016, eq. 1). Pixels with @p bits or EDGE count as 0. */
int tide_sub_decorrelate(struct tide_ctx *ctx, struct tide_subtract_result *r, float vr, float vt,
                         uint16_t bits);
#endif
