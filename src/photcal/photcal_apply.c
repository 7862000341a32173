/* photcal_apply.c — magnitudes for every flux column, limiting magnitudes, the header cards,
 * and tide_photcal_fit on a pipeline catalog. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "photcal_internal.h"
#include "tide/photcal.h"
#include "tide/status.h"

#define MAG_PER_REL 1.0857362047581294

/* Element e of row i of a float or double column as a double (NaN for other types). */
static double get(const tide_column *c, int64_t i, int64_t e) {
    const int64_t k = i * c->repeat + e;
    if (c->type == TIDE_COL_F64)
        return ((const double *)c->data)[k];
    if (c->type == TIDE_COL_F32)
        return ((const float *)c->data)[k];
    return NAN;
}

static void put(tide_column *c, int64_t i, int64_t e, double v) {
    const int64_t k = i * c->repeat + e;
    if (c->type == TIDE_COL_F64)
        ((double *)c->data)[k] = v;
    else
        ((float *)c->data)[k] = (float)v;
}

/* The MAG_x / MAGERR_x column: the existing one when it fits, else a new float32 one.
 * Columns are looked up by name after every add (adding may move the column array). */
static int out_column(tide_table *cat, const char *name, int64_t repeat, const char *comment,
                      int *index) {
    for (int j = 0; j < cat->ncols; j++)
        if (!strcmp(cat->cols[j].name, name)) {
            tide_column *c = &cat->cols[j];
            if ((c->type != TIDE_COL_F32 && c->type != TIDE_COL_F64) || c->repeat != repeat)
                return tide_error(TIDE_E_FORMAT,
                                  "photcal: column %s exists with another type "
                                  "or length",
                                  name);
            snprintf(c->comment, sizeof c->comment, "%s", comment);
            *index = j;
            return 0;
        }
    return tide_table_add_column(cat, name, TIDE_COL_F32, repeat, "mag", comment, index);
}

int tide_photcal_apply(tide_table *cat, double zp) {
    if (!cat || !isfinite(zp))
        return tide_error(TIDE_E_INVAL, "photcal apply: no catalog or a non-finite zero point");
    /* Collect the flux columns first: the loop below adds columns. */
    const int ncols0 = cat->ncols;
    for (int j = 0; j < ncols0; j++) {
        char suffix[72], name[96], comment[72];
        if (strncmp(cat->cols[j].name, "FLUX_", 5))
            continue;
        snprintf(suffix, sizeof suffix, "%s", cat->cols[j].name + 5);
        snprintf(name, sizeof name, "FLUXERR_%s", suffix);
        const tide_column *fe = tide_table_column(cat, name);
        const tide_column *f = &cat->cols[j];
        if (!fe || fe->repeat != f->repeat ||
            (f->type != TIDE_COL_F32 && f->type != TIDE_COL_F64) ||
            (fe->type != TIDE_COL_F32 && fe->type != TIDE_COL_F64))
            continue;
        const int64_t rep = f->repeat;
        int im = -1, ie = -1, st;
        snprintf(name, sizeof name, "MAG_%s", suffix);
        snprintf(comment, sizeof comment, "ZP - 2.5 log10(FLUX_%s); 99 if FLUX_%s <= 0", suffix,
                 suffix);
        if ((st = out_column(cat, name, rep, comment, &im)))
            return st;
        snprintf(name, sizeof name, "MAGERR_%s", suffix);
        snprintf(comment, sizeof comment, "1.0857 FLUXERR_%s / FLUX_%s (without EZP)", suffix,
                 suffix);
        if ((st = out_column(cat, name, rep, comment, &ie)))
            return st;
        /* re-find after the adds */
        f = &cat->cols[j];
        snprintf(name, sizeof name, "FLUXERR_%s", suffix);
        fe = tide_table_column(cat, name);
        tide_column *cm = &cat->cols[im], *ce = &cat->cols[ie];
        for (int64_t i = 0; i < cat->nrows; i++)
            for (int64_t e = 0; e < rep; e++) {
                const double F = get(f, i, e), E = get(fe, i, e);
                const int ok = F > 0 && isfinite(F);
                put(cm, i, e, ok ? zp - 2.5 * log10(F) : 99.0);
                put(ce, i, e, ok && isfinite(E) ? MAG_PER_REL * E / F : 99.0);
            }
    }
    return 0;
}

