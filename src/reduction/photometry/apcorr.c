/* apcorr.c — aperture corrections from growth curves and the S/N-optimal radius law, and
 * FLUX_OPT for every source (photometry.h). The algorithm once for both backends: the
 * growth curves of the calibration stars are one batched aperture call on a fine radius
 * grid; the fits (a few hundred stars) run on the host; the per-source work of
 * tide_optimal_photometry (radius from the law, exact sum at that radius, correction) is
 * three kernels with every array resident on the backend. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "compute/select_first.h"
#include "apcorr_internal.h"
#include "apcorr_kernels.h"
#include "aperture_internal.h"
#include "tide/photometry.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "core/ctx_internal.h"

void tide_apcorr_params_default(tide_apcorr_params *p) {
    memset(p, 0, sizeof *p);
    p->dr = 0.1;
    p->degree = 2;
    p->snr_min_corr = 100.0;
    p->snr_min_law = 10.0;
    p->max_stars = 500;
    tide_aper_params_default(&p->aper);
}

void tide_apcorr_free(tide_apcorr_model *m) {
    if (!m)
        return;
    free(m->coef);
    free(m->err);
    memset(m, 0, sizeof *m);
}

static tide_apcorr_table table_of(const tide_apcorr_model *m, const double *coef,
                                  const double *err) {
    tide_apcorr_table t;
    t.width = m->width;
    t.height = m->height;
    t.r_min = m->r_min;
    t.r_max = m->r_max;
    t.dr = m->dr;
    t.nrad = m->nrad;
    t.degree = m->degree;
    t.ncoef = m->ncoef;
    t.law_a = m->law_a;
    t.law_b = m->law_b;
    t.coef = coef;
    t.err = err;
    return t;
}

int tide_apcorr_eval(const tide_apcorr_model *m, double r, double x, double y, double *c,
                     double *c_err) {
    if (!m || !m->coef || m->nrad < 1)
        return tide_error(TIDE_E_INVAL, "tide_apcorr_eval: empty model");
    const tide_apcorr_table t = table_of(m, m->coef, m->err);
    double ce;
    tide_apcorr_at(&t, r, x, y, c, &ce);
    if (c_err)
        *c_err = ce;
    return 0;
}

double tide_apcorr_radius(const tide_apcorr_model *m, double snr) {
    const tide_apcorr_table t = table_of(m, m->coef, m->err);
    int clipped;
    return tide_apcorr_law(&t, snr, &clipped);
}

typedef struct {
    double snr;
    int64_t i;
} skey;

static int cmp_skey_desc(const void *a, const void *b) {
    const skey *p = a, *q = b;
    if (p->snr != q->snr)
        return (p->snr < q->snr) - (p->snr > q->snr);
    return (p->i > q->i) - (p->i < q->i); /* deterministic ties */
}

static int cmp_double(const void *a, const void *b) {
    const double p = *(const double *)a, q = *(const double *)b;
    return (p > q) - (p < q);
}

/* Grid cell of coordinate c for cells of side @p cell, clamped to [0, ncell). */
static int64_t cell_of(double c, double cell, int64_t ncell) {
    const double q = c / cell;
    if (!(q >= 0.0))
        return 0;
    if (q >= (double)(ncell - 1))
        return ncell - 1;
    return (int64_t)q;
}

/* Whether no other (finite) source lies within iso of source i (grid of select_stars). */
static int isolated(int64_t i, const double *x, const double *y, const int64_t *head,
                    const int64_t *next, int64_t gw, int64_t gh, double cell, double iso) {
    const int64_t cx = cell_of(x[i], cell, gw), cy = cell_of(y[i], cell, gh);
    for (int64_t gy = cy - 1; gy <= cy + 1; gy++)
        for (int64_t gx = cx - 1; gx <= cx + 1; gx++) {
            if (gx < 0 || gy < 0 || gx >= gw || gy >= gh)
                continue;
            for (int64_t j = head[gy * gw + gx]; j >= 0; j = next[j]) {
                if (j == i)
                    continue;
                const double dy = y[j] - y[i], dx = x[j] - x[i];
                if (!(dx * dx + dy * dy >= iso * iso))
                    return 0;
            }
        }
    return 1;
}

