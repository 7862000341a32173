/* detect_measure_math.h — per-source measurements (detect.h, step 5), shared by the CPU and
 * CUDA twins.
 *
 * Fixed summation order: a source's pixels (its bounding box, or its centroid window, in
 * raster order) are dealt to TIDE_DET_LANES lanes, pixel p to lane p mod LANES; each lane sums
 * its pixels in order; lanes are merged in a tree (lane i takes lane i + off for off = 16, 8,
 * 4, 2, 1). The GPU runs one warp per source with this very order (warp shuffles); the CPU
 * walks the lanes one after the other. */
#ifndef TIDE_DETECT_MEASURE_MATH_H
#define TIDE_DETECT_MEASURE_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "detect_kernels.h"
#include "reduction/wincentroid_math.h"
#include "tide/detect.h"
#include "tide/image.h"

#define TIDE_DET_LANES 32
#define TIDE_DET_FWHM_SIGMA 2.3548200450309493 /* sqrt(8 ln 2) */

/** Raw views of the images a measurement reads. */
typedef struct tide_det_view {
    const float *sub;
    const uint16_t *mask; /**< may be NULL */
    const float *rms;
    const float *snr;
    const int32_t *seg; /**< stride = width */
    int64_t sub_stride, rms_stride, snr_stride;
    int64_t width, height;
} tide_det_view;

/** Isophotal accumulator (over footprint pixels; coordinates relative to the bbox origin). */
typedef struct tide_det_iso_acc {
    double n, s, sx, sy, sxx, syy, sxy, ux, uy, var;
    float peak, snrmax;
    int64_t peakidx, snridx;
    uint32_t maskor;
    int32_t satur;
} tide_det_iso_acc;

/** Windowed accumulator. */
typedef struct tide_det_win_acc {
    double sw, swx, swy, swxx, swyy, swxy, ex, ey;
    int32_t incomplete, neighbour;
} tide_det_win_acc;

TIDE_HD static inline void tide_det_iso_init(tide_det_iso_acc *a) {
    a->n = a->s = a->sx = a->sy = a->sxx = a->syy = a->sxy = a->ux = a->uy = a->var = 0.0;
    a->peak = -INFINITY;
    a->snrmax = -INFINITY;
    a->peakidx = a->snridx = INT64_MAX;
    a->maskor = 0;
    a->satur = 0;
}

TIDE_HD static inline void tide_det_iso_merge(tide_det_iso_acc *a, const tide_det_iso_acc *b) {
    a->n += b->n;
    a->s += b->s;
    a->sx += b->sx;
    a->sy += b->sy;
    a->sxx += b->sxx;
    a->syy += b->syy;
    a->sxy += b->sxy;
    a->ux += b->ux;
    a->uy += b->uy;
    a->var += b->var;
    if (b->peak > a->peak || (b->peak == a->peak && b->peakidx < a->peakidx)) {
        a->peak = b->peak;
        a->peakidx = b->peakidx;
    }
    if (b->snrmax > a->snrmax || (b->snrmax == a->snrmax && b->snridx < a->snridx)) {
        a->snrmax = b->snrmax;
        a->snridx = b->snridx;
    }
    a->maskor |= b->maskor;
    a->satur |= b->satur;
}

