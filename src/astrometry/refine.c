/* refine.c — astrometric refinement (iterate crossmatch, TAN-SIP fit and outlier rejection)
 * and verification of an existing WCS (wcsfit.h).
 *
 * The schedule follows the usual practice of survey astrometry (e.g. SCAMP, Bertin 2006,
 * ASP Conf. 351, 112; astrometry.net's tweak): a generous first radius and a rigid (TAN)
 * model while the errors are large, then the full distortion model with a radius that
 * shrinks to a few σ of the residuals, until the matched set stops changing. Outliers are
 * rejected on residuals normalised by each source's centroid error, with σ from the median
 * (for a 2-D Gaussian of per-axis σ the radial residual has median σ·sqrt(2 ln 2)). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/crossmatch.h"
#include "compute/select_f64.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "tide/wcsfit.h"
#include "wcsfit_internal.h"

#define PI WCSFIT_PI
#define D2R WCSFIT_D2R
/* median of a Rayleigh distribution in units of its per-axis σ: sqrt(2 ln 2) */
#define RAYLEIGH_MEDIAN 1.1774100225154747
#define NCOEF(o) (((o) + 1) * ((o) + 2) / 2)

void tide_refine_defaults(tide_refine_params *p) {
    memset(p, 0, sizeof *p);
    p->sip_order = 3;
    p->match_radius_arcsec = NAN;
    p->min_radius_arcsec = NAN;
    p->match_sigma = 5.0;
    p->clip_sigma = 3.0;
    p->sigma_floor_px = 0.02;
    p->max_iter = 8;
    p->mutual = 1;
    p->min_per_coef = 5;
    p->min_stars = 6;
    p->subsample = 10000;
}

void tide_verify_defaults(tide_verify_params *p) {
    memset(p, 0, sizeof *p);
    p->radius_arcsec = NAN;
    p->min_matches = 20;
    p->min_fraction = 0.2;
    p->min_excess = 5.0;
}

/* Reference stars within the circle circumscribing the frame, and that circle's radius
 * (arcsec): the density of the references for the automatic radius and for verify. */
static int64_t refs_near_frame(const tide_wcs_summary *su, const double *ra, const double *dec,
                               int64_t nref, double *rad_arcsec) {
    double r = 0.5 * hypot(su->fov_x_deg, su->fov_y_deg);
    double c0 = cos(su->dec_center * D2R), s0 = sin(su->dec_center * D2R), cr = cos(r * D2R);
    int64_t k = 0;
    for (int64_t i = 0; i < nref; i++) {
        double cd =
            s0 * sin(dec[i] * D2R) + c0 * cos(dec[i] * D2R) * cos((ra[i] - su->ra_center) * D2R);
        k += cd >= cr;
    }
    *rad_arcsec = r * 3600.0;
    return k;
}

