/* psf_cuda.cu — CUDA twins of the PSF stage's per-star kernels: one block per star, the
 * block's threads share the star's pixels, and every sum is a fixed-order shared-memory tree
 * (no atomics), so a run is bitwise repeatable. The per-pixel math is psf_math.h's. */
#include <cuda_runtime.h>

#include "core/gpu/cuda_check.h"
#include "core/gpu/warp_sum.h"
#include "psf_kernels.h"
#include "psf_math.h"

#define PSF_THREADS 128

__device__ static double block_max(double v, double *sh) {
    const int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = PSF_THREADS / 2; s > 0; s >>= 1) {
        if (t < s && sh[t + s] > sh[t])
            sh[t] = sh[t + s];
        __syncthreads();
    }
    const double r = sh[0];
    __syncthreads();
    return r;
}

__device__ static int block_or(int v, int *sh) {
    const int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = PSF_THREADS / 2; s > 0; s >>= 1) {
        if (t < s)
            sh[t] |= sh[t + s];
        __syncthreads();
    }
    const int r = sh[0];
    __syncthreads();
    return r;
}

/* Windowed centroid of one star by the whole block; same iteration as psf_cpu.c. Every
 * thread holds the same (cx, cy) since every thread sees the same block sums. */
__device__ static int centroid_block(const tide_image im, const float *rpix, int64_t rstride,
                                     const psf_kparams kp, double x0, double y0, double *xc,
                                     double *yc, double *sh, double *wx, double *wy) {
    const int R = kp.cwin, side = 2 * R + 1;
    int64_t ix, iy;
    const int start = psf_centroid_start(x0, y0, R, im.width, im.height, &ix, &iy);
    if (start)
        return start;
    if (kp.snr_floor > 0.0 && rpix) {
        double f = 0.0, var = 0.0;
        for (int k = threadIdx.x; k < side * side; k += PSF_THREADS) {
            const int i = k % side - R, j = k / side - R;
            if ((double)(i * i + j * j) > kp.ap_r2)
                continue;
            const int64_t px = ix + i, py = iy + j;
            const float v = im.pix[py * im.stride + px], r = rpix[py * rstride + px];
            if (!isfinite(v))
                continue;
            f += v;
            var += (double)r * r;
        }
        f = tide_block_tree_sum<PSF_THREADS>(f, sh);
        var = tide_block_tree_sum<PSF_THREADS>(var, sh);
        if (!(f > kp.snr_floor * sqrt(var)))
            return TIDE_PSF_REJ_SNR;
    }
    double cx = x0, cy = y0;
    int converged = 0;
    for (int it = 0; it < PSF_CENTROID_ITERS && !converged; it++) {
        double swi = 0.0, sdx = 0.0, sdy = 0.0;
        for (int k = threadIdx.x; k < 2 * side; k += PSF_THREADS) {
            if (k < side)
                wx[k] = psf_win_1d((double)(ix - R + k) - cx, kp.inv2s2);
            else
                wy[k - side] = psf_win_1d((double)(iy - R + k - side) - cy, kp.inv2s2);
        }
        __syncthreads();
        for (int k = threadIdx.x; k < side * side; k += PSF_THREADS) {
            const int64_t px = ix - R + k % side, py = iy - R + k / side;
            const float v = im.pix[py * im.stride + px];
            if (!isfinite(v) || (im.mask && (im.mask[py * im.stride + px] & kp.mask_bits)))
                continue;
            const double dx = (double)px - cx, dy = (double)py - cy;
            tide_win_add((wx[k % side] * wy[k / side]) * (double)v, dx, dy, &swi, &sdx, &sdy);
        }
        swi = tide_block_tree_sum<PSF_THREADS>(swi, sh);
        sdx = tide_block_tree_sum<PSF_THREADS>(sdx, sh);
        sdy = tide_block_tree_sum<PSF_THREADS>(sdy, sh);
        const int moved =
            psf_centroid_move(swi, sdx, sdy, x0, y0, kp.max_shift, &cx, &cy, &converged);
        if (moved)
            return moved;
    }
    if (!converged)
        return TIDE_PSF_REJ_CENTROID;
    *xc = cx;
    *yc = cy;
    return 0;
}

