/* diff_fit.c — stage 7 of the difference pipeline: candidate stamps cut where the context
 * computes, batched dipole and point-source fits (dipole.h), the candidate table of
 * diff.h, and the stamps and models kept for the pictures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/select_f64.h"
#include "diff_internal.h"
#include "difference/noise/noise_ops.h"
#include "tide/memory.h"
#include "tide/status.h"

/* Stamps per batch: bounds the scratch memory (8192 21×21 stamps ≈ 36 MB) whatever the
 * number of candidates. */
#define FIT_BATCH 8192

/* Bilinear value of a unit-sum PSF stamp at offset (dx, dy) from its centre; 0 outside. */
static double psf_at(const float *psf, int side, double dx, double dy) {
    const double c = (side - 1) / 2.0, x = c + dx, y = c + dy;
    const double fx = floor(x), fy = floor(y), ax = x - fx, ay = y - fy;
    const int64_t ix = (int64_t)fx, iy = (int64_t)fy;
    double v = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            const int64_t u = ix + i, w = iy + j;
            if (u >= 0 && w >= 0 && u < side && w < side)
                v += (i ? ax : 1 - ax) * (j ? ay : 1 - ay) * psf[w * side + u];
        }
    return v;
}

void tide_diffp_model_stamp(const tide_dipole_fit *f, const float *psf, int psf_side, int stamp,
                            double cx, double cy, float *out) {
    const int h = (stamp - 1) / 2;
    const int dip_ok = isfinite(f->flux) && isfinite(f->xpos) && isfinite(f->xneg) &&
                       isfinite(f->ypos) && isfinite(f->yneg);
    const int ps_ok = isfinite(f->ps_flux) && isfinite(f->ps_x) && isfinite(f->ps_y);
    /* The picture shows the better model: a single-sign change is a point source. */
    const int use_ps = psf && ps_ok && isfinite(f->chi2_ps) && !(f->chi2_dip < f->chi2_ps);
    const int gauss = !psf;
    const double s1 = f->sigma1, s2 = f->sigma2;
    const int ok =
        gauss ? dip_ok && isfinite(s1) && isfinite(s2) && s1 > 0 && s2 > 0 : (use_ps || dip_ok);
    const double th = isfinite(f->theta) ? f->theta : 0.0, c = cos(th), s = sin(th);
    const double i1 = gauss && ok ? 1.0 / (s1 * s1) : 0, i2 = gauss && ok ? 1.0 / (s2 * s2) : 0;
    const double norm = gauss && ok ? 1.0 / (6.283185307179586 * s1 * s2) : 0;
    for (int v = 0; v < stamp; v++)
        for (int u = 0; u < stamp; u++) {
            float *o = out + v * stamp + u;
            if (!ok) {
                *o = NAN;
                continue;
            }
            const double x = cx - h + u, y = cy - h + v;
            if (use_ps) {
                *o = (float)(f->ps_flux * psf_at(psf, psf_side, x - f->ps_x, y - f->ps_y));
                continue;
            }
            if (!gauss) {
                *o = (float)(f->flux * (psf_at(psf, psf_side, x - f->xpos, y - f->ypos) -
                                        psf_at(psf, psf_side, x - f->xneg, y - f->yneg)));
                continue;
            }
            double g[2];
            const double px[2] = {f->xpos, f->xneg}, py[2] = {f->ypos, f->yneg};
            for (int k = 0; k < 2; k++) {
                const double dx = x - px[k], dy = y - py[k];
                const double a = c * dx + s * dy, b = -s * dx + c * dy;
                g[k] = norm * exp(-0.5 * (a * a * i1 + b * b * i2));
            }
            *o = (float)(f->flux * (g[0] - g[1]));
        }
}

/* Cut and fit stamps [i0, i0 + m) on the context's backend; fills fits, cx, cy and the kept
 * stamps (host). */
