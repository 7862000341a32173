/* aperture_math.h — exact circle–pixel overlap and the per-pixel photometry math shared by
 * the CPU and CUDA twins (DESIGN §3). Everything is double precision.
 *
 * Exact overlap. The area of {u² + v² ≤ r²} ∩ [x0, x1] × [y0, y1] is ∫ L(u) du over
 * [x0, x1] ∩ [-r, r], where L(u) = max(0, min(y1, h(u)) - max(y0, -h(u))) and
 * h(u) = sqrt(r² - u²). L is, between consecutive breakpoints (the ends, and u = ±sqrt(r² -
 * y²) for y = y0, y1), one of y1 - y0, h - y0, y1 + h, 2h or 0, so the integral is exact with
 * the antiderivative of h. That antiderivative is evaluated as "trapezoid under the chord plus
 * circular segment", A = (q - p)(h(p) + h(q))/2 + r²/2 (φ - sin φ), with the central angle φ
 * from atan2 of the cross and dot products of the two rim points, and φ - sin φ from its
 * series for small φ: this keeps full relative precision for tiny pieces and huge radii,
 * where the textbook x·h/2 + r²/2·asin(x/r) difference cancels. The geometry is the same as
 * sep's and photutils' "exact" mode (the area of intersection of the circle with the unit
 * square), derived here independently. */
#ifndef TIDE_APERTURE_MATH_H
#define TIDE_APERTURE_MATH_H
#include <math.h>
#include <stdint.h>
#include "core/gpu/hd.h"

/* sqrt(r² - u²) written to keep precision near |u| = r. */
TIDE_HD static inline double tide_ap_halfchord(double r, double u) {
    const double t = (r - u) * (r + u);
    return t > 0.0 ? sqrt(t) : 0.0;
}

/* φ - sin φ, accurate for small φ (relative error < 1e-16 for φ < 0.05). */
TIDE_HD static inline double tide_ap_phi_minus_sin(double phi) {
    if (phi < 0.05) {
        const double p2 = phi * phi;
        return phi * p2 * (1.0 / 6.0 - p2 * (1.0 / 120.0 - p2 * (1.0 / 5040.0 - p2 / 362880.0)));
    }
    return phi - sin(phi);
}

/* ∫_p^q sqrt(r² - u²) du for -r <= p <= q <= r: trapezoid under the chord plus the segment. */
TIDE_HD static inline double tide_ap_arc_integral(double r, double p, double q) {
    const double hp = tide_ap_halfchord(r, p), hq = tide_ap_halfchord(r, q);
    /* rim points P = (p, hp), Q = (q, hq); the angle from P to Q, clockwise, is in [0, π] */
    const double cross = hp * q - p * hq, dot = p * q + hp * hq;
    double phi = atan2(cross, dot);
    if (phi < 0.0)
        phi = 0.0;
    return 0.5 * (q - p) * (hp + hq) + 0.5 * r * r * tide_ap_phi_minus_sin(phi);
}

/* Area of the intersection of the disc of radius r centred at the origin with the rectangle
 * [x0, x1] × [y0, y1] (x0 <= x1, y0 <= y1). Exact up to rounding. */
TIDE_HD static inline double tide_ap_circle_rect(double x0, double x1, double y0, double y1,
                                                 double r) {
    if (!(r > 0.0))
        return 0.0;
    const double a = x0 > -r ? x0 : -r, b = x1 < r ? x1 : r;
    if (!(a < b) || y0 >= r || y1 <= -r || !(y0 < y1))
        return 0.0;
    double bp[6];
    int nb = 0;
    bp[nb++] = a;
    const double ys[2] = {y0, y1};
    for (int k = 0; k < 2; k++) {
        const double ay = fabs(ys[k]);
        if (ay < r) {
            const double s = tide_ap_halfchord(r, ay);
            if (-s > a && -s < b)
                bp[nb++] = -s;
            if (s > a && s < b)
                bp[nb++] = s;
        }
    }
    bp[nb++] = b;
    /* insertion sort of at most six values */
    for (int i = 1; i < nb; i++) {
        const double v = bp[i];
        int j = i - 1;
        while (j >= 0 && bp[j] > v) {
            bp[j + 1] = bp[j];
            j--;
        }
        bp[j + 1] = v;
    }
    double area = 0.0;
    for (int i = 0; i + 1 < nb; i++) {
        const double p = bp[i], q = bp[i + 1];
        if (!(q > p))
            continue;
        const double m = 0.5 * (p + q), hm = tide_ap_halfchord(r, m);
        /* <=: at a tangency (y1 = r) the midpoint may be the touching point */
        const int top_arc = hm <= y1, bot_arc = -hm >= y0;
        const double topv = top_arc ? hm : y1, botv = bot_arc ? -hm : y0;
        if (topv <= botv)
            continue; /* the strip misses the disc here */
        const double w = q - p;
        if (top_arc && bot_arc) {
            area += 2.0 * tide_ap_arc_integral(r, p, q);
        } else if (top_arc) {
            area += tide_ap_arc_integral(r, p, q) - y0 * w;
        } else if (bot_arc) {
            area += y1 * w + tide_ap_arc_integral(r, p, q);
        } else {
            area += (y1 - y0) * w;
        }
    }
    return area;
}

