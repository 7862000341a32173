/* subtract_cuda.cu — CUDA twins of the subtraction kernels (subtract_kernels.h). Same math as
 * subtract_cpu.c through subtract_math.h; every reduction in a fixed order (per-stamp sums by
 * one thread in pixel order, double accumulators; the stamp-centre search is a block
 * reduction with a total order on (value, index)), so results are deterministic. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/gpu/cuda_check.h"
#include "subtract_kernels.h"
#include "subtract_math.h"
#include "tide/memory.h"
#include "tide/status.h"

#define SUB_THREADS 256

static inline cudaStream_t stream_of(tide_ctx *ctx) {
    return (cudaStream_t)ctx->stream;
}

__device__ static inline uint16_t dmask(const uint16_t *m, int64_t i) {
    return m ? m[i] : 0;
}

/* One block per cell: the brightest usable pixel, ties to the smallest index (a total order,
 * so the result does not depend on how pixels are spread over threads). SEL_THREADS threads
 * per block: a cell is ~40k px of a 4096^2 frame and there are only a few hundred cells, so
 * wide blocks keep enough loads in flight to stream the frame. */
#define SEL_THREADS 1024
__global__ void __launch_bounds__(SEL_THREADS)
    sub_select_kernel(const float *rp, const uint16_t *rm, int64_t rs, const float *tp,
                      const uint16_t *tm, int64_t ts, int64_t w, int64_t h, int ncx, int ncy,
                      int margin, float vmin, uint16_t bits, int64_t *centre) {
    __shared__ float sv[SEL_THREADS];
    __shared__ int64_t si[SEL_THREADS];
    int cell = blockIdx.x, cx = cell % ncx, cy = cell / ncx;
    int64_t x0 = w * cx / ncx, x1 = w * (cx + 1) / ncx;
    int64_t y0 = h * cy / ncy, y1 = h * (cy + 1) / ncy;
    if (x0 < margin)
        x0 = margin;
    if (y0 < margin)
        y0 = margin;
    if (x1 > w - margin)
        x1 = w - margin;
    if (y1 > h - margin)
        y1 = h - margin;
    int64_t cw = x1 - x0, n = cw > 0 && y1 > y0 ? cw * (y1 - y0) : 0;
    float bv = 0.0f;
    int64_t best = -1;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
        int64_t x = x0 + k % cw, y = y0 + k / cw;
        float v = rp[y * rs + x];
        if (!(v >= vmin) || !tide_sub_usable(v, dmask(rm, y * rs + x), bits) ||
            !tide_sub_peak(rp, rs, x, y) ||
            !tide_sub_usable(tp[y * ts + x], dmask(tm, y * ts + x), bits))
            continue;
        int64_t idx = y * w + x;
        if (best < 0 || v > bv || (v == bv && idx < best)) {
            best = idx;
            bv = v;
        }
    }
    sv[threadIdx.x] = bv;
    si[threadIdx.x] = best;
    __syncthreads();
    for (int off = blockDim.x / 2; off > 0; off >>= 1) {
        if (threadIdx.x < off) {
            int64_t ob = si[threadIdx.x + off];
            float ov = sv[threadIdx.x + off];
            int64_t b = si[threadIdx.x];
            float v = sv[threadIdx.x];
            if (ob >= 0 && (b < 0 || ov > v || (ov == v && ob < b))) {
                si[threadIdx.x] = ob;
                sv[threadIdx.x] = ov;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        centre[cell] = si[0];
}

extern "C" int tide_sub_select_cuda(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                                    const tide_sub_geom *g, int ncx, int ncy, int margin,
                                    float vmin, int64_t *centre) {
    sub_select_kernel<<<ncx * ncy, SEL_THREADS, 0, stream_of(ctx)>>>(
        ref->pix, ref->mask, ref->stride, tgt->pix, tgt->mask, tgt->stride, g->width, g->height,
        ncx, ncy, margin, vmin, g->bits, centre);
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK;
}

__global__ void sub_weights_kernel(const float *rp, const uint16_t *rm, const float *rv, int64_t rs,
                                   const float *tp, const uint16_t *tm, const float *tv, int64_t ts,
                                   tide_sub_geom g, float vrc, float vtc, const int64_t *centre,
                                   float *W, float *D) {
    int s = blockIdx.y;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= g.npx)
        return;
    float *ws = W + (size_t)s * g.npx;
    float *ones = D + ((size_t)s * g.nc + (size_t)(g.nc - 3)) * g.npx;
    float *rvar = ones + g.npx, *tvv = rvar + g.npx;
    ws[i] = 0.0f;
    ones[i] = 1.0f;
    tvv[i] = 0.0f;
    rvar[i] = 0.0f;
    if (centre[s] < 0)
        return;
    int64_t x, y, w = g.width, h = g.height;
    int kh = g.kh;
    tide_sub_stamp_pixel(centre[s], i, g.hs, w, &x, &y);
    if (x < kh || y < kh || x >= w - kh || y >= h - kh)
        return;
    int64_t ti = y * ts + x;
    float t = tp[ti];
    if (!tide_sub_usable(t, dmask(tm, ti), g.bits))
        return;
    for (int64_t yy = y - kh; yy <= y + kh; yy++)
        for (int64_t xx = x - kh; xx <= x + kh; xx++) {
            int64_t ri = yy * rs + xx;
            if (!tide_sub_usable(rp[ri], dmask(rm, ri), g.bits))
                return;
        }
    float vt = tv ? tv[ti] : vtc;
    float vr = rv ? rv[y * rs + x] : vrc;
    float v = vt + vr;
    if (!(v > 0.0f) || !isfinite(v))
        return;
    ws[i] = 1.0f / v;
    tvv[i] = t;
    rvar[i] = v;
}

extern "C" int tide_sub_weights_cuda(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                                     const tide_sub_geom *g, float var_ref_const,
                                     float var_tgt_const, const int64_t *centre, float *W,
                                     float *D) {
    dim3 grid((unsigned)((g->npx + SUB_THREADS - 1) / SUB_THREADS), (unsigned)g->ns);
    sub_weights_kernel<<<grid, SUB_THREADS, 0, stream_of(ctx)>>>(
        ref->pix, ref->mask, ref->var, ref->stride, tgt->pix, tgt->mask, tgt->var, tgt->stride, *g,
        var_ref_const, var_tgt_const, centre, W, D);
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK;
}

__global__ void sub_gather_kernel(const float *pix, int64_t stride, tide_sub_geom g, int col,
                                  const int64_t *centre, float *D) {
    int s = blockIdx.y;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= g.npx)
        return;
    float *d = D + ((size_t)s * g.nc + (size_t)col) * g.npx;
    if (centre[s] < 0) {
        d[i] = 0.0f;
        return;
    }
    int64_t x, y;
    tide_sub_stamp_pixel(centre[s], i, g.hs, g.width, &x, &y);
    float v = pix[y * stride + x];
    d[i] = isfinite(v) ? v : 0.0f;
}

