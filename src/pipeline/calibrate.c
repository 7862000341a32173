/* calibrate.c — Reduction II's order of steps (calibrate.h), the source arrays the astrometry
 * works on, and the reference-catalog source switch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calibrate_internal.h"
#include "tide/coords.h"
#include "tide/status.h"
#include "tide/store.h"
#include "tide/timer.h"

double tide_cal_now_ms(void) {
    return 1e3 * tide_now();
}

void tide_cal_sources_free(tide_cal_sources *s) {
    free(s->x), free(s->y), free(s->bx), free(s->by), free(s->sigma), free(s->flux);
    free(s->cx), free(s->cy), free(s->csigma);
    memset(s, 0, sizeof *s);
}

/* Source Extractor FLAGS bits that spoil a centroid: 4 saturated, 8 truncated at the edge,
 * 16/32 aperture or isophotal data incomplete or corrupted, 64/128 memory overflows. Bits 1
 * (neighbours) and 2 (deblended) leave a windowed centroid fine. */
#define CAL_BAD_CENTROID_FLAGS 0xFC
/* Sources fainter than this detection S/N centroid too poorly to pull the fit. */
#define CAL_FIT_MIN_SNR 10.0
/* The WCS fit uses at most this many clean sources, the ones of highest S/N: 3,000 stars pin
 * a 20-coefficient TAN-SIP of order 3 far below the centroid noise (the error of the fitted
 * mapping falls as sqrt(ncoef / n): ~0.01 px for 0.1 px centroids), while the refinement's
 * cost keeps growing with n. */
#define CAL_FIT_MAX_SOURCES 3000

typedef struct snr_index {
    float snr;
    int64_t i;
} snr_index;

