/* psf_cpu.c — CPU twins of the PSF stage's per-star kernels: plain loops, one OpenMP
 * iteration per star (each star's sums in one fixed order, so the result does not depend on
 * the thread count). */
#include <math.h>
#include <string.h>

#include "psf_kernels.h"
#include "psf_math.h"
#include "tide/psf.h"

/* Windowed centroid (SE XWIN): x <- x + 2 sum(w I dx) / sum(w I) over a fixed box around the
 * rounded start, until the step is below 1e-4 px. Candidates far too faint to be PSF stars
 * (quick aperture S/N at the start below snr_floor) are turned away first, which saves the
 * iterations for the many faint ones. Returns 0 or a TIDE_PSF_REJ_* bit. */
static int centroid_one(const tide_image *im, const tide_image *rms, const psf_kparams *kp,
                        double x0, double y0, double *xc, double *yc) {
    const int R = kp->cwin;
    int64_t ix, iy;
    const int start = psf_centroid_start(x0, y0, R, im->width, im->height, &ix, &iy);
    if (start)
        return start;
    if (kp->snr_floor > 0.0 && rms && rms->pix) {
        double f = 0.0, var = 0.0;
        for (int j = -R; j <= R; j++)
            for (int i = -R; i <= R; i++) {
                if ((double)(i * i + j * j) > kp->ap_r2)
                    continue;
                const int64_t px = ix + i, py = iy + j;
                const float v = im->pix[py * im->stride + px], r = rms->pix[py * rms->stride + px];
                if (!isfinite(v))
                    continue;
                f += v;
                var += (double)r * r;
            }
        if (!(f > kp->snr_floor * sqrt(var)))
            return TIDE_PSF_REJ_SNR;
    }
    double cx = x0, cy = y0, wx[PSF_MAX_BOX], wy[PSF_MAX_BOX];
    int converged = 0;
    for (int it = 0; it < PSF_CENTROID_ITERS && !converged; it++) {
        double swi = 0.0, sdx = 0.0, sdy = 0.0;
        for (int k = 0; k <= 2 * R; k++) {
            wx[k] = psf_win_1d((double)(ix - R + k) - cx, kp->inv2s2);
            wy[k] = psf_win_1d((double)(iy - R + k) - cy, kp->inv2s2);
        }
        for (int j = -R; j <= R; j++) {
            const int64_t py = iy + j;
            const float *row = im->pix + py * im->stride;
            const uint16_t *mrow = im->mask ? im->mask + py * im->stride : NULL;
            for (int i = -R; i <= R; i++) {
                const int64_t px = ix + i;
                const float v = row[px];
                if (!isfinite(v) || (mrow && (mrow[px] & kp->mask_bits)))
                    continue;
                const double dx = (double)px - cx, dy = (double)py - cy;
                tide_win_add((wx[i + R] * wy[j + R]) * (double)v, dx, dy, &swi, &sdx, &sdy);
            }
        }
        const int moved =
            psf_centroid_move(swi, sdx, sdy, x0, y0, kp->max_shift, &cx, &cy, &converged);
        if (moved)
            return moved;
    }
    if (!converged)
        return TIDE_PSF_REJ_CENTROID;
    *xc = cx;
    *yc = cy;
    return 0;
}