/** Lane @p lane's share of the footprint of source @p id with bbox @p bb. */
TIDE_HD static inline void tide_det_iso_lane(const tide_det_view *v, const tide_det_mparams *mp,
                                             int32_t id, const int32_t *bb, int lane,
                                             tide_det_iso_acc *a) {
    const int64_t bw = (int64_t)bb[2] - bb[0] + 1, bh = (int64_t)bb[3] - bb[1] + 1;
    const int64_t nb = bw * bh;
    for (int64_t p = lane; p < nb; p += TIDE_DET_LANES) {
        int64_t dx = p % bw, dy = p / bw;
        int64_t x = bb[0] + dx, y = bb[1] + dy;
        if (v->seg[y * v->width + x] != id)
            continue;
        float I = v->sub[y * v->sub_stride + x];
        float r = v->rms[y * v->rms_stride + x];
        float sn = v->snr[y * v->snr_stride + x];
        uint16_t m = v->mask ? v->mask[y * v->sub_stride + x] : 0;
        int64_t idx = y * v->width + x;
        a->maskor |= m;
        if (mp->saturation > 0.0 && (double)I >= mp->saturation)
            a->satur = 1;
        a->n += 1.0;
        a->ux += (double)dx;
        a->uy += (double)dy;
        if (isfinite(I)) {
            double d = (double)I;
            a->s += d;
            a->sx += d * (double)dx;
            a->sy += d * (double)dy;
            a->sxx += d * (double)dx * (double)dx;
            a->syy += d * (double)dy * (double)dy;
            a->sxy += d * (double)dx * (double)dy;
            if (I > a->peak || (I == a->peak && idx < a->peakidx)) {
                a->peak = I;
                a->peakidx = idx;
            }
            double var = isfinite(r) ? (double)r * (double)r : 0.0;
            if (mp->gain > 0.0 && d > 0.0)
                var += d / mp->gain;
            a->var += var;
        }
        if (sn > a->snrmax || (sn == a->snrmax && idx < a->snridx)) {
            a->snrmax = sn;
            a->snridx = idx;
        }
    }
}

/** Result of the isophotal pass that the windowed pass needs. */
typedef struct tide_det_iso_res {
    double x, y, x2, y2, xy, fwhm_psf;
} tide_det_iso_res;

/** Turn the merged isophotal accumulator into output columns f[c * nsrc + i]. */
TIDE_HD static inline void tide_det_iso_finish(const tide_det_iso_acc *a,
                                               const tide_det_mparams *mp, const int32_t *bb,
                                               int64_t i, int64_t nsrc, double *f, int64_t *iv,
                                               int32_t *flags, tide_det_iso_res *res) {
    double x, y, x2, y2, xy;
    if (a->s > 0.0) {
        double mx = a->sx / a->s, my = a->sy / a->s;
        x = bb[0] + mx;
        y = bb[1] + my;
        x2 = a->sxx / a->s - mx * mx;
        y2 = a->syy / a->s - my * my;
        xy = a->sxy / a->s - mx * my;
    } else { /* no positive flux: the footprint's geometric centre */
        x = bb[0] + a->ux / a->n;
        y = bb[1] + a->uy / a->n;
        x2 = y2 = 1.0 / 12.0;
        xy = 0.0;
    }
    if (x2 * y2 - xy * xy < 1.0 / 144.0) { /* SE: thin or single-pixel objects */
        x2 += 1.0 / 12.0;
        y2 += 1.0 / 12.0;
    }
    double hd = 0.5 * (x2 - y2);
    double root = sqrt(hd * hd + xy * xy);
    double am = 0.5 * (x2 + y2) + root, bm = 0.5 * (x2 + y2) - root;
    double theta = (x2 != y2 || xy != 0.0) ? 0.5 * atan2(2.0 * xy, x2 - y2) : 0.0;
    theta *= 180.0 / 3.14159265358979323846;
    if (theta <= -90.0)
        theta += 180.0;
    f[TIDE_DET_X * nsrc + i] = x;
    f[TIDE_DET_Y * nsrc + i] = y;
    f[TIDE_DET_X2 * nsrc + i] = x2;
    f[TIDE_DET_Y2 * nsrc + i] = y2;
    f[TIDE_DET_XY * nsrc + i] = xy;
    f[TIDE_DET_A * nsrc + i] = sqrt(am > 0.0 ? am : 0.0);
    f[TIDE_DET_B * nsrc + i] = sqrt(bm > 0.0 ? bm : 0.0);
    f[TIDE_DET_THETA * nsrc + i] = theta;
    f[TIDE_DET_PEAK * nsrc + i] = a->peakidx == INT64_MAX ? NAN : (double)a->peak;
    f[TIDE_DET_SNR * nsrc + i] = (double)a->snrmax;
    f[TIDE_DET_FLUX_ISO * nsrc + i] = a->s;
    f[TIDE_DET_FLUXERR_ISO * nsrc + i] = sqrt(a->var);
    iv[0 * nsrc + i] = (int64_t)a->n;
    iv[1 * nsrc + i] = a->snridx == INT64_MAX ? -1 : a->snridx % mp->width;
    iv[2 * nsrc + i] = a->snridx == INT64_MAX ? -1 : a->snridx / mp->width;
    int32_t fl = 0;
    if (a->satur || (a->maskor & (TIDE_MASK_SATURATED | TIDE_MASK_BLEED)))
        fl |= TIDE_DETECT_FLAG_SATURATED;
    if (bb[0] == 0 || bb[1] == 0 || bb[2] == mp->width - 1 || bb[3] == mp->height - 1)
        fl |= TIDE_DETECT_FLAG_TRUNCATED;
    if (a->maskor & TIDE_MASK_COSMIC)
        fl |= TIDE_DETECT_FLAG_COSMIC;
    if (a->maskor &
        (TIDE_MASK_NODATA | TIDE_MASK_BAD | TIDE_MASK_HOT | TIDE_MASK_COLD | TIDE_MASK_USER))
        fl |= TIDE_DETECT_FLAG_MASKED;
    *flags |= fl;
    /* local PSF FWHM: bilinear between the four corners */
    double u = mp->width > 1 ? x / (double)(mp->width - 1) : 0.5;
    double w = mp->height > 1 ? y / (double)(mp->height - 1) : 0.5;
    u = u < 0.0 ? 0.0 : (u > 1.0 ? 1.0 : u);
    w = w < 0.0 ? 0.0 : (w > 1.0 ? 1.0 : w);
    res->fwhm_psf = (1 - u) * (1 - w) * mp->fwhm_corner[0] + u * (1 - w) * mp->fwhm_corner[1] +
                    (1 - u) * w * mp->fwhm_corner[2] + u * w * mp->fwhm_corner[3];
    res->x = x;
    res->y = y;
    res->x2 = x2;
    res->y2 = y2;
    res->xy = xy;
}

