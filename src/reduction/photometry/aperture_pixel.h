/* aperture_pixel.h — how one pixel enters an aperture sum, shared by the CPU and CUDA twins
 * of the circular and Kron kernels (DESIGN §3): read it, or, when it is excluded, stand in
 * its mirror about the aperture centre.
 *
 * Why a mirror. A star is close to point-symmetric about its centroid, so the pixel at
 * (2cx - i, 2cy - j) holds nearly the light the excluded pixel (i, j) would have held
 * (Source Extractor's MASK_TYPE CORRECT does the same). Scaling the unmasked sum by
 * area / unmasked area instead assumes the excluded pixel held the aperture's mean surface
 * brightness: a masked wing pixel is then credited with much more than it had and a masked
 * core pixel with much less, so on frames where cosmic-ray cleaning grazes stars the fluxes
 * come out several per cent high. The scaling stays as the fallback for pixels whose mirror
 * is itself excluded, outside the frame, or the same pixel.
 *
 * For the CUDA twins it also holds the warp's loop over an aperture's box (tide_ap_warp_box,
 * tide_ap_warp_total), which the circular and Kron kernels share. */
#ifndef TIDE_APERTURE_PIXEL_H
#define TIDE_APERTURE_PIXEL_H
#include <math.h>
#include <stdint.h>
#include "core/box_walk.h"
#include "core/gpu/hd.h"
#include "aperture_kernels.h"

/* Value and variance of pixel (i, j), which must be inside the frame; 0 when it is excluded
 * (a mask bit of mask_bits, or a value or variance that is not finite). */
TIDE_HD static inline int tide_ap_read(const tide_ap_planes *im, int64_t i, int64_t j, double *d,
                                       double *v) {
    const float pv = im->pix[j * im->stride + i];
    const float vv = im->var ? im->var[j * im->var_stride + i] : 0.0f;
    if ((im->mask && (im->mask[j * im->stride + i] & im->mask_bits)) || !isfinite(pv) ||
        !isfinite(vv))
        return 0;
    *d = pv;
    *v = vv;
    return 1;
}

/* Running sums of one aperture: sf = Σ w d and sv = Σ w v over the pixels used (read or
 * mirrored), aval = their overlap area; amask = area of the excluded pixels (mirrored or
 * not: it raises TIDE_PHOT_MASKED), amiss = the part of amask no mirror stood in for,
 * aout = area outside the frame. */
typedef struct tide_ap_acc {
    double sf, sv, aval, amask, amiss, aout;
} tide_ap_acc;

TIDE_HD static inline tide_ap_acc tide_ap_acc_zero(void) {
    tide_ap_acc a;
    a.sf = a.sv = a.aval = a.amask = a.amiss = a.aout = 0.0;
    return a;
}

/* Value and variance at the point (mx, my) mirrored from the excluded pixel (i, j): bilinear
 * from the four pixels around it when all four are usable (and none is (i, j)), else the
 * nearest pixel when that one is usable and not (i, j) (Source Extractor's choice); 0 when
 * neither. Interpolating matters on the wings, where the nearest pixel can sit up to
 * 0.7 px nearer the centre than the point it stands for (25% brighter on a σ 2 px star). */
TIDE_HD static inline int tide_ap_mirror(const tide_ap_planes *im, int64_t i, int64_t j, double mx,
                                         double my, double *d, double *v) {
    const double fx0 = floor(mx), fy0 = floor(my);
    const int64_t i0 = (int64_t)fx0, j0 = (int64_t)fy0;
    const double tx = mx - fx0, ty = my - fy0;
    if (i0 >= 0 && j0 >= 0 && i0 + 1 < im->width && j0 + 1 < im->height &&
        !(j >= j0 && j <= j0 + 1 && i >= i0 && i <= i0 + 1)) {
        double d00, v00, d10, v10, d01, v01, d11, v11;
        if (tide_ap_read(im, i0, j0, &d00, &v00) && tide_ap_read(im, i0 + 1, j0, &d10, &v10) &&
            tide_ap_read(im, i0, j0 + 1, &d01, &v01) &&
            tide_ap_read(im, i0 + 1, j0 + 1, &d11, &v11)) {
            const double w00 = (1.0 - tx) * (1.0 - ty), w10 = tx * (1.0 - ty);
            const double w01 = (1.0 - tx) * ty, w11 = tx * ty;
            *d = w00 * d00 + w10 * d10 + w01 * d01 + w11 * d11;
            *v = w00 * v00 + w10 * v10 + w01 * v01 + w11 * v11;
            return 1;
        }
    }
    const int64_t ni = (int64_t)floor(mx + 0.5), nj = (int64_t)floor(my + 0.5);
    if ((ni == i && nj == j) || ni < 0 || nj < 0 || ni >= im->width || nj >= im->height)
        return 0;
    return tide_ap_read(im, ni, nj, d, v);
}

/* Add pixel (i, j) with overlap w of the aperture centred at (cx, cy). With mirror, an
 * excluded pixel in the frame is replaced by the image at its mirror point
 * (2cx - i, 2cy - j) (tide_ap_mirror) where that can be read. */
TIDE_HD static inline void tide_ap_add(tide_ap_acc *a, const tide_ap_planes *im, int64_t i,
                                       int64_t j, double w, double cx, double cy, int mirror) {
    double d, v;
    if (i < 0 || j < 0 || i >= im->width || j >= im->height) {
        a->aout += w;
        return;
    }
    if (!tide_ap_read(im, i, j, &d, &v)) {
        a->amask += w;
        if (!mirror ||
            !tide_ap_mirror(im, i, j, 2.0 * cx - (double)i, 2.0 * cy - (double)j, &d, &v)) {
            a->amiss += w;
            return;
        }
    }
    a->sf += w * d;
    a->sv += w * v;
    a->aval += w;
}

#ifdef __CUDACC__
/* ---- the CUDA twins' pixel loop (aperture_cuda.cu, kron_cuda.cu) ------------------------ */
#include "core/gpu/warp_sum.h"

/* One warp's pass over the box [x0, x1] x [y0, y1]: lane @p lane takes pixels
 * lane, lane + 32, ... in row-major order and adds each one whose weight(i, j) > 0 (its
 * overlap with the aperture) to its partial sums *a with tide_ap_add. */
template <class Weight>
__device__ static inline void tide_ap_warp_box(tide_ap_acc *a, const tide_ap_planes *im, int64_t x0,
                                               int64_t x1, int64_t y0, int64_t y1, double cx,
                                               double cy, int mirror, int lane, Weight weight) {
    const int64_t bw = x1 - x0 + 1, npix = bw * (y1 - y0 + 1);
    int64_t col, row;
    tide_box_walk_start(lane, bw, &col, &row);
    for (int64_t t = lane; t < npix; t += 32, tide_box_walk_step(32, bw, &col, &row)) {
        const int64_t j = y0 + row, i = x0 + col;
        const double w = weight(i, j);
        if (w > 0.0)
            tide_ap_add(a, im, i, j, w, cx, cy, mirror);
    }
}

/* The warp's totals of the six sums (tide_warp_sum: in lane 0). */
__device__ static inline void tide_ap_warp_total(tide_ap_acc *a) {
    a->sf = tide_warp_sum(a->sf);
    a->sv = tide_warp_sum(a->sv);
    a->aval = tide_warp_sum(a->aval);
    a->amask = tide_warp_sum(a->amask);
    a->amiss = tide_warp_sum(a->amiss);
    a->aout = tide_warp_sum(a->aout);
}
#endif

#endif