extern "C" int tide_sub_gather_cuda(tide_ctx *ctx, const tide_image *im, const tide_sub_geom *g,
                                    int col, const int64_t *centre, float *D) {
    dim3 grid((unsigned)((g->npx + SUB_THREADS - 1) / SUB_THREADS), (unsigned)g->ns);
    sub_gather_kernel<<<grid, SUB_THREADS, 0, stream_of(ctx)>>>(im->pix, im->stride, *g, col,
                                                                centre, D);
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK;
}

/* Block (s, y): stamp s, basis kernels y*nbk.. (nbk <= STP_NB, as many as fit in shared
 * memory beside the patch; one after the other, so the stamp's patch, with its kernel halo
 * and cleaned, is loaded into shared memory once for them). Each thread computes STP_R
 * consecutive pixels of a stamp row (tide_sub_corr_group): for every kernel row it slides a
 * window of STP_R patch values along the taps, so one shared load of a tap and one of a patch
 * value feed STP_R multiply-adds (instead of two loads per multiply-add). Every pixel sums in
 * the CPU twin's order (kernel rows, then taps) in float, without fused multiply-add, so D is
 * bit-identical to the CPU's. */
#define STP_NB 7
#define STP_R TIDE_SUB_CORR_R

__global__ void sub_basis_stamps_kernel(const float *rp, const uint16_t *rm, int64_t rs,
                                        tide_sub_geom g, const float *kernels, int nb, int nbk,
                                        const int64_t *centre, float *D) {
    extern __shared__ float sh[];
    int s = blockIdx.x, b0 = blockIdx.y * nbk, kh = g.kh, kw = 2 * kh + 1;
    int b1 = b0 + nbk < nb ? b0 + nbk : nb;
    int sw = 2 * g.hs + 1, pw = sw + 2 * kh, ngx = (sw + STP_R - 1) / STP_R;
    float *patch = sh, *ker = sh + pw * pw;
    if (centre[s] < 0) {
        for (int b = b0; b < b1; b++) {
            float *d = D + ((size_t)s * g.nc + (size_t)b) * g.npx;
            for (int64_t i = threadIdx.x; i < g.npx; i += blockDim.x)
                d[i] = 0.0f;
        }
        return;
    }
    int64_t x0 = centre[s] % g.width - g.hs - kh, y0 = centre[s] / g.width - g.hs - kh;
    for (int i = threadIdx.x; i < pw * pw; i += blockDim.x) {
        int64_t idx = (y0 + i / pw) * rs + x0 + i % pw;
        float v = rp[idx];
        patch[i] = tide_sub_usable(v, dmask(rm, idx), g.bits) ? v : 0.0f;
    }
    for (int i = threadIdx.x; i < (b1 - b0) * kw * kw; i += blockDim.x)
        ker[i] = kernels[(size_t)b0 * kw * kw + i];
    __syncthreads();
    for (int b = b0; b < b1; b++) {
        const float *kb = ker + (b - b0) * kw * kw;
        float *d = D + ((size_t)s * g.nc + (size_t)b) * g.npx;
        for (int it = threadIdx.x; it < sw * ngx; it += blockDim.x) {
            int py = it / ngx, px = (it % ngx) * STP_R;
            float acc[STP_R];
            tide_sub_corr_group(patch, pw, py, px, kb, kw, acc);
#pragma unroll
            for (int r = 0; r < STP_R; r++)
                if (px + r < sw)
                    d[py * sw + px + r] = acc[r];
        }
    }
}