static int fit_batch(tide_ctx *ctx, const tide_image *diff, int64_t i0, int64_t m, const double *x,
                     const double *y, const tide_diff_params *p, tide_dipole_fit *fits, double *cx,
                     double *cy, float *keep, int64_t nkeep) {
    const int s = p->stamp;
    const size_t ns = (size_t)m * (size_t)s * (size_t)s;
    const size_t bpix = ns * sizeof(float), bmask = ns * sizeof(uint16_t),
                 bpos = (size_t)m * sizeof(double), bfit = (size_t)m * sizeof(tide_dipole_fit);
    int st = 0;
    const int64_t kept = i0 < nkeep ? (nkeep - i0 < m ? nkeep - i0 : m) : 0;
    if (ctx->backend == TIDE_BACKEND_CUDA) {
        /* One device block: stamps, variance, mask, positions in and out, fits. */
        const size_t off_var = bpix, off_mask = 2 * bpix;
        const size_t off_x = (2 * bpix + bmask + 7) & ~(size_t)7;
        const size_t off_psf = (off_x + 4 * bpos + bfit + 7) & ~(size_t)7;
        tide_dipole_params dp = p->dip; /* the PSF must be device memory too */
        const size_t bpsf = dp.model == TIDE_DIPOLE_PSF && dp.psf
                                ? (size_t)dp.psf_side * dp.psf_side * sizeof(float) *
                                      (dp.psf_per_stamp ? (size_t)m : 1)
                                : 0;
        const size_t total = off_psf + bpsf;
        char *d = NULL;
        st = tide_device_alloc(ctx, total, (void **)&d);
        if (st)
            return st;
        float *dpix = (float *)d, *dvar = (float *)(d + off_var);
        uint16_t *dmask = (uint16_t *)(d + off_mask);
        double *dx = (double *)(d + off_x), *dy = dx + m, *dcx = dy + m, *dcy = dcx + m;
        tide_dipole_fit *dfit = (tide_dipole_fit *)(dcy + m);
        if (bpsf) {
            const float *hp =
                dp.psf + (dp.psf_per_stamp ? (size_t)i0 * dp.psf_side * dp.psf_side : 0);
            dp.psf = (const float *)(d + off_psf);
            st = tide_memcpy(ctx, d + off_psf, 1, hp, 0, bpsf);
        }
        if (!st)
            st = tide_memcpy(ctx, dx, 1, x + i0, 0, bpos);
        if (!st)
            st = tide_memcpy(ctx, dy, 1, y + i0, 0, bpos);
        if (!st)
            st = tide_diff_cut_stamps(ctx, diff, m, dx, dy, s, dpix, dvar, dmask, dcx, dcy);
        if (!st)
            st = tide_dipole_fit_device(ctx, m, s, dpix, dvar, dmask, dcx, dcy, &dp, dfit);
        if (!st)
            st = tide_memcpy(ctx, fits + i0, 0, dfit, 1, bfit);
        if (!st)
            st = tide_memcpy(ctx, cx + i0, 0, dcx, 1, bpos);
        if (!st)
            st = tide_memcpy(ctx, cy + i0, 0, dcy, 1, bpos);
        if (!st && kept > 0)
            st = tide_memcpy(ctx, keep + (size_t)i0 * s * s, 0, dpix, 1,
                             (size_t)kept * s * s * sizeof(float));
        if (!st)
            st = tide_sync(ctx);
        tide_device_free(ctx, d);
        return st;
    }
    float *hpix = malloc(bpix), *hvar = malloc(bpix);
    uint16_t *hmask = malloc(bmask);
    if (!hpix || !hvar || !hmask) {
        st = tide_error(TIDE_E_NOMEM, "diff: out of memory for %lld stamps", (long long)m);
    } else {
        st = tide_diff_cut_stamps(ctx, diff, m, x + i0, y + i0, s, hpix, hvar, hmask, cx + i0,
                                  cy + i0);
        if (!st)
            st = tide_dipole_fit_stamps(ctx, m, s, hpix, hvar, hmask, cx + i0, cy + i0, &p->dip,
                                        fits + i0);
        if (!st && kept > 0)
            memcpy(keep + (size_t)i0 * s * s, hpix, (size_t)kept * s * s * sizeof(float));
    }
    free(hpix);
    free(hvar);
    free(hmask);
    return st;
}

