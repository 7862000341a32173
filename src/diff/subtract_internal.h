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

struct tide_ctx;
struct tide_subtract_result;
/** The decorrelation afterburner (subtract_decorr.c): convolve r->diff.pix in place with the
 *  kernel whose spectrum is sqrt((vt + k0^2 vr) / (vt + |K(k)|^2 vr)), K = r->kernel_center,
 *  k0 its sum (Reiss & Lupton 2016, eq. 1). Pixels with @p bits or EDGE count as 0. */
int tide_sub_decorrelate(struct tide_ctx *ctx, struct tide_subtract_result *r, float vr,
                         float vt, uint16_t bits);
#endif
