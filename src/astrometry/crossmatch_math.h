/* crossmatch_math.h — the per-pair math of the crossmatch, shared by the CPU k-d tree and the
 * CUDA spatial hash so that both pick the same pairs bit for bit.
 *
 * A position becomes a unit vector (cos d cos a, cos d sin a, sin d). The squared chord
 * between two unit vectors, |u - v|^2 = (2 sin(theta/2))^2, is monotonic in the great-circle
 * angle theta, so "nearest" and "within the radius" are decided on it; the separation is
 * theta = 2 asin(c / 2) (e.g. Meeus, Astronomical Algorithms, ch. 17; the chord form keeps full
 * precision at small angles, unlike the cosine formula).
 *
 * Bitwise agreement between the backends needs the same rounding on both sides:
 *  - sine and cosine are our own (exact reduction in degrees, then Taylor polynomials on
 *    |t| <= pi/4 to degree 17/18, truncation < 1e-19), since glibc and the CUDA math library
 *    differ in the last bit;
 *  - every product and sum is rounded on its own (tide_dmul/dadd/dsub, core/gpu/unfused.h:
 *    __dmul_rn etc. on the device, where nvcc would otherwise contract a*b+c into one FMA;
 *    plain operators on the host, where ISO C mode (-std=c11) compiles with
 *    -ffp-contract=off);
 *  - sqrt and division are IEEE correctly rounded on both.
 * asin is a Taylor polynomial too, valid for separations up to 1 degree (the radius limit). */
#ifndef TIDE_CROSSMATCH_MATH_H
#define TIDE_CROSSMATCH_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "core/gpu/unfused.h"

#define TIDE_XM_D2R 0.017453292519943295  /* pi / 180 */
#define TIDE_XM_RAD2AS 206264.80624709636 /* arcsec per radian, 180 * 3600 / pi */
#define TIDE_XM_MAX_RADIUS_ARCSEC 3600.0  /* tide_xmatch_params.radius_arcsec limit */

/** 1 if (ra, dec) in degrees is a usable position: both finite and |dec| <= 90. */
TIDE_HD static inline int tide_xm_valid(double ra, double dec) {
    return isfinite(ra) && isfinite(dec) && fabs(dec) <= 90.0;
}

/** sin and cos of an angle in degrees (finite), the same bits on host and device.
 *  Reduction: fmod by 360 is exact; a - 90 q is exact (q a small integer, |a| < 2^53); only
 *  the conversion to radians rounds. Then sin t = t + t^3 P(t^2), cos t = 1 + t^2 Q(t^2) with
 *  Taylor coefficients 1/n!, Horner in t^2, |t| <= pi/4. */
TIDE_HD static inline void tide_xm_sincosd(double deg, double *s, double *c) {
    const double a = fmod(deg, 360.0);
    const double q = floor(tide_dadd(tide_ddiv(a, 90.0), 0.5));
    const double r = tide_dsub(a, tide_dmul(q, 90.0));
    const double t = tide_dmul(r, TIDE_XM_D2R);
    const double t2 = tide_dmul(t, t);
    double p = -7.647163731819816e-13; /* -1/15!; the 1/17! term follows */
    p = tide_dadd(tide_dmul(2.8114572543455206e-15, t2), p);
    p = tide_dadd(tide_dmul(p, t2), 1.6059043836821613e-10);
    p = tide_dadd(tide_dmul(p, t2), -2.505210838544172e-08);
    p = tide_dadd(tide_dmul(p, t2), 2.7557319223985893e-06);
    p = tide_dadd(tide_dmul(p, t2), -0.0001984126984126984);
    p = tide_dadd(tide_dmul(p, t2), 0.008333333333333333);
    p = tide_dadd(tide_dmul(p, t2), -0.16666666666666666);
    const double sn = tide_dadd(t, tide_dmul(tide_dmul(t, t2), p));
    double k = -1.5619206968586225e-16; /* -1/18! */
    k = tide_dadd(tide_dmul(k, t2), 4.779477332387385e-14);
    k = tide_dadd(tide_dmul(k, t2), -1.1470745597729725e-11);
    k = tide_dadd(tide_dmul(k, t2), 2.08767569878681e-09);
    k = tide_dadd(tide_dmul(k, t2), -2.755731922398589e-07);
    k = tide_dadd(tide_dmul(k, t2), 2.48015873015873e-05);
    k = tide_dadd(tide_dmul(k, t2), -0.001388888888888889);
    k = tide_dadd(tide_dmul(k, t2), 0.041666666666666664);
    k = tide_dadd(tide_dmul(k, t2), -0.5);
    const double cs = tide_dadd(1.0, tide_dmul(t2, k));
    switch (((int)q) & 3) { /* q in -4..4; & 3 is the quadrant for negative q too */
    case 0:
        *s = sn;
        *c = cs;
        break;
    case 1:
        *s = cs;
        *c = -sn;
        break;
    case 2:
        *s = -sn;
        *c = -cs;
        break;
    default:
        *s = -cs;
        *c = sn;
        break;
    }
}

