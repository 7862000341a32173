/* photcal.c — the zero-point (and colour-term) fit with sigma clipping and the slope check. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "photcal_internal.h"
#include "tide/photcal.h"
#include "compute/select_f64.h"
#include "tide/status.h"

/* 2.5 / ln 10: d(mag) = 1.0857 dF / F. */
#define MAG_PER_REL 1.0857362047581294

tide_photcal_params tide_photcal_defaults(void) {
    tide_photcal_params p;
    memset(&p, 0, sizeof p);
    p.snr_min = 20.0;
    p.snr_max = 1000.0;
    p.color_min = -INFINITY;
    p.color_max = INFINITY;
    p.edge_margin = 20.0;
    p.flags_reject = ~(int32_t)3;
    p.clip_sigma = 3.0;
    p.clip_iter = 10;
    p.err_floor = 0.005;
    p.weighted = 1;
    p.color_mode = TIDE_PHOTCAL_COLOR_GIVEN;
    p.color_term = 0.0;
    p.slope_tol = 0.03;
    p.min_stars = 5;
    return p;
}

int tide_photcal_theil_sen(const double *x, const double *y, int64_t n, double min_dx, double *b,
                           double *a) {
    /* At most 256 points (evenly spread through the input order): ~33,000 slopes, plenty for
     * a median whose standard error is then ~1/sqrt(256) of the slopes' spread, and cheap
     * (~0.5 ms; 600 points cost ~3 ms of a 2048² frame's calibration). */
    enum { MAXPTS = 256 };
    const int64_t m = n < MAXPTS ? n : MAXPTS;
    if (m < 2)
        return -1;
    int64_t *pick = malloc((size_t)m * sizeof *pick);
    double *s = malloc((size_t)(m * (m - 1) / 2 + m) * sizeof *s);
    if (!pick || !s) {
        free(pick), free(s);
        return -2;
    }
    for (int64_t k = 0; k < m; k++)
        pick[k] = n <= MAXPTS ? k : (int64_t)((double)k * (double)n / (double)m);
    int64_t ns = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = i + 1; j < m; j++) {
            const double dx = x[pick[j]] - x[pick[i]];
            if (fabs(dx) > min_dx)
                s[ns++] = (y[pick[j]] - y[pick[i]]) / dx;
        }
    int rc = -1;
    if (ns > 0) {
        *b = tide_median_f64(s, ns);
        for (int64_t k = 0; k < m; k++)
            s[k] = y[pick[k]] - *b * x[pick[k]];
        *a = tide_median_f64(s, m);
        rc = 0;
    }
    free(pick), free(s);
    return rc;
}

/* Weighted least squares of d = zp (+ c·col when fit_c) over the kept stars. */
static int solve(const double *d, const double *col, const double *w, const uint8_t *keep,
                 int64_t n, int fit_c, double c_fixed, double *zp, double *c, double *var_zp,
                 double *var_c) {
    double S = 0, Sx = 0, Sxx = 0, Sy = 0, Sxy = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        /* ZP = d + c·col: with c fitted, d = zp + c·(−col) is a line in x = −col */
        const double xi = fit_c ? -col[i] : 0.0, yi = fit_c ? d[i] : d[i] + c_fixed * col[i];
        S += w[i], Sx += w[i] * xi, Sxx += w[i] * xi * xi;
        Sy += w[i] * yi, Sxy += w[i] * xi * yi;
    }
    if (!(S > 0))
        return -1;
    if (!fit_c) {
        *zp = Sy / S;
        *c = c_fixed;
        *var_zp = 1.0 / S;
        *var_c = 0;
        return 0;
    }
    const double det = S * Sxx - Sx * Sx;
    if (!(det > 1e-12 * S * Sxx))
        return -1; /* all stars of one colour: the colour term is not constrained */
    *c = (S * Sxy - Sx * Sy) / det;
    *zp = (Sxx * Sy - Sx * Sxy) / det;
    *var_zp = Sxx / det;
    *var_c = S / det;
    return 0;
}