/* Overlap of pixel (i, j) (unit square centred on integer coordinates) with the circle of
 * radius r centred at (cx, cy). Fast paths for pixels wholly inside or outside. */
TIDE_HD static inline double tide_ap_pixel_overlap(int64_t i, int64_t j, double cx, double cy,
                                                   double r) {
    const double dx = (double)i - cx, dy = (double)j - cy;
    const double adx = fabs(dx), ady = fabs(dy);
    /* nearest and farthest points of the pixel from the centre */
    const double nx = adx > 0.5 ? adx - 0.5 : 0.0, ny = ady > 0.5 ? ady - 0.5 : 0.0;
    const double r2 = r * r;
    if (nx * nx + ny * ny >= r2)
        return 0.0;
    const double fx = adx + 0.5, fy = ady + 0.5;
    if (fx * fx + fy * fy <= r2)
        return 1.0;
    /* by symmetry, use the folded pixel in the first quadrant */
    return tide_ap_circle_rect(adx - 0.5, adx + 0.5, ady - 0.5, ady + 0.5, r);
}

/* First and last pixel index (inclusive) that can overlap [c - r, c + r]. */
TIDE_HD static inline void tide_ap_range(double c, double r, int64_t *lo, int64_t *hi) {
    *lo = (int64_t)ceil(c - r - 0.5);
    *hi = (int64_t)floor(c + r + 0.5);
}

/* ---- ellipses (Kron) -------------------------------------------------------------------- */

/* Ellipse coefficients of SE: r² = cxx dx² + cyy dy² + cxy dx dy, with r = 1 on the ellipse
 * of semi-axes a, b at angle theta (radians, counter-clockwise from +x). */
TIDE_HD static inline void tide_ap_ellipse_coeffs(double a, double b, double theta, double *cxx,
                                                  double *cyy, double *cxy) {
    const double c = cos(theta), s = sin(theta);
    const double ia2 = 1.0 / (a * a), ib2 = 1.0 / (b * b);
    *cxx = c * c * ia2 + s * s * ib2;
    *cyy = s * s * ia2 + c * c * ib2;
    *cxy = 2.0 * c * s * (ia2 - ib2);
}

/* Half-extents in x and y of the ellipse of semi-axes a, b at angle theta. */
TIDE_HD static inline void tide_ap_ellipse_extent(double a, double b, double theta, double *ex,
                                                  double *ey) {
    const double c = cos(theta), s = sin(theta);
    *ex = sqrt(a * a * c * c + b * b * s * s);
    *ey = sqrt(a * a * s * s + b * b * c * c);
}

/* Fraction of the pixel whose centre is at offset (dx, dy) from the ellipse centre that lies
 * inside cxx dx² + cyy dy² + cxy dx dy <= R² (R in ellipse units). subpix <= 1: the centre
 * decides (Source Extractor's FLUX_AUTO). Otherwise: 0 when the centre is farther than
 * R + reach (reach = the pixel's half-diagonal in ellipse units), 1 when all four corners are
 * inside (the ellipse is convex), else the fraction of subpix × subpix sample points inside. */
