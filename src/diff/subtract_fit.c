/* subtract_fit.c — the host side of the subtraction's fit (subtract.h): the global normal
 * equations assembled from the per-stamp normal matrices with the spatial polynomials at the
 * stamp centres (Alard 2000), the solve, the kernel sum from stamp sums, stamp clipping, and
 * the solved kernel as per-term kernels K_p. Small dense work: a few hundred unknowns. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "diff/subtract_internal.h"
#include "diff/subtract_kernels.h"
#include "diff/subtract_math.h"
#include "tide/ctx.h"
#include "tide/log.h"
#include "tide/status.h"
#include "tide/subtract.h"

/* ---- the global normal equations ------------------------------------------------------- */

/* Column of D and factor (at stamp monomials pk, pb) of unknown u. */
static void unknown_col(const fit_layout *L, int u, const double *pk, const double *pb,
                        int *col, double *f) {
    if (u == 0) {
        *col = 0;
        *f = 1.0;
    } else if (u < 1 + (L->nb - 1) * L->npk) {
        *col = 1 + (u - 1) / L->npk;
        *f = pk[(u - 1) % L->npk];
    } else {
        *col = L->nb;
        *f = pb[u - 1 - (L->nb - 1) * L->npk];
    }
}

/* Local column coefficients alpha_c at a stamp from the solution a. */
static void local_coef(const fit_layout *L, const double *a, const double *pk,
                       const double *pb, double *alpha) {
    for (int c = 0; c < L->nc; c++)
        alpha[c] = 0.0;
    for (int u = 0; u < L->n; u++) {
        int c;
        double f;
        unknown_col(L, u, pk, pb, &c, &f);
        alpha[c] += a[u] * f;
    }
}

static void stamp_monomials(const fit_layout *L, const tide_sub_geom *g, int64_t c,
                            double *pk, double *pb) {
    double u = tide_sub_norm((double)(c % g->width), g->width);
    double v = tide_sub_norm((double)(c / g->width), g->height);
    tide_sub_monomials(u, v, L->sdeg, pk);
    tide_sub_monomials(u, v, L->bgdeg, pb);
}

/* Add one stamp's normal matrix to the lower triangle of A (and to rhs), the unknowns'
 * factors being the spatial monomials pk (kernel terms 1..nb-1; term 0 is constant) and pb
 * (background) at the stamp centre. Block by block so the inner loops are contiguous. */