double tide_diffp_noise_scale(tide_ctx *ctx, const tide_image *d, double fwhm) {
    int b = (int)floor(1.5 * fwhm + 0.5) | 1;
    b = b < 3 ? 3 : (b > 31 ? 31 : b);
    if (!d->var || d->width < 3 * b || d->height < 3 * b)
        return 1.0;
    const int64_t nb = (d->width / b) * (d->height / b);
    int64_t n = 0;
    double med = NAN, mad = NAN;
    int st = 0;
#ifdef TIDE_HAVE_CUDA
    if (ctx && ctx->backend == TIDE_BACKEND_CUDA && d->location == TIDE_DEVICE) {
        /* The box sums and both medians on the device (the same sums in the same order, the
         * same order statistics by sorting: the same values as the host's selection), so
         * only the two medians come back. */
        void *dz = NULL;
        st = tide_device_alloc(ctx, sizeof(double) * (size_t)nb, &dz);
        if (!st)
            st = tide_diffp_boxz_cuda(ctx, d->width, d->height, d->stride, d->pix, d->mask, d->var,
                                      b, (double *)dz);
        if (!st)
            st = tide_diffp_median_mad_cuda(ctx, (const double *)dz, nb, &n, &med, &mad);
        tide_device_free(ctx, dz);
    } else
#endif
    {
        double *z = malloc(sizeof(double) * (size_t)nb);
        if (!z)
            return 1.0;
        st =
            tide_diffp_boxz_cpu(ctx, d->width, d->height, d->stride, d->pix, d->mask, d->var, b, z);
        for (int64_t k = 0; !st && k < nb; k++)
            if (z[k] == z[k])
                z[n++] = z[k];
        if (!st && n >= 50) {
            /* Medians by selection (the same order statistics as a sort, O(n)). */
            const int nt = ctx && ctx->threads > 1 ? ctx->threads : 1;
            med = tide_median_f64_par(z, n, nt);
            for (int64_t i = 0; i < n; i++)
                z[i] = fabs(z[i] - med);
            mad = tide_median_f64_par(z, n, nt);
        }
        free(z);
    }
    if (st) {
        tide_error_clear(); /* the factor stays 1: the variance as propagated */
        return 1.0;
    }
    double f = 1.0;
    if (n >= 50) {
        const double sig = 1.482602218505602 * mad;
        f = sig * sig;
        f = f < 0.25 ? 0.25 : (f > 16 ? 16 : f);
    }
    return f;
}

int tide_diffp_scale_var(tide_ctx *ctx, tide_image *im, float f) {
    if (!im->var || f == 1.0f)
        return 0;
    if (!ctx || im->location == TIDE_HOST)
        return tide_diffp_scale_cpu(ctx, im->width, im->height, im->stride, im->var, f);
#ifdef TIDE_HAVE_CUDA
    return tide_diffp_scale_cuda(ctx, im->width, im->height, im->stride, im->var, f);
#else
    return tide_error(TIDE_E_INVAL, "diff: a device image in a build without CUDA");
#endif
}

int tide_diffp_screen(const tide_image *diff, uint16_t bits, tide_table *c, int64_t *nrej) {
    *nrej = 0;
    const double *x = tide_table_f64(c, "X"), *y = tide_table_f64(c, "Y");
    if (c->nrows == 0 || !bits || !diff->mask)
        return 0;
    if (!x || !y)
        return tide_error(TIDE_E_INTERNAL, "diff: the candidate table has no X, Y columns");
    int64_t k = 0;
    for (int64_t i = 0; i < c->nrows; i++) {
        uint16_t m = 0;
        const int64_t ix = (int64_t)floor(x[i] + 0.5), iy = (int64_t)floor(y[i] + 0.5);
        for (int64_t v = iy - 1; v <= iy + 1; v++)
            for (int64_t u = ix - 1; u <= ix + 1; u++)
                m |= (u < 0 || v < 0 || u >= diff->width || v >= diff->height)
                         ? (uint16_t)TIDE_MASK_NODATA
                         : diff->mask[v * diff->stride + u];
        if (m & bits)
            continue;
        if (k != i) /* keep row i as row k, every column */
            for (int j = 0; j < c->ncols; j++) {
                const tide_column *col = &c->cols[j];
                const int64_t sz = tide_col_type_size(col->type) * col->repeat;
                memmove((char *)col->data + k * sz, (char *)col->data + i * sz, (size_t)sz);
            }
        k++;
    }
    *nrej = c->nrows - k;
    return tide_table_resize(c, k);
}

/* Column helpers: add a float64 / int32 column and return its data. */
static double *col_f64(tide_table *t, const char *name, const char *unit, const char *comment,
                       int *st) {
    int idx;
    if (*st)
        return NULL;
    *st = tide_table_add_column(t, name, TIDE_COL_F64, 1, unit, comment, &idx);
    return *st ? NULL : (double *)t->cols[idx].data;
}