/* Candidates: finite, unflagged, S/N >= snr_min, r_ref aperture inside the frame, no other
 * (finite) source within iso. Sorted by S/N, highest first, at most max_stars. The neighbour
 * search is a grid of cells no smaller than iso (linked lists in index order, the 3×3 cells
 * around a candidate hold every source within iso; sources off the frame sit in the border
 * cells), so the work is linear in n. The isolation test, a scatter of random reads, runs
 * only on the best candidates by S/N, in rounds of twice the stars still wanted (each round
 * picked by partial selection and sorted) until max_stars are found: the result is the
 * same as testing all and keeping the best, in a few thousand tests instead of ~10^5
 * (when a quarter or more of the candidates are wanted, all are tested, then selected). */
static int select_stars(int64_t n, const double *x, const double *y, const double *snr,
                        const int32_t *flags, int64_t w, int64_t h, double r_ref, double iso,
                        double snr_min, int max_stars, int64_t **out, int *nout) {
    /* cells no smaller than iso, about one source a cell on crowded frames */
    const double cell = fmax(iso, sqrt((double)w * (double)h / (double)(n > 0 ? n : 1)));
    const int64_t gw = (int64_t)((double)w / cell) + 1, gh = (int64_t)((double)h / cell) + 1;
    int64_t *head = malloc(sizeof(int64_t) * (size_t)(gw * gh));
    int64_t *next = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    skey *c = malloc(sizeof(skey) * (size_t)(n > 0 ? n : 1));
    if (!head || !next || !c) {
        free(head), free(next), free(c);
        return tide_error(TIDE_E_NOMEM, "tide_apcorr_build: out of host memory");
    }
    for (int64_t q = 0; q < gw * gh; q++)
        head[q] = -1;
    for (int64_t i = n - 1; i >= 0; i--) {
        next[i] = -1;
        if (!isfinite(x[i]) || !isfinite(y[i]))
            continue;
        const int64_t q = cell_of(y[i], cell, gh) * gw + cell_of(x[i], cell, gw);
        next[i] = head[q];
        head[q] = i;
    }
    int64_t nc = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i]))
            continue;
        if (!(snr[i] >= snr_min) || (flags && flags[i]))
            continue;
        if (x[i] - r_ref < 0.5 || y[i] - r_ref < 0.5 || x[i] + r_ref > w - 1.5 ||
            y[i] + r_ref > h - 1.5)
            continue;
        c[nc++] = (skey){snr[i], i};
    }
    const int64_t want = max_stars < nc ? max_stars : nc;
    int64_t *sel = malloc(sizeof(int64_t) * (size_t)(want > 0 ? want : 1));
    if (!sel) {
        free(head), free(next), free(c);
        return tide_error(TIDE_E_NOMEM, "tide_apcorr_build: out of host memory");
    }
    int64_t ns = 0;
    if (4 * want >= nc) { /* most are wanted: test all, keep the best isolated */
        for (int64_t a = 0; a < nc; a++)
            if (isolated(c[a].i, x, y, head, next, gw, gh, cell, iso))
                c[ns++] = c[a];
        const int64_t nsel = ns < want ? ns : want;
        if (nsel < ns)
            tide_select_first(c, ns, nsel, sizeof *c, cmp_skey_desc);
        qsort(c, (size_t)nsel, sizeof *c, cmp_skey_desc);
        for (ns = 0; ns < nsel; ns++)
            sel[ns] = c[ns].i;
    } else {
        for (int64_t r0 = 0; r0 < nc && ns < want;) { /* rounds over c[r0..nc), best first */
            int64_t m = 2 * (want - ns);
            if (m < 64)
                m = 64;
            if (m > nc - r0)
                m = nc - r0;
            if (m < nc - r0)
                tide_select_first(c + r0, nc - r0, m, sizeof *c, cmp_skey_desc);
            qsort(c + r0, (size_t)m, sizeof *c, cmp_skey_desc);
            for (int64_t a = r0; a < r0 + m && ns < want; a++)
                if (isolated(c[a].i, x, y, head, next, gw, gh, cell, iso))
                    sel[ns++] = c[a].i;
            r0 += m;
        }
    }
    nc = ns;
    free(head), free(next), free(c);
    *out = sel;
    *nout = (int)nc;
    return 0;
}