/** Unit vector of a position in degrees (v[0..2]). */
TIDE_HD static inline void tide_xm_unit(double ra, double dec, double *v) {
    double sa, ca, sd, cd;
    tide_xm_sincosd(ra, &sa, &ca);
    tide_xm_sincosd(dec, &sd, &cd);
    v[0] = tide_dmul(cd, ca);
    v[1] = tide_dmul(cd, sa);
    v[2] = sd;
}

/** Squared chord between unit vectors a and b, one fixed order of operations. Symmetric
 *  (fl(a - b) = -fl(b - a)), and never smaller than fl(fl(a_k - b_k)^2) for any axis k: the
 *  k-d tree's pruning bound relies on that (rounding is monotonic). */
TIDE_HD static inline double tide_xm_chord2(const double *a, const double *b) {
    const double dx = tide_dsub(a[0], b[0]);
    const double dy = tide_dsub(a[1], b[1]);
    const double dz = tide_dsub(a[2], b[2]);
    return tide_dadd(tide_dadd(tide_dmul(dx, dx), tide_dmul(dy, dy)), tide_dmul(dz, dz));
}

/** Is candidate j at squared chord d2 better than the current best (bj, bd2)? bj < 0 means
 *  none yet, bd2 then being the radius threshold (a pair at exactly the radius matches).
 *  Ties in distance go to the lower index. */
TIDE_HD static inline int tide_xm_better(double d2, int64_t j, double bd2, int64_t bj) {
    return d2 < bd2 || (d2 == bd2 && (bj < 0 || j < bj));
}

/** Separation in arcsec from the squared chord: 2 asin(c / 2) with asin(x) = x + x^3/6 +
 *  3x^5/40 + 5x^7/112 + 35x^9/1152 + 63x^11/2816 (the Taylor series; for x <= sin(0.5 deg),
 *  i.e. separations up to 1 degree, the rest is < 1e-22 relative). */
TIDE_HD static inline double tide_xm_sep_arcsec(double c2) {
    const double x = tide_dmul(tide_dsqrt(c2), 0.5);
    const double x2 = tide_dmul(x, x);
    double p = 0.022372159090909092;
    p = tide_dadd(tide_dmul(p, x2), 0.030381944444444444);
    p = tide_dadd(tide_dmul(p, x2), 0.044642857142857144);
    p = tide_dadd(tide_dmul(p, x2), 0.075);
    p = tide_dadd(tide_dmul(p, x2), 0.16666666666666666);
    const double as = tide_dadd(x, tide_dmul(tide_dmul(x, x2), p));
    return tide_dmul(tide_dmul(as, 2.0), TIDE_XM_RAD2AS);
}

/* ---- spatial hashing (the CUDA backend; here so that tests can exercise it on the host) - */

/** Search half-width in unit-vector units for a radius chord rc: rc plus a margin that
 *  covers the rounding of the cube computations (see crossmatch_cuda.cu). */
TIDE_HD static inline double tide_xm_hash_margin(double rc) {
    return rc * (1.0 + 1e-12) + 1e-14;
}

/** 1 / side of the hash cubes for squared radius chord r2: side 2 m (a query then scans at
 *  most 2 cubes per axis), but at least 1e-7 (0.02 arcsec) so cube indices stay small. */
TIDE_HD static inline double tide_xm_hash_inv_side(double r2) {
    const double h = 2.0 * tide_xm_hash_margin(sqrt(r2));
    return 1.0 / (h > 1e-7 ? h : 1e-7);
}

/** Index of the cube (side 1 / inv_h) holding unit-vector coordinate x. */
TIDE_HD static inline int64_t tide_xm_cube(double x, double inv_h) {
    return (int64_t)floor(tide_dmul(tide_dadd(x, 1.0), inv_h));
}

/** Cubes [*lo, *hi] along one axis that a query at coordinate x with half-width m must scan.
 *  Rounding is monotonic, so every point within m of x has its tide_xm_cube in the range. */
TIDE_HD static inline void tide_xm_cube_range(double x, double m, double inv_h, int64_t *lo,
                                              int64_t *hi) {
    const double u = tide_dadd(x, 1.0);
    *lo = (int64_t)floor(tide_dmul(tide_dsub(u, m), inv_h));
    *hi = (int64_t)floor(tide_dmul(tide_dadd(u, m), inv_h));
}

/** Bucket of cube (cx, cy, cz) in a table of mask + 1 (a power of two) buckets: a
 *  multiplicative hash of the three indices, then a 64-bit finaliser to spread nearby cubes. */
TIDE_HD static inline uint32_t tide_xm_bucket(int64_t cx, int64_t cy, int64_t cz, uint32_t mask) {
    uint64_t h = (uint64_t)cx * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)cy * 0xC2B2AE3D27D4EB4Full;
    h ^= (uint64_t)cz * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (uint32_t)h & mask;
}

#endif
