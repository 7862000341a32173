/* reproject_grid.c — a north-up, east-left TAN grid covering a set of frames (the common grid
 * of `tide reproject --grid north-up`). Gnomonic projection formulas: Calabretta & Greisen
 * 2002, A&A 395, 1077, §5.1.3. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/header.h"
#include "tide/reproject.h"
#include "tide/status.h"

#define D2R 0.017453292519943295769
#define R2D 57.295779513082320877
#define OUTLINE_STEP 16.0
#define MAX_SIDE 65536.0

/* Outline of a w × h frame (pixel edges, every OUTLINE_STEP px): returns the count. */
static int64_t outline(int64_t w, int64_t h, double *x, double *y) {
    int64_t n = 0;
    const int64_t nx = (int64_t)ceil((double)w / OUTLINE_STEP);
    const int64_t ny = (int64_t)ceil((double)h / OUTLINE_STEP);
    for (int64_t i = 0; i <= nx; i++) {
        const double xx = -0.5 + (double)w * (double)i / (double)nx;
        if (x) {
            x[n] = xx, y[n] = -0.5;
            x[n + 1] = xx, y[n + 1] = (double)h - 0.5;
        }
        n += 2;
    }
    for (int64_t j = 1; j < ny; j++) {
        const double yy = -0.5 + (double)h * (double)j / (double)ny;
        if (x) {
            x[n] = -0.5, y[n] = yy;
            x[n + 1] = (double)w - 0.5, y[n + 1] = yy;
        }
        n += 2;
    }
    return n;
}

/* Longitude-axis type of a CTYPE ("RA", "GLON", "ELON"...): the part before the first '-'. */
static void axis_type(const char *ctype, char *out, size_t len) {
    size_t k = 0;
    while (ctype[k] && ctype[k] != '-' && k + 1 < len) {
        out[k] = ctype[k];
        k++;
    }
    out[k] = 0;
}