/* Highest S/N first; ties in catalog order, so the choice is deterministic. */
static int by_snr_desc(const void *a, const void *b) {
    const snr_index *x = a, *y = b;
    if (x->snr != y->snr)
        return x->snr < y->snr ? 1 : -1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Keep the CAL_FIT_MAX_SOURCES clean sources of highest S/N, in catalog order. */
static int keep_brightest(tide_cal_sources *s, const int64_t *idx, const float *snr) {
    const int64_t m = s->nclean;
    snr_index *o = malloc(sizeof *o * (size_t)m);
    uint8_t *keep = calloc((size_t)m, 1);
    if (!o || !keep) {
        free(o), free(keep);
        return tide_error(TIDE_E_NOMEM, "calibrate: ordering %lld sources", (long long)m);
    }
    for (int64_t k = 0; k < m; k++)
        o[k].snr = snr[idx[k]], o[k].i = k;
    qsort(o, (size_t)m, sizeof *o, by_snr_desc);
    for (int64_t k = 0; k < CAL_FIT_MAX_SOURCES; k++)
        keep[o[k].i] = 1;
    int64_t n = 0;
    for (int64_t k = 0; k < m; k++)
        if (keep[k]) {
            s->cx[n] = s->cx[k], s->cy[n] = s->cy[k], s->csigma[n] = s->csigma[k];
            n++;
        }
    s->nclean = n;
    free(o), free(keep);
    return 0;
}

int tide_cal_sources_get(const tide_table *cat, tide_cal_sources *s) {
    memset(s, 0, sizeof *s);
    const int64_t n = cat->nrows;
    const double *xw = tide_table_f64(cat, "XWIN_IMAGE"), *yw = tide_table_f64(cat, "YWIN_IMAGE");
    const double *xb = tide_table_f64(cat, "X_IMAGE"), *yb = tide_table_f64(cat, "Y_IMAGE");
    const double *ex = tide_table_f64(cat, "ERRX2WIN_IMAGE");
    const double *ey = tide_table_f64(cat, "ERRY2WIN_IMAGE");
    const double *fa = tide_table_f64(cat, "FLUX_AUTO");
    /* The solvers rank sources by their light within the first aperture (3 px by default):
     * a star's core, as astrometry.net's image2xy ranks by peak; FLUX_AUTO puts a nebula's
     * knots and galaxies first (astrometry/apod1.jpg solved only in that order: 0.14 s) */
    const tide_column *ap = tide_table_column(cat, "FLUX_APER");
    const double *fap = ap && ap->type == TIDE_COL_F64 && ap->repeat >= 1 ? ap->data : NULL;
    const float *snr = tide_table_f32(cat, "SNR");
    const tide_column *fl = tide_table_column(cat, "FLAGS");
    if (n > 0 && (!xw || !yw || !xb || !yb || !fa || !snr || !fl || fl->type != TIDE_COL_I16))
        return tide_error(TIDE_E_INVAL, "calibrate: the catalog lacks XWIN_IMAGE, YWIN_IMAGE, "
                                        "X_IMAGE, Y_IMAGE, FLUX_AUTO, SNR or FLAGS");
    const size_t m = (size_t)(n > 0 ? n : 1);
    s->n = n;
    s->x = malloc(m * sizeof(double)), s->y = malloc(m * sizeof(double));
    s->bx = malloc(m * sizeof(double)), s->by = malloc(m * sizeof(double));
    s->sigma = malloc(m * sizeof(double)), s->flux = malloc(m * sizeof(double));
    s->cx = malloc(m * sizeof(double)), s->cy = malloc(m * sizeof(double));
    s->csigma = malloc(m * sizeof(double));
    if (!s->x || !s->y || !s->bx || !s->by || !s->sigma || !s->flux || !s->cx || !s->cy ||
        !s->csigma) {
        tide_cal_sources_free(s);
        return tide_error(TIDE_E_NOMEM, "calibrate: arrays for %lld sources", (long long)n);
    }
    const int16_t *flags = n > 0 ? (const int16_t *)fl->data : NULL;
    int64_t *idx = malloc(sizeof(int64_t) * m);
    if (!idx) {
        tide_cal_sources_free(s);
        return tide_error(TIDE_E_NOMEM, "calibrate: arrays for %lld sources", (long long)n);
    }
    for (int64_t i = 0; i < n; i++) {
        /* The positions the catalog states, 0-based again (coords.h): the WCS is fitted to
         * what the user receives, so a catalog calibrated from its file gives the same WCS. */
        s->x[i] = tide_pix_from_fits(xw[i]);
        s->y[i] = tide_pix_from_fits(yw[i]);
        s->bx[i] = tide_pix_from_fits(xb[i]);
        s->by[i] = tide_pix_from_fits(yb[i]);
        const double v = ex && ey ? 0.5 * (ex[i] + ey[i]) : NAN;
        s->sigma[i] = v > 0 ? sqrt(v) : NAN;
        const double f = fap && isfinite(fap[i * ap->repeat]) ? fap[i * ap->repeat] : fa[i];
        s->flux[i] = isfinite(f) ? f : -INFINITY;
        if (isfinite(s->x[i]) && isfinite(s->y[i]) && !(flags[i] & CAL_BAD_CENTROID_FLAGS) &&
            snr[i] >= CAL_FIT_MIN_SNR) {
            s->cx[s->nclean] = s->x[i];
            s->cy[s->nclean] = s->y[i];
            s->csigma[s->nclean] = s->sigma[i];
            idx[s->nclean++] = i;
        }
    }
    int st = s->nclean > CAL_FIT_MAX_SOURCES ? keep_brightest(s, idx, snr) : 0;
    free(idx);
    if (st)
        tide_cal_sources_free(s);
    return st;
}

int tide_cal_refcat_fetch(const tide_calib_params *p, double ra, double dec, double radius_deg,
                          tide_table *out) {
    char cache[1024] = "";
    const int have_cache = !tide_refcat_cache_dir(p->cache_dir, cache, (int)sizeof cache);
    if (!have_cache)
        tide_error_clear(); /* no cache configured: fetch every time */
    if (p->refcat[0] && tide_store_uri_is_pg(p->refcat)) {
        if (!p->refcat_table[0])
            return tide_error(TIDE_E_CONFIG,
                              "refcat %s is a database: set refcat.table "
                              "(or --refcat-table)",
                              p->refcat);
        /* The cache key names the database table, never the connection's password. */
        char key[256];
        snprintf(key, sizeof key, "pg-table:%s", p->refcat_table);
        const double r = radius_deg + tide_refcat_margin_deg(radius_deg);
        if (have_cache && !tide_refcat_cache_get(cache, key, ra, dec, r, out))
            return 0;
        tide_error_clear();
        int st = tide_store_refcat_cone(p->refcat, p->refcat_table, &p->cols, ra, dec, r, out);
        if (!st && out->nrows == 0)
            st = tide_error(TIDE_E_EMPTY, "%s: no reference star within %.4g deg of (%.6f, %.6f)",
                            p->refcat_table, r, ra, dec);
        if (!st && have_cache)
            st = tide_refcat_cache_put(cache, key, ra, dec, r, out);
        return st;
    }
    return tide_refcat_fetch(p->refcat[0] ? p->refcat : NULL,
                             p->refcat[0] ? NULL : p->refcat_command, &p->cols, ra, dec, radius_deg,
                             have_cache ? cache : NULL, out);
}

/* PROCDATE: now, or $SOURCE_DATE_EPOCH (reproducible-builds.org) so that two runs can give
 * byte-identical catalogs. */
static int set_procdate(tide_header *h) {
    time_t t = time(NULL);
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    if (sde && *sde) {
        char *end;
        const long long v = strtoll(sde, &end, 10);
        if (end != sde && !*end && v >= 0)
            t = (time_t)v;
    }
    struct tm tmv;
    gmtime_r(&t, &tmv);
    char buf[32];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tmv);
    return tide_header_set_str(h, "PROCDATE", buf, "processing date, UTC");
}

int tide_calibrate_run(tide_ctx *ctx, const tide_header *frame_hdr, int64_t width, int64_t height,
                       const tide_calib_params *p, tide_pipeline_result *res,
                       tide_calib_result *out) {
    tide_calib_result local;
    if (!out)
        out = &local;
    memset(out, 0, sizeof *out);
    if (!ctx || !p || !res || width < 1 || height < 1)
        return tide_error(TIDE_E_INVAL, "calibrate: bad arguments");
    if (p->refcat[0] && p->refcat_command[0])
        return tide_error(TIDE_E_INVAL, "calibrate: give a reference catalog file or a command, "
                                        "not both");
    const double t0 = tide_cal_now_ms();
    tide_cal_state cs;
    memset(&cs, 0, sizeof cs);
    tide_table_init(&cs.ref);
    int st = tide_cal_astrometry(ctx, frame_hdr, width, height, p, res, &cs, out);
    if (!st)
        st = tide_cal_photometry(ctx, frame_hdr, width, height, p, res, &cs, out);
    if (!st)
        st = set_procdate(&res->header);
    res->wcs = cs.wcs; /* the final WCS, or NULL */
    tide_table_free(&cs.ref);
    out->ms_total = tide_cal_now_ms() - t0;
    return st;
}
