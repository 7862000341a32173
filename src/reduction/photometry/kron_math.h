/* kron_math.h — per-source Kron geometry shared by the CPU and CUDA twins: the ellipse of a
 * source, the bounding box of a scaled ellipse, and the Kron radius from the first moment
 * (Kron 1980, ApJS 43, 305; Source Extractor's FLUX_AUTO with PHOT_AUTOPARAMS k, R_min). */
#ifndef TIDE_KRON_MATH_H
#define TIDE_KRON_MATH_H
#include <math.h>
#include <stdint.h>
#include "core/gpu/hd.h"
#include "aperture_math.h"

typedef struct tide_kron_geom {
    double cxx, cyy, cxy; /* r² = cxx dx² + cyy dy² + cxy dx dy, r = 1 on the A, B ellipse */
    double ex, ey;        /* half-extents of the r = 1 ellipse, px */
    double reach;         /* a pixel's half-diagonal in ellipse units (worst direction) */
    int ok;
} tide_kron_geom;

TIDE_HD static inline tide_kron_geom tide_kron_geometry(double a, double b, double theta_deg) {
    tide_kron_geom g;
    g.ok = a > 0.0 && b > 0.0 && isfinite(a) && isfinite(b) && isfinite(theta_deg);
    if (!g.ok) {
        a = b = 1.0;
        theta_deg = 0.0;
    }
    if (b > a) { /* keep A >= B */
        const double t = a;
        a = b;
        b = t;
        theta_deg += 90.0;
    }
    const double th = theta_deg * 0.017453292519943295;
    tide_ap_ellipse_coeffs(a, b, th, &g.cxx, &g.cyy, &g.cxy);
    tide_ap_ellipse_extent(a, b, th, &g.ex, &g.ey);
    g.reach = 0.7071067811865476 / b;
    return g;
}

/* Pixel box [x0, x1] × [y0, y1] holding the ellipse of scale R around (cx, cy). */
TIDE_HD static inline void tide_kron_box(const tide_kron_geom *g, double cx, double cy, double R,
                                         int64_t *x0, int64_t *x1, int64_t *y0, int64_t *y1) {
    *x0 = (int64_t)floor(cx - R * g->ex - 0.5);
    *x1 = (int64_t)ceil(cx + R * g->ex + 0.5);
    *y0 = (int64_t)floor(cy - R * g->ey - 0.5);
    *y1 = (int64_t)ceil(cy + R * g->ey + 0.5);
}

/* Kron radius K = max(k · r1 / v1, R_min) in ellipse units; *failed when the moment is
 * undefined (then K = R_min, or k if R_min is 0). */
TIDE_HD static inline double tide_kron_radius(double r1, double v1, double kfact, double rmin,
                                              int *failed) {
    double K;
    *failed = !(v1 > 0.0 && r1 > 0.0);
    K = *failed ? (rmin > 0.0 ? rmin : kfact) : kfact * r1 / v1;
    return K < rmin ? rmin : K;
}

#endif
