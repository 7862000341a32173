/* calibrate_phot.c — steps 4–6 of calibrate.h: each source's reference counterpart, the zero
 * point and magnitudes, the limiting magnitudes, and the observing conditions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate_internal.h"
#include "tide/crossmatch.h"
#include "tide/obsinfo.h"
#include "tide/status.h"

/* Add (or reuse) a float column and fill it with NaN. */
static float *nan_col_f32(tide_table *t, const char *name, const char *unit, const char *comment,
                          int *st) {
    if (*st)
        return NULL;
    if (!tide_table_column(t, name))
        *st = tide_table_add_column(t, name, TIDE_COL_F32, 1, unit, comment, NULL);
    float *v = *st ? NULL : tide_table_f32(t, name);
    for (int64_t i = 0; v && i < t->nrows; i++)
        v[i] = NAN;
    return v;
}

static double *nan_col_f64(tide_table *t, const char *name, const char *unit, const char *comment,
                           int *st) {
    if (*st)
        return NULL;
    if (!tide_table_column(t, name))
        *st = tide_table_add_column(t, name, TIDE_COL_F64, 1, unit, comment, NULL);
    double *v = *st ? NULL : tide_table_f64(t, name);
    for (int64_t i = 0; v && i < t->nrows; i++)
        v[i] = NAN;
    return v;
}

/* The reference columns of every source, and TIDE_CAL_NOREF for those without one. */
static int reference_columns(tide_ctx *ctx, const tide_calib_params *p, const tide_cal_state *cs,
                             tide_table *cat, int64_t *match, tide_calib_result *out) {
    const int64_t n = cat->nrows;
    const double *ra = tide_table_f64(cat, "ALPHA_J2000"),
                 *dec = tide_table_f64(cat, "DELTA_J2000");
    const double *rra = tide_table_f64(&cs->ref, "RA"), *rdec = tide_table_f64(&cs->ref, "DEC");
    const double *rmag = tide_table_f64(&cs->ref, "MAG");
    const double *rmagerr = tide_table_f64(&cs->ref, "MAGERR");
    const double *rcol = tide_table_f64(&cs->ref, "COLOR");
    double *sep = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!sep)
        return tide_error(TIDE_E_NOMEM, "calibrate: crossmatch of %lld sources", (long long)n);
    tide_xmatch_params xp = tide_xmatch_defaults();
    xp.radius_arcsec = p->match_radius_arcsec;
    const double t0 = tide_cal_now_ms();
    int st = tide_crossmatch_host(ctx, ra, dec, n, rra, rdec, cs->ref.nrows, &xp, match, sep,
                                  &out->nref_matched);
    out->ms_match = tide_cal_now_ms() - t0;
    double *c_ra = nan_col_f64(cat, "REF_RA", "deg", "RA of the reference star", &st);
    double *c_dec = nan_col_f64(cat, "REF_DEC", "deg", "Dec of the reference star", &st);
    float *c_mag = nan_col_f32(cat, "REF_MAG", "mag", "reference-catalog magnitude", &st);
    float *c_magerr = nan_col_f32(cat, "REF_MAGERR", "mag", "its error", &st);
    float *c_col = nan_col_f32(cat, "REF_COLOR", "mag", "reference-catalog colour", &st);
    float *c_sep = nan_col_f32(cat, "REF_SEP", "arcsec", "distance to the reference star", &st);
    int32_t *ftide = st ? NULL : tide_table_i32(cat, "FLAGS_TIDE");
    for (int64_t i = 0; !st && i < n; i++) {
        const int64_t j = match[i];
        if (j < 0) {
            if (ftide)
                ftide[i] |= TIDE_CAL_NOREF;
            continue;
        }
        c_ra[i] = rra[j], c_dec[i] = rdec[j];
        c_mag[i] = (float)rmag[j];
        c_magerr[i] = rmagerr ? (float)rmagerr[j] : NAN;
        c_col[i] = rcol ? (float)rcol[j] : NAN;
        c_sep[i] = (float)sep[i];
    }
    free(sep);
    return st;
}

/* Zero point on the total-flux measure, then magnitudes and limits. A zero point that cannot
 * be measured (too few stars after the cuts) is reported, not fatal. */