extern "C" int tide_sub_basis_stamps_cuda(tide_ctx *ctx, const tide_image *ref,
                                          const tide_sub_geom *g, const float *kernels, int nb,
                                          const int64_t *centre, float *D) {
    int kw = 2 * g->kh + 1, pw = 2 * g->hs + 1 + 2 * g->kh;
    const size_t limit = 200 * 1024 / sizeof(float);
    size_t need = (size_t)pw * pw + (size_t)kw * kw; /* the patch and one kernel */
    if (need > limit)
        return tide_error(TIDE_E_RANGE,
                          "subtract: stamp of %d px with a %d px kernel needs %zu "
                          "bytes of shared memory; use a smaller stamp_half or fft_basis",
                          2 * g->hs + 1, kw, need * sizeof(float));
    /* as many kernels per block as fit beside the patch, at most STP_NB */
    size_t fit = (limit - (size_t)pw * pw) / ((size_t)kw * kw);
    int nbk = fit < STP_NB ? (int)fit : STP_NB;
    size_t shmem = ((size_t)pw * pw + (size_t)nbk * kw * kw) * sizeof(float);
    if (shmem > 48 * 1024) {
        TIDE_CUDA_TRY(cudaFuncSetAttribute(
            sub_basis_stamps_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shmem));
    }
    dim3 grid((unsigned)g->ns, (unsigned)((nb + nbk - 1) / nbk));
    sub_basis_stamps_kernel<<<grid, SUB_THREADS, shmem, stream_of(ctx)>>>(
        ref->pix, ref->mask, ref->stride, *g, kernels, nb, nbk, centre, D);
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK;
}

/* Per-stamp normal matrices. Block (s, y): stamp s, pairs y*NRM_PAIRS.. of the upper
 * triangle, NRM_PPT pairs per thread kept in registers. The stamp's columns and weights pass
 * through shared memory NRM_TILE pixels at a time (coalesced loads; each value read from
 * global memory once per block instead of once per pair), padded by one so the threads of a
 * warp, which share a and walk along b, hit distinct banks. Every pair still sums its pixels
 * one by one in order, as (w * da) * db with no fused multiply-add (__dmul_rn, __dadd_rn), so
 * each entry is bit-identical to the CPU twin's loop. */
#define NRM_TILE 32
#define NRM_PPT 8
#define NRM_PAIRS (NRM_PPT * SUB_THREADS)