static int measure_one(const tide_image *im, const tide_image *rms, const psf_kparams *kp,
                       double x0, double y0, double *m) {
    for (int k = 0; k < PSF_NMEAS; k++)
        m[k] = 0.0;
    double xc, yc;
    int fl = centroid_one(im, rms, kp, x0, y0, &xc, &yc);
    if (fl)
        return fl;
    m[PSF_M_XC] = xc;
    m[PSF_M_YC] = yc;
    int64_t xl, xh, yl, yh;
    psf_stamp_box(xc, yc, kp->half, &xl, &xh, &yl, &yh);
    if (xl < 0 || yl < 0 || xh >= im->width || yh >= im->height)
        return TIDE_PSF_REJ_EDGE;
    const int64_t cx = (int64_t)floor(xc + 0.5), cy = (int64_t)floor(yc + 0.5);
    const int h = kp->half;
    const int use_rms = rms && rms->pix;
    double sum = 0.0, fap = 0.0, vap = 0.0, cap = 0.0, nring = 0.0, sring = 0.0;
    double peak = -INFINITY, sw = 0.0, swr2 = 0.0, wx[PSF_MAX_BOX], wy[PSF_MAX_BOX];
    for (int64_t k = 0; k <= xh - xl; k++)
        wx[k] = psf_win_1d((double)(xl + k) - xc, kp->inv2s2);
    for (int64_t k = 0; k <= yh - yl; k++)
        wy[k] = psf_win_1d((double)(yl + k) - yc, kp->inv2s2);
    for (int64_t py = yl; py <= yh; py++) {
        const float *row = im->pix + py * im->stride;
        const uint16_t *mrow = im->mask ? im->mask + py * im->stride : NULL;
        const float *rrow = use_rms ? rms->pix + py * rms->stride : NULL;
        for (int64_t px = xl; px <= xh; px++) {
            const float v = row[px];
            const int rj = psf_pixel_reject(v, mrow ? mrow[px] : 0, kp->mask_bits, kp->saturation);
            fl |= rj; /* every pixel is looked at, so the bits are the same on both backends */
            if (rj & TIDE_PSF_REJ_MASKED)
                continue;
            const int64_t sx = px - cx, sy = py - cy;
            if (sx < -h || sx > h || sy < -h || sy > h)
                continue; /* interpolation margin */
            sum += v;
            if (v > peak)
                peak = v;
            const double dx = (double)px - xc, dy = (double)py - yc;
            const double wv = (wx[px - xl] * wy[py - yl]) * (double)v;
            sw += wv;
            swr2 += wv * (dx * dx + dy * dy);
            if (dx * dx + dy * dy <= kp->ap_r2) {
                fap += v;
                if (use_rms)
                    vap += (double)rrow[px] * rrow[px];
                cap += 1.0;
            }
            if (sx == -h || sx == h || sy == -h || sy == h) {
                sring += (double)v * v;
                nring += 1.0;
            }
        }
    }
    if (fl)
        return fl;
    psf_measure_finish(m, sum, fap, vap, cap, sring, nring, peak, use_rms, sw, swr2, kp->inv2s2);
    return 0;
}

int psf_measure_cpu(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                    const psf_kparams *kp, int64_t n, const double *x, const double *y,
                    double *meas, int32_t *flags) {
#pragma omp parallel for num_threads(ctx->threads > 0 ? ctx->threads : 1) schedule(dynamic, 4)
    for (int64_t i = 0; i < n; i++)
        flags[i] = measure_one(sub, rms, kp, x[i], y[i], meas + i * PSF_NMEAS);
    return 0;
}

static void extract_one(const tide_image *im, const psf_kparams *kp, double xc, double yc,
                        float *st, double *sum_out) {
    const int h = kp->half, side = 2 * h + 1;
    const double fx = floor(xc), fy = floor(yc);
    double wx[2 * PSF_LANCZOS_A], wy[2 * PSF_LANCZOS_A];
    psf_lanczos_weights(xc - fx, wx);
    psf_lanczos_weights(yc - fy, wy);
    const int64_t x0 = (int64_t)fx - h - (PSF_LANCZOS_A - 1);
    const int64_t y0 = (int64_t)fy - h - (PSF_LANCZOS_A - 1);
    double sum = 0.0;
    for (int j = 0; j < side; j++)
        for (int i = 0; i < side; i++) {
            const float v = psf_lanczos_sample(im->pix, im->stride, x0 + i, y0 + j, wx, wy);
            st[j * side + i] = v;
            sum += v;
        }
    *sum_out = sum;
    if (sum > 0.0) {
        const float inv = (float)(1.0 / sum);
        for (int k = 0; k < side * side; k++)
            st[k] *= inv;
    }
}

int psf_extract_cpu(tide_ctx *ctx, const tide_image *sub, const psf_kparams *kp, int64_t n,
                    const double *xc, const double *yc, float *stamps, double *sums) {
    const int64_t side = 2 * kp->half + 1;
#pragma omp parallel for num_threads(ctx->threads > 0 ? ctx->threads : 1) schedule(static)
    for (int64_t i = 0; i < n; i++)
        extract_one(sub, kp, xc[i], yc[i], stamps + i * side * side, &sums[i]);
    return 0;
}
