/* reproject_math.h — the per-output-pixel work of reprojection, shared by the CPU and CUDA
 * twins (DESIGN §3): the mapping (exact TAN/SIP or the interpolated node grid), the kernel
 * weights, and the masked, normalised sums. Double precision throughout; only the stored
 * results are float. */
#ifndef TIDE_REPROJECT_MATH_H
#define TIDE_REPROJECT_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "tide/image.h"
#include "tide/reproject.h"
#include "wcs/tan_sip_math.h"

#define TIDE_RP_PI 3.14159265358979323846

/** Everything one output pixel needs; pointers live where the backend computes. */
typedef struct tide_rp_args {
    const float *pix;     /**< input pixels */
    const uint16_t *mask; /**< input mask or NULL */
    const float *var;     /**< input variance or NULL */
    int64_t in_w, in_h, in_stride;
    float *opix;     /**< output pixels */
    uint16_t *omask; /**< output mask */
    float *ovar;     /**< output variance or NULL (when var is NULL) */
    float *ocov;     /**< coverage or NULL */
    int64_t out_w, out_h, out_stride, cov_stride;
    int kernel;   /**< tide_resample_kind */
    int conserve; /**< multiply by J */
    uint16_t mask_bits;
    int exact; /**< 1: tin/tout per pixel; 0: grid mx/my */
    const tide_wcs_tansip *tin, *tout;
    const double *grid; /**< 3 planes of gnx × gny nodes: mx, my, J */
    int64_t gnx, gny;
    double gstep;
} tide_rp_args;

/** Catmull-Rom weights for t in [0, 1] over nodes -1, 0, 1, 2 (Catmull & Rom 1974; Keys 1981
 *  with a = -1/2): reproduces quadratics, error O(h^3). */
TIDE_HD static inline void tide_rp_cubic_weights(double t, double w[4]) {
    const double t2 = t * t, t3 = t2 * t;
    w[0] = 0.5 * (-t3 + 2.0 * t2 - t);
    w[1] = 0.5 * (3.0 * t3 - 5.0 * t2 + 2.0);
    w[2] = 0.5 * (-3.0 * t3 + 4.0 * t2 + t);
    w[3] = 0.5 * (t3 - t2);
}

/** Interpolate planes c0..c1-1 of the node grid at output position (x, y): node (i, j) sits
 *  at output pixel ((i - 1) step, (j - 1) step); plane 0 is the input x, 1 the input y, 2 the
 *  Jacobian. NaN when a node in the 4×4 stencil is NaN. */
TIDE_HD static inline void tide_rp_grid_eval_planes(const double *g, int64_t gnx, int64_t gny,
                                                    double step, double x, double y, int c0, int c1,
                                                    double out[3]) {
    const int64_t ncx = gnx - 3, ncy = gny - 3; /* cells between the inner nodes */
    const double gx = x / step, gy = y / step;
    int64_t kx = (int64_t)floor(gx), ky = (int64_t)floor(gy);
    if (kx < 0)
        kx = 0;
    if (kx > ncx - 1)
        kx = ncx - 1;
    if (ky < 0)
        ky = 0;
    if (ky > ncy - 1)
        ky = ncy - 1;
    double wx[4], wy[4];
    tide_rp_cubic_weights(gx - (double)kx, wx);
    tide_rp_cubic_weights(gy - (double)ky, wy);
    const int64_t plane = gnx * gny;
    for (int c = c0; c < c1; c++) {
        const double *p = g + c * plane;
        double s = 0.0;
        for (int j = 0; j < 4; j++) {
            const double *row = p + (ky + j) * gnx + kx;
            const double r = wx[0] * row[0] + wx[1] * row[1] + wx[2] * row[2] + wx[3] * row[3];
            s += wy[j] * r;
        }
        out[c] = s;
    }
}

/** All three planes (mx, my, J) at (x, y). */
TIDE_HD static inline void tide_rp_grid_eval(const double *g, int64_t gnx, int64_t gny, double step,
                                             double x, double y, double out[3]) {
    tide_rp_grid_eval_planes(g, gnx, gny, step, x, y, 0, 3, out);
}

/** Positions closer than this to a pixel centre (pixels) are resampled as on it. */
#define TIDE_RP_SNAP 1e-9

