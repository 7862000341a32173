/* subtract_fit.c — the host side of the subtraction's fit (subtract.h): the global normal
 * equations assembled from the per-stamp normal matrices with the spatial polynomials at the
 * stamp centres (Alard 2000), the solve, the kernel sum from stamp sums, stamp clipping, and
 * the solved kernel as per-term kernels K_p. Small dense work (a few hundred unknowns, a few
 * hundred stamps), but on the path of every subtraction: the assembly is one product over
 * the stamps where the per-stamp matrices live (tide_sub_pairs: ~3 ms on one core for 292
 * unknowns and 400 stamps, far less on a GPU, the same bits), each clip iteration
 * factorises once (the refit with the flux fixed reuses the factor), and the per-stamp chi^2
 * runs over contiguous rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "subtract_internal.h"
#include "subtract_kernels.h"
#include "subtract_math.h"
#include "tide/ctx.h"
#include "tide/log.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "tide/subtract.h"
#include "core/ctx_internal.h"

/* ---- the global normal equations ------------------------------------------------------- */

/* Column of D and monomial index (into the monomials of degree max(sdeg, bgdeg), whose
 * leading entries are those of each lower degree) of unknown u. */
static void unknown_col(const fit_layout *L, int u, int *col, int *mono) {
    if (u == 0) {
        *col = 0;
        *mono = 0; /* the monomial 1 */
    } else if (u < 1 + (L->nb - 1) * L->npk) {
        *col = 1 + (u - 1) / L->npk;
        *mono = (u - 1) % L->npk;
    } else {
        *col = L->nb;
        *mono = u - 1 - (L->nb - 1) * L->npk;
    }
}

/* Local column coefficients alpha_c at a stamp (monomials m) from the solution a. */
static void local_coef(const fit_layout *L, const double *a, const double *m, double *alpha) {
    for (int c = 0; c < L->nc; c++)
        alpha[c] = 0.0;
    for (int u = 0; u < L->n; u++) {
        int c, i;
        unknown_col(L, u, &c, &i);
        alpha[c] += a[u] * m[i];
    }
}

/* The monomials of degree max(sdeg, bgdeg) at a stamp centre c. */
static void stamp_monomials(const fit_layout *L, const tide_sub_geom *g, int64_t c, double *m) {
    double u = tide_sub_norm((double)(c % g->width), g->width);
    double v = tide_sub_norm((double)(c / g->width), g->height);
    tide_sub_monomials(u, v, L->sdeg > L->bgdeg ? L->sdeg : L->bgdeg, m);
}

/* index of the product m_i m_j (i <= j) among the nm (nm + 1) / 2 products */
static inline int pair_index(int i, int j, int nm) {
    return i * nm - i * (i - 1) / 2 + j - i;
}