__global__ void psf_measure_kernel(const tide_image im, const float *rpix, int64_t rstride,
                                   const psf_kparams kp, int64_t n, const double *x,
                                   const double *y, double *meas, int32_t *flags) {
    __shared__ double sh[PSF_THREADS];
    __shared__ int shi[PSF_THREADS];
    __shared__ double wx[PSF_MAX_BOX], wy[PSF_MAX_BOX];
    const int use_rms = rpix != NULL;
    for (int64_t s = blockIdx.x; s < n; s += gridDim.x) {
        double *m = meas + s * PSF_NMEAS;
        double xc = 0.0, yc = 0.0;
        int fl = centroid_block(im, rpix, rstride, kp, x[s], y[s], &xc, &yc, sh, wx, wy);
        int64_t xl = 0, xh = -1, yl = 0, yh = -1;
        if (!fl) {
            psf_stamp_box(xc, yc, kp.half, &xl, &xh, &yl, &yh);
            if (xl < 0 || yl < 0 || xh >= im.width || yh >= im.height)
                fl = TIDE_PSF_REJ_EDGE;
        }
        if (fl) {
            if (threadIdx.x == 0) {
                for (int k = 0; k < PSF_NMEAS; k++)
                    m[k] = 0.0;
                if (xh >= xl) { /* the centroid converged; its stamp leaves the frame */
                    m[PSF_M_XC] = xc;
                    m[PSF_M_YC] = yc;
                }
                flags[s] = fl;
            }
            continue;
        }
        const int64_t cx = (int64_t)floor(xc + 0.5), cy = (int64_t)floor(yc + 0.5);
        const int h = kp.half;
        const int64_t bw = xh - xl + 1, bh = yh - yl + 1, nb = bw * bh;
        for (int64_t k = threadIdx.x; k < bw + bh; k += PSF_THREADS) {
            if (k < bw)
                wx[k] = psf_win_1d((double)(xl + k) - xc, kp.inv2s2);
            else
                wy[k - bw] = psf_win_1d((double)(yl + k - bw) - yc, kp.inv2s2);
        }
        __syncthreads();
        double sum = 0.0, fap = 0.0, vap = 0.0, cap = 0.0, nring = 0.0, sring = 0.0;
        double peak = -INFINITY, sw = 0.0, swr2 = 0.0;
        int lfl = 0;
        for (int64_t k = threadIdx.x; k < nb; k += PSF_THREADS) {
            const int64_t px = xl + k % bw, py = yl + k / bw;
            const float v = im.pix[py * im.stride + px];
            const int rj = psf_pixel_reject(v, im.mask ? im.mask[py * im.stride + px] : 0,
                                            kp.mask_bits, kp.saturation);
            lfl |= rj;
            if (rj & TIDE_PSF_REJ_MASKED)
                continue;
            const int64_t sx = px - cx, sy = py - cy;
            if (sx < -h || sx > h || sy < -h || sy > h)
                continue;
            sum += v;
            if (v > peak)
                peak = v;
            const double dx = (double)px - xc, dy = (double)py - yc;
            const double wv = (wx[px - xl] * wy[py - yl]) * (double)v;
            sw += wv;
            swr2 += wv * (dx * dx + dy * dy);
            if (dx * dx + dy * dy <= kp.ap_r2) {
                fap += v;
                if (use_rms)
                    vap += (double)rpix[py * rstride + px] * rpix[py * rstride + px];
                cap += 1.0;
            }
            if (sx == -h || sx == h || sy == -h || sy == h) {
                sring += (double)v * v;
                nring += 1.0;
            }
        }
        fl = block_or(lfl, shi);
        sum = tide_block_tree_sum<PSF_THREADS>(sum, sh);
        fap = tide_block_tree_sum<PSF_THREADS>(fap, sh);
        vap = tide_block_tree_sum<PSF_THREADS>(vap, sh);
        cap = tide_block_tree_sum<PSF_THREADS>(cap, sh);
        sring = tide_block_tree_sum<PSF_THREADS>(sring, sh);
        nring = tide_block_tree_sum<PSF_THREADS>(nring, sh);
        sw = tide_block_tree_sum<PSF_THREADS>(sw, sh);
        swr2 = tide_block_tree_sum<PSF_THREADS>(swr2, sh);
        peak = block_max(peak, sh);
        if (threadIdx.x == 0) {
            for (int k = 0; k < PSF_NMEAS; k++)
                m[k] = 0.0;
            m[PSF_M_XC] = xc;
            m[PSF_M_YC] = yc;
            if (!fl)
                psf_measure_finish(m, sum, fap, vap, cap, sring, nring, peak, use_rms, sw, swr2,
                                   kp.inv2s2);
            flags[s] = fl;
        }
    }
}

