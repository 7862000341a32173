/* psf_pca.c — the PSF model proper: reference stack, eigen-PSFs and coefficient fields.
 *
 * The deviations d_i = s_i - ref of the stars' normalised stamps from the reference are
 * weighted by w_i = 1 / sqrt(noise_i^2 + floor^2) (noise_i: per-pixel noise of the normalised
 * stamp; floor = a tenth of the median, so no single very bright star dominates) and their
 * principal components taken without centring (the mean deviation of a field whose PSF
 * differs from the centre's is a real component). The leading eigenvectors of D^T W^2 D come
 * from Lanczos iterations on whichever of the star-side and pixel-side Gram matrices is
 * smaller, never formed (psf_linalg.c). Each E_k has unit norm and its largest-magnitude
 * pixel positive, so the model does not flip sign between runs or backends. The star coefficients
 * a_ik = <d_i, E_k> are fitted with polynomials of (u, v) by weighted least squares (weights
 * w_i^2). Stars the model misses (a neighbour, a cosmic ray, a galaxy) are dropped once and the fit
 * repeated. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "psf_internal.h"
#include "tide/status.h"
#include "tide/timer.h"

#define PSF_FIT_PASSES 3 /* fits; outliers are dropped after each but the last */
/* Star loops smaller than this many values stay on one thread (psf_lanczos.c's note: waking
 * a team for less work costs more than it saves). */