static void assemble_stamp(const fit_layout *L, const double *q, const double *pk,
                           const double *pb, double *A, double *rhs) {
    int n = L->n, nc = L->nc, t = nc - 1, npk = L->npk, nb = L->nb, one = nb;
    int ub = 1 + (nb - 1) * npk; /* first background unknown */
    double pp[TIDE_SUB_MAXPOLY * TIDE_SUB_MAXPOLY];
    for (int i = 0; i < npk; i++)
        for (int j = 0; j < npk; j++)
            pp[i * npk + j] = pk[i] * pk[j];
    A[0] += q[0];
    rhs[0] += q[t];
    for (int b = 1; b < nb; b++) {
        const double *qb = q + (size_t)b * nc;
        int u0 = 1 + (b - 1) * npk;
        for (int i = 0; i < npk; i++) {
            A[(size_t)(u0 + i) * n] += qb[0] * pk[i];
            rhs[u0 + i] += qb[t] * pk[i];
        }
        for (int b2 = 1; b2 <= b; b2++) {
            double c = qb[b2];
            int v0 = 1 + (b2 - 1) * npk;
            for (int i = 0; i < npk; i++) {
                double *row = A + (size_t)(u0 + i) * n + v0;
                const double *ppi = pp + i * npk;
                int jmax = b2 == b ? i + 1 : npk;
                for (int j = 0; j < jmax; j++)
                    row[j] += c * ppi[j];
            }
        }
    }
    const double *qo = q + (size_t)one * nc;
    for (int k = 0; k < L->nbg; k++) {
        double *row = A + (size_t)(ub + k) * n;
        row[0] += qo[0] * pb[k];
        for (int b = 1; b < nb; b++)
            for (int i = 0; i < npk; i++)
                row[1 + (b - 1) * npk + i] += qo[b] * pb[k] * pk[i];
        for (int k2 = 0; k2 <= k; k2++)
            row[ub + k2] += qo[one] * pb[k] * pb[k2];
        rhs[ub + k] += qo[t] * pb[k];
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The kernel sum from stamp sums (a photometric ratio): over each kept stamp's fit pixels,
 * sum(I) = k sum(R * K_0) + N bg(centre) (zero-sum kernels add ~nothing to a stamp's sum), a
 * least-squares fit over stamps of k and the background. Why: the pixel fit's kernel sum is
 * biased low when the reference is noisy (noise in a regressor attenuates its coefficient,
 * and the flexible zero-sum terms leave little signal unique to the flux term), whereas a
 * stamp sum averages the reference's noise over hundreds of pixels against the star's whole
 * flux. Returns 0 with *k when at least nbg + 3 stamps are kept, else -1. Q's column
 * nb + 1 holds 1/w, so Q[nb+1][c] is the unweighted sum of column c. */
static int stamp_flux_ratio(const fit_layout *L, const tide_sub_geom *g,
                            const int64_t *centre, const double *Q, const int *keep,
                            double *k) {
    int nbg = L->nbg, m = 1 + nbg, nc = L->nc, t = nc - 1, vc = L->nb + 1, ones = L->nb;
    double M[(1 + TIDE_SUB_MAXPOLY) * (1 + TIDE_SUB_MAXPOLY)], rhs[1 + TIDE_SUB_MAXPOLY];
    double x[1 + TIDE_SUB_MAXPOLY];
    memset(M, 0, sizeof M);
    memset(rhs, 0, sizeof rhs);
    int n = 0;
    for (int s = 0; s < g->ns; s++) {
        if (!keep[s])
            continue;
        const double *q = Q + (size_t)s * (size_t)nc * (size_t)nc + (size_t)vc * nc;
        double y = q[t], xr = q[0], np = q[ones], var = q[vc];
        if (!(var > 0.0) || !(np > 0.0))
            continue;
        double pk[TIDE_SUB_MAXPOLY], pb[TIDE_SUB_MAXPOLY], row[1 + TIDE_SUB_MAXPOLY];
        stamp_monomials(L, g, centre[s], pk, pb);
        row[0] = xr;
        for (int u = 0; u < nbg; u++)
            row[1 + u] = np * pb[u];
        for (int u = 0; u < m; u++) {
            rhs[u] += row[u] * y / var;
            for (int v = 0; v < m; v++)
                M[u * m + v] += row[u] * row[v] / var;
        }
        n++;
    }
    if (n < nbg + 3)
        return -1;
    double cond;
    int reg;
    if (tide_sub_solve(m, M, rhs, x, &cond, &reg, NULL) || reg || !(x[0] > 0.0))
        return -1;
    *k = x[0];
    return 0;
}

/* Fit with clipping. keep[s] in/out; a receives the solution. */
int tide_sub_fit_clip(tide_ctx *ctx, const fit_layout *L, const tide_sub_geom *g,
                    const int64_t *centre, const double *Q, const int64_t *npix,
                    const tide_subtract_params *p, int *keep, double *a,
                    tide_subtract_result *r) {
    int n = L->n, nc = L->nc, t = nc - 1;
    double *A = malloc((size_t)n * (size_t)n * sizeof *A);
    double *rhs = malloc((size_t)n * sizeof *rhs);
    unsigned char *ridge_on = malloc((size_t)n);
    double *chi = malloc((size_t)g->ns * 2 * sizeof *chi);
    double alpha[272]; /* nc <= 4 Gaussians x 66 terms + 3 */
    if (!A || !rhs || !chi || !ridge_on) {
        free(A); free(rhs); free(chi); free(ridge_on);
        return tide_error(TIDE_E_NOMEM, "subtract: normal equations (%d unknowns)", n);
    }
    for (int u = 0; u < n; u++)
        ridge_on[u] = u > 0 && u < 1 + (L->nb - 1) * L->npk; /* not flux, not background */
    int st = TIDE_OK;
    for (int iter = 0; iter <= p->clip_iter; iter++) {
        memset(A, 0, (size_t)n * (size_t)n * sizeof *A);
        memset(rhs, 0, (size_t)n * sizeof *rhs);
        int nkeep = 0;
        for (int s = 0; s < g->ns; s++) {
            if (!keep[s])
                continue;
            nkeep++;
            double pk[TIDE_SUB_MAXPOLY], pb[TIDE_SUB_MAXPOLY];
            stamp_monomials(L, g, centre[s], pk, pb);
            assemble_stamp(L, Q + (size_t)s * (size_t)nc * (size_t)nc, pk, pb, A, rhs);
        }
        if (nkeep == 0) {
            st = tide_error(TIDE_E_EMPTY, "subtract: no usable stamp (all masked, at the edges "
                            "or clipped)");
            break;
        }
        for (int u = 0; u < n; u++)
            for (int v = u + 1; v < n; v++)
                A[(size_t)u * n + v] = A[(size_t)v * n + u];
        if ((st = tide_sub_solve(n, A, rhs, a, &r->cond, &r->regularised, ridge_on)))
            break;
        /* The flux term from stamp sums when there are enough stamps and it agrees with the
         * pixel fit to 3% (the noise bias it removes is ~1%; a larger disagreement means the
         * stamp sums are spoiled, e.g. by neighbours across stamp edges): refit with a_0
         * fixed at it. */
        double k0;
        r->flux_from_stamps = 0;
        if (stamp_flux_ratio(L, g, centre, Q, keep, &k0) == 0 && fabs(k0 / a[0] - 1.0) < 0.03) {
            for (int u = 1; u < n; u++) {
                rhs[u] -= A[(size_t)u * n] * k0;
                A[(size_t)u * n] = A[u] = 0.0;
            }
            A[0] = 1.0;
            rhs[0] = k0;
            double cond2;
            int reg2;
            if ((st = tide_sub_solve(n, A, rhs, a, &cond2, &reg2, ridge_on)))
                break;
            r->flux_from_stamps = 1;
        }
        /* chi^2 per stamp from its normal matrix: yWy - 2 alpha.Q_t + alpha Q alpha. */
        double chi2 = 0.0;
        int64_t nfit = 0;
        int m = 0;
        for (int s = 0; s < g->ns; s++) {
            chi[s] = NAN;
            if (!keep[s])
                continue;
            double pk[TIDE_SUB_MAXPOLY], pb[TIDE_SUB_MAXPOLY];
            stamp_monomials(L, g, centre[s], pk, pb);
            local_coef(L, a, pk, pb, alpha);
            const double *q = Q + (size_t)s * (size_t)nc * (size_t)nc;
            double c2 = q[(size_t)t * nc + t];
            for (int i = 0; i < t; i++) {
                c2 -= 2.0 * alpha[i] * q[(size_t)i * nc + t];
                for (int j = 0; j < t; j++)
                    c2 += alpha[i] * alpha[j] * q[(size_t)i * nc + j];
            }
            chi2 += c2;
            nfit += npix[s];
            chi[s] = c2 / (double)npix[s];
            chi[g->ns + m++] = chi[s];
        }
        r->chi2 = chi2;
        r->nfit = nfit;
        r->nstamps = nkeep;
        if (iter == p->clip_iter || m < 4)
            break;
        /* clip: median + k * max(1.4826 MAD, 0.1 median) (the floor keeps a set of equally
         * good stamps, MAD ~ 0, from clipping on noise). */
        double *v = chi + g->ns;
        qsort(v, (size_t)m, sizeof *v, cmp_double);
        double med = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
        for (int i = 0; i < m; i++)
            v[i] = fabs(v[i] - med);
        qsort(v, (size_t)m, sizeof *v, cmp_double);
        double mad = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
        double sc = 1.4826 * mad > 0.1 * med ? 1.4826 * mad : 0.1 * med;
        double thr = med + p->clip_sigma * sc;
        int dropped = 0;
        for (int s = 0; s < g->ns; s++)
            if (keep[s] && chi[s] > thr) {
                keep[s] = 0;
                dropped++;
            }
        tide_log(&ctx->log, TIDE_LOG_DEBUG, "subtract",
                 "fit %d: %d stamps, chi2/px median %.3g, %d clipped above %.3g", iter, nkeep,
                 med, dropped, thr);
        if (!dropped)
            break;
    }
    free(A); free(rhs); free(chi); free(ridge_on);
    return st;
}

/* ---- the matched model ----------------------------------------------------------------- */
int tide_subtract_kernel_at(const tide_subtract_result *r, double x, double y, float *k) {
    if (!r || !r->kernel_terms || !k)
        return tide_error(TIDE_E_INVAL, "subtract: kernel_at on an empty result");
    double t[TIDE_SUB_MAXPOLY];
    tide_sub_monomials(tide_sub_norm(x, r->width), tide_sub_norm(y, r->height),
                       r->spatial_degree, t);
    size_t kn = (size_t)r->kernel_w * (size_t)r->kernel_w;
    for (size_t i = 0; i < kn; i++) {
        double s = 0.0;
        for (int p = 0; p < r->npoly; p++)
            s += t[p] * (double)r->kernel_terms[(size_t)p * kn + i];
        k[i] = (float)s;
    }
    return TIDE_OK;
}

/* K_p = sum_b c_bp K_b (K_0 enters the constant term only). */
int tide_sub_kernel_terms(const fit_layout *L, const tide_sub_basis *B, const double *a,
                        tide_subtract_result *r) {
    size_t kn = (size_t)B->kw * (size_t)B->kw;
    double *acc = calloc((size_t)L->npk * kn, sizeof *acc);
    r->kernel_terms = malloc((size_t)L->npk * kn * sizeof *r->kernel_terms);
    r->bg_coef = calloc(TIDE_SUB_MAXPOLY, sizeof *r->bg_coef);
    if (!acc || !r->kernel_terms || !r->bg_coef) {
        free(acc);
        return tide_error(TIDE_E_NOMEM, "subtract: kernel terms");
    }
    for (size_t i = 0; i < kn; i++)
        acc[i] = a[0] * B->k[i];
    for (int b = 1; b < L->nb; b++)
        for (int p = 0; p < L->npk; p++) {
            double c = a[1 + (b - 1) * L->npk + p];
            const float *kb = B->k + (size_t)b * kn;
            double *ap = acc + (size_t)p * kn;
            for (size_t i = 0; i < kn; i++)
                ap[i] += c * kb[i];
        }
    for (size_t i = 0; i < (size_t)L->npk * kn; i++)
        r->kernel_terms[i] = (float)acc[i];
    for (int q = 0; q < L->nbg; q++)
        r->bg_coef[q] = a[1 + (L->nb - 1) * L->npk + q];
    free(acc);
    return TIDE_OK;
}