int tide_reproject_northup(const tide_wcs *const *wcs, const int64_t *width, const int64_t *height,
                           int n, tide_wcs **out, int64_t *out_w, int64_t *out_h) {
    if (!wcs || !width || !height || n < 1 || !out || !out_w || !out_h)
        return tide_error(TIDE_E_INVAL, "tide_reproject_northup: bad arguments");
    *out = NULL;
    int64_t total = 0;
    double scale = INFINITY;
    tide_wcs_summary s0;
    for (int i = 0; i < n; i++) {
        tide_wcs_summary s;
        if (!wcs[i] || width[i] <= 0 || height[i] <= 0)
            return tide_error(TIDE_E_INVAL, "north-up grid: frame %d has no WCS or no size", i);
        int st = tide_wcs_summarize(wcs[i], width[i], height[i], &s);
        if (st)
            return tide_error_prefix(st, "north-up grid, frame %d: ", i);
        if (i == 0)
            s0 = s;
        char a[16], b[16];
        axis_type(s.ctype1, a, sizeof a);
        axis_type(s0.ctype1, b, sizeof b);
        if (strcmp(a, b) || strcmp(s.radesys, s0.radesys))
            return tide_error(TIDE_E_UNSUPPORTED,
                              "north-up grid: frame %d is in %s/%s, frame 0 in %s/%s; tide does "
                              "not convert between celestial frames",
                              i, a, s.radesys, b, s0.radesys);
        if (s.scale_arcsec > 0 && s.scale_arcsec < scale)
            scale = s.scale_arcsec;
        total += outline(width[i], height[i], NULL, NULL);
    }
    if (!(scale > 0) || !isfinite(scale))
        return tide_error(TIDE_E_WCS, "north-up grid: no usable pixel scale");
    double *b = malloc(sizeof(double) * 4 * (size_t)total);
    if (!b)
        return tide_error(TIDE_E_NOMEM, "north-up grid: out of memory");
    double *x = b, *y = b + total, *ra = b + 2 * total, *de = b + 3 * total;
    int64_t k = 0;
    int st = 0;
    for (int i = 0; i < n && !st; i++) {
        const int64_t m = outline(width[i], height[i], x + k, y + k);
        st = tide_wcs_pix2sky(wcs[i], m, x + k, y + k, ra + k, de + k);
        k += m;
    }
    /* tangent point: normalised mean direction of the outlines */
    double v[3] = {0, 0, 0};
    int64_t good = 0;
    for (int64_t i = 0; i < total && !st; i++) {
        if (!isfinite(ra[i]) || !isfinite(de[i]))
            continue;
        const double cd = cos(de[i] * D2R);
        v[0] += cd * cos(ra[i] * D2R);
        v[1] += cd * sin(ra[i] * D2R);
        v[2] += sin(de[i] * D2R);
        good++;
    }
    const double norm = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (!st && (good == 0 || !(norm > 0)))
        st = tide_error(TIDE_E_WCS, "north-up grid: the frames' outlines have no sky position");
    if (st) {
        free(b);
        return st;
    }
    double a0 = atan2(v[1], v[0]) * R2D;
    if (a0 < 0)
        a0 += 360.0;
    const double d0 = asin(v[2] / norm) * R2D;
    const double sd0 = sin(d0 * D2R), cd0 = cos(d0 * D2R);
    /* gnomonic standard coordinates of the outline, in output pixels (x east-left) */
    const double sc = scale / 3600.0;
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (int64_t i = 0; i < total; i++) {
        if (!isfinite(ra[i]) || !isfinite(de[i]))
            continue;
        const double dra = (ra[i] - a0) * D2R, d = de[i] * D2R;
        const double cosc = sd0 * sin(d) + cd0 * cos(d) * cos(dra);
        if (!(cosc > 0.05)) {
            free(b);
            return tide_error(TIDE_E_RANGE, "north-up grid: the frames span more than a "
                                            "hemisphere of sky; a TAN grid cannot hold them");
        }
        const double xi = cos(d) * sin(dra) / cosc * R2D;
        const double eta = (cd0 * sin(d) - sd0 * cos(d) * cos(dra)) / cosc * R2D;
        const double px = -xi / sc, py = eta / sc;
        xmin = fmin(xmin, px);
        xmax = fmax(xmax, px);
        ymin = fmin(ymin, py);
        ymax = fmax(ymax, py);
    }
    free(b);
    const double wd = ceil(xmax - xmin - 1e-6), ht = ceil(ymax - ymin - 1e-6);
    if (!(wd >= 1 && ht >= 1) || wd > MAX_SIDE || ht > MAX_SIDE)
        return tide_error(TIDE_E_RANGE,
                          "north-up grid: %.0f x %.0f px at %.4g arcsec/px is "
                          "out of range (at most %.0f a side)",
                          wd, ht, scale, MAX_SIDE);
    /* centre the bounding box: FITS pixel p = CRPIX + (-xi / sc); first edge at 0.5 */
    const double crpix1 = 0.5 - xmin + 0.5 * (wd - (xmax - xmin));
    const double crpix2 = 0.5 - ymin + 0.5 * (ht - (ymax - ymin));
    tide_header h;
    tide_header_init(&h);
    char c1[72], c2[72];
    axis_type(s0.ctype1, c1, sizeof c1);
    axis_type(s0.ctype2, c2, sizeof c2);
    /* the axis type padded with '-' to four characters, then "-TAN": "RA---TAN" */
    char k1[16], k2[16];
    snprintf(k1, sizeof k1, "%.4s----", c1);
    snprintf(k2, sizeof k2, "%.4s----", c2);
    memcpy(k1 + 4, "-TAN", 5);
    memcpy(k2 + 4, "-TAN", 5);
    st = tide_header_set_int(&h, "NAXIS", 2, NULL);
    if (!st)
        st = tide_header_set_int(&h, "NAXIS1", (int64_t)wd, NULL);
    if (!st)
        st = tide_header_set_int(&h, "NAXIS2", (int64_t)ht, NULL);
    if (!st)
        st = tide_header_set_str(&h, "CTYPE1", k1, "north-up TAN grid");
    if (!st)
        st = tide_header_set_str(&h, "CTYPE2", k2, NULL);
    if (!st)
        st = tide_header_set_dbl(&h, "CRVAL1", a0, NULL);
    if (!st)
        st = tide_header_set_dbl(&h, "CRVAL2", d0, NULL);
    if (!st)
        st = tide_header_set_dbl(&h, "CRPIX1", crpix1, NULL);
    if (!st)
        st = tide_header_set_dbl(&h, "CRPIX2", crpix2, NULL);
    if (!st)
        st = tide_header_set_dbl(&h, "CD1_1", -sc, "east left");
    if (!st)
        st = tide_header_set_dbl(&h, "CD1_2", 0.0, NULL);
    if (!st)
        st = tide_header_set_dbl(&h, "CD2_1", 0.0, NULL);
    if (!st)
        st = tide_header_set_dbl(&h, "CD2_2", sc, "north up");
    if (!st && s0.radesys[0])
        st = tide_header_set_str(&h, "RADESYS", s0.radesys, NULL);
    if (!st && isfinite(s0.equinox))
        st = tide_header_set_dbl(&h, "EQUINOX", s0.equinox, NULL);
    if (!st)
        st = tide_wcs_from_header(&h, "north-up grid", out);
    tide_header_free(&h);
    if (st)
        return st;
    *out_w = (int64_t)wd;
    *out_h = (int64_t)ht;
    return 0;
}
