/* solve_hints.c — solve parameters: defaults, and the hints a frame's header gives (pointing,
 * pixel scale). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tide/solve.h"
#include "tide/instrument.h"
#include "tide/status.h"

void tide_solve_params_init(tide_solve_params *p) {
    memset(p, 0, sizeof *p);
    p->nbright = 500;
    p->uniformize = 0; /* off: see solve.h (solve-field's default is 10) */
    p->blind_fallback = 1;
    p->timeout_s = 60.0;
    /* astrometry.net engine.c defaults: odds to solve and keep 1e9, to tune up 1e6, to bail
     * 1e-100 (DEFAULT_BAIL_THRESHOLD). */
    p->logodds_solve = log(1e9);
    p->logodds_keep = log(1e9);
    p->logodds_tune = log(1e6);
    p->logodds_bail = log(1e-100);
    p->parity = TIDE_SOLVE_PARITY_BOTH;
    p->code_tol = 0.01;         /* DEFAULT_CODE_TOL */
    p->verify_pix = 1.0;        /* DEFAULT_VERIFY_PIX */
    p->distractor_ratio = 0.25; /* DEFAULT_DISTRACTOR_RATIO */
    p->quad_size_min = 0.1;     /* DEFAULT_QSF_LO */
    p->tweak_order = 2;         /* solve-field's --tweak-order default */
}

/* A header angle: a number (degrees) or a sexagesimal string (hours for RA). */
static int header_angle(const tide_header *h, const char *key, int hours, double *deg) {
    if (tide_header_find(h, key) < 0)
        return TIDE_E_NOTFOUND;
    double v;
    if (tide_header_get_dbl(h, key, &v) == 0 && isfinite(v)) {
        *deg = v;
        return 0;
    }
    char s[72];
    if (tide_header_get_str(h, key, s, sizeof s) != 0)
        return TIDE_E_FORMAT;
    return tide_parse_angle(s, hours, deg);
}

int tide_solve_hints_from_header(const tide_header *hdr, int64_t w, int64_t h, double pixsize_um,
                                 double focal_mm, double tolerance, tide_solve_params *p) {
    tide_wcs *wcs = NULL;
    if (hdr && w > 0 && h > 0 && tide_wcs_from_header(hdr, NULL, &wcs)) {
        tide_error_clear(); /* no usable WCS: the other hints */
        wcs = NULL;
    }
    const int st = tide_solve_hints(hdr, wcs, w, h, pixsize_um, focal_mm, tolerance, p);
    tide_wcs_free(wcs);
    return st;
}

int tide_solve_hints(const tide_header *hdr, const tide_wcs *wcs, int64_t w, int64_t h,
                     double pixsize_um, double focal_mm, double tolerance, tide_solve_params *p) {
    if (w <= 0 || h <= 0)
        return tide_error(TIDE_E_INVAL, "solve hints: frame size %lldx%lld", (long long)w,
                          (long long)h);
    p->width = w;
    p->height = h;
    p->has_position = 0;
    p->scale_lo = p->scale_hi = 0;
    if (!(tolerance > 0))
        tolerance = 0.1;
    tide_wcs_summary sum;
    const int have_wcs = hdr && wcs && tide_wcs_summarize(wcs, w, h, &sum) == 0;
    tide_error_clear();
    double ra, dec;
    if (hdr && header_angle(hdr, "RA", 1, &ra) == 0 && header_angle(hdr, "DEC", 0, &dec) == 0) {
        p->has_position = 1;
    } else if (hdr && header_angle(hdr, "OBJCTRA", 1, &ra) == 0 &&
               header_angle(hdr, "OBJCTDEC", 0, &dec) == 0) {
        p->has_position = 1;
    } else if (have_wcs && isfinite(sum.ra_center) && isfinite(sum.dec_center)) {
        ra = sum.ra_center;
        dec = sum.dec_center;
        p->has_position = 1;
    } else if (hdr && tide_header_get_dbl(hdr, "CRVAL1", &ra) == 0 &&
               tide_header_get_dbl(hdr, "CRVAL2", &dec) == 0) {
        p->has_position = 1;
    }
    if (p->has_position && (!isfinite(ra) || !(dec >= -90 && dec <= 90)))
        p->has_position = 0;
    if (p->has_position) {
        p->ra = fmod(fmod(ra, 360.0) + 360.0, 360.0);
        p->dec = dec;
    }
    double scale = 0;
    if (have_wcs && sum.scale_arcsec > 0 && isfinite(sum.scale_arcsec))
        scale = sum.scale_arcsec;
    else if (pixsize_um > 0 && focal_mm > 0)
        scale = 206.265 * pixsize_um / focal_mm; /* arcsec/px: 206265"/rad × µm/mm / 1000 */
    if (scale > 0) {
        p->scale_lo = scale * (1.0 - tolerance > 0 ? 1.0 - tolerance : 0.0);
        p->scale_hi = scale * (1.0 + tolerance);
    }
    tide_error_clear();
    return 0;
}