/** Kernel weights along one axis for position f: taps first..first+n-1, weights w[0..n-1]. */
TIDE_HD static inline int tide_rp_axis_weights(int kernel, double f, int64_t *first, double w[6]) {
    if (kernel == TIDE_RESAMPLE_NEAREST) {
        *first = (int64_t)floor(f + 0.5);
        w[0] = 1.0;
        return 1;
    }
    double fl = floor(f), t = f - fl;
    /* Snap positions within TIDE_RP_SNAP of a pixel centre onto it. Otherwise the last bits of
     * a mapping (which differ between the host and the device compilers) decide whether the
     * neighbours get a weight of 0 or of 1e-13 — and with it whether their mask bits (EDGE,
     * BAD...) reach the output. The shift this makes is below any astrometric meaning. */
    if (t < TIDE_RP_SNAP) {
        t = 0.0;
    } else if (t > 1.0 - TIDE_RP_SNAP) {
        fl += 1.0;
        t = 0.0;
    }
    if (kernel == TIDE_RESAMPLE_BILINEAR) {
        *first = (int64_t)fl;
        w[0] = 1.0 - t;
        w[1] = t;
        return 2;
    }
    /* Lanczos-3 at d_j = t - (j - 2), j = 0..5. sin(pi d_j) = (-1)^j sin(pi t), and
     * sin(pi d_j / 3) = sin(a - b_j) with a = pi t / 3, b_j = pi (j - 2) / 3: two sin/cos
     * pairs per axis instead of twelve sines. */
    *first = (int64_t)fl - 2;
    const double s1 = sin(TIDE_RP_PI * t);
    const double a = TIDE_RP_PI * t / 3.0, sa = sin(a), ca = cos(a);
    /* cos(b_j), sin(b_j) for b_j = -2pi/3, -pi/3, 0, pi/3, 2pi/3, pi */
    const double h = 0.86602540378443864676; /* sqrt(3)/2 */
    const double cb[6] = {-0.5, 0.5, 1.0, 0.5, -0.5, -1.0};
    const double sb[6] = {-h, -h, 0.0, h, h, 0.0};
#ifdef __CUDACC__
#pragma unroll /* keeps cb/sb in registers instead of local memory */
#endif
    for (int j = 0; j < 6; j++) {
        const double d = t - (double)(j - 2);
        if (fabs(d) < 1e-12) {
            w[j] = 1.0;
            continue;
        }
        if (fabs(d) >= 3.0) {
            w[j] = 0.0;
            continue;
        }
        const double sp = (j & 1) ? -s1 : s1;
        const double sp3 = sa * cb[j] - ca * sb[j];
        w[j] = 3.0 * sp * sp3 / (TIDE_RP_PI * TIDE_RP_PI * d * d);
    }
    return 6;
}

/** The input position and Jacobian of output pixel (x, y). */
TIDE_HD static inline void tide_rp_map(const tide_rp_args *a, int64_t x, int64_t y, double *fx,
                                       double *fy, double *jac) {
    /* exact mode needs only the Jacobian plane, and that only when conserving flux */
    double g[3] = {0.0, 0.0, 1.0};
    const int c0 = a->exact ? 2 : 0, c1 = a->conserve ? 3 : 2;
    if (c1 > c0)
        tide_rp_grid_eval_planes(a->grid, a->gnx, a->gny, a->gstep, (double)x, (double)y, c0, c1,
                                 g);
    *jac = g[2];
    if (a->exact) {
        double ra, dec;
        tide_tansip_pix2sky_one(a->tout, (double)x, (double)y, &ra, &dec);
        tide_tansip_sky2pix_one(a->tin, ra, dec, fx, fy);
    } else {
        *fx = g[0];
        *fy = g[1];
    }
}