/* The S/N-optimal radius of one star from its S/N on the grid: the vertex of a parabola
 * fitted around the discrete maximum (robust to the pixel discretisation that makes the
 * discrete argmax jump); -1 when the maximum is at a grid end (the optimum is outside). */
static int star_ropt(const double *f, const double *e, int nrad, double r_min, double dr,
                     double *ropt) {
    int kb = -1;
    double best = -INFINITY;
    double sn[4096];
    if (nrad > 4096)
        return -1;
    for (int k = 0; k < nrad; k++) {
        sn[k] = e[k] > 0.0 ? f[k] / e[k] : -INFINITY;
        if (sn[k] > best) {
            best = sn[k];
            kb = k;
        }
    }
    if (kb <= 0 || kb >= nrad - 1 || !(best > 0.0))
        return -1;
    const double rb = r_min + kb * dr;
    int wdt = (int)(0.25 * rb / dr);
    if (wdt < 3)
        wdt = 3;
    int k0 = kb - wdt, k1 = kb + wdt;
    if (k0 < 0)
        k0 = 0;
    if (k1 > nrad - 1)
        k1 = nrad - 1;
    double xs[4096], ys[4096];
    int m = 0;
    for (int k = k0; k <= k1; k++) {
        xs[m] = r_min + k * dr;
        ys[m++] = sn[k];
    }
    double v;
    if (tide_apcorr_parabola_max(m, xs, ys, &v) == 0 && v >= xs[0] && v <= xs[m - 1])
        *ropt = v;
    else
        *ropt = rb;
    return 0;
}