__global__ void sub_normal_kernel(tide_sub_geom g, const float *D, const float *W, double *Q) {
    extern __shared__ float tile[]; /* (nc + 1) rows of NRM_TILE + 1: columns, then W */
    int s = blockIdx.x, nc = g.nc, ld = NRM_TILE + 1;
    const float *ds = D + (size_t)s * nc * g.npx;
    const float *ws = W + (size_t)s * g.npx;
    double *q = Q + (size_t)s * nc * nc;
    int pa[NRM_PPT], pb[NRM_PPT];
    double acc[NRM_PPT];
#pragma unroll
    for (int k = 0; k < NRM_PPT; k++) {
        tide_sub_pair(blockIdx.y * NRM_PAIRS + k * blockDim.x + threadIdx.x, nc, &pa[k], &pb[k]);
        acc[k] = 0.0;
    }
    for (int64_t i0 = 0; i0 < g.npx; i0 += NRM_TILE) {
        int nt = g.npx - i0 < NRM_TILE ? (int)(g.npx - i0) : NRM_TILE;
        __syncthreads(); /* the previous tile is consumed */
        for (int e = threadIdx.x; e < (nc + 1) * NRM_TILE; e += blockDim.x) {
            int c = e / NRM_TILE, i = e % NRM_TILE;
            float v = 0.0f;
            if (i < nt)
                v = c < nc ? ds[(size_t)c * g.npx + i0 + i] : ws[i0 + i];
            tile[c * ld + i] = v;
        }
        __syncthreads();
        const float *tw = tile + nc * ld;
#pragma unroll
        for (int k = 0; k < NRM_PPT; k++) {
            if (pa[k] < 0)
                continue;
            acc[k] = tide_sub_normal_tile(acc[k], tw, tile + pa[k] * ld, tile + pb[k] * ld, nt);
        }
    }
#pragma unroll
    for (int k = 0; k < NRM_PPT; k++)
        if (pa[k] >= 0) {
            q[pa[k] * nc + pb[k]] = acc[k];
            q[pb[k] * nc + pa[k]] = acc[k];
        }
}

extern "C" int tide_sub_normal_cuda(tide_ctx *ctx, const tide_sub_geom *g, const float *D,
                                    const float *W, double *Q) {
    int npairs = g->nc * (g->nc + 1) / 2;
    size_t shmem = (size_t)(g->nc + 1) * (NRM_TILE + 1) * sizeof(float);
    dim3 grid((unsigned)g->ns, (unsigned)((npairs + NRM_PAIRS - 1) / NRM_PAIRS));
    sub_normal_kernel<<<grid, SUB_THREADS, shmem, stream_of(ctx)>>>(*g, D, W, Q);
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK;
}

/* tide_sub_pairs: one thread per output G[r][k], its chain over the kept stamps in order with
 * every product and sum rounded on its own (tide_dmul, tide_dadd: no fused multiply-add), the
 * CPU twin's chain (pair_row_B, which runs B such chains side by side) to the bit. Threads of
 * one r read the same Q entry (k fastest). */
__global__ void sub_pairs_kernel(const double *Q, int64_t nn, const int *kept, int m,
                                 const int *off, int R, const double *PP, int nppad, double *G) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)R * nppad)
        return;
    const int r = (int)(i / nppad), k = (int)(i % nppad);
    const double *q = Q + off[r];
    double acc = 0.0;
    for (int j = 0; j < m; j++)
        acc = tide_dadd(acc, tide_dmul(q[(int64_t)kept[j] * nn], PP[(int64_t)j * nppad + k]));
    G[i] = acc;
}

extern "C" int tide_sub_pairs_cuda(tide_ctx *ctx, const double *Q, int nc, const int *kept, int m,
                                   const int *off, int R, const double *PP, int nppad, double *G) {
    /* one upload of PP, kept and off (packed), the product, one download of G */
    const size_t npp = (size_t)m * (size_t)nppad, ng = (size_t)R * (size_t)nppad;
    const size_t in_bytes = npp * sizeof(double) + ((size_t)m + (size_t)R) * sizeof(int);
    unsigned char *h = (unsigned char *)malloc(in_bytes ? in_bytes : 1);
    if (!h)
        return tide_error(TIDE_E_NOMEM, "subtract: normal equations (%d column pairs)", R);
    memcpy(h, PP, npp * sizeof(double));
    memcpy(h + npp * sizeof(double), kept, (size_t)m * sizeof(int));
    memcpy(h + npp * sizeof(double) + (size_t)m * sizeof(int), off, (size_t)R * sizeof(int));
    void *d = NULL; /* G first, then the packed inputs: every part 8-byte aligned */
    int st = tide_device_alloc(ctx, ng * sizeof(double) + in_bytes, &d);
    double *dG = (double *)d;
    if (!st)
        st = tide_memcpy(ctx, dG + ng, 1, h, 0, in_bytes);
    free(h);
    if (!st) {
        const double *dPP = dG + ng;
        const int *dkept = (const int *)(dPP + npp), *doff = dkept + m;
        const int64_t nthreads = (int64_t)ng;
        sub_pairs_kernel<<<(unsigned)((nthreads + SUB_THREADS - 1) / SUB_THREADS), SUB_THREADS, 0,
                           stream_of(ctx)>>>(Q, (int64_t)nc * nc, dkept, m, doff, R, dPP, nppad,
                                             dG);
        const cudaError_t e = cudaGetLastError();
        st = e == cudaSuccess
                 ? tide_memcpy(ctx, G, 0, dG, 1, ng * sizeof(double))
                 : tide_error(TIDE_E_CUDA, "subtract: normal equations: %s", cudaGetErrorString(e));
    }
    tide_device_free(ctx, d);
    return st;
}