static int32_t *col_i32(tide_table *t, const char *name, const char *comment, int *st) {
    int idx;
    if (*st)
        return NULL;
    *st = tide_table_add_column(t, name, TIDE_COL_I32, 1, NULL, comment, &idx);
    return *st ? NULL : (int32_t *)t->cols[idx].data;
}

static double fits1(double v) {
    return isfinite(v) ? v + 1.0 : NAN;
}

/* The output table from the candidates and the fits. */
static int build_table(const tide_table *c, int64_t nfit, const tide_dipole_fit *f,
                       const tide_wcs *wcs, tide_table *t) {
    const int64_t n = c->nrows;
    const double *x = tide_table_f64(c, "X"), *y = tide_table_f64(c, "Y"),
                 *snr = tide_table_f64(c, "SNR"), *flux = tide_table_f64(c, "FLUX");
    const int32_t *kind = tide_table_i32(c, "KIND"), *flags = tide_table_i32(c, "FLAGS");
    if (n > 0 && (!x || !y || !snr || !flux || !kind))
        return tide_error(TIDE_E_INTERNAL,
                          "diff: the candidate table lacks X, Y, SNR, FLUX or KIND");
    int st = tide_table_resize(t, 0);
    const char *px = "pixel";
    double *X = col_f64(t, "X_IMAGE", px, "centre x, FITS 1-based, output grid", &st);
    double *Y = col_f64(t, "Y_IMAGE", px, "centre y, FITS 1-based, output grid", &st);
    double *RA = col_f64(t, "ALPHA_J2000", "deg", "right ascension of the centre", &st);
    double *DE = col_f64(t, "DELTA_J2000", "deg", "declination of the centre", &st);
    double *SNR = col_f64(t, "SNR", NULL, "largest matched-filter S/N of the candidate", &st);
    double *FL = col_f64(t, "FLUX", "count", "isophotal flux, positive minus negative", &st);
    int32_t *KI = col_i32(t, "KIND", "1 positive, -1 negative, 2 dipole", &st);
    int32_t *FG = col_i32(t, "FLAGS", "detection flags (OR of the lobes)", &st);
    double *XP = col_f64(t, "DIP_XPOS", px, "positive lobe x, FITS 1-based", &st);
    double *YP = col_f64(t, "DIP_YPOS", px, "positive lobe y, FITS 1-based", &st);
    double *XN = col_f64(t, "DIP_XNEG", px, "negative lobe x, FITS 1-based", &st);
    double *YN = col_f64(t, "DIP_YNEG", px, "negative lobe y, FITS 1-based", &st);
    double *DF = col_f64(t, "DIP_FLUX", "count", "flux of each lobe", &st);
    double *XPE = col_f64(t, "DIP_XPOS_ERR", px, "error of DIP_XPOS", &st);
    double *YPE = col_f64(t, "DIP_YPOS_ERR", px, "error of DIP_YPOS", &st);
    double *XNE = col_f64(t, "DIP_XNEG_ERR", px, "error of DIP_XNEG", &st);
    double *YNE = col_f64(t, "DIP_YNEG_ERR", px, "error of DIP_YNEG", &st);
    double *DFE = col_f64(t, "DIP_FLUX_ERR", "count", "error of DIP_FLUX", &st);
    double *S1 = col_f64(t, "DIP_SIGMA1", px, "lobe Gaussian width, major axis", &st);
    double *S2 = col_f64(t, "DIP_SIGMA2", px, "lobe Gaussian width, minor axis", &st);
    double *DC = col_f64(t, "DIP_CHI2", NULL, "chi2 of the dipole fit", &st);
    double *NP = col_f64(t, "DIP_NPIX", NULL, "pixels in the fits", &st);
    double *PX = col_f64(t, "PS_X", px, "point-source x, FITS 1-based", &st);
    double *PY = col_f64(t, "PS_Y", px, "point-source y, FITS 1-based", &st);
    double *PF = col_f64(t, "PS_FLUX", "count", "point-source flux", &st);
    double *PFE = col_f64(t, "PS_FLUX_ERR", "count", "error of PS_FLUX", &st);
    double *PC = col_f64(t, "PS_CHI2", NULL, "chi2 of the point-source fit", &st);
    int32_t *FS = col_i32(t, "FIT_STATUS",
                          "dipole fit: 0 ok, 1 maxiter, 2 singular, 3 bad "
                          "input, -1 not fitted",
                          &st);
    int32_t *PS = col_i32(t, "PS_STATUS", "point-source fit status (as FIT_STATUS)", &st);
    if (!st)
        st = tide_table_resize(t, n);
    if (st || n == 0)
        return st;
    /* tide_table_resize may move the columns: look them up again. */
    X = tide_table_f64(t, "X_IMAGE"), Y = tide_table_f64(t, "Y_IMAGE");
    RA = tide_table_f64(t, "ALPHA_J2000"), DE = tide_table_f64(t, "DELTA_J2000");
    SNR = tide_table_f64(t, "SNR"), FL = tide_table_f64(t, "FLUX");
    KI = tide_table_i32(t, "KIND"), FG = tide_table_i32(t, "FLAGS");
    XP = tide_table_f64(t, "DIP_XPOS"), YP = tide_table_f64(t, "DIP_YPOS");
    XN = tide_table_f64(t, "DIP_XNEG"), YN = tide_table_f64(t, "DIP_YNEG");
    DF = tide_table_f64(t, "DIP_FLUX");
    XPE = tide_table_f64(t, "DIP_XPOS_ERR"), YPE = tide_table_f64(t, "DIP_YPOS_ERR");
    XNE = tide_table_f64(t, "DIP_XNEG_ERR"), YNE = tide_table_f64(t, "DIP_YNEG_ERR");
    DFE = tide_table_f64(t, "DIP_FLUX_ERR");
    S1 = tide_table_f64(t, "DIP_SIGMA1"), S2 = tide_table_f64(t, "DIP_SIGMA2");
    DC = tide_table_f64(t, "DIP_CHI2"), NP = tide_table_f64(t, "DIP_NPIX");
    PX = tide_table_f64(t, "PS_X"), PY = tide_table_f64(t, "PS_Y");
    PF = tide_table_f64(t, "PS_FLUX"), PFE = tide_table_f64(t, "PS_FLUX_ERR");
    PC = tide_table_f64(t, "PS_CHI2");
    FS = tide_table_i32(t, "FIT_STATUS"), PS = tide_table_i32(t, "PS_STATUS");
    if (wcs) {
        st = tide_wcs_pix2sky(wcs, n, x, y, RA, DE);
        if (st)
            return st;
    } else {
        for (int64_t i = 0; i < n; i++)
            RA[i] = DE[i] = NAN;
    }
    for (int64_t i = 0; i < n; i++) {
        X[i] = fits1(x[i]);
        Y[i] = fits1(y[i]);
        SNR[i] = snr[i];
        FL[i] = flux[i];
        KI[i] = kind[i];
        FG[i] = flags ? flags[i] : 0;
        if (i < nfit) {
            const tide_dipole_fit *g = f + i;
            XP[i] = fits1(g->xpos), YP[i] = fits1(g->ypos);
            XN[i] = fits1(g->xneg), YN[i] = fits1(g->yneg);
            DF[i] = g->flux;
            XPE[i] = g->xpos_err, YPE[i] = g->ypos_err, XNE[i] = g->xneg_err;
            YNE[i] = g->yneg_err, DFE[i] = g->flux_err;
            S1[i] = g->sigma1, S2[i] = g->sigma2;
            DC[i] = g->chi2_dip, NP[i] = (double)g->npix;
            PX[i] = fits1(g->ps_x), PY[i] = fits1(g->ps_y);
            PF[i] = g->ps_flux, PFE[i] = g->ps_flux_err, PC[i] = g->chi2_ps;
            FS[i] = g->status, PS[i] = g->ps_status;
        } else {
            XP[i] = YP[i] = XN[i] = YN[i] = DF[i] = XPE[i] = YPE[i] = XNE[i] = YNE[i] = NAN;
            DFE[i] = S1[i] = S2[i] = DC[i] = NP[i] = PX[i] = PY[i] = PF[i] = PFE[i] = NAN;
            PC[i] = NAN;
            FS[i] = PS[i] = -1;
        }
    }
    return 0;
}