static int zero_point(const tide_calib_params *p, const tide_cal_state *cs, int64_t width,
                      int64_t height, const int64_t *match, tide_pipeline_result *res,
                      tide_calib_result *out) {
    /* FLUX_OPT is aperture-corrected to total; without corrections Kron's AUTO flux is the
     * closest to total that every source has. */
    const char *flux = res->has_apcorr ? "OPT" : "AUTO";
    const double t0 = tide_cal_now_ms();
    int st = tide_photcal_fit_catalog(&res->catalog, flux, 0, &cs->ref, match, width, height,
                                      &p->photcal, &out->zp, NULL);
    if (st == TIDE_E_EMPTY || st == TIDE_E_NOTFOUND) {
        snprintf(out->zpmsg, sizeof out->zpmsg, "%s", tide_error_detail());
        tide_error_clear();
        out->ms_photcal = tide_cal_now_ms() - t0;
        return 0;
    }
    if (!st)
        st = tide_photcal_apply(&res->catalog, out->zp.zp);
    if (!st) {
        out->zp_ok = 1;
        if (tide_photcal_limits_catalog(&res->catalog, flux, 0, out->zp.zp, 3.0, 30.0, &out->lim)) {
            tide_error_clear(); /* too few faint sources: no limiting magnitude */
            memset(&out->lim, 0, sizeof out->lim);
        }
    }
    char zpflux[16];
    snprintf(zpflux, sizeof zpflux, "FLUX_%s", flux);
    if (!st)
        st = tide_photcal_to_header(&out->zp, out->lim.nused ? &out->lim : NULL, cs->refname,
                                    p->band, &res->header);
    if (!st)
        st = tide_header_set_str(&res->header, "ZPFLUX", zpflux, "flux the zero point is for");
    out->ms_photcal = tide_cal_now_ms() - t0;
    return st;
}

/* Airmass, altitude, Sun and Moon, when the site and the date are known. */
static int conditions(const tide_header *frame_hdr, const tide_calib_params *p,
                      const tide_cal_state *cs, int64_t width, int64_t height,
                      tide_pipeline_result *res, tide_calib_result *out) {
    if (!frame_hdr)
        return 0;
    tide_obsinfo_in in;
    tide_obsinfo_in_default(&in);
    if (tide_obsinfo_in_from_header(frame_hdr, &in)) {
        tide_error_clear(); /* no DATE-OBS: nothing to compute */
        return 0;
    }
    if (isfinite(p->site_lon_deg) && isfinite(p->site_lat_deg)) {
        in.lon_deg = p->site_lon_deg, in.lat_deg = p->site_lat_deg;
        in.height_m = p->site_height_m;
    }
    tide_wcs_summary s;
    if (cs->wcs && !tide_wcs_summarize(cs->wcs, width, height, &s))
        in.ra_deg = s.ra_center, in.dec_deg = s.dec_center;
    if (!isfinite(in.lon_deg) || !isfinite(in.lat_deg) || !isfinite(in.ra_deg) ||
        !isfinite(in.dec_deg))
        return 0;
    tide_obsinfo o;
    if (tide_obsinfo_compute(&in, &o)) {
        tide_error_clear(); /* a date ERFA refuses: the catalog goes without them */
        return 0;
    }
    out->obs_ok = 1;
    return tide_obsinfo_to_header(&o, &res->header);
}

int tide_cal_photometry(tide_ctx *ctx, const tide_header *frame_hdr, int64_t width, int64_t height,
                        const tide_calib_params *p, tide_pipeline_result *res, tide_cal_state *cs,
                        tide_calib_result *out) {
    int st = 0;
    if (cs->have_ref) {
        const char *name =
            p->refcat[0] ? (p->refcat_table[0] ? p->refcat_table : p->refcat) : "command";
        const char *base = strrchr(name, '/');
        snprintf(cs->refname, sizeof cs->refname, "%s",
                 base && !p->refcat_table[0] ? base + 1 : name);
        st = tide_header_set_int(&res->header, "REFNSTAR", cs->ref.nrows,
                                 "reference stars around the field");
    }
    const char *photstat = "NONE";
    if (!st && cs->have_ref && out->wcs_ok) {
        const int64_t n = res->catalog.nrows;
        int64_t *match = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
        if (!match)
            return tide_error(TIDE_E_NOMEM, "calibrate: matches of %lld sources", (long long)n);
        st = reference_columns(ctx, p, cs, &res->catalog, match, out);
        if (!st)
            st = zero_point(p, cs, width, height, match, res, out);
        free(match);
        photstat = out->zp_ok ? "OK" : "FAILED";
        if (!st && !out->zp_ok) {
            char msg[69];
            snprintf(msg, sizeof msg, "%s", out->zpmsg);
            st = tide_header_set_str(&res->header, "PHOTMSG", msg, "why there is no zero point");
        }
    } else if (cs->have_ref || tide_calib_has_refcat(p)) {
        /* Asked for; without a WCS there was no cone to fetch or nothing to match. */
        photstat = "FAILED";
        snprintf(out->zpmsg, sizeof out->zpmsg, "no WCS to match the reference stars with");
    }
    if (!st)
        st = tide_header_set_str(&res->header, "PHOTSTAT", photstat, "photometric calibration");
    if (!st)
        st = conditions(frame_hdr, p, cs, width, height, res, out);
    return st;
}