int tide_photcal_limits_fit(const double *mag, const double *snr, int64_t n, double snr_lo,
                            double snr_hi, tide_photcal_limits *out) {
    memset(out, 0, sizeof *out);
    out->mag5 = out->mag3 = out->slope = out->icept = NAN;
    if (n < 0 || (n > 0 && (!mag || !snr)) || !(snr_lo > 0) || !(snr_hi > snr_lo))
        return tide_error(TIDE_E_INVAL, "limiting magnitude: bad arguments (S/N range %g..%g)",
                          snr_lo, snr_hi);
    double *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    double *y = malloc((size_t)(n > 0 ? n : 1) * sizeof *y);
    if (!x || !y) {
        free(x), free(y);
        return tide_error(TIDE_E_NOMEM, "limiting magnitude: no memory");
    }
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(mag[i]) && mag[i] < 90 && snr[i] >= snr_lo && snr[i] <= snr_hi) {
            x[m] = mag[i];
            y[m] = log10(snr[i]);
            m++;
        }
    double b = NAN, a = NAN;
    int st = 0;
    const int ts = m >= 10 ? tide_photcal_theil_sen(x, y, m, 0.05, &b, &a) : -1;
    if (ts == -2)
        st = tide_error(TIDE_E_NOMEM, "limiting magnitude: no memory");
    else if (ts || !(b < 0))
        st = tide_error(TIDE_E_EMPTY,
                        "limiting magnitude: %lld sources with S/N in %g..%g (need 10) or no "
                        "fall of S/N with magnitude (slope %g)",
                        (long long)m, snr_lo, snr_hi, b);
    free(x), free(y);
    if (st)
        return st;
    out->slope = b;
    out->icept = a;
    out->nused = m;
    out->mag5 = (log10(5.0) - a) / b;
    out->mag3 = (log10(3.0) - a) / b;
    return 0;
}

/* FLUX_name and FLUXERR_name, checked. */
static int flux_columns(const tide_table *cat, const char *flux, int element, const tide_column **f,
                        const tide_column **fe) {
    char name[96], ename[96];
    snprintf(name, sizeof name, "FLUX_%s", flux ? flux : "");
    snprintf(ename, sizeof ename, "FLUXERR_%s", flux ? flux : "");
    *f = tide_table_column(cat, name);
    *fe = tide_table_column(cat, ename);
    if (!*f || !*fe)
        return tide_error(TIDE_E_NOTFOUND, "photcal: the catalog has no column %s",
                          !*f ? name : ename);
    if (element < 0 || element >= (*f)->repeat || (*fe)->repeat != (*f)->repeat ||
        ((*f)->type != TIDE_COL_F64 && (*f)->type != TIDE_COL_F32))
        return tide_error(TIDE_E_INVAL, "photcal: FLUX_%s has no float element %d", flux, element);
    return 0;
}

int tide_photcal_limits_catalog(const tide_table *cat, const char *flux, int element, double zp,
                                double snr_lo, double snr_hi, tide_photcal_limits *out) {
    const tide_column *f, *fe;
    int st = flux_columns(cat, flux, element, &f, &fe);
    if (st)
        return st;
    const int64_t n = cat->nrows;
    double *mag = malloc((size_t)(n > 0 ? n : 1) * sizeof *mag);
    double *snr = malloc((size_t)(n > 0 ? n : 1) * sizeof *snr);
    if (!mag || !snr) {
        free(mag), free(snr);
        return tide_error(TIDE_E_NOMEM, "limiting magnitude: no memory");
    }
    for (int64_t i = 0; i < n; i++) {
        const double F = get(f, i, element), E = get(fe, i, element);
        mag[i] = F > 0 ? zp - 2.5 * log10(F) : NAN;
        snr[i] = F > 0 && E > 0 ? F / E : NAN;
    }
    st = tide_photcal_limits_fit(mag, snr, n, snr_lo, snr_hi, out);
    free(mag), free(snr);
    return st;
}