__global__ void psf_extract_kernel(const float *pix, int64_t stride, const psf_kparams kp,
                                   int64_t n, const double *xc, const double *yc, float *stamps,
                                   double *sums) {
    __shared__ double sh[PSF_THREADS];
    __shared__ double w[4 * PSF_LANCZOS_A];
    const int h = kp.half, side = 2 * h + 1, npix = side * side;
    for (int64_t s = blockIdx.x; s < n; s += gridDim.x) {
        const double fx = floor(xc[s]), fy = floor(yc[s]);
        if (threadIdx.x == 0) {
            psf_lanczos_weights(xc[s] - fx, w);
            psf_lanczos_weights(yc[s] - fy, w + 2 * PSF_LANCZOS_A);
        }
        __syncthreads();
        const int64_t x0 = (int64_t)fx - h - (PSF_LANCZOS_A - 1);
        const int64_t y0 = (int64_t)fy - h - (PSF_LANCZOS_A - 1);
        float *st = stamps + s * (int64_t)npix;
        double part = 0.0;
        for (int k = threadIdx.x; k < npix; k += PSF_THREADS) {
            const float v = psf_lanczos_sample(pix, stride, x0 + k % side, y0 + k / side, w,
                                               w + 2 * PSF_LANCZOS_A);
            st[k] = v;
            part += v;
        }
        const double sum =
            tide_block_tree_sum<PSF_THREADS>(part, sh); /* its syncs also guard w's reuse */
        if (sum > 0.0) {
            const float inv = (float)(1.0 / sum);
            for (int k = threadIdx.x; k < npix; k += PSF_THREADS)
                st[k] *= inv;
        }
        if (threadIdx.x == 0)
            sums[s] = sum;
    }
}

static unsigned grid_for(int64_t n) {
    return (unsigned)(n < (1 << 30) ? n : (1 << 30));
}

extern "C" int psf_measure_cuda(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                                const psf_kparams *kp, int64_t n, const double *x, const double *y,
                                double *meas, int32_t *flags) {
    if (n <= 0)
        return 0;
    const float *rpix = rms && rms->pix ? rms->pix : NULL;
    const int64_t rstride = rpix ? rms->stride : 0;
    psf_measure_kernel<<<grid_for(n), PSF_THREADS, 0, (cudaStream_t)ctx->stream>>>(
        *sub, rpix, rstride, *kp, n, x, y, meas, flags);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

extern "C" int psf_extract_cuda(tide_ctx *ctx, const tide_image *sub, const psf_kparams *kp,
                                int64_t n, const double *xc, const double *yc, float *stamps,
                                double *sums) {
    if (n <= 0)
        return 0;
    psf_extract_kernel<<<grid_for(n), PSF_THREADS, 0, (cudaStream_t)ctx->stream>>>(
        sub->pix, sub->stride, *kp, n, xc, yc, stamps, sums);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
