/* rb_features.c — the real/bogus feature vector of one candidate (rb.h), from its difference
 * stamp and fit row, and of every row of a candidate table.
 *
 * The features are ratios and fractions rather than fluxes, so that a model trained on
 * simulated frames in one unit carries over to frames of another gain, sky and scale. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tide/rb.h"
#include "tide/status.h"

static const char *const names[TIDE_RB_NFEAT] = {
    "SNR",        "KIND",      "DCHI2_RED", "PS_RCHI2",   "DIP_RCHI2", "LOBE_SEP", "LOBE_RATIO",
    "FIT_STATUS", "PS_STATUS", "PS_SNR",    "FWHM_RATIO", "ELLIP",     "NEG_FRAC", "POS_FRAC",
    "MASK_FRAC",  "SHARPNESS", "PS_OFFSET", "STAR_DIST",  "BAD_FRAC",  "COL_ROW"};

const char *tide_rb_feature_name(int i) {
    return i >= 0 && i < TIDE_RB_NFEAT ? names[i] : NULL;
}

static float ratio(double a, double b) {
    return b != 0 && isfinite(a / b) ? (float)(a / b) : NAN;
}

/* Robust scatter of the finite pixels (1.4826 MAD about the median), for stamps without a
 * variance plane: sorting a few hundred values is cheap beside the fits. */
static double stamp_sigma(const float *pix, int side, int64_t stride) {
    const int n = side * side;
    float *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return NAN;
    int m = 0;
    for (int j = 0; j < side; j++)
        for (int i = 0; i < side; i++)
            if (isfinite(pix[j * stride + i]))
                v[m++] = pix[j * stride + i];
    double s = NAN;
    if (m >= 8) {
        /* insertion sort: n ≤ a few hundred */
        for (int i = 1; i < m; i++) {
            float x = v[i];
            int j = i - 1;
            for (; j >= 0 && v[j] > x; j--)
                v[j + 1] = v[j];
            v[j + 1] = x;
        }
        const double med = v[m / 2];
        for (int i = 0; i < m; i++)
            v[i] = fabsf(v[i] - (float)med);
        for (int i = 1; i < m; i++) {
            float x = v[i];
            int j = i - 1;
            for (; j >= 0 && v[j] > x; j--)
                v[j + 1] = v[j];
            v[j + 1] = x;
        }
        s = 1.4826 * v[m / 2];
    }
    free(v);
    return s;
}

void tide_rb_features(const tide_rb_candidate *c, float *out) {
    for (int i = 0; i < TIDE_RB_NFEAT; i++)
        out[i] = NAN;
    const double f = c->fwhm > 0 ? c->fwhm : 3.0;
    out[0] = (float)c->snr;
    out[1] = (float)c->kind;
    out[2] = ratio(c->ps_chi2 - c->dip_chi2, c->npix);
    out[3] = ratio(c->ps_chi2, c->npix);
    out[4] = ratio(c->dip_chi2, c->npix);
    out[5] = ratio(hypot(c->lobe_dx, c->lobe_dy), f);
    out[7] = (float)c->fit_status;
    out[8] = (float)c->ps_status;
    out[9] = ratio(fabs(c->ps_flux), c->ps_flux_err);
    out[16] = ratio(hypot(c->ps_dx, c->ps_dy), f);
    out[17] = isfinite(c->star_dist) ? (float)fmin(c->star_dist / f, 100.0) : NAN;

    const int side = c->side, h = side / 2, n = side * side;
    const int64_t stride = c->stride > 0 ? c->stride : side;
    if (side < 3 || !c->pix)
        return;
    const double sgn = c->flux >= 0 ? 1.0 : -1.0;
    const double sig0 = c->var ? NAN : stamp_sigma(c->pix, side, stride);
    const double rin = 1.5 * f, rin2 = rin * rin;
    int ninner = 0, nneg = 0, npos = 0, nmask = 0, nbad = 0, ncol = 0, nrow = 0;
    double zmax = 0, zsum = 0, lpos = 0, lneg = 0, m0 = 0, mx = 0, my = 0, mxx = 0, myy = 0,
           mxy = 0;
    for (int j = 0; j < side; j++)
        for (int i = 0; i < side; i++) {
            const int64_t k = j * stride + i;
            if (c->mask && c->mask[k])
                nmask++;
            /* single precision: 441 double square roots would be most of the time */
            const float v = c->var ? c->var[k] : (float)(sig0 * sig0);
            if (!isfinite(c->pix[k]) || !(v > 0) || !isfinite(v)) {
                nbad++;
                continue;
            }
            const double z = (float)sgn * c->pix[k] / sqrtf(v);
            if (i == h && z > 3)
                ncol++;
            if (j == h && z > 3)
                nrow++;
            const double x = i - h - c->dx, y = j - h - c->dy, r2 = x * x + y * y;
            if (r2 > rin2)
                continue;
            ninner++;
            nneg += z < -3;
            lpos += z > 2 ? z : 0;
            lneg += z < -2 ? -z : 0;
            npos += z > 3;
            if (z > 2) { /* significant pixels only: noise would swamp a faint core */
                zsum += z;
                zmax = fmax(zmax, z);
                m0 += z;
                mx += z * x;
                my += z * y;
                mxx += z * x * x;
                myy += z * y * y;
                mxy += z * x * y;
            }
        }
    out[14] = (float)nmask / (float)n;
    out[18] = (float)nbad / (float)n;
    out[19] = (float)ncol / (float)(nrow + 1);
    if (ninner > 0) {
        out[12] = (float)nneg / (float)ninner;
        out[13] = (float)npos / (float)ninner;
    }
    if (lpos > 0 || lneg > 0)
        out[6] = (float)(fmin(lpos, lneg) / fmax(lpos, lneg));
    if (zsum > 0)
        out[15] = (float)(zmax / zsum);
    if (m0 > 0) {
        const double cx = mx / m0, cy = my / m0;
        const double sxx = mxx / m0 - cx * cx, syy = myy / m0 - cy * cy, sxy = mxy / m0 - cx * cy;
        const double t = 0.5 * (sxx + syy),
                     d = sqrt(fmax(0.25 * (sxx - syy) * (sxx - syy) + sxy * sxy, 0));
        const double l1 = t + d, l2 = fmax(t - d, 0);
        if (l1 > 0) {
            /* FWHM of a Gaussian of the same mean second moment; the window at 1.5 f
             * truncates broad profiles, which is fine: the ratio only has to separate. */
            out[10] = (float)(2.3548 * sqrt(0.5 * (l1 + l2)) / f);
            out[11] = (float)(1.0 - sqrt(l2 / l1));
        }
    }
}

