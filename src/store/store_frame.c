/* store_frame.c — the images row of a frame (tide_store_frame): its fields in the stores'
 * column order, filling it from a header, and the great-circle distance cone searches use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "store_internal.h"
#include "tide/status.h"
#include "tide/wcs.h"

const char *const tide_store_img_cols[TIDE_STORE_NIMG] = {
    "file",       "checksum",     "processed",    "tide_version", "date_obs",  "mjd",
    "exptime",    "filter",       "airmass",      "naxis1",       "naxis2",    "ra_center",
    "dec_center", "scale_arcsec", "rotation_deg", "fov_w_deg",    "fov_h_deg", "zp",
    "ezp",        "zp_nstar",     "maglim5",      "maglim3",      "nsources",  "fwhm",
    "sky",        "header"};
const char tide_store_img_kinds[TIDE_STORE_NIMG + 1] = "TTTTTRRTRIIRRRRRRRRIRRIRRT";

void tide_store_frame_init(tide_store_frame *f) {
    memset(f, 0, sizeof *f);
    f->id = -1;
    f->mjd = f->exptime = f->airmass = NAN;
    f->naxis1 = f->naxis2 = f->zp_nstar = f->nsources = -1;
    f->ra_center = f->dec_center = f->scale_arcsec = f->rotation_deg = NAN;
    f->fov_w_deg = f->fov_h_deg = f->zp = f->ezp = f->maglim5 = f->maglim3 = NAN;
    f->fwhm = f->sky = NAN;
}

void tide_store_frame_free(tide_store_frame *f) {
    if (!f)
        return;
    free(f->header);
    f->header = NULL;
}

/* Addresses of the fields in tide_store_img_cols order (text fields: char arrays, with size). */
typedef struct field_ref {
    char *txt;
    int ntxt;
    double *d;
    int64_t *i;
} field_ref;

static field_ref field(tide_store_frame *f, int i) {
    field_ref r = {0};
    switch (i) {
    case 0:
        r.txt = f->file;
        r.ntxt = sizeof f->file;
        break;
    case 1:
        r.txt = f->checksum;
        r.ntxt = sizeof f->checksum;
        break;
    case 2:
        r.txt = f->processed;
        r.ntxt = sizeof f->processed;
        break;
    case 3:
        r.txt = f->tide_version;
        r.ntxt = sizeof f->tide_version;
        break;
    case 4:
        r.txt = f->date_obs;
        r.ntxt = sizeof f->date_obs;
        break;
    case 5: r.d = &f->mjd; break;
    case 6: r.d = &f->exptime; break;
    case 7:
        r.txt = f->filter;
        r.ntxt = sizeof f->filter;
        break;
    case 8: r.d = &f->airmass; break;
    case 9: r.i = &f->naxis1; break;
    case 10: r.i = &f->naxis2; break;
    case 11: r.d = &f->ra_center; break;
    case 12: r.d = &f->dec_center; break;
    case 13: r.d = &f->scale_arcsec; break;
    case 14: r.d = &f->rotation_deg; break;
    case 15: r.d = &f->fov_w_deg; break;
    case 16: r.d = &f->fov_h_deg; break;
    case 17: r.d = &f->zp; break;
    case 18: r.d = &f->ezp; break;
    case 19: r.i = &f->zp_nstar; break;
    case 20: r.d = &f->maglim5; break;
    case 21: r.d = &f->maglim3; break;
    case 22: r.i = &f->nsources; break;
    case 23: r.d = &f->fwhm; break;
    case 24: r.d = &f->sky; break;
    default: break; /* 25: header, handled by the callers */
    }
    return r;
}

void tide_store_frame_values(const tide_store_frame *f, const char *txt[TIDE_STORE_NIMG],
                             double num[TIDE_STORE_NIMG]) {
    tide_store_frame *m = (tide_store_frame *)f; /* field() only takes addresses */
    for (int i = 0; i < TIDE_STORE_NIMG; i++) {
        field_ref r = field(m, i);
        txt[i] = NULL;
        num[i] = NAN;
        if (i == TIDE_STORE_NIMG - 1)
            txt[i] = f->header;
        else if (r.txt)
            txt[i] = r.txt[0] ? r.txt : NULL;
        else if (r.d)
            num[i] = *r.d;
        else if (r.i)
            num[i] = *r.i >= 0 ? (double)*r.i : NAN; /* -1 = unknown = NULL */
    }
}

int tide_store_frame_set(tide_store_frame *f, int i, const char *text) {
    if (i == TIDE_STORE_NIMG - 1) {
        free(f->header);
        f->header = NULL;
        if (text && !(f->header = strdup(text)))
            return tide_error(TIDE_E_NOMEM, "store: image header text");
        return TIDE_OK;
    }
    field_ref r = field(f, i);
    if (r.txt)
        snprintf(r.txt, (size_t)r.ntxt, "%s", text ? text : "");
    else if (r.d)
        *r.d = text && *text ? strtod(text, NULL) : NAN;
    else if (r.i)
        *r.i = text && *text ? strtoll(text, NULL, 10) : -1;
    return TIDE_OK;
}