/** Resample output pixel (x, y) and store its value, mask, variance and coverage. */
TIDE_HD static inline void tide_rp_pixel(const tide_rp_args *a, int64_t x, int64_t y) {
    double fx, fy, jac;
    tide_rp_map(a, x, y, &fx, &fy, &jac);
    const int64_t o = y * a->out_stride + x;
    const int64_t W = a->in_w, H = a->in_h;
    int empty = !(fx >= -0.5 && fx < (double)W - 0.5 && fy >= -0.5 && fy < (double)H - 0.5);
    uint16_t m = 0;
    if (!empty) {
        const int64_t nx = (int64_t)floor(fx + 0.5), ny = (int64_t)floor(fy + 0.5);
        const int64_t k = ny * a->in_stride + nx;
        if (!isfinite(a->pix[k]) || (a->var && !isfinite(a->var[k]))) {
            empty = 1;
            if (a->mask)
                m = (uint16_t)(a->mask[k] & a->mask_bits);
        }
    }
    double sw = 0.0, swv = 0.0, swwv = 0.0, sabs = 0.0, sabs_ok = 0.0;
    if (!empty) {
        double wx[6], wy[6];
        int64_t x0, y0;
        const int n = tide_rp_axis_weights(a->kernel, fx, &x0, wx);
        tide_rp_axis_weights(a->kernel, fy, &y0, wy);
        const int inside = x0 >= 0 && y0 >= 0 && x0 + n <= W && y0 + n <= H;
        if (inside && !a->mask && !a->var) {
            /* the common case of a plain frame: no bounds, mask or variance to look at */
            for (int j = 0; j < n; j++) {
                const float *row = a->pix + (y0 + j) * a->in_stride + x0;
                for (int i = 0; i < n; i++) {
                    const double w = wx[i] * wy[j], v = row[i];
                    sabs += fabs(w);
                    if (w == 0.0 || !isfinite(v))
                        continue;
                    sw += w;
                    swv += w * v;
                    sabs_ok += fabs(w);
                }
            }
        } else if (inside) {
            for (int j = 0; j < n; j++) {
                const int64_t r = (y0 + j) * a->in_stride + x0;
                for (int i = 0; i < n; i++) {
                    const double w = wx[i] * wy[j];
                    if (w == 0.0)
                        continue;
                    sabs += fabs(w);
                    if (a->mask)
                        m |= (uint16_t)(a->mask[r + i] & a->mask_bits);
                    const double v = a->pix[r + i];
                    const double vv = a->var ? (double)a->var[r + i] : 0.0;
                    if (!isfinite(v) || !isfinite(vv))
                        continue;
                    sw += w;
                    swv += w * v;
                    swwv += w * w * vv;
                    sabs_ok += fabs(w);
                }
            }
        } else {
            for (int j = 0; j < n; j++) {
                if (wy[j] == 0.0)
                    continue;
                const int64_t yy = y0 + j;
                for (int i = 0; i < n; i++) {
                    const double w = wx[i] * wy[j];
                    if (w == 0.0)
                        continue;
                    const int64_t xx = x0 + i;
                    sabs += fabs(w);
                    if (xx < 0 || xx >= W || yy < 0 || yy >= H) {
                        m |= TIDE_MASK_EDGE;
                        continue;
                    }
                    const int64_t k = yy * a->in_stride + xx;
                    if (a->mask)
                        m |= (uint16_t)(a->mask[k] & a->mask_bits);
                    const double v = a->pix[k];
                    const double vv = a->var ? (double)a->var[k] : 0.0;
                    if (!isfinite(v) || !isfinite(vv))
                        continue;
                    sw += w;
                    swv += w * v;
                    swwv += w * w * vv;
                    sabs_ok += fabs(w);
                }
            }
        }
        if (!(sw > 0.0))
            empty = 1;
    }
    if (empty || (a->conserve && !isfinite(jac))) {
        a->opix[o] = NAN;
        a->omask[o] = (uint16_t)(m | TIDE_MASK_NODATA);
        if (a->ovar)
            a->ovar[o] = NAN;
        if (a->ocov)
            a->ocov[y * a->cov_stride + x] = 0.0f;
        return;
    }
    double v = swv / sw, vv = swwv / (sw * sw);
    if (a->conserve) {
        v *= jac;
        vv *= jac * jac;
    }
    a->opix[o] = (float)v;
    a->omask[o] = m;
    if (a->ovar)
        a->ovar[o] = (float)vv;
    if (a->ocov)
        a->ocov[y * a->cov_stride + x] = (float)(sabs_ok / sabs);
}

#endif
