/* cosmetics_lines_cuda.cu — CUDA twins of the cosmetics passes that walk whole lines (bleed
 * trails, bad columns), in the segmented forms of cosmetics_lines_math.h: no thread walks a
 * whole column, so the serial depth is a segment or a block, not the frame's height. */
#include <cuda_runtime.h>

#include "core/gpu/cuda_check.h"
#include "cosmetics_cuda_util.h"
#include "cosmetics_kernels.h"
#include "cosmetics_lines_math.h"
#include "tide/memory.h"
#include "tide/status.h"

/* Bleed trails in the segmented form of cosmetics_lines_math.h (cos_bleed_t_*): one thread per
 * (line, segment of COS_SEG pixels) with consecutive lines in a warp, so along columns (axis
 * 0) every step reads consecutive pixels of a row; the serial depth is COS_SEG pixels, plus
 * 2·nseg summary bytes per line for the carries. Rows (axis 1) run the same code, with
 * strided reads. The summaries (nlines·nseg bytes) come from the pool for the call. */
static __global__ void k_bleed_sum(tide_cos_lines L, const float *pix, const uint16_t *mask,
                                   float hi, uint8_t *sum) {
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < L.nlines * L.nseg;
         t += (int64_t)gridDim.x * blockDim.x)
        cos_bleed_t_sum(&L, pix, mask, hi, sum, t);
}

static __global__ void k_bleed_carry(tide_cos_lines L, uint8_t *sum) {
    for (int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; l < L.nlines;
         l += (int64_t)gridDim.x * blockDim.x)
        cos_bleed_carry(sum + l, L.nlines, L.nseg);
}

static __global__ void k_bleed_run(tide_cos_lines L, const float *pix, const uint16_t *mask,
                                   float hi, const uint8_t *sum, uint8_t *scratch) {
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < L.nlines * L.nseg;
         t += (int64_t)gridDim.x * blockDim.x)
        cos_bleed_t_run(&L, pix, mask, hi, sum, scratch, t);
}

static __global__ void k_bleed_grow(tide_cos_lines L, uint16_t *mask, const uint8_t *scratch,
                                    const uint8_t *sum, int grow) {
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < L.nlines * L.nseg;
         t += (int64_t)gridDim.x * blockDim.x)
        cos_bleed_t_grow(&L, mask, scratch, sum, grow, t);
}

extern "C" int tide_cos_bleed_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                                   uint16_t *mask, float hi, int axis, int grow, uint8_t *scratch) {
    const tide_cos_lines L = cos_bleed_lines(g, axis);
    const int64_t nt = L.nlines * L.nseg;
    if (nt == 0)
        return 0;
    uint8_t *sum = NULL;
    int st = tide_device_alloc(ctx, (size_t)nt, (void **)&sum);
    if (st)
        return st;
    cudaStream_t s = STREAM(ctx);
    k_bleed_sum<<<grid_for(nt), BLOCK, 0, s>>>(L, pix, mask, hi, sum);
    k_bleed_carry<<<grid_for(L.nlines), BLOCK, 0, s>>>(L, sum);
    k_bleed_run<<<grid_for(nt), BLOCK, 0, s>>>(L, pix, mask, hi, sum, scratch);
    k_bleed_grow<<<grid_for(nt), BLOCK, 0, s>>>(L, mask, scratch, sum, grow);
    const cudaError_t ce = cudaGetLastError();
    tide_device_free(ctx, sum);
    if (ce != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "cosmetics bleed kernels: %s", cudaGetErrorString(ce));
    return 0;
}

/* Bad columns, cos_col_scan split in two: one thread per (column, block of COS_COL_BLOCK
 * rows) for the block signs (consecutive columns in a warp), then one thread per column for
 * the runs, serial over the h/COS_COL_BLOCK block signs only; `out` is zeroed on the stream
 * first (cos_col_scan's zeroing). A column with no marked block has no run, so its thread
 * first ORs its block signs (independent loads) and skips cos_col_runs when they are all 0:
 * cos_col_runs would write nothing. */
static __global__ void k_badcol_blk(tide_cos_geom g, const float *pix, const uint16_t *mask,
                                    tide_cos_noise nm, uint16_t excl, float k, uint8_t *blk) {
    const int64_t nb = (g.h + COS_COL_BLOCK - 1) / COS_COL_BLOCK;
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < g.w * nb;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = t / g.w, x = t - b * g.w;
        const int s = cos_col_block(pix, mask, &g, &nm, excl, k, x, b * COS_COL_BLOCK);
        blk[t] = (uint8_t)(s > 0 ? 1 : (s < 0 ? 2 : 0));
    }
}

static __global__ void k_badcol_runs(tide_cos_geom g, const float *pix, const uint16_t *mask,
                                     tide_cos_noise nm, uint16_t excl, float k, int minrun,
                                     const uint8_t *blk, uint8_t *out) {
    const int64_t nb = (g.h + COS_COL_BLOCK - 1) / COS_COL_BLOCK;
    for (int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; x < g.w;
         x += (int64_t)gridDim.x * blockDim.x) {
        unsigned any = 0;
#pragma unroll 8
        for (int64_t b = 0; b < nb; b++)
            any |= blk[b * g.w + x];
        if (any)
            cos_col_runs(pix, mask, &g, &nm, excl, k, minrun, x, blk, out);
    }
}

extern "C" int tide_cos_badcol_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                                    const uint16_t *mask, const tide_cos_noise *nm, uint16_t excl,
                                    float k, int minrun, uint8_t *blk, uint8_t *out) {
    cudaStream_t s = STREAM(ctx);
    const int64_t nb = (g->h + COS_COL_BLOCK - 1) / COS_COL_BLOCK;
    TIDE_CUDA_TRY(cudaMemsetAsync(out, 0, (size_t)(g->w * g->h), s));
    k_badcol_blk<<<grid_for(g->w * nb), BLOCK, 0, s>>>(*g, pix, mask, *nm, excl, k, blk);
    TIDE_CUDA_LAUNCHED();
    k_badcol_runs<<<(unsigned)((g->w + 63) / 64), 64, 0, s>>>(*g, pix, mask, *nm, excl, k, minrun,
                                                              blk, out);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