TIDE_HD static inline double tide_ap_ellipse_frac(double dx, double dy, double cxx, double cyy,
                                                  double cxy, double R, double reach, int subpix) {
    const double R2 = R * R;
    if (subpix <= 1)
        return (cxx * dx * dx + cyy * dy * dy + cxy * dx * dy <= R2) ? 1.0 : 0.0;
    const double rc = sqrt(cxx * dx * dx + cyy * dy * dy + cxy * dx * dy);
    if (rc > R + reach)
        return 0.0;
    int inside = 0;
    for (int k = 0; k < 4; k++) {
        const double ux = dx + ((k & 1) ? 0.5 : -0.5), uy = dy + ((k & 2) ? 0.5 : -0.5);
        inside += (cxx * ux * ux + cyy * uy * uy + cxy * ux * uy <= R2);
    }
    if (inside == 4)
        return 1.0;
    const double step = 1.0 / subpix, off = -0.5 + 0.5 * step;
    int cnt = 0;
    for (int sy = 0; sy < subpix; sy++) {
        const double uy = dy + off + sy * step;
        for (int sx = 0; sx < subpix; sx++) {
            const double ux = dx + off + sx * step;
            cnt += (cxx * ux * ux + cyy * uy * uy + cxy * ux * uy <= R2);
        }
    }
    return (double)cnt / (double)(subpix * subpix);
}

/* ---- aperture totals -------------------------------------------------------------------- */

/* Turn the sums of one aperture into flux, error and flags (photometry.h, "Variance"):
 * sf = Σ w d, sv = Σ w v over used pixels (read or mirrored, aperture_pixel.h), aval = their
 * overlap area, amask = area of excluded pixels (flags TIDE_PHOT_MASKED), amiss = the part of
 * amask no mirror replaced, aout = area outside the frame; bkg, bkg_err = local background
 * per pixel and its error. With mask_correct the flux of the amiss area is taken as the
 * mean of the used area (flux and variance scaled by (aval + amiss) / aval): the fallback
 * where no mirror pixel could stand in. */
TIDE_HD static inline void tide_ap_finalize(double sf, double sv, double aval, double amask,
                                            double amiss, double aout, double bkg, double bkg_err,
                                            int mask_correct, double gain_eff, double *flux,
                                            double *err, int32_t *flags) {
    double f = sf - bkg * aval;
    double v = sv + aval * aval * bkg_err * bkg_err;
    int32_t fl = 0;
    if (amask > 0.0)
        fl |= 1 << 12; /* TIDE_PHOT_MASKED */
    if (mask_correct && amiss > 0.0 && aval > 0.0) {
        const double k = (aval + amiss) / aval;
        f *= k;
        v *= k * k;
    }
    if (aout > 0.0)
        fl |= 16; /* TIDE_PHOT_TRUNCATED */
    if (gain_eff > 0.0 && f > 0.0)
        v += f / gain_eff;
    *flux = f;
    *err = sqrt(v > 0.0 ? v : 0.0);
    *flags = fl;
}

/* Lanes of the fixed summation order of the annulus statistics: lane l adds elements l,
 * l + LANES, ... of a range in turn, then lanes are added pairwise (l += l + 128, 64, ...),
 * on both backends (the CUDA block has this many threads). */
#define TIDE_AP_LANES 256

/* Median of the sorted values v[lo..hi) as numpy.median. */
TIDE_HD static inline double tide_ap_sorted_median(const float *v, int lo, int hi) {
    const int n = hi - lo;
    if (n <= 0)
        return NAN;
    if (n & 1)
        return (double)v[lo + n / 2];
    return 0.5 * ((double)v[lo + n / 2 - 1] + (double)v[lo + n / 2]);
}

/* First index in sorted v[lo..hi) with v >= t (lower bound). */
TIDE_HD static inline int tide_ap_lower_bound(const float *v, int lo, int hi, double t) {
    while (lo < hi) {
        const int m = lo + (hi - lo) / 2;
        if ((double)v[m] < t)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* First index in sorted v[lo..hi) with v > t (upper bound). */
TIDE_HD static inline int tide_ap_upper_bound(const float *v, int lo, int hi, double t) {
    while (lo < hi) {
        const int m = lo + (hi - lo) / 2;
        if ((double)v[m] <= t)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

#endif