int tide_apcorr_build(tide_ctx *ctx, const tide_image *sub, const tide_image *var, int64_t n,
                      const double *x, const double *y, const double *snr, const int32_t *flags,
                      const tide_apcorr_params *pin, tide_apcorr_model *out) {
    const char *who = "tide_apcorr_build";
    int st = tide_phot_check_common(who, ctx, sub, n, x, y);
    if (st)
        return st;
    if (!out || (n > 0 && !snr))
        return tide_error(TIDE_E_INVAL, "%s: NULL snr or model", who);
    memset(out, 0, sizeof *out);
    tide_apcorr_params p;
    if (pin)
        p = *pin;
    else
        tide_apcorr_params_default(&p);
    if (!(p.fwhm > 0.0))
        return tide_error(TIDE_E_INVAL, "%s: fwhm = %g must be > 0", who, p.fwhm);
    if (p.r_ref <= 0.0)
        p.r_ref = 4.0 * p.fwhm;
    if (p.r_min <= 0.0)
        p.r_min = 0.5 * p.fwhm;
    if (p.r_max <= 0.0)
        p.r_max = 3.0 * p.fwhm;
    if (p.r_max > p.r_ref)
        p.r_max = p.r_ref;
    if (p.dr <= 0.0)
        p.dr = 0.1;
    if (!(p.isolation > 0.0))
        p.isolation = p.r_ref + 2.0 * p.fwhm;
    if (p.max_stars <= 0)
        p.max_stars = 500;
    if (p.degree < 0)
        p.degree = 0;
    if (p.degree > TIDE_APCORR_MAX_DEGREE)
        p.degree = TIDE_APCORR_MAX_DEGREE;
    if (!(p.r_min < p.r_max))
        return tide_error(TIDE_E_INVAL, "%s: r_min %g >= r_max %g", who, p.r_min, p.r_max);
    const int nrad = (int)ceil((p.r_max - p.r_min) / p.dr - 1e-9) + 1;
    if (nrad > 4000)
        return tide_error(TIDE_E_RANGE, "%s: %d grid radii (dr too small)", who, nrad);

    int64_t *sel = NULL;
    int ns = 0;
    tide_timer tm;
    tide_timer_start(ctx, &tm, "apcorr.select");
    st = select_stars(n, x, y, snr, flags, sub->width, sub->height, p.r_ref, p.isolation,
                      p.snr_min_law < p.snr_min_corr ? p.snr_min_law : p.snr_min_corr, p.max_stars,
                      &sel, &ns);
    tide_timer_stop(ctx, &tm, NULL);
    if (st)
        return st;
    const int nr = nrad + 1; /* the grid, then r_ref */
    double *radii = malloc(sizeof(double) * nr);
    double *sx = malloc(sizeof(double) * (ns + 1)), *sy = malloc(sizeof(double) * (ns + 1));
    double *f = malloc(sizeof(double) * (size_t)(ns + 1) * nr);
    double *e = malloc(sizeof(double) * (size_t)(ns + 1) * nr);
    int32_t *fl = malloc(sizeof(int32_t) * (ns + 1));
    double *u = malloc(sizeof(double) * (ns + 1)), *v = malloc(sizeof(double) * (ns + 1));
    double *val = malloc(sizeof(double) * (ns + 1));
    unsigned char *keep = malloc(ns + 1);
    int *corr = malloc(sizeof(int) * (ns + 1));
    double *lx = malloc(sizeof(double) * (ns + 1)), *ly = malloc(sizeof(double) * (ns + 1));
    out->coef = malloc(sizeof(double) * (size_t)nrad * TIDE_APCORR_MAX_COEF);
    out->err = malloc(sizeof(double) * (size_t)nrad);
    if (!radii || !sx || !sy || !f || !e || !fl || !u || !v || !val || !keep || !corr || !lx ||
        !ly || !out->coef || !out->err) {
        st = tide_error(TIDE_E_NOMEM, "%s: out of host memory", who);
        goto done;
    }
    for (int k = 0; k < nrad; k++)
        radii[k] = p.r_min + k * p.dr;
    radii[nrad] = p.r_ref;
    for (int s = 0; s < ns; s++) {
        sx[s] = x[sel[s]];
        sy[s] = y[sel[s]];
    }
    tide_aper_params ap = p.aper;
    ap.bkgann_out = 0.0; /* growth curves of background-subtracted stars */
    tide_timer_start(ctx, &tm, "apcorr.curves");
    st = tide_aperture_photometry(ctx, sub, var, ns, sx, sy, nr, radii, &ap, f, e, fl);
    tide_timer_stop(ctx, &tm, NULL);
    if (st)
        goto done;

    double t0 = tide_now(); /* host-only sub-stages: timed on the host clock */
    /* aperture corrections: C_k = F(r_k) / F(r_ref) of the bright stars, fitted over the field */
    int nc = 0;
    for (int s = 0; s < ns; s++)
        if (!fl[s] && snr[sel[s]] >= p.snr_min_corr && f[(size_t)s * nr + nrad] > 0.0)
            corr[nc++] = s;
    if (nc < 3) {
        st = tide_error(TIDE_E_EMPTY, "%s: %d isolated stars with S/N >= %g (3 needed)", who, nc,
                        p.snr_min_corr);
        goto done;
    }
    int deg = p.degree;
    while (deg > 0 && 3 * (deg + 1) * (deg + 2) / 2 > nc)
        deg--;
    out->width = sub->width;
    out->height = sub->height;
    out->r_ref = p.r_ref;
    out->r_min = p.r_min;
    out->r_max = p.r_min + (nrad - 1) * p.dr;
    out->dr = p.dr;
    out->nrad = nrad;
    out->degree = deg;
    out->ncoef = (deg + 1) * (deg + 2) / 2;
    for (int a = 0; a < nc; a++) {
        u[a] = tide_apcorr_scaled(sx[corr[a]], sub->width);
        v[a] = tide_apcorr_scaled(sy[corr[a]], sub->height);
    }
    /* one independent clipped fit per grid radius, all on the same points (one design):
     * split over threads, each with its own value and mask arrays; the first failing radius
     * (lowest k) is the one reported */
    tide_apcorr_design design;
    if ((st = tide_apcorr_design_make(nc, u, v, deg, &design)))
        goto done;
    int nkept_min = nc, kfail = nrad;
#pragma omp parallel if (nrad * nc > 4096) num_threads(ctx->threads > 0 ? ctx->threads : 1)
    {
        double *tval = malloc(sizeof(double) * (size_t)(nc + 1));
        unsigned char *tkeep = malloc((size_t)(nc + 1));
        int tmin = nc, tfail = nrad;
#pragma omp for schedule(static)
        for (int k = 0; k < nrad; k++) {
            if (!tval || !tkeep) {
                if (k < tfail)
                    tfail = -1 - k; /* out of memory, marked negative */
                continue;
            }
            for (int a = 0; a < nc; a++) {
                const int s = corr[a];
                tval[a] = f[(size_t)s * nr + k] / f[(size_t)s * nr + nrad];
                tkeep[a] = isfinite(tval[a]);
            }
            double rms;
            int nk;
            if (tide_apcorr_fit_poly(&design, tval, 3.0, 5, tkeep, out->coef + k * out->ncoef, &rms,
                                     &nk)) {
                if (k < tfail)
                    tfail = k;
                continue;
            }
            out->err[k] = nk > 0 ? rms / sqrt((double)nk) : 0.0;
            if (nk < tmin)
                tmin = nk;
        }
#pragma omp critical(tide_apcorr_fits)
        {
            if (tmin < nkept_min)
                nkept_min = tmin;
            if (tfail < 0)
                kfail = tfail; /* memory beats a fit failure */
            else if (kfail >= 0 && tfail < kfail)
                kfail = tfail;
        }
        free(tval);
        free(tkeep);
    }
    tide_apcorr_design_free(&design);
    if (kfail < 0) {
        st = tide_error(TIDE_E_NOMEM, "%s: out of host memory", who);
        goto done;
    }
    if (kfail < nrad) {
        st = tide_error(TIDE_E_EMPTY, "%s: aperture-correction fit at r = %g failed", who,
                        radii[kfail]);
        goto done;
    }
    out->nstars_corr = nkept_min;
    tide_timer_add(ctx, "apcorr.fits", 1e3 * (tide_now() - t0));
    t0 = tide_now();

    /* the optimal-radius law from every calibration star's own S/N curve: each star's
     * optimum across the team (keep[s] = found, ly[s] = radius), then gathered in order */
#pragma omp parallel for schedule(static)                                                          \
    num_threads(ctx->threads > 0 ? ctx->threads : 1) if (ns * nrad > 8192)
    for (int s = 0; s < ns; s++)
        keep[s] = !fl[s] && snr[sel[s]] >= p.snr_min_law &&
                  !star_ropt(f + (size_t)s * nr, e + (size_t)s * nr, nrad, p.r_min, p.dr, &ly[s]);
    int nl = 0;
    for (int s = 0; s < ns; s++) {
        if (!keep[s])
            continue;
        lx[nl] = log10(snr[sel[s]]);
        ly[nl++] = log10(ly[s]);
    }
    double xmin = INFINITY, xmax = -INFINITY;
    for (int a = 0; a < nl; a++) {
        if (lx[a] < xmin)
            xmin = lx[a];
        if (lx[a] > xmax)
            xmax = lx[a];
    }
    int law_ok = 0;
    if (nl >= 5 && xmax - xmin >= 0.3) {
        /* a straight line in (log S/N, log r) with 3σ clipping: the degree-1 polynomial in u
         * with v = 0 would be singular, so fit y = c0 + c1 x through the 1-D normal equations */
        for (int a = 0; a < nl; a++)
            keep[a] = 1;
        double c0 = 0, c1 = 0, rms = 0;
        for (int it = 0; it < 6; it++) {
            double s1 = 0, sx1 = 0, sy1 = 0, sxx = 0, sxy = 0;
            for (int a = 0; a < nl; a++)
                if (keep[a]) {
                    s1 += 1;
                    sx1 += lx[a];
                    sy1 += ly[a];
                    sxx += lx[a] * lx[a];
                    sxy += lx[a] * ly[a];
                }
            const double det = s1 * sxx - sx1 * sx1;
            if (s1 < 5 || !(det > 0.0))
                break;
            c1 = (s1 * sxy - sx1 * sy1) / det;
            c0 = (sy1 - c1 * sx1) / s1;
            double ss = 0;
            for (int a = 0; a < nl; a++)
                if (keep[a])
                    ss += (ly[a] - c0 - c1 * lx[a]) * (ly[a] - c0 - c1 * lx[a]);
            rms = sqrt(ss / (s1 - 2 > 0 ? s1 - 2 : 1));
            law_ok = 1;
            int changed = 0;
            for (int a = 0; a < nl; a++)
                if (keep[a] && fabs(ly[a] - c0 - c1 * lx[a]) > 3.0 * rms && rms > 0) {
                    keep[a] = 0;
                    changed++;
                }
            if (!changed)
                break;
        }
        if (law_ok) {
            int nk = 0;
            for (int a = 0; a < nl; a++)
                nk += keep[a];
            out->law_a = c1;
            out->law_b = c0;
            out->law_rms = rms;
            out->nstars_law = nk;
        }
    }
    if (!law_ok) {
        /* too few stars or too narrow an S/N range: a constant radius, the median optimum
         * (or 0.68 FWHM, the optimum of a background-limited Gaussian star) */
        qsort(ly, (size_t)nl, sizeof(double), cmp_double);
        out->law_a = 0.0;
        out->law_b = nl > 0 ? ly[nl / 2] : log10(0.68 * p.fwhm);
        out->nstars_law = nl;
        out->law_fallback = 1;
    }
    tide_timer_add(ctx, "apcorr.law", 1e3 * (tide_now() - t0));
done:
    free(sel);
    free(radii);
    free(sx);
    free(sy);
    free(f);
    free(e);
    free(fl);
    free(u);
    free(v);
    free(val);
    free(keep);
    free(corr);
    free(lx);
    free(ly);
    if (st)
        tide_apcorr_free(out);
    return st;
}