/* A unit-sum circular Gaussian of standard deviation @p sig sampled at the centres of a
 * side × side stamp: the difference's PSF for the PSF dipole. The FWHMs are measured on the
 * pixelated stars, so sampling (not integrating) reproduces them. */
static void gauss_stamp(float *k, int side, double sig) {
    const int h = side / 2;
    double sum = 0;
    for (int v = 0; v < side; v++)
        for (int u = 0; u < side; u++)
            sum += exp(-0.5 * ((u - h) * (u - h) + (v - h) * (v - h)) / (sig * sig));
    for (int v = 0; v < side; v++)
        for (int u = 0; u < side; u++)
            k[v * side + u] =
                (float)(exp(-0.5 * ((u - h) * (u - h) + (v - h) * (v - h)) / (sig * sig)) / sum);
}

int tide_diffp_fit(tide_ctx *ctx, const tide_image *diff, const tide_table *cands,
                   const tide_wcs *wcs, const tide_diff_params *pin, double fwhm,
                   const float *psf_in, int psf_side, tide_diff_result *r) {
    tide_diff_params pp = *pin;
    const tide_diff_params *p = &pp;
    float *psf = NULL;
    if (pp.dip.model == TIDE_DIPOLE_PSF && !pp.dip.psf) {
        if (psf_in && psf_side >= 3 && (psf_side & 1)) {
            pp.dip.psf = psf_in;
            pp.dip.psf_side = psf_side;
        } else {
            /* No PSF model: a Gaussian of the difference's FWHM, as wide as the stamp. */
            psf = malloc((size_t)pp.stamp * pp.stamp * sizeof *psf);
            if (!psf)
                return tide_error(TIDE_E_NOMEM, "diff: out of memory for the PSF stamp");
            gauss_stamp(psf, pp.stamp, fwhm / 2.3548200450309493);
            pp.dip.psf = psf;
            pp.dip.psf_side = pp.stamp;
        }
        pp.dip.psf_per_stamp = 0;
    }
    const float *draw_psf =
        pp.dip.model == TIDE_DIPOLE_PSF && !pp.dip.psf_per_stamp ? pp.dip.psf : NULL;
    const int draw_side = pp.dip.psf_side;
    const int64_t n = cands->nrows;
    const int64_t nfit = n < p->max_fit ? n : p->max_fit;
    const int64_t nkeep = nfit < p->keep_stamps ? nfit : p->keep_stamps;
    const int s = p->stamp;
    const size_t s2 = (size_t)s * (size_t)s;
    r->stamp = s;
    r->nfitted = nfit;
    tide_dipole_fit *fits = nfit ? calloc((size_t)nfit, sizeof *fits) : NULL;
    double *cx = nfit ? malloc((size_t)nfit * sizeof *cx) : NULL;
    double *cy = nfit ? malloc((size_t)nfit * sizeof *cy) : NULL;
    if (nkeep) {
        r->stamps = malloc((size_t)nkeep * s2 * sizeof(float));
        r->models = malloc((size_t)nkeep * s2 * sizeof(float));
    }
    int st = 0;
    if ((nfit && (!fits || !cx || !cy)) || (nkeep && (!r->stamps || !r->models)))
        st = tide_error(TIDE_E_NOMEM, "diff: out of memory for %lld fits", (long long)nfit);
    const double *x = tide_table_f64(cands, "X"), *y = tide_table_f64(cands, "Y");
    if (!st && nfit && (!x || !y))
        st = tide_error(TIDE_E_INTERNAL, "diff: the candidate table has no X, Y columns");
    for (int64_t i0 = 0; !st && i0 < nfit; i0 += FIT_BATCH) {
        const int64_t m = nfit - i0 < FIT_BATCH ? nfit - i0 : FIT_BATCH;
        st = fit_batch(ctx, diff, i0, m, x, y, p, fits, cx, cy, r->stamps, nkeep);
    }
    for (int64_t i = 0; !st && i < nkeep; i++)
        tide_diffp_model_stamp(fits + i, draw_psf, draw_side, s, cx[i], cy[i],
                               r->models + (size_t)i * s2);
    r->nstamps = st ? 0 : nkeep;
    if (!st)
        st = build_table(cands, nfit, fits, wcs, &r->cands);
    free(fits);
    free(cx);
    free(cy);
    free(psf);
    return st;
}