#define PSF_STAR_PAR_MIN 200000

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
    if (n <= 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct cdist {
    double d;
    int i;
} cdist;

static int cmp_cdist(const void *a, const void *b) {
    const cdist *p = a, *q = b;
    if (p->d != q->d)
        return p->d < q->d ? -1 : 1;
    return p->i - q->i;
}

/* Stars of the reference stack: active stars with |u|, |v| <= central_fraction, or (when
 * fewer than 5) the 5 nearest the centre. */
static int choose_reference(const psf_plan *pl, const psf_stars *s, const unsigned char *act,
                            int *which) {
    const double cf = pl->p.central_fraction;
    int m = 0, na = 0;
    for (int i = 0; i < s->n; i++) {
        if (!act[i])
            continue;
        na++;
        if (fabs(s->u[i]) <= cf && fabs(s->v[i]) <= cf)
            which[m++] = i;
    }
    const int want = na < 5 ? na : 5;
    if (m >= want)
        return m;
    cdist *c = malloc(sizeof(cdist) * (size_t)na);
    if (!c)
        return tide_error(TIDE_E_NOMEM, "psf: reference choice");
    int k = 0;
    for (int i = 0; i < s->n; i++)
        if (act[i]) {
            c[k].d = fmax(fabs(s->u[i]), fabs(s->v[i]));
            c[k].i = i;
            k++;
        }
    qsort(c, (size_t)na, sizeof *c, cmp_cdist);
    for (m = 0; m < want; m++)
        which[m] = c[m].i;
    free(c);
    return m;
}

/* Weighted least squares of the stars' values a (stride astr) on the polynomial terms. */
static int poly_fit(int degree, int na, const int *idx, const psf_stars *s, const double *w2,
                    const double *a, int astr, double *c) {
    double t[(TIDE_PSF_MAX_DEGREE + 1) * (TIDE_PSF_MAX_DEGREE + 2) / 2];
    const int nc = (degree + 1) * (degree + 2) / 2;
    double nm[sizeof t / sizeof t[0] * sizeof t / sizeof t[0]];
    memset(nm, 0, sizeof nm);
    for (int q = 0; q < nc; q++)
        c[q] = 0.0;
    for (int k = 0; k < na; k++) {
        const int i = idx[k];
        tide_psf_terms(degree, s->u[i], s->v[i], t);
        for (int q = 0; q < nc; q++) {
            c[q] += w2[k] * a[(size_t)k * astr] * t[q];
            for (int r = 0; r < nc; r++)
                nm[q * nc + r] += w2[k] * t[q] * t[r];
        }
    }
    return psf_cholesky_solve(nc, nm, c);
}

/* The previous pass's reference stack and the stars it was made of: a pass whose outliers
 * all lie outside the central region stacks the same stars again, bit for bit the same
 * reference, so it is copied instead (the stack is a fifth of a pass). */
typedef struct ref_cache {
    int n;      /**< stars of the cached stack; -1 = none yet */
    int *which; /**< their indices (s->n slots) */
    float *ref; /**< the stack (npix) */
} ref_cache;

/* a_qk = <s_k - ref, E_q> for every active star k and eigen-PSF q (acoef[q * na + k]), star by
 * star across a team (each star's sums are the same whatever the team): the deviation formed
 * once for all K, four eigen-PSFs per sweep, so four independent sums share each pixel's load
 * (each still summed in pixel order: the values are those of one dot product at a time, which
 * left the adder waiting on its own previous result). */
static int star_coefficients(const psf_stars *s, const int *idx, int na, const float *ref,
                             const float *E, int K, int threads, double *acoef) {
    const int npix = s->side * s->side;
    int fail = 0;
#pragma omp parallel num_threads(threads > 1 ? threads : 1)                                        \
    reduction(|                                                                                    \
              : fail) if ((int64_t)na * npix * K >= PSF_STAR_PAR_MIN)
    {
        double *ddev = malloc(sizeof(double) * (size_t)npix);
        fail = !ddev;
#pragma omp for schedule(static)
        for (int k = 0; k < na; k++) {
            if (!ddev)
                continue;
            const float *sp = s->stamps + (size_t)idx[k] * npix;
            for (int p = 0; p < npix; p++)
                ddev[p] = (double)sp[p] - (double)ref[p];
            int q = 0;
            for (; q + 4 <= K; q += 4) {
                const float *E0 = E + (size_t)q * npix, *E1 = E0 + npix;
                const float *E2 = E1 + npix, *E3 = E2 + npix;
                double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
                for (int p = 0; p < npix; p++) {
                    const double d = ddev[p];
                    a0 += d * E0[p];
                    a1 += d * E1[p];
                    a2 += d * E2[p];
                    a3 += d * E3[p];
                }
                acoef[(size_t)q * na + k] = a0;
                acoef[(size_t)(q + 1) * na + k] = a1;
                acoef[(size_t)(q + 2) * na + k] = a2;
                acoef[(size_t)(q + 3) * na + k] = a3;
            }
            for (; q < K; q++) {
                const float *Eq = E + (size_t)q * npix;
                double a = 0.0;
                for (int p = 0; p < npix; p++)
                    a += ddev[p] * Eq[p];
                acoef[(size_t)q * na + k] = a;
            }
        }
        free(ddev);
    }
    return fail ? tide_error(TIDE_E_NOMEM, "psf: star coefficients") : 0;
}

/* Adds the time since @p t0 to the sub-stage timer @p stage; returns now. */
static double lap(const psf_plan *pl, const char *stage, double t0) {
    const double t = tide_now();
    if (pl->ctx)
        tide_timer_add(pl->ctx, stage, 1e3 * (t - t0));
    return t;
}

/* One fit of the model to the active stars. */
static int fit_once(const psf_plan *pl, const psf_stars *s, const unsigned char *act, ref_cache *rc,
                    tide_psf_model *m) {
    const int npix = s->side * s->side;
    int na = 0;
    for (int i = 0; i < s->n; i++)
        na += act[i];
    int *idx = malloc(sizeof(int) * (size_t)s->n * 2);
    double *wk = malloc(sizeof(double) * ((size_t)na * (3 + TIDE_PSF_MAX_K) + TIDE_PSF_MAX_K +
                                          (size_t)TIDE_PSF_MAX_K * npix));
    double *dev = malloc(sizeof(double) * (size_t)na * npix);
    float *ref = malloc(sizeof(float) * (size_t)npix);
    if (!idx || !wk || !dev || !ref) {
        free(idx), free(wk), free(dev), free(ref);
        return tide_error(TIDE_E_NOMEM, "psf: model fit of %d stars", na);
    }
    int *which = idx + s->n, st = 0;
    double *w = wk, *w2 = w + na, *noise = w2 + na, *acoef = noise + na; /* K × na */
    double *evals = acoef + (size_t)na * TIDE_PSF_MAX_K, *evec = evals + TIDE_PSF_MAX_K;
    int k = 0;
    for (int i = 0; i < s->n; i++)
        if (act[i])
            idx[k++] = i;

    /* reference */
    int nref = choose_reference(pl, s, act, which);
    if (nref < 0) {
        st = nref;
        goto done;
    }
    double t = tide_now();
    if (rc->n == nref && memcmp(rc->which, which, sizeof(int) * (size_t)nref) == 0) {
        memcpy(ref, rc->ref, sizeof(float) * (size_t)npix);
    } else {
        st = psf_stack_clip(s->stamps, npix, which, nref, pl->p.clip_sigma, pl->p.clip_iters,
                            pl->threads, ref);
        if (st)
            goto done;
        rc->n = nref;
        memcpy(rc->which, which, sizeof(int) * (size_t)nref);
        memcpy(rc->ref, ref, sizeof(float) * (size_t)npix);
    }
    t = lap(pl, "psf.model.stack", t);

    /* weights and weighted deviations */
    for (k = 0; k < na; k++)
        noise[k] = s->noise[idx[k]];
    const double nfloor = 0.1 * median_of(noise, na);
    for (k = 0; k < na; k++) {
        const double sn = s->noise[idx[k]];
        w[k] = 1.0 / sqrt(sn * sn + nfloor * nfloor + 1e-300);
    }
    {
        double wmax = 0.0; /* scale weights to max 1 (cosmetic: keeps G near unit scale) */
        for (k = 0; k < na; k++)
            wmax = fmax(wmax, w[k]);
        for (k = 0; k < na; k++) {
            w[k] /= wmax;
            w2[k] = w[k] * w[k];
        }
    }
    /* star by star, so a team changes no value */
#pragma omp parallel for num_threads(pl->threads > 1 ? pl->threads : 1)                            \
    schedule(static) if ((int64_t)na * npix >= PSF_STAR_PAR_MIN)
    for (int kk = 0; kk < na; kk++) {
        const float *sp = s->stamps + (size_t)idx[kk] * npix;
        double *d = dev + (size_t)kk * npix;
        for (int p = 0; p < npix; p++)
            d[p] = w[kk] * ((double)sp[p] - (double)ref[p]);
    }

    /* degree and K for this many stars */
    int degree = pl->p.degree;
    while (degree > 0 && 2 * (degree + 1) * (degree + 2) / 2 > na)
        degree--;
    int K = pl->p.k < na - 1 ? pl->p.k : na - 1;
    if (K > npix - 1)
        K = npix - 1;
    if (K < 0)
        K = 0;

    if (K > 0) {
        st = psf_pca_top(na, npix, dev, K, pl->threads, evals, evec);
        if (st)
            goto done;
        int kk = 0;
        while (kk < K && evals[kk] > 1e-12 * evals[0] && evals[kk] > 0.0)
            kk++;
        K = kk;
    }
    t = lap(pl, "psf.model.pca", t);

    const int nc = (degree + 1) * (degree + 2) / 2;
    float *basis = calloc((size_t)(1 + K) * npix, sizeof(float));
    double *coef = calloc((size_t)(1 + K) * nc, sizeof(double));
    if (!basis || !coef) {
        free(basis), free(coef);
        st = tide_error(TIDE_E_NOMEM, "psf: model arrays");
        goto done;
    }
    memcpy(basis, ref, sizeof(float) * (size_t)npix);
    coef[0] = 1.0;
    for (int q = 0; q < K; q++) {
        const double *e = evec + (size_t)q * npix;
        double big = 0.0;
        int ib = 0;
        for (int p = 0; p < npix; p++)
            if (fabs(e[p]) > big)
                big = fabs(e[p]), ib = p;
        const double sc = e[ib] < 0 ? -1.0 : 1.0; /* the sign convention */
        float *E = basis + (size_t)(1 + q) * npix;
        for (int p = 0; p < npix; p++)
            E[p] = (float)(e[p] * sc);
    }
    /* star coefficients on the stored (float) eigen-PSFs, unweighted deviations */
    if (K > 0)
        st = star_coefficients(s, idx, na, ref, basis + npix, K, pl->threads, acoef);
    for (int q = 0; q < K && !st; q++) {
        int dg = degree;
        while ((st = poly_fit(dg, na, idx, s, w2, acoef + (size_t)q * na, 1,
                              coef + (size_t)(1 + q) * nc)) &&
               dg > 0) {
            dg--; /* degenerate star positions: a lower degree, padded with zeros */
            for (int t = 0; t < nc; t++)
                coef[(size_t)(1 + q) * nc + t] = 0.0;
        }
        if (st)
            st = tide_error(TIDE_E_INTERNAL, "psf: coefficient fit is singular");
    }
    lap(pl, "psf.model.coef", t);
    if (st) {
        free(basis), free(coef);
        goto done;
    }
    free(m->basis);
    free(m->coef);
    m->basis = basis;
    m->coef = coef;
    m->nbasis = 1 + K;
    m->degree = degree;
    m->ncoef = nc;
    m->stamp = s->side;
    m->nref = nref;
    m->nstars = na;
done:
    free(idx), free(wk), free(dev), free(ref);
    return st;
}

/* RMS of (stamp - model) per star; rms[i] and peak[i] for the active ones. */
static int residuals(const psf_plan *pl, const psf_stars *s, const unsigned char *act,
                     const tide_psf_model *m, double *rms, double *peak) {
    const int npix = s->side * s->side;
    int fail = 0;
#pragma omp parallel num_threads(pl->threads > 0 ? pl->threads : 1) reduction(| : fail)
    {
        float *mod = malloc(sizeof(float) * (size_t)npix);
        if (!mod)
            fail = 1;
#pragma omp for schedule(static)
        for (int i = 0; i < s->n; i++) {
            rms[i] = peak[i] = 0.0;
            if (!act[i] || !mod)
                continue;
            psf_eval_uv(m, s->u[i], s->v[i], mod);
            const float *sp = s->stamps + (size_t)i * npix;
            double q = 0.0, pk = 0.0;
            for (int p = 0; p < npix; p++) {
                const double d = (double)sp[p] - (double)mod[p];
                q += d * d;
                if (mod[p] > pk)
                    pk = mod[p];
            }
            rms[i] = sqrt(q / npix);
            peak[i] = pk;
        }
        free(mod);
    }
    return fail ? tide_error(TIDE_E_NOMEM, "psf: residuals") : 0;
}

int psf_model_fit(const psf_plan *pl, psf_stars *s, int64_t width, int64_t height,
                  tide_psf_model *m) {
    const int n = s->n;
    unsigned char *act = malloc((size_t)n);
    double *rms = malloc(sizeof(double) * (size_t)n * 4);
    ref_cache rc = {-1, malloc(sizeof(int) * (size_t)(n + 1)),
                    malloc(sizeof(float) * (size_t)s->side * s->side)};
    if (!act || !rms || !rc.which || !rc.ref) {
        free(act), free(rms), free(rc.which), free(rc.ref);
        return tide_error(TIDE_E_NOMEM, "psf: model fit");
    }
    double *peak = rms + n, *ex = peak + n, *tmp = ex + n;
    memset(act, 1, (size_t)n);
    m->width = width;
    m->height = height;
    int st = 0;
    for (int pass = 0; pass < PSF_FIT_PASSES; pass++) {
        if ((st = fit_once(pl, s, act, &rc, m)))
            break;
        const double t = tide_now();
        if ((st = residuals(pl, s, act, m, rms, peak)))
            break;
        lap(pl, "psf.model.resid", t);
        if (pass == PSF_FIT_PASSES - 1)
            break;
        /* excess residual over the noise; robust outliers that are also significant go */
        int na = 0;
        for (int i = 0; i < n; i++)
            if (act[i]) {
                const double e2 = rms[i] * rms[i] - s->noise[i] * s->noise[i];
                ex[i] = e2 > 0 ? sqrt(e2) : 0.0;
                tmp[na++] = ex[i];
            }
        const double med = median_of(tmp, na);
        int nm = 0;
        for (int i = 0; i < n; i++)
            if (act[i])
                tmp[nm++] = fabs(ex[i] - med);
        const double sig = 1.4826 * median_of(tmp, nm);
        int nrej = 0;
        for (int i = 0; i < n; i++)
            if (act[i] && ex[i] > med + pl->p.outlier_sigma * sig && rms[i] > 2.0 * s->noise[i])
                nrej++;
        if (nrej == 0 || na - nrej < pl->p.min_stars)
            break;
        for (int i = 0; i < n; i++)
            if (act[i] && ex[i] > med + pl->p.outlier_sigma * sig && rms[i] > 2.0 * s->noise[i]) {
                act[i] = 0;
                m->nreject[6]++; /* TIDE_PSF_REJ_OUTLIER */
            }
    }
    if (!st) {
        int na = 0;
        free(m->star_x);
        free(m->star_y);
        m->star_x = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        m->star_y = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        if (!m->star_x || !m->star_y)
            st = tide_error(TIDE_E_NOMEM, "psf: star list");
        for (int i = 0; i < n && !st; i++)
            if (act[i]) {
                m->star_x[na] = s->x[i];
                m->star_y[na] = s->y[i];
                tmp[na++] = peak[i] > 0 ? rms[i] / peak[i] : 0.0;
            }
        if (!st)
            m->resid_rms = median_of(tmp, na);
    }
    free(act);
    free(rms);
    free(rc.which), free(rc.ref);
    return st;
}