int tide_sub_assemble(tide_ctx *ctx, const fit_layout *L, const tide_sub_geom *g,
                      const int64_t *centre, const double *Q, const int *keep, int flux_last,
                      double *A, double *rhs) {
    int n = L->n, nc = L->nc, nb = L->nb, t = nc - 1;
    int deg = L->sdeg > L->bgdeg ? L->sdeg : L->bgdeg;
    int nm = tide_sub_npoly(deg), npp = nm * (nm + 1) / 2;
    int blk = npp <= 8 ? 8 : 24, nppad = (npp + blk - 1) / blk * blk; /* tide_sub_pairs' */
    int ncol = nb + 1;                             /* basis columns and the ones column */
    int r0 = ncol * (ncol + 1) / 2, R = r0 + ncol; /* column pairs, then (c, target) */
    int m = 0;
    for (int s = 0; s < g->ns; s++)
        m += keep[s] != 0;
    int *kept = malloc((size_t)(m ? m : 1) * sizeof *kept);
    int *off = malloc((size_t)R * sizeof *off);
    double *PP = calloc((size_t)(m ? m : 1) * (size_t)nppad, sizeof *PP);
    double *G = malloc((size_t)R * (size_t)nppad * sizeof *G);
    int err = !kept || !off || !PP || !G;
    if (!err) {
        for (int s = 0, j = 0; s < g->ns; s++)
            if (keep[s])
                kept[j++] = s;
        for (int c = 0, r = 0; c < ncol; c++) {
            for (int c2 = c; c2 < ncol; c2++)
                off[r++] = c * nc + c2;
            off[r0 + c] = c * nc + t;
        }
        for (int j = 0; j < m; j++) {
            double mo[TIDE_SUB_MAXPOLY];
            stamp_monomials(L, g, centre[kept[j]], mo);
            double *pp = PP + (size_t)j * nppad;
            for (int i = 0; i < nm; i++)
                for (int i2 = i; i2 < nm; i2++)
                    pp[pair_index(i, i2, nm)] = mo[i] * mo[i2];
        }
    }
    /* G[r][k] = sum_j Q_kept[j][pair r] PP[j][k], where Q lives (subtract_kernels.h) */
    int st = err ? tide_error(TIDE_E_NOMEM, "subtract: normal equations (%d unknowns)", n)
                 : TIDE_DISPATCH(ctx, tide_sub_pairs, Q, nc, kept, m, off, R, PP, nppad, G);
    if (!st) {
        /* scatter: A[u][v] = G[pair(c_u, c_v)][pair(i_u, i_v)], rhs[u] = G[(c_u, t)][i_u] */
#define POS(u) (flux_last ? ((u) == 0 ? n - 1 : (u)-1) : (u))
        for (int u = 0; u < n; u++) {
            int cu, iu;
            unknown_col(L, u, &cu, &iu);
            int pu = POS(u);
            for (int v = 0; v <= u; v++) {
                int cv, iv;
                unknown_col(L, v, &cv, &iv);
                int c = cu < cv ? cu : cv, c2 = cu < cv ? cv : cu;
                int i = iu < iv ? iu : iv, i2 = iu < iv ? iv : iu;
                int r = c * ncol - c * (c - 1) / 2 + c2 - c;
                double val = G[(size_t)r * nppad + pair_index(i, i2, nm)];
                int pv = POS(v);
                A[(size_t)pu * n + pv] = val;
                A[(size_t)pv * n + pu] = val;
            }
            rhs[pu] = G[(size_t)(r0 + cu) * nppad + pair_index(0, iu, nm)];
        }
#undef POS
    }
    free(kept);
    free(off);
    free(PP);
    free(G);
    return st;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The kernel sum from stamp sums (a photometric ratio). Why: the pixel fit's kernel sum is
 * biased low when the reference is noisy (noise in a regressor attenuates its coefficient,
 * and the flexible zero-sum terms leave little signal unique to the flux term: 1-2% at a
 * star peak S/N of 30), whereas a stamp sum averages the reference's noise over hundreds of
 * pixels against the star's whole flux. Over each kept stamp's N fit pixels, sum(I) =
 * k sum(R * K_0) + N B (zero-sum kernels add ~nothing to a stamp's sum, B the background at
 * the stamp). B is not fitted to the stamp sums: with a few stamps that all hold the same
 * sky, k and B trade against each other through the sky level (5 stamps: k off by 1%). The
 * pixel fit pins the level k s + B that the sky pixels see, so with the sky s of the
 * reference, sum(I) - N (B_p + k_p s) = k (sum(R * K_0) - N s) to first order in k - k_p
 * (p: the pixel fit's, @p a): one unknown, the sky-subtracted flux of the target over that
 * of the reference, least squares over the stamps. Returns 0 with *k, or -1 without a
 * usable stamp. Q's column nb + 1 holds 1/w, so Q[nb+1][c] is the unweighted sum of c. */
static int stamp_flux_ratio(const fit_layout *L, const tide_sub_geom *g, const int64_t *centre,
                            const double *Q, const int *keep, const double *a, double *k) {
    int nc = L->nc, t = nc - 1, vc = L->nb + 1, ones = L->nb;
    const double *bg = a + 1 + (L->nb - 1) * L->npk; /* the background coefficients */
    double sxy = 0.0, sxx = 0.0;
    int n = 0;
    for (int s = 0; s < g->ns; s++) {
        if (!keep[s])
            continue;
        const double *q = Q + (size_t)s * (size_t)nc * (size_t)nc + (size_t)vc * nc;
        double np = q[ones], var = q[vc];
        if (!(var > 0.0) || !(np > 0.0))
            continue;
        double mo[TIDE_SUB_MAXPOLY], b = 0.0;
        stamp_monomials(L, g, centre[s], mo); /* the background's are the leading nbg */
        for (int u = 0; u < L->nbg; u++)
            b += bg[u] * mo[u];
        double x = q[0] - np * L->sky_ref, y = q[t] - np * (b + a[0] * L->sky_ref);
        sxy += x * y / var;
        sxx += x * x / var;
        n++;
    }
    if (n < 1 || !(sxx > 0.0) || !(sxy / sxx > 0.0))
        return -1;
    *k = sxy / sxx;
    return 0;
}

/* chi^2 of each kept stamp from its normal matrix: yWy - 2 alpha.Q_t + alpha Q alpha, alpha
 * the local column coefficients; NaN for the others. Stamps are independent. */
static void stamp_chi2(const fit_layout *L, const tide_sub_geom *g, const int64_t *centre,
                       const double *Q, const int *keep, const double *a, double *c2) {
    int nc = L->nc, t = nc - 1;
#pragma omp parallel for schedule(static) if (g->ns > 64)
    for (int s = 0; s < g->ns; s++) {
        c2[s] = NAN;
        if (!keep[s])
            continue;
        double mo[TIDE_SUB_MAXPOLY], alpha[272], v[272]; /* nc <= 4 Gaussians x 66 + 3 */
        stamp_monomials(L, g, centre[s], mo);
        local_coef(L, a, mo, alpha);
        const double *q = Q + (size_t)s * (size_t)nc * (size_t)nc;
        /* v = Q alpha by rows of Q (contiguous, vectorises), then alpha.v */
        for (int j = 0; j < t; j++)
            v[j] = -2.0 * q[(size_t)j * nc + t];
        for (int i = 0; i < t; i++) {
            const double *qi = q + (size_t)i * nc;
            double ai = alpha[i];
            for (int j = 0; j < t; j++)
                v[j] += ai * qi[j];
        }
        double r = q[(size_t)t * nc + t];
        for (int j = 0; j < t; j++)
            r += alpha[j] * v[j];
        c2[s] = r;
    }
}

/* Fit with clipping. keep[s] in/out; a receives the solution. The unknowns are stored with
 * the flux term last (tide_sub_assemble), so the refit with the flux term fixed from the
 * stamp sums reuses the factor: its system is the leading (n-1) block. */
int tide_sub_fit_clip(tide_ctx *ctx, const fit_layout *L, const tide_sub_geom *g,
                      const int64_t *centre, const double *Q, const double *Qb, const int64_t *npix,
                      const tide_subtract_params *p, int *keep, double *a,
                      tide_subtract_result *r) {
    int n = L->n;
    double *A = malloc((size_t)n * (size_t)n * sizeof *A);
    double *rhs = malloc((size_t)n * 2 * sizeof *rhs);
    unsigned char *ridge_on = malloc((size_t)n);
    double *chi = malloc((size_t)g->ns * 2 * sizeof *chi);
    if (!A || !rhs || !chi || !ridge_on) {
        free(A);
        free(rhs);
        free(chi);
        free(ridge_on);
        return tide_error(TIDE_E_NOMEM, "subtract: normal equations (%d unknowns)", n);
    }
    double *x = rhs + n;
    /* the ridge: not on the flux term (last) nor on the background (u - 1 >= kernel's end) */
    for (int u = 0; u < n; u++)
        ridge_on[u] = u < (L->nb - 1) * L->npk;
    int st = TIDE_OK;
    for (int iter = 0; iter <= p->clip_iter; iter++) {
        int nkeep = 0;
        for (int s = 0; s < g->ns; s++)
            nkeep += keep[s] != 0;
        if (nkeep == 0) {
            st = tide_error(TIDE_E_EMPTY, "subtract: no usable stamp (all masked, at the edges "
                                          "or clipped)");
            break;
        }
        double t0 = tide_now();
        if ((st = tide_sub_assemble(ctx, L, g, centre, Qb, keep, 1, A, rhs)))
            break;
        tide_timer_add(ctx, "subtract.assemble", 1e3 * (tide_now() - t0));
        t0 = tide_now();
        tide_sub_chol f;
        if ((st = tide_sub_chol_factor(n, A, ridge_on, &f)))
            break;
        tide_timer_add(ctx, "subtract.cholesky", 1e3 * (tide_now() - t0));
        r->cond = f.cond;
        r->regularised = f.regularised;
        tide_sub_chol_solve(&f, n, rhs, x);
        a[0] = x[n - 1];
        for (int u = 1; u < n; u++)
            a[u] = x[u - 1];
        /* The flux term from stamp sums when it agrees with the
         * pixel fit to 3% (the noise bias it removes is ~1%; a larger disagreement means the
         * stamp sums are spoiled, e.g. by neighbours across stamp edges): refit with a_0
         * fixed at it, i.e. the leading block with a_0's column moved to the right side. */
        double k0 = NAN;
        r->flux_from_stamps = 0;
        int kst = stamp_flux_ratio(L, g, centre, Q, keep, a, &k0);
        tide_log(&ctx->log, TIDE_LOG_DEBUG, "subtract",
                 "fit %d: kernel sum %.5f from the pixels, %.5f from the stamp sums", iter, a[0],
                 kst ? NAN : k0);
        if (kst == 0 && fabs(k0 / a[0] - 1.0) < 0.03) {
            for (int u = 0; u < n - 1; u++)
                rhs[u] -= A[(size_t)u * n + n - 1] * k0;
            tide_sub_chol_solve(&f, n - 1, rhs, x);
            a[0] = k0;
            for (int u = 1; u < n; u++)
                a[u] = x[u - 1];
            r->flux_from_stamps = 1;
        }
        tide_sub_chol_free(&f);
        stamp_chi2(L, g, centre, Q, keep, a, chi);
        double chi2 = 0.0;
        int64_t nfit = 0;
        int m = 0;
        for (int s = 0; s < g->ns; s++) {
            if (!keep[s])
                continue;
            chi2 += chi[s];
            nfit += npix[s];
            chi[s] /= (double)npix[s];
            chi[g->ns + m++] = chi[s];
        }
        r->chi2 = chi2;
        r->nfit = nfit;
        r->nstamps = nkeep;
        /* three stamps suffice: their median is a good one unless two are bad */
        if (iter == p->clip_iter || m < 3)
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
                 "fit %d: %d stamps, chi2/px median %.3g, %d clipped above %.3g", iter, nkeep, med,
                 dropped, thr);
        if (!dropped)
            break;
    }
    free(A);
    free(rhs);
    free(chi);
    free(ridge_on);
    return st;
}

/* ---- the matched model ----------------------------------------------------------------- */
int tide_subtract_kernel_at(const tide_subtract_result *r, double x, double y, float *k) {
    if (!r || !r->kernel_terms || !k)
        return tide_error(TIDE_E_INVAL, "subtract: kernel_at on an empty result");
    double t[TIDE_SUB_MAXPOLY];
    tide_sub_monomials(tide_sub_norm(x, r->width), tide_sub_norm(y, r->height), r->spatial_degree,
                       t);
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