static void hdr_str(const tide_header *h, const char *key, char *out, int n) {
    char v[128];
    if (tide_header_get_str(h, key, v, sizeof v) == 0)
        snprintf(out, (size_t)n, "%s", v);
}
static void hdr_dbl(const tide_header *h, const char *key, double *out) {
    double v;
    if (tide_header_get_dbl(h, key, &v) == 0)
        *out = v;
}
static void hdr_int(const tide_header *h, const char *key, int64_t *out) {
    int64_t v;
    if (tide_header_get_int(h, key, &v) == 0)
        *out = v;
}

int tide_store_frame_from_header(tide_store_frame *f, const tide_header *h) {
    hdr_str(h, "DATE-OBS", f->date_obs, sizeof f->date_obs);
    hdr_dbl(h, "MJD", &f->mjd);
    hdr_dbl(h, "MJD-OBS", &f->mjd);
    hdr_dbl(h, "EXPTIME", &f->exptime);
    hdr_str(h, "FILTER", f->filter, sizeof f->filter);
    hdr_dbl(h, "AIRMASS", &f->airmass);
    /* IMAGEW/IMAGEH (tide reduce) win: a catalog HDU's NAXIS1 is its row width in bytes */
    hdr_int(h, "NAXIS1", &f->naxis1);
    hdr_int(h, "NAXIS2", &f->naxis2);
    hdr_int(h, "IMAGEW", &f->naxis1);
    hdr_int(h, "IMAGEH", &f->naxis2);
    hdr_str(h, "PROCDATE", f->processed, sizeof f->processed);
    /* the summary tide reduce writes; recomputed from the WCS below when there is one */
    hdr_dbl(h, "CENTRA", &f->ra_center);
    hdr_dbl(h, "CENTDEC", &f->dec_center);
    hdr_dbl(h, "PIXSCALE", &f->scale_arcsec);
    hdr_dbl(h, "ROTANGLE", &f->rotation_deg);
    hdr_dbl(h, "FOVX", &f->fov_w_deg);
    hdr_dbl(h, "FOVY", &f->fov_h_deg);
    hdr_dbl(h, "ZP", &f->zp);
    hdr_dbl(h, "EZP", &f->ezp);
    hdr_int(h, "CATNSTAR", &f->zp_nstar);
    hdr_dbl(h, "MAGLIM5", &f->maglim5);
    hdr_dbl(h, "MAGLIM3", &f->maglim3);
    hdr_int(h, "NDETECT", &f->nsources);
    hdr_dbl(h, "SEEING", &f->fwhm);
    hdr_dbl(h, "PSFFWHM", &f->fwhm);
    hdr_dbl(h, "FWHM", &f->fwhm);
    hdr_dbl(h, "SKYLEVEL", &f->sky);
    hdr_str(h, "TIDEVERS", f->tide_version, sizeof f->tide_version);
    tide_wcs *w = NULL;
    if (f->naxis1 > 0 && f->naxis2 > 0 && tide_wcs_from_header(h, "catalog header", &w) == 0) {
        tide_wcs_summary sm;
        if (tide_wcs_summarize(w, f->naxis1, f->naxis2, &sm) == 0) {
            f->ra_center = sm.ra_center;
            f->dec_center = sm.dec_center;
            f->scale_arcsec = sm.scale_arcsec;
            f->rotation_deg = sm.rotation_deg;
            f->fov_w_deg = sm.fov_x_deg;
            f->fov_h_deg = sm.fov_y_deg;
        }
        tide_wcs_free(w);
    }
    tide_error_clear(); /* a header without WCS is not an error here */
    int ncards = 0;
    char *text = tide_header_to_string(h, &ncards);
    if (!text)
        return tide_error(TIDE_E_NOMEM, "store: header text");
    free(f->header);
    f->header = text;
    return TIDE_OK;
}

void tide_store_now_iso(char *out, int n) {
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(out, (size_t)n, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

double tide_store_separation(double ra1, double dec1, double ra2, double dec2) {
    /* Vincenty (1975) special case of the sphere: atan2 of the cross and dot products,
     * accurate from 0 to 180 degrees. */
    const double d2r = 3.14159265358979323846 / 180;
    double dra = (ra2 - ra1) * d2r, s1 = sin(dec1 * d2r), c1 = cos(dec1 * d2r);
    double s2 = sin(dec2 * d2r), c2 = cos(dec2 * d2r), sd = sin(dra), cd = cos(dra);
    double a = c2 * sd, b = c1 * s2 - s1 * c2 * cd;
    return atan2(sqrt(a * a + b * b), s1 * s2 + c1 * c2 * cd) / d2r;
}

void tide_store_image_query(char *sql, size_t cap, const char *p1, const char *p2) {
    int k = snprintf(sql, cap, "SELECT id");
    for (int i = 0; i < TIDE_STORE_NIMG && (size_t)k < cap; i++)
        k += snprintf(sql + k, cap - (size_t)k, ", %s", tide_store_img_cols[i]);
    if ((size_t)k < cap)
        snprintf(sql + k, cap - (size_t)k,
                 " FROM images WHERE checksum = %s OR checksum = %s OR file = %s "
                 "ORDER BY checksum = %s DESC, checksum = %s DESC, id DESC LIMIT 1",
                 p1, p2, p2, p1, p2);
}