TIDE_HD static inline void tide_det_win_init(tide_det_win_acc *a) {
    a->sw = a->swx = a->swy = a->swxx = a->swyy = a->swxy = a->ex = a->ey = 0.0;
    a->incomplete = a->neighbour = 0;
}

TIDE_HD static inline void tide_det_win_merge(tide_det_win_acc *a, const tide_det_win_acc *b) {
    a->sw += b->sw;
    a->swx += b->swx;
    a->swy += b->swy;
    a->swxx += b->swxx;
    a->swyy += b->swyy;
    a->swxy += b->swxy;
    a->ex += b->ex;
    a->ey += b->ey;
    a->incomplete |= b->incomplete;
    a->neighbour |= b->neighbour;
}

/** Window radius (4 sigma_w, SE's WINPOS_NSIG) and its integer half-box. */
TIDE_HD static inline int64_t tide_det_win_half(double sigw) {
    return (int64_t)ceil(4.0 * sigw);
}

/** Lane @p lane's share of the window centred on (xc, yc). With @p full the pass also sums
 *  second moments, error terms and the flags (the final pass at the converged centre). */
TIDE_HD static inline void tide_det_win_lane(const tide_det_view *v, const tide_det_mparams *mp,
                                             int32_t id, double xc, double yc, double sigw,
                                             double fwhm, int full, int lane, tide_det_win_acc *a) {
    const int64_t h = tide_det_win_half(sigw);
    const int64_t cx = (int64_t)floor(xc + 0.5), cy = (int64_t)floor(yc + 0.5);
    const int64_t side = 2 * h + 1, nb = side * side;
    const double r2max = 16.0 * sigw * sigw, inv2s2 = 0.5 / (sigw * sigw);
    const double rn2 = 2.25 * fwhm * fwhm;
    for (int64_t p = lane; p < nb; p += TIDE_DET_LANES) {
        int64_t x = cx - h + p % side, y = cy - h + p / side;
        double dx = (double)x - xc, dy = (double)y - yc, r2 = dx * dx + dy * dy;
        if (r2 > r2max)
            continue;
        if (x < 0 || y < 0 || x >= v->width || y >= v->height) {
            a->incomplete = 1;
            continue;
        }
        float I = v->sub[y * v->sub_stride + x];
        float r = v->rms[y * v->rms_stride + x];
        uint16_t m = v->mask ? v->mask[y * v->sub_stride + x] : 0;
        if ((m & mp->bad_bits) || !isfinite(I)) {
            a->incomplete = 1;
            continue;
        }
        double w = exp(-r2 * inv2s2), wi = w * (double)I;
        tide_win_add(wi, dx, dy, &a->sw, &a->swx, &a->swy);
        if (!full)
            continue;
        a->swxx += wi * dx * dx;
        a->swyy += wi * dy * dy;
        a->swxy += wi * dx * dy;
        double var = isfinite(r) ? (double)r * (double)r : 0.0;
        if (mp->gain > 0.0 && I > 0.0f)
            var += (double)I / mp->gain;
        a->ex += w * w * var * dx * dx;
        a->ey += w * w * var * dy * dy;
        int32_t s = v->seg[y * v->width + x];
        if (s >= 0 && s != id && r2 <= rn2)
            a->neighbour = 1;
    }
}