int tide_optimal_photometry(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                            const tide_apcorr_model *mod, int64_t n, const double *x,
                            const double *y, const double *snr, const tide_aper_params *pin,
                            double *flux_opt, double *fluxerr_opt, double *rad_opt,
                            int32_t *flags) {
    const char *who = "tide_optimal_photometry";
    int st = tide_phot_check_common(who, ctx, sub, n, x, y);
    if (st)
        return st;
    if (!mod || !mod->coef || !mod->err || mod->nrad < 1)
        return tide_error(TIDE_E_INVAL, "%s: empty aperture-correction model", who);
    if (n > 0 && (!snr || !flux_opt || !fluxerr_opt))
        return tide_error(TIDE_E_INVAL, "%s: NULL snr, flux_opt or fluxerr_opt", who);
    tide_aper_params p;
    if (pin)
        p = *pin;
    else
        tide_aper_params_default(&p);
    if ((st = tide_phot_check_aper(who, &p)))
        return st;
    if (n == 0)
        return 0;
    const size_t nb = sizeof(double) * (size_t)n;
    tide_phot_mem m;
    tide_phot_mem_init(&m, ctx);
    tide_ap_job job;
    memset(&job, 0, sizeof job);
    st = tide_phot_planes(&m, who, sub, var, p.mask_bits, &job.im);
    const void *kp;
    const double *ksnr = NULL, *kcoef = NULL, *kerr = NULL;
    if (!st && !(st = tide_phot_mem_in(&m, x, nb, &kp)))
        job.x = kp;
    if (!st && !(st = tide_phot_mem_in(&m, y, nb, &kp)))
        job.y = kp;
    if (!st && !(st = tide_phot_mem_in(&m, snr, nb, &kp)))
        ksnr = kp;
    if (!st &&
        !(st = tide_phot_mem_in(&m, mod->coef, sizeof(double) * mod->nrad * mod->ncoef, &kp)))
        kcoef = kp;
    if (!st && !(st = tide_phot_mem_in(&m, mod->err, sizeof(double) * mod->nrad, &kp)))
        kerr = kp;
    void *o;
    double *kr = NULL;
    int32_t *kfl = NULL;
    if (!st && !(st = tide_phot_mem_out(&m, rad_opt, nb, &o)))
        kr = o;
    if (!st && !(st = tide_phot_mem_out(&m, flux_opt, nb, &o)))
        job.flux = o;
    if (!st && !(st = tide_phot_mem_out(&m, fluxerr_opt, nb, &o)))
        job.fluxerr = o;
    if (!st && !(st = tide_phot_mem_out(&m, flags, sizeof(int32_t) * n, &o)))
        kfl = o;
    const tide_apcorr_table t = table_of(mod, kcoef, kerr);
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_apcorr_radius, &t, n, ksnr, kr, kfl);
    job.n = n;
    job.nr = 1;
    job.per_source = 1;
    job.radii = kr;
    job.aflags = kfl;
    job.mask_correct = p.mask_correct;
    job.gain_eff = p.gain > 0.0 ? p.gain * p.ncombine : 0.0;
    if (!st && p.bkgann_out > 0.0) {
        tide_ann_job aj;
        memset(&aj, 0, sizeof aj);
        aj.im = job.im;
        aj.n = n;
        aj.x = job.x;
        aj.y = job.y;
        aj.rin = p.bkgann_in;
        aj.rout = p.bkgann_out;
        aj.sigma = p.bkgann_sigma;
        aj.maxiters = p.bkgann_maxiters;
        aj.minpix = p.bkgann_minpix;
        aj.flags = kfl;
        if (!(st = tide_phot_mem_out(&m, NULL, nb, &o)))
            aj.bkg = o;
        if (!st && !(st = tide_phot_mem_out(&m, NULL, nb, &o)))
            aj.bkg_err = o;
        if (!st)
            st = TIDE_DISPATCH(ctx, tide_ap_annulus, &aj);
        job.bkg = aj.bkg;
        job.bkg_err = aj.bkg_err;
    }
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_ap_sum, &job);
    if (!st)
        st = TIDE_DISPATCH(ctx, tide_apcorr_apply, &t, n, job.x, job.y, kr, job.flux, job.fluxerr);
    if (!st)
        st = tide_phot_mem_fetch(&m, flux_opt, job.flux, nb);
    if (!st)
        st = tide_phot_mem_fetch(&m, fluxerr_opt, job.fluxerr, nb);
    if (!st)
        st = tide_phot_mem_fetch(&m, rad_opt, kr, nb);
    if (!st)
        st = tide_phot_mem_fetch(&m, flags, kfl, sizeof(int32_t) * n);
    tide_phot_mem_free(&m);
    return st;
}