int tide_astrom_refine(tide_ctx *ctx, const tide_wcs *initial, int64_t width, int64_t height,
                       const double *x, const double *y, const double *sigma_px, int64_t n,
                       const double *ref_ra, const double *ref_dec, int64_t nref,
                       const tide_refine_params *pin, tide_wcs **out, tide_refine_info *info) {
    double t0 = tide_now();
    if (out)
        *out = NULL;
    if (info)
        memset(info, 0, sizeof *info);
    tide_refine_params p;
    if (pin)
        p = *pin;
    else
        tide_refine_defaults(&p);
    if (!ctx || !initial || !out || width <= 0 || height <= 0 || n < 0 || nref < 0 ||
        (n > 0 && (!x || !y)) || (nref > 0 && (!ref_ra || !ref_dec)))
        return tide_error(TIDE_E_INVAL, "astrom_refine: bad arguments");
    if (p.sip_order != 0 && (p.sip_order < 2 || p.sip_order > TIDE_WCSFIT_MAX_ORDER))
        return tide_error(TIDE_E_INVAL, "astrom_refine: sip_order %d is not 0 or 2..%d",
                          p.sip_order, TIDE_WCSFIT_MAX_ORDER);
    if (!(p.clip_sigma > 0) || !(p.match_sigma > 0) || p.max_iter < 1 || !(p.sigma_floor_px >= 0))
        return tide_error(TIDE_E_INVAL, "astrom_refine: clip_sigma, match_sigma, max_iter and "
                                        "sigma_floor_px must be positive");
    if (p.min_stars < 3)
        p.min_stars = 3;
    tide_wcs_summary su;
    int st = tide_wcs_summarize(initial, width, height, &su);
    if (st)
        return st;
    double scale = su.scale_arcsec; /* arcsec per pixel */
    if (!(scale > 0))
        return tide_error(TIDE_E_WCS, "astrom_refine: initial WCS has no pixel scale");

    /* the first radius: a 15 % chance of a random reference within it, 3..30 pixels */
    double radius = p.match_radius_arcsec;
    if (!(radius > 0)) {
        double rf;
        int64_t k = refs_near_frame(&su, ref_ra, ref_dec, nref, &rf);
        double rho = (double)(k > 0 ? k : 1) / (PI * rf * rf); /* per arcsec² */
        radius = sqrt(0.15 / (PI * rho));
        radius = fmin(fmax(radius, 3.0 * scale), 30.0 * scale);
    }
    double rmin = p.min_radius_arcsec > 0 ? p.min_radius_arcsec : 2.0 * scale;
    if (radius > 3600.0)
        radius = 3600.0;

    /* scratch: sky of the sources, matches (this and last round), pairs, and the reference
     * unit vectors (computed once) */
    size_t nn = (size_t)(n > 0 ? n : 1), nr = (size_t)(nref > 0 ? nref : 1);
    double *dbl = malloc(sizeof(double) * 16 * nn);
    double *rv = malloc(sizeof(double) * 3 * nr);
    int64_t *i64 = malloc(sizeof(int64_t) * 2 * nn);
    unsigned char *rej = calloc(2 * nn, 1);
    tide_wcs *fit = NULL;
    if (!dbl || !rv || !i64 || !rej) {
        st = tide_error(TIDE_E_NOMEM, "astrom_refine: %lld sources", (long long)n);
        goto fail;
    }
    double *sra = dbl, *sde = dbl + nn, *px = dbl + 2 * nn, *py = dbl + 3 * nn;
    double *w0 = dbl + 4 * nn, *wf = dbl + 5 * nn, *dx = dbl + 6 * nn, *dy = dbl + 7 * nn;
    double *tmp = dbl + 8 * nn /* 3n */, *pr = dbl + 11 * nn /* 3n */;
    double *xsub = dbl + 14 * nn, *ysub = dbl + 15 * nn;
    int64_t *match = i64, *prev = i64 + nn;
    unsigned char *prej = rej + nn;
    for (int64_t i = 0; i < n; i++)
        prev[i] = -2;
#pragma omp parallel for schedule(static) if (nref > 20000)
    for (int64_t j = 0; j < nref; j++) {
        if (isfinite(ref_ra[j]) && isfinite(ref_dec[j]) && fabs(ref_dec[j]) <= 90.0)
            wcsfit_unit(ref_ra[j], ref_dec[j], rv + 3 * j);
        else
            rv[3 * j] = rv[3 * j + 1] = rv[3 * j + 2] = NAN;
    }

    tide_wcs_tansip model;
    tide_wcsfit_params fp;
    tide_wcsfit_info finfo;
    memset(&model, 0, sizeof model);
    memset(&finfo, 0, sizeof finfo);
    tide_wcsfit_defaults(&fp);
    fp.min_per_coef = p.min_per_coef;
    snprintf(fp.radesys, sizeof fp.radesys, "%s", su.radesys);
    int64_t m = 0, nused = 0, nm = 0;
    int it, converged = 0, prev_order = -1, have_model = 0;
    int64_t prev_stride = 0;
    for (it = 0; it < p.max_iter; it++) {
        /* the first two rounds (rigid, then the first distortion fit) see every stride-th
         * source only: enough to fit, and the full set comes after */
        int64_t stride =
            it < 2 && p.subsample > 0 && n > p.subsample ? (n + p.subsample - 1) / p.subsample : 1;
        int64_t ns = (n + stride - 1) / stride;
        const double *xs = x, *ys = y;
        if (stride > 1) {
            for (int64_t q = 0; q < ns; q++) {
                xsub[q] = x[q * stride];
                ysub[q] = y[q * stride];
            }
            xs = xsub;
            ys = ysub;
        }
        if (have_model)
            tide_wcsfit_model_pix2sky(&model, ns, xs, ys, sra, sde);
        else if ((st = tide_wcs_pix2sky(initial, ns, xs, ys, sra, sde)))
            goto fail;
        tide_xmatch_params xp = tide_xmatch_defaults();
        xp.radius_arcsec = radius;
        xp.mutual = p.mutual;
        st = tide_crossmatch_host(ctx, sra, sde, ns, ref_ra, ref_dec, nref, &xp, match, NULL, &nm);
        if (st)
            goto fail;
        /* the pairs */
        m = 0;
        for (int64_t q = 0; q < ns; q++) {
            int64_t i = q * stride;
            if (match[q] < 0 || !isfinite(x[i]) || !isfinite(y[i]))
                continue;
            double s = sigma_px && sigma_px[i] > 0 && isfinite(sigma_px[i]) ? sigma_px[i] : 0.0;
            double v = s * s + p.sigma_floor_px * p.sigma_floor_px;
            px[m] = x[i];
            py[m] = y[i];
            memcpy(pr + 3 * m, rv + 3 * match[q], 3 * sizeof(double));
            w0[m] = v > 0 ? 1.0 / v : 1.0;
            m++;
        }
        if (m < p.min_stars) {
            st = tide_error(TIDE_E_NOSOLVE,
                            "astrom_refine: %lld sources matched within %.2f\" "
                            "(round %d), %d needed",
                            (long long)m, radius, it + 1, p.min_stars);
            goto fail;
        }
        /* round 1: a rigid TAN with equal weights (the model error dominates) — or the full
         * order when the initial WCS has a distortion already; then the full order, weighted,
         * lowered when the stars are too few */
        int weighted = it > 0;
        fp.sip_order = it == 0 && !(su.has_sip || su.has_tpv) ? 0 : p.sip_order;
        fp.crval[0] = have_model ? model.crval[0] : NAN;
        fp.crval[1] = have_model ? model.crval[1] : NAN;
        for (int64_t k = 0; k < m; k++) {
            rej[k] = 0;
            wf[k] = weighted ? w0[k] : 1.0;
        }
        /* when the last round fitted the same model, its residuals on the new pairs give the
         * first rejection, so the clipping below starts near its end */
        if (it >= 2) {
            wcsfit_basis b;
            wcsfit_basis_make(model.crval[0], model.crval[1], &b);
            double c0 = model.crpix[0] - 1.0, c1 = model.crpix[1] - 1.0;
            int64_t k2 = 0;
            for (int64_t k = 0; k < m; k++) {
                double xm, em, xr, er;
                tide_wcsfit_model_std(&model, px[k] - c0, py[k] - c1, &xm, &em);
                if (wcsfit_project(&b, pr + 3 * k, &xr, &er)) {
                    tmp[2 * nn + k] = INFINITY;
                    continue;
                }
                double ex = xm - xr, ey = em - er;
                double rx = model.cdinv[0][0] * ex + model.cdinv[0][1] * ey;
                double ry = model.cdinv[1][0] * ex + model.cdinv[1][1] * ey;
                tmp[2 * nn + k] = sqrt((rx * rx + ry * ry) * w0[k]);
                tmp[k2++] = tmp[2 * nn + k];
            }
            double sig = k2 > 0 ? tide_median_f64(tmp, k2) / RAYLEIGH_MEDIAN : 0.0;
            int64_t keep = 0;
            for (int64_t k = 0; k < m && sig > 0; k++)
                keep += tmp[2 * nn + k] <= p.clip_sigma * sig;
            if (keep >= p.min_stars)
                for (int64_t k = 0; k < m && sig > 0; k++) {
                    rej[k] = !(tmp[2 * nn + k] <= p.clip_sigma * sig);
                    wf[k] = rej[k] ? 0.0 : w0[k];
                }
        }
        /* fit, clip, refit until the rejected set repeats (at most 10 fits) */
        for (int c = 0;; c++) {
            st = tide_wcsfit_core(px, py, pr, wf, m, width, height, &fp, 1e-4, &model, &finfo, dx,
                                  dy);
            if (st)
                goto fail;
            have_model = 1;
            fp.crval[0] = model.crval[0];
            fp.crval[1] = model.crval[1];
            if (c == 9)
                break;
            /* normalised radial residuals of the used pairs → σ from their median */
            nused = 0;
            for (int64_t k = 0; k < m; k++) {
                double r = sqrt((dx[k] * dx[k] + dy[k] * dy[k]) * (weighted ? w0[k] : 1.0));
                if (!rej[k] && isfinite(r))
                    tmp[nused++] = r;
            }
            double sig = nused > 0 ? tide_median_f64(tmp, nused) / RAYLEIGH_MEDIAN : 0.0;
            if (!(sig > 0))
                break;
            int changed = 0;
            nused = 0;
            for (int64_t k = 0; k < m; k++) {
                double r = sqrt((dx[k] * dx[k] + dy[k] * dy[k]) * (weighted ? w0[k] : 1.0));
                unsigned char rk = !(r <= p.clip_sigma * sig);
                changed |= rk != rej[k];
                rej[k] = rk;
                wf[k] = rk ? 0.0 : (weighted ? w0[k] : 1.0);
                nused += !rk;
            }
            if (nused < p.min_stars) {
                st = tide_error(TIDE_E_NOSOLVE,
                                "astrom_refine: %lld stars left after "
                                "rejection, %d needed",
                                (long long)nused, p.min_stars);
                goto fail;
            }
            if (!changed)
                break;
        }
        /* stable? the same matches and the same rejections as the last round, same order */
        int same = finfo.sip_order_used == prev_order && stride == 1 && prev_stride == 1;
        for (int64_t q = 0; q < ns && same; q++)
            same = match[q] == prev[q];
        for (int64_t k = 0; k < m && same; k++)
            same = rej[k] == prej[k];
        memcpy(prev, match, sizeof(int64_t) * (size_t)ns);
        prev_stride = stride;
        memcpy(prej, rej, (size_t)m);
        prev_order = finfo.sip_order_used;
        /* next radius: match_sigma × the RMS of the used residuals, never growing */
        radius = fmax(rmin, fmin(radius, p.match_sigma * finfo.rms_px * scale));
        if (same && it > 0) {
            converged = 1;
            it++;
            break;
        }
    }
    if (it > p.max_iter)
        it = p.max_iter;

    /* never return something worse than what we started from, on the same stars */
    double wrms0 = -1.0;
    {
        int64_t k = 0;
        for (int64_t q = 0; q < m; q++)
            if (wf[q] > 0) {
                tmp[k] = px[q];
                tmp[nn + k] = py[q];
                dx[k] = wf[q];
                k++;
            }
        if (!tide_wcs_pix2sky(initial, k, tmp, tmp + nn, sra, sde)) {
            double s = 0, sw = 0;
            int64_t j = 0;
            for (int64_t q = 0; q < m; q++) {
                if (!(wf[q] > 0))
                    continue;
                double ra0, de0;
                wcsfit_radec(pr + 3 * q, &ra0, &de0);
                if (isfinite(sra[j])) {
                    double d = tide_sky_separation_arcsec(sra[j], sde[j], ra0, de0) / scale;
                    s += dx[j] * d * d;
                    sw += dx[j];
                }
                j++;
            }
            if (sw > 0)
                wrms0 = sqrt(s / sw);
        }
    }
    if (wrms0 >= 0 && !(finfo.wrms_px <= 1.05 * wrms0 + 1e-3)) {
        st = tide_error(TIDE_E_NOSOLVE,
                        "astrom_refine: the fit diverged (weighted RMS %.3f px, "
                        "initial WCS %.3f px on the same %lld stars)",
                        finfo.wrms_px, wrms0, (long long)finfo.n);
        goto fail;
    }
    st = tide_wcsfit_finish(&model, width, height, &fp, &fit, &finfo);
    if (st)
        goto fail;
    if (info) {
        info->rms_ra_arcsec = finfo.rms_ra_arcsec;
        info->rms_dec_arcsec = finfo.rms_dec_arcsec;
        info->rms_px = finfo.rms_px;
        info->initial_rms_px = wrms0;
        info->radius_arcsec = radius;
        info->nstars = finfo.n;
        info->nmatched = m;
        info->nrejected = m - finfo.n;
        info->iterations = it;
        info->sip_order_used = finfo.sip_order_used;
        info->converged = converged;
        info->ms = (tide_now() - t0) * 1e3;
    }
    *out = fit;
    fit = NULL;
fail:
    tide_wcs_free(fit);
    free(dbl);
    free(rv);
    free(i64);
    free(rej);
    return st;
}