/** One SE windowed-centroid step from the merged accumulator: returns 1 when the step is
 *  below eps (converged), 0 to go on, -1 when the window holds no positive flux. */
TIDE_HD static inline int tide_det_win_step(const tide_det_win_acc *a, double eps, double *xc,
                                            double *yc) {
    if (!(a->sw > 0.0))
        return -1;
    double dx, dy;
    tide_win_step(a->sw, a->swx, a->swy, &dx, &dy);
    *xc += dx;
    *yc += dy;
    return dx * dx + dy * dy < eps * eps ? 1 : 0;
}

/** Window sigma for a source from the local PSF FWHM. */
TIDE_HD static inline double tide_det_win_sigma(double fwhm_psf) {
    double s = fwhm_psf / TIDE_DET_FWHM_SIGMA;
    return s > 0.5 ? s : 0.5;
}

/** 1 when a windowed centre stays within the footprint's bbox grown by one pixel. */
TIDE_HD static inline int tide_det_win_inside(const int32_t *bb, double xw, double yw) {
    return xw >= bb[0] - 1.0 && xw <= bb[2] + 1.0 && yw >= bb[1] - 1.0 && yw <= bb[3] + 1.0;
}

/** Finish the windowed quantities from the final pass at (xw, yw); @p ok says whether the
 *  iteration gave a usable centre (when not, the caller passes the barycentre as (xw, yw)
 *  and the source is flagged). */
TIDE_HD static inline void tide_det_win_finish(const tide_det_win_acc *a, const tide_det_iso_res *r,
                                               double sigw, int ok, double xw, double yw, int64_t i,
                                               int64_t nsrc, double *f, int32_t *flags) {
    if (!ok || !(a->sw > 0.0))
        *flags |= TIDE_DETECT_FLAG_WIN_FAILED;
    f[TIDE_DET_XWIN * nsrc + i] = xw;
    f[TIDE_DET_YWIN * nsrc + i] = yw;
    double s2 = a->sw * a->sw;
    f[TIDE_DET_ERRX_WIN * nsrc + i] = a->sw > 0.0 ? sqrt(4.0 * a->ex / s2) : NAN;
    f[TIDE_DET_ERRY_WIN * nsrc + i] = a->sw > 0.0 ? sqrt(4.0 * a->ey / s2) : NAN;
    double sig2 = sigw * sigw, fw;
    double M = 0.0;
    if (a->sw > 0.0) {
        double mx = a->swx / a->sw, my = a->swy / a->sw;
        M = 0.5 * (a->swxx / a->sw - mx * mx + a->swyy / a->sw - my * my);
    }
    if (M > 0.0 && M < 0.9 * sig2)
        fw = TIDE_DET_FWHM_SIGMA * sqrt(M * sig2 / (sig2 - M));
    else
        fw = TIDE_DET_FWHM_SIGMA * sqrt(0.5 * (r->x2 + r->y2));
    f[TIDE_DET_FWHM * nsrc + i] = fw;
    if (a->incomplete)
        *flags |= TIDE_DETECT_FLAG_APER_INCOMPLETE;
    if (a->neighbour)
        *flags |= TIDE_DETECT_FLAG_NEIGHBOURS;
}

#endif