/* A column's value at row @p i as a double (F64, F32, I32 or I64), NaN when missing. */
static double col_at(const tide_column *c, int64_t i) {
    if (!c)
        return NAN;
    switch (c->type) {
    case TIDE_COL_F64: return ((const double *)c->data)[i * c->repeat];
    case TIDE_COL_F32: return ((const float *)c->data)[i * c->repeat];
    case TIDE_COL_I32: return ((const int32_t *)c->data)[i * c->repeat];
    case TIDE_COL_I64: return (double)((const int64_t *)c->data)[i * c->repeat];
    case TIDE_COL_I16: return ((const int16_t *)c->data)[i * c->repeat];
    default: return NAN;
    }
}

enum {
    C_X,
    C_Y,
    C_SNR,
    C_FLUX,
    C_KIND,
    C_DCHI,
    C_PCHI,
    C_NPIX,
    C_XP,
    C_YP,
    C_XN,
    C_YN,
    C_PSX,
    C_PSY,
    C_PSF,
    C_PSFE,
    C_FST,
    C_PST,
    NCOLS
};
static const char *const colnames[NCOLS] = {
    "X_IMAGE", "Y_IMAGE",  "SNR",      "FLUX",        "KIND",       "DIP_CHI2",
    "PS_CHI2", "DIP_NPIX", "DIP_XPOS", "DIP_YPOS",    "DIP_XNEG",   "DIP_YNEG",
    "PS_X",    "PS_Y",     "PS_FLUX",  "PS_FLUX_ERR", "FIT_STATUS", "PS_STATUS"};
/* Columns without which a row has no meaning; the fit columns may be absent (not fitted). */
enum { NREQUIRED = C_KIND + 1 };

/* The nearest of @p n stars (x, y interleaved, sorted by y) to (x, y): outward from the
 * first star at or above y, stopping when the rows alone are farther than the best. */
static double nearest_star(const double *st, int64_t n, double x, double y) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (st[2 * mid + 1] < y)
            lo = mid + 1;
        else
            hi = mid;
    }
    double best = INFINITY;
    for (int64_t i = lo; i < n && st[2 * i + 1] - y < best; i++)
        best = fmin(best, hypot(st[2 * i] - x, st[2 * i + 1] - y));
    for (int64_t i = lo - 1; i >= 0 && y - st[2 * i + 1] < best; i--)
        best = fmin(best, hypot(st[2 * i] - x, st[2 * i + 1] - y));
    return best;
}

static int by_y(const void *a, const void *b) {
    const double ya = ((const double *)a)[1], yb = ((const double *)b)[1];
    return (ya > yb) - (ya < yb);
}

enum { SIDE = 21, HALF = SIDE / 2 };

typedef struct {
    double y;
    int64_t row;
} yorder;

static int by_row_y(const void *a, const void *b) {
    const yorder *p = a, *q = b;
    return p->y < q->y ? -1 : p->y > q->y ? 1 : (p->row > q->row) - (p->row < q->row);
}