int tide_astrom_verify(tide_ctx *ctx, const tide_wcs *wcs, int64_t width, int64_t height,
                       const double *x, const double *y, int64_t n, const double *ref_ra,
                       const double *ref_dec, int64_t nref, const tide_verify_params *pin,
                       tide_verify_info *info) {
    tide_verify_params p;
    if (pin)
        p = *pin;
    else
        tide_verify_defaults(&p);
    if (!ctx || !wcs || !info || width <= 0 || height <= 0 || n < 0 || nref < 0 ||
        (n > 0 && (!x || !y)) || (nref > 0 && (!ref_ra || !ref_dec)))
        return tide_error(TIDE_E_INVAL, "astrom_verify: bad arguments");
    memset(info, 0, sizeof *info);
    tide_wcs_summary su;
    int st = tide_wcs_summarize(wcs, width, height, &su);
    if (st)
        return st;
    double radius = p.radius_arcsec > 0 ? p.radius_arcsec : 2.0 * su.scale_arcsec;
    if (radius > 3600.0)
        radius = 3600.0;
    size_t nn = (size_t)(n > 0 ? n : 1), nr = (size_t)(nref > 0 ? nref : 1);
    double *sra = malloc(sizeof(double) * 3 * nn);
    int64_t *match = malloc(sizeof(int64_t) * nn);
    double *rx = malloc(sizeof(double) * 2 * nr);
    if (!sra || !match || !rx) {
        st = tide_error(TIDE_E_NOMEM, "astrom_verify: %lld sources", (long long)n);
        goto done;
    }
    double *sde = sra + nn, *sep = sra + 2 * nn;
    st = tide_wcs_pix2sky(wcs, n, x, y, sra, sde);
    if (st)
        goto done;
    /* references inside the frame */
    st = tide_wcs_sky2pix(wcs, nref, ref_ra, ref_dec, rx, rx + nr);
    if (st)
        goto done;
    int64_t nin = 0;
    for (int64_t j = 0; j < nref; j++)
        nin += rx[j] >= -0.5 && rx[j] <= width - 0.5 && rx[nr + j] >= -0.5 &&
               rx[nr + j] <= height - 0.5;
    tide_xmatch_params xp = tide_xmatch_defaults();
    xp.radius_arcsec = radius;
    xp.mutual = 1;
    int64_t nm = 0;
    st = tide_crossmatch_host(ctx, sra, sde, n, ref_ra, ref_dec, nref, &xp, match, sep, &nm);
    if (st)
        goto done;
    int64_t k = 0;
    double s2 = 0;
    for (int64_t i = 0; i < n; i++)
        if (match[i] >= 0) {
            sra[k++] = sep[i];
            s2 += sep[i] * sep[i];
        }
    double area = (double)width * height * su.scale_arcsec * su.scale_arcsec; /* arcsec² */
    info->nmatched = k;
    info->nref_inside = nin;
    info->expected_random = (double)n * (double)nin / area * PI * radius * radius;
    int64_t denom = n < nin ? n : nin;
    info->fraction = denom > 0 ? (double)k / (double)denom : 0.0;
    info->median_sep_arcsec = k > 0 ? tide_median_f64(sra, k) : NAN;
    info->rms_sep_arcsec = k > 0 ? sqrt(s2 / k) : NAN;
    info->good = k >= p.min_matches && info->fraction >= p.min_fraction &&
                 (double)k >= p.min_excess * info->expected_random;
done:
    free(sra);
    free(match);
    free(rx);
    return st;
}