/* The full-frame kernels run on a 2-D grid, x along a row and rows striding by gridDim.y
 * (<= 65535), so no thread divides a 64-bit pixel index by the width. */
static inline dim3 row_grid(int64_t w, int64_t h) {
    int64_t gy = h < 65535 ? h : 65535;
    return dim3((unsigned)((w + SUB_THREADS - 1) / SUB_THREADS), (unsigned)(gy > 0 ? gy : 1));
}

__global__ void sub_combine_kernel(tide_sub_model m, const float *tp, const float *tv, int64_t ts,
                                   int64_t w, int64_t h, float *dp, float *dv, int64_t ds,
                                   float *mp, int64_t ms) {
    int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w)
        return;
    for (int64_t y = blockIdx.y; y < h; y += gridDim.y) {
        double mod = tide_sub_model_at(&m, x, y, w, h, y * w + x);
        float t = tp[y * ts + x];
        mp[y * ms + x] = (float)mod;
        dp[y * ds + x] = (float)(m.sign * ((double)t - mod));
        if (dv) {
            float vt = tv ? tv[y * ts + x] : m.var_tgt_const;
            float vc = m.k2 * (m.var_ref ? m.var_ref[y * m.var_ref_stride + x] : m.var_ref_const);
            dv[y * ds + x] = (vt + vc) * m.var_scale;
        }
    }
}

extern "C" int tide_sub_combine_cuda(tide_ctx *ctx, const tide_sub_model *m, const tide_image *tgt,
                                     tide_image *diff, tide_image *matched) {
    sub_combine_kernel<<<row_grid(tgt->width, tgt->height), SUB_THREADS, 0, stream_of(ctx)>>>(
        *m, tgt->pix, tgt->var, tgt->stride, tgt->width, tgt->height, diff->pix, diff->var,
        diff->stride, matched->pix, matched->stride);
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK;
}

__global__ void sub_mask_rows_kernel(const uint16_t *rm, int64_t rs, int64_t w, int64_t h, int kh,
                                     uint16_t bits, uint16_t *tmp) {
    int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w)
        return;
    for (int64_t y = blockIdx.y; y < h; y += gridDim.y) {
        uint16_t o = 0;
        if (rm) {
            int64_t a = x - kh < 0 ? 0 : x - kh, b = x + kh >= w ? w - 1 : x + kh;
            for (int64_t xx = a; xx <= b; xx++)
                o |= rm[y * rs + xx];
        }
        tmp[y * w + x] = o & bits;
    }
}

__global__ void sub_mask_cols_kernel(const uint16_t *tmp, const uint16_t *tm, int64_t ts, int64_t w,
                                     int64_t h, int kh, uint16_t *out, int64_t os) {
    int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w)
        return;
    for (int64_t y = blockIdx.y; y < h; y += gridDim.y) {
        uint16_t o = 0;
        int64_t a = y - kh < 0 ? 0 : y - kh, b = y + kh >= h ? h - 1 : y + kh;
        for (int64_t yy = a; yy <= b; yy++)
            o |= tmp[yy * w + x];
        if (tm)
            o |= tm[y * ts + x];
        if (x < kh || y < kh || x >= w - kh || y >= h - kh)
            o |= TIDE_MASK_EDGE;
        out[y * os + x] = o;
    }
}

extern "C" int tide_sub_mask_cuda(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                                  const tide_sub_geom *g, tide_image *diff) {
    int64_t n = g->width * g->height;
    void *tmp = NULL;
    int st = tide_device_alloc(ctx, (size_t)n * sizeof(uint16_t), &tmp);
    if (st)
        return st;
    dim3 grid = row_grid(g->width, g->height);
    sub_mask_rows_kernel<<<grid, SUB_THREADS, 0, stream_of(ctx)>>>(
        ref->mask, ref->stride, g->width, g->height, g->kh, g->bits, (uint16_t *)tmp);
    sub_mask_cols_kernel<<<grid, SUB_THREADS, 0, stream_of(ctx)>>>((const uint16_t *)tmp, tgt->mask,
                                                                   tgt->stride, g->width, g->height,
                                                                   g->kh, diff->mask, diff->stride);
    cudaError_t ce = cudaGetLastError();
    tide_device_free(ctx, tmp);
    if (ce != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "subtract: mask kernels: %s", cudaGetErrorString(ce));
    return TIDE_OK;
}