int tide_photcal_fit(const tide_photcal_input *in, const tide_photcal_params *pp,
                     tide_photcal_result *out, uint8_t *used) {
    const tide_photcal_params p = pp ? *pp : tide_photcal_defaults();
    memset(out, 0, sizeof *out);
    out->zp = out->ezp = out->scatter = out->slope = NAN;
    const int64_t n = in ? in->n : -1;
    if (n < 0 || (n > 0 && (!in->flux || !in->fluxerr || !in->ref_mag)))
        return tide_error(TIDE_E_INVAL, "photcal: missing flux, error or reference magnitudes");
    if (!(p.clip_sigma > 0) || p.clip_iter < 0 || !(p.snr_min <= p.snr_max) ||
        !(p.err_floor >= 0) || p.min_stars < 2)
        return tide_error(TIDE_E_INVAL,
                          "photcal: bad parameters (clip_sigma %g, clip_iter %d, "
                          "snr %g..%g, err_floor %g, min_stars %d)",
                          p.clip_sigma, p.clip_iter, p.snr_min, p.snr_max, p.err_floor,
                          p.min_stars);
    if (used && n > 0)
        memset(used, 0, (size_t)n);
    const int fit_c = p.color_mode == TIDE_PHOTCAL_COLOR_FIT;
    const int need_color =
        fit_c || p.color_term != 0.0 || isfinite(p.color_min) || isfinite(p.color_max);
    const int edge = in && in->x && in->y && in->width > 0 && in->height > 0;
    int64_t *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    double *buf = malloc((size_t)(n > 0 ? n : 1) * 6 * sizeof *buf);
    uint8_t *keep = malloc((size_t)(n > 0 ? n : 1));
    if (!idx || !buf || !keep) {
        free(idx), free(buf), free(keep);
        return tide_error(TIDE_E_NOMEM, "photcal: no memory for %lld sources", (long long)n);
    }
    double *d = buf, *col = buf + n, *w = buf + 2 * n, *r = buf + 3 * n, *tmp = buf + 4 * n,
           *minst = buf + 5 * n;
    /* cuts */
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const double F = in->flux[i], E = in->fluxerr[i], M = in->ref_mag[i];
        if (!isfinite(M))
            continue;
        out->nmatched++;
        if (!(F > 0) || !(E > 0) || !isfinite(F) || !isfinite(E))
            continue;
        const double snr = F / E;
        if (!(snr >= p.snr_min && snr <= p.snr_max))
            continue;
        const double C = in->ref_color ? in->ref_color[i] : NAN;
        if (need_color && !(isfinite(C) && C >= p.color_min && C <= p.color_max))
            continue;
        if (in->flags && (in->flags[i] & p.flags_reject))
            continue;
        if (edge) {
            const double x = in->x[i], y = in->y[i], e = p.edge_margin;
            /* FITS 1-based: the frame spans 0.5 .. width + 0.5 */
            if (!(x - 0.5 >= e && in->width + 0.5 - x >= e && y - 0.5 >= e &&
                  in->height + 0.5 - y >= e))
                continue;
        }
        const double me = in->ref_magerr && isfinite(in->ref_magerr[i]) ? in->ref_magerr[i] : 0;
        const double ie = MAG_PER_REL * E / F;
        idx[m] = i;
        minst[m] = -2.5 * log10(F);
        d[m] = M - minst[m];
        col[m] = isfinite(C) ? C : 0.0;
        w[m] = p.weighted ? 1.0 / (ie * ie + me * me + p.err_floor * p.err_floor) : 1.0;
        keep[m] = 1;
        m++;
    }
    out->ncand = m;
    int st = 0;
    if (m < p.min_stars)
        st = tide_error(TIDE_E_EMPTY,
                        "photcal: %lld calibration stars after the cuts (need %d): %lld "
                        "matched, S/N %g..%g, edge margin %g px",
                        (long long)m, p.min_stars, (long long)out->nmatched, p.snr_min, p.snr_max,
                        p.edge_margin);
    double zp = NAN, c = p.color_term, vzp = 0, vc = 0;
    /* Clipping on residuals in units of each star's σ (stars of unequal errors are judged
     * alike): first around the median with the MAD-based scale (robust to a bad start), then
     * around the weighted fit with the standard deviation of the normalised residuals of the
     * stars kept, until the kept set stops changing. */
    for (int it = 0; !st && it <= p.clip_iter; it++) {
        int64_t nk = 0;
        if (it == 0) { /* start from the median with the given (or initial) colour term */
            for (int64_t k = 0; k < m; k++)
                tmp[k] = d[k] + c * col[k];
            zp = tide_median_f64(tmp, m);
        }
        for (int64_t k = 0; k < m; k++)
            r[k] = (d[k] + c * col[k] - zp) * sqrt(w[k]);
        double scale;
        if (it == 0) {
            for (int64_t k = 0; k < m; k++)
                tmp[k] = fabs(r[k]);
            scale = 1.482602218505602 * tide_median_f64(tmp, m);
        } else {
            double s2 = 0;
            for (int64_t k = 0; k < m; k++)
                if (keep[k])
                    s2 += r[k] * r[k], nk++;
            scale = nk > 1 ? sqrt(s2 / (double)(nk - 1)) : 0;
        }
        int changed = 0;
        nk = 0;
        for (int64_t k = 0; k < m; k++) {
            const uint8_t kk = fabs(r[k]) <= p.clip_sigma * scale || scale == 0;
            changed |= kk != keep[k];
            keep[k] = kk;
            nk += kk;
        }
        if (nk < p.min_stars) {
            st = tide_error(TIDE_E_EMPTY, "photcal: %lld stars left after clipping (need %d)",
                            (long long)nk, p.min_stars);
            break;
        }
        if (solve(d, col, w, keep, m, fit_c, p.color_term, &zp, &c, &vzp, &vc)) {
            st = tide_error(TIDE_E_EMPTY, "photcal: the colour term is not constrained (all "
                                          "calibration stars have one colour)");
            break;
        }
        if (it > 0 && !changed)
            break;
    }
    if (!st) {
        int64_t nk = 0;
        double chi2 = 0, s2 = 0, mmin = INFINITY, mmax = -INFINITY;
        for (int64_t k = 0; k < m; k++) {
            if (!keep[k])
                continue;
            const double res = d[k] + c * col[k] - zp;
            chi2 += res * res * w[k];
            s2 += res * res;
            const double mr = in->ref_mag[idx[k]];
            mmin = mr < mmin ? mr : mmin;
            mmax = mr > mmax ? mr : mmax;
            /* slope data: x = instrumental mag, y = MAG_ref + c·COLOR */
            tmp[nk] = minst[k];
            r[nk] = in->ref_mag[idx[k]] + c * col[k];
            nk++;
            if (used)
                used[idx[k]] = 1;
        }
        const int npar = fit_c ? 2 : 1;
        out->zp = zp;
        out->chi2nu = nk > npar ? chi2 / (double)(nk - npar) : NAN;
        const double inflate = out->chi2nu > 1 ? out->chi2nu : 1.0;
        out->ezp = sqrt(vzp * (p.weighted ? inflate : s2 / (double)(nk > npar ? nk - npar : 1)));
        out->scatter = sqrt(s2 / (double)nk);
        out->nstars = nk;
        out->color_term = c;
        out->color_fitted = fit_c;
        out->ecolor_term =
            fit_c ? sqrt(vc * (p.weighted ? inflate : s2 / (double)(nk - npar))) : 0.0;
        out->mag_min = mmin;
        out->mag_max = mmax;
        double b = NAN, a = NAN;
        const int ts = tide_photcal_theil_sen(tmp, r, nk, 0.1, &b, &a);
        if (ts == -2)
            st = tide_error(TIDE_E_NOMEM, "photcal: no memory for the slope check");
        out->slope = b;
        out->slope_bad = !(fabs(b - 1.0) <= p.slope_tol);
    }
    free(idx), free(buf), free(keep);
    return st;
}
