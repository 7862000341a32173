/* wcs_summary.c — centre, scale, orientation and extent of a WCS over a frame.
 *
 * The local Jacobian J = d(east, north)/d(x, y) at the centre comes from central differences
 * of pix2sky over +-0.5 px, with east = dRA cos(Dec) and north = dDec in the tangent plane of
 * the centre (small-offset approximation, error ~ (0.5 px)^2 curvature: 1e-12 relative for
 * arcsecond pixels). The scale is sqrt(|det J|) (the geometric mean of the axis scales); the
 * rotation is the position angle of the +y axis, atan2(dE/dy, dN/dy), east of north. */
#include <math.h>
#include <string.h>
#include <stdio.h>
#include <wcslib/wcsmath.h> /* undefined() */
#include "tide/status.h"
#include "wcs_internal.h"

#define DEG (3.14159265358979323846 / 180.0)

/* Great-circle distance in degrees (Vincenty's formula: exact at every separation). */
static double sky_sep(double ra1, double de1, double ra2, double de2) {
    const double dra = (ra2 - ra1) * DEG, s1 = sin(de1 * DEG), c1 = cos(de1 * DEG);
    const double s2 = sin(de2 * DEG), c2 = cos(de2 * DEG);
    const double a = c2 * sin(dra), b = c1 * s2 - s1 * c2 * cos(dra);
    return atan2(hypot(a, b), s1 * s2 + c1 * c2 * cos(dra)) / DEG;
}

/* Longitude difference wrapped to (-180, 180]. */
static double dlon(double a, double b) {
    double d = fmod(a - b, 360.0);
    if (d > 180.0)
        d -= 360.0;
    if (d <= -180.0)
        d += 360.0;
    return d;
}

int tide_wcs_summarize(const tide_wcs *w, int64_t width, int64_t height, tide_wcs_summary *s) {
    if (!w || !s)
        return tide_error(TIDE_E_INVAL, "tide_wcs_summarize: NULL argument");
    if (width <= 0 || height <= 0)
        return tide_error(TIDE_E_INVAL, "%s: frame size %lldx%lld is not positive", w->source,
                          (long long)width, (long long)height);
    memset(s, 0, sizeof *s);
    snprintf(s->ctype1, sizeof s->ctype1, "%s", w->ctype[0]);
    snprintf(s->ctype2, sizeof s->ctype2, "%s", w->ctype[1]);
    s->has_sip = w->has_sip;
    s->has_tpv = w->has_tpv;

    struct wcsprm *p;
    int slot = tide_wcs_acquire(w, &p);
    if (slot < 0)
        return slot;
    /* wcsset applies the FITS defaults: RADESYS FK4 before 1984, FK5 after, ICRS with
     * neither keyword; EQUINOX 1950/2000 for FK4/FK5, undefined for ICRS. */
    snprintf(s->radesys, sizeof s->radesys, "%.15s", p->radesys);
    s->equinox = undefined(p->equinox) ? NAN : p->equinox;
    tide_wcs_release(w, slot);

    const double xc = 0.5 * (double)(width - 1), yc = 0.5 * (double)(height - 1);
    /* centre, +-x, +-y, and the four edge midpoints */
    double x[9] = {xc, xc + 0.5, xc - 0.5, xc, xc, -0.5, (double)width - 0.5, xc, xc};
    double y[9] = {yc, yc, yc, yc + 0.5, yc - 0.5, yc, yc, -0.5, (double)height - 0.5};
    double ra[9], de[9];
    int st = tide_wcs_pix2sky(w, 9, x, y, ra, de);
    if (st)
        return st;
    for (int i = 0; i < 5; i++)
        if (isnan(ra[i]) || isnan(de[i]))
            return tide_error(TIDE_E_WCS,
                              "%s: the frame centre (%g, %g) [0-based] has no sky "
                              "position",
                              w->source, xc, yc);
    s->ra_center = ra[0];
    s->dec_center = de[0];
    const double cd = cos(de[0] * DEG);
    const double dEdx = dlon(ra[1], ra[2]) * cd, dNdx = de[1] - de[2];
    const double dEdy = dlon(ra[3], ra[4]) * cd, dNdy = de[3] - de[4];
    s->scale_arcsec = sqrt(fabs(dEdx * dNdy - dEdy * dNdx)) * 3600.0;
    double pa = atan2(dEdy, dNdy) / DEG;
    s->rotation_deg = pa <= -180.0 ? pa + 360.0 : pa;
    s->fov_x_deg = isnan(ra[5]) || isnan(ra[6]) ? NAN : sky_sep(ra[5], de[5], ra[6], de[6]);
    s->fov_y_deg = isnan(ra[7]) || isnan(ra[8]) ? NAN : sky_sep(ra[7], de[7], ra[8], de[8]);
    return 0;
}