int tide_photcal_fit_catalog(const tide_table *cat, const char *flux, int element,
                             const tide_table *ref, const int64_t *match, int64_t width,
                             int64_t height, const tide_photcal_params *p, tide_photcal_result *out,
                             uint8_t *used) {
    const tide_column *f, *fe;
    int st = flux_columns(cat, flux, element, &f, &fe);
    if (st)
        return st;
    const double *rmag = tide_table_f64(ref, "MAG"), *rerr = tide_table_f64(ref, "MAGERR"),
                 *rcol = tide_table_f64(ref, "COLOR");
    if (!rmag)
        return tide_error(TIDE_E_NOTFOUND, "photcal: the reference catalog has no F64 MAG");
    const int64_t n = cat->nrows;
    const tide_column *cx = tide_table_column(cat, "XWIN_IMAGE"),
                      *cy = tide_table_column(cat, "YWIN_IMAGE");
    if (!cx || !cy)
        cx = tide_table_column(cat, "X_IMAGE"), cy = tide_table_column(cat, "Y_IMAGE");
    const tide_column *cf = tide_table_column(cat, "FLAGS_TIDE");
    if (!cf)
        cf = tide_table_column(cat, "FLAGS");
    double *buf = malloc((size_t)(n > 0 ? n : 1) * 7 * sizeof *buf);
    int32_t *flags = malloc((size_t)(n > 0 ? n : 1) * sizeof *flags);
    if (!buf || !flags) {
        free(buf), free(flags);
        return tide_error(TIDE_E_NOMEM, "photcal: no memory");
    }
    double *F = buf, *E = buf + n, *M = buf + 2 * n, *ME = buf + 3 * n, *C = buf + 4 * n,
           *X = buf + 5 * n, *Y = buf + 6 * n;
    const int have_xy = cx && cy && (cx->type == TIDE_COL_F64 || cx->type == TIDE_COL_F32);
    for (int64_t i = 0; i < n; i++) {
        F[i] = get(f, i, element);
        E[i] = get(fe, i, element);
        const int64_t j = match ? match[i] : -1;
        const int ok = j >= 0 && j < ref->nrows;
        M[i] = ok ? rmag[j] : NAN;
        ME[i] = ok && rerr ? rerr[j] : NAN;
        C[i] = ok && rcol ? rcol[j] : NAN;
        X[i] = have_xy ? get(cx, i, 0) : NAN;
        Y[i] = have_xy ? get(cy, i, 0) : NAN;
        flags[i] = !cf                        ? 0
                   : cf->type == TIDE_COL_I32 ? ((const int32_t *)cf->data)[i]
                   : cf->type == TIDE_COL_I16 ? ((const int16_t *)cf->data)[i]
                                              : 0;
    }
    tide_photcal_input in = {
        n,     F,     E, M, ME, C, have_xy ? X : NULL, have_xy ? Y : NULL, cf ? flags : NULL,
        width, height};
    st = tide_photcal_fit(&in, p, out, used);
    free(buf), free(flags);
    return st;
}

/* A real card only when the value is finite (FITS has no NaN literal); a stale card of an
 * earlier calibration is removed. */
static int set_finite(tide_header *h, const char *key, double v, const char *comment) {
    if (isfinite(v))
        return tide_header_set_dbl(h, key, v, comment);
    tide_header_remove(h, key);
    return 0;
}

int tide_photcal_to_header(const tide_photcal_result *r, const tide_photcal_limits *lim,
                           const char *refcat, const char *band, tide_header *h) {
    int st = 0;
    st |= set_finite(h, "ZP", r->zp, "zero point: MAG = ZP - 2.5 log10(ADU)");
    st |= set_finite(h, "EZP", r->ezp, "standard error of ZP, mag");
    st |= set_finite(h, "ZPSCAT", r->scatter, "RMS of the ZP residuals, mag");
    st |= tide_header_set_int(h, "CATNSTAR", r->nstars, "reference stars in the ZP");
    st |= tide_header_set_int(h, "ZPNCAND", r->ncand, "reference stars passing the cuts");
    st |= set_finite(h, "ZPSLOPE", r->slope, "Theil-Sen slope ref vs inst mag");
    st |= tide_header_set_bool(h, "ZPSLOPOK", !r->slope_bad, "slope consistent with 1");
    st |= set_finite(h, "COLTERM", r->color_term, "MAG = MAG_ref + COLTERM*COLOR");
    st |= set_finite(h, "ECOLTERM", r->ecolor_term, "error of COLTERM (0 = given)");
    if (lim) {
        st |= set_finite(h, "MAGLIM5", lim->mag5, "5-sigma limiting magnitude");
        st |= set_finite(h, "MAGLIM3", lim->mag3, "3-sigma limiting magnitude");
    }
    if (refcat && *refcat)
        st |= tide_header_set_str(h, "REFCAT", refcat, "reference catalog");
    if (band && *band)
        st |= tide_header_set_str(h, "REFBAND", band, "reference catalog band");
    return st ? tide_error(TIDE_E_NOMEM, "photcal: cannot write the header cards") : 0;
}