/* Row @p r of the table: its stamp cut from @p diff, then tide_rb_features. */
static void row_features(const tide_image *diff, const tide_column *const *col, int64_t r,
                         double fwhm, const double *stars, int64_t nstars, float *out) {
    float pix[SIDE * SIDE], var[SIDE * SIDE];
    uint16_t mask[SIDE * SIDE];
    double v[NCOLS];
    for (int k = 0; k < NCOLS; k++)
        v[k] = col_at(col[k], r);
    const double x = v[C_X] - 1, y = v[C_Y] - 1; /* 0-based */
    const int64_t ci = (int64_t)floor(x + 0.5), cj = (int64_t)floor(y + 0.5);
    tide_rb_candidate c;
    memset(&c, 0, sizeof c);
    c.side = SIDE;
    if (ci >= HALF && cj >= HALF && ci + HALF < diff->width && cj + HALF < diff->height) {
        /* inside the image: read in place */
        const int64_t at = (cj - HALF) * diff->stride + ci - HALF;
        c.stride = diff->stride;
        c.pix = diff->pix + at;
        c.var = diff->var ? diff->var + at : NULL;
        c.mask = diff->mask ? diff->mask + at : NULL;
    } else {
        for (int j = 0; j < SIDE; j++)
            for (int i = 0; i < SIDE; i++) {
                const int64_t xi = ci + i - HALF, yj = cj + j - HALF;
                const int k = j * SIDE + i;
                const int in = xi >= 0 && yj >= 0 && xi < diff->width && yj < diff->height;
                const int64_t at = yj * diff->stride + xi;
                pix[k] = in ? diff->pix[at] : NAN;
                var[k] = in && diff->var ? diff->var[at] : NAN;
                mask[k] = in && diff->mask ? diff->mask[at] : 0;
            }
        c.pix = pix;
        c.var = diff->var ? var : NULL;
        c.mask = diff->mask ? mask : NULL;
    }
    c.dx = x - (double)ci;
    c.dy = y - (double)cj;
    c.fwhm = fwhm;
    c.snr = v[C_SNR];
    c.flux = v[C_FLUX];
    c.kind = isfinite(v[C_KIND]) ? (int)v[C_KIND] : 0;
    c.dip_chi2 = v[C_DCHI];
    c.ps_chi2 = v[C_PCHI];
    c.npix = v[C_NPIX];
    c.lobe_dx = v[C_XP] - v[C_XN];
    c.lobe_dy = v[C_YP] - v[C_YN];
    c.ps_dx = v[C_PSX] - 1 - (double)ci;
    c.ps_dy = v[C_PSY] - 1 - (double)cj;
    c.ps_flux = v[C_PSF];
    c.ps_flux_err = v[C_PSFE];
    c.fit_status = isfinite(v[C_FST]) ? (int)v[C_FST] : -1;
    c.ps_status = isfinite(v[C_PST]) ? (int)v[C_PST] : -1;
    c.star_dist = stars && nstars > 0 ? nearest_star(stars, nstars, v[C_X], v[C_Y]) : NAN;
    tide_rb_features(&c, out);
}

int tide_rb_table_features(const tide_image *diff, const tide_table *cands, double fwhm,
                           const double *stars, int64_t nstars, float *out) {
    if (!diff || !diff->pix || !cands || !out || diff->location != TIDE_HOST)
        return tide_error(TIDE_E_INVAL, "rb features: needs a host difference image and a table");
    const tide_column *col[NCOLS];
    for (int k = 0; k < NCOLS; k++) {
        col[k] = tide_table_column(cands, colnames[k]);
        if (!col[k] && k < NREQUIRED)
            return tide_error(TIDE_E_INVAL, "rb features: the candidates have no %s column",
                              colnames[k]);
    }
    double *sorted = NULL;
    if (stars && nstars > 0) {
        if (!(sorted = malloc((size_t)nstars * 2 * sizeof *sorted)))
            return tide_error(TIDE_E_NOMEM, "rb features: out of memory");
        memcpy(sorted, stars, (size_t)nstars * 2 * sizeof *sorted);
        qsort(sorted, (size_t)nstars, 2 * sizeof *sorted, by_y);
    }
    const int64_t n = cands->nrows;
    /* Rows are independent; each writes its own features. Their stamps lie at random places
     * of an image far larger than the caches, each of its 21 rows on another page: taken in
     * order of Y, neighbours share the pages (and their TLB entries) of the rows they cut. */
    yorder *ord = malloc((size_t)(n > 0 ? n : 1) * sizeof *ord);
    if (!ord) {
        free(sorted);
        return tide_error(TIDE_E_NOMEM, "rb features: out of memory");
    }
    for (int64_t r = 0; r < n; r++) {
        ord[r].y = col_at(col[C_Y], r);
        ord[r].row = r;
    }
    qsort(ord, (size_t)n, sizeof *ord, by_row_y);
#pragma omp parallel for schedule(static) if (n > 256)
    for (int64_t k = 0; k < n; k++)
        row_features(diff, col, ord[k].row, fwhm, sorted, sorted ? nstars : 0,
                     out + (size_t)ord[k].row * TIDE_RB_NFEAT);
    free(ord);
    free(sorted);
    return 0;
}
