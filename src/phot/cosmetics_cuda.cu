/* cosmetics_cuda.cu — CUDA twins of the cosmetics kernels (cosmetics_kernels.h).
 *
 * One thread per pixel (grid-stride; the L.A.Cosmic planes one block per tile, see below),
 * the per-pixel math from cosmetics_math.h, so results equal the CPU twins bit for bit. Bleed trails run one thread per line: along columns the
 * threads of a warp read consecutive pixels of a row, so the walk is coalesced. Counts use
 * integer atomics only (a per-block shared sum, then one global add per block): integer sums
 * do not depend on their order. Small parameter structs are passed by value (kernel
 * parameter space). */
#include <cuda_runtime.h>
#include <math.h>

#include "phot/cosmetics_kernels.h"
#include "phot/cosmetics_network.h"
#include "phot/cosmetics_region.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "core/cuda_check.h"

#define BLOCK 256

static unsigned grid_for(int64_t n) {
    int64_t g = (n + BLOCK - 1) / BLOCK;
    if (g < 1)
        g = 1;
    return (unsigned)(g > 65535 * 32 ? 65535 * 32 : g);
}

#define STREAM(ctx) ((cudaStream_t)(ctx)->stream)
#define FOR_PIXELS(g, x, y)                                                                   \
    for (int64_t i_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, n_ = (g).w * (g).h;     \
         i_ < n_; i_ += (int64_t)gridDim.x * blockDim.x)                                      \
        for (int64_t y = i_ / (g).w, x = i_ - y * (g).w, once_ = 1; once_; once_ = 0)

static __global__ void k_saturate(tide_cos_geom g, const float *pix, uint16_t *mask,
                                  float level) {
    FOR_PIXELS(g, x, y) {
        const float v = pix[y * g.stride + x];
        if (isfinite(v) && v >= level)
            mask[y * g.stride + x] |= TIDE_MASK_SATURATED;
    }
}

extern "C" int tide_cos_saturate_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                                      uint16_t *mask, float level) {
    k_saturate<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(*g, pix, mask, level);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

static __global__ void k_bleed(tide_cos_geom g, const float *pix, uint16_t *mask, float hi,
                               int axis, int grow, uint8_t *scratch) {
    const int64_t nlines = axis == 0 ? g.w : g.h, len = axis == 0 ? g.h : g.w;
    const int64_t ps_l = axis == 0 ? 1 : g.stride, ps_i = axis == 0 ? g.stride : 1;
    const int64_t ss_l = axis == 0 ? 1 : g.w, ss_i = axis == 0 ? g.w : 1;
    for (int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; l < nlines;
         l += (int64_t)gridDim.x * blockDim.x) {
        int prev = 0, dist = 1 << 30;
        for (int64_t i = 0; i < len; i++)
            scratch[l * ss_l + i * ss_i] =
                cos_bleed_fwd(pix[l * ps_l + i * ps_i], mask[l * ps_l + i * ps_i], hi, &prev);
        prev = 0;
        for (int64_t i = len - 1; i >= 0; i--) {
            const int64_t p = l * ps_l + i * ps_i, s = l * ss_l + i * ss_i;
            scratch[s] = cos_bleed_bwd(pix[p], mask[p], hi, scratch[s], grow, &prev, &dist);
        }
        dist = 1 << 30;
        for (int64_t i = 0; i < len; i++) {
            const int64_t p = l * ps_l + i * ps_i, s = l * ss_l + i * ss_i;
            if (cos_bleed_final(mask[p], scratch[s], grow, &dist))
                mask[p] |= TIDE_MASK_BLEED;
        }
    }
}

extern "C" int tide_cos_bleed_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                                   uint16_t *mask, float hi, int axis, int grow,
                                   uint8_t *scratch) {
    const int64_t nlines = axis == 0 ? g->w : g->h;
    k_bleed<<<grid_for(nlines), BLOCK, 0, STREAM(ctx)>>>(*g, pix, mask, hi, axis, grow, scratch);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

static __global__ void k_badcol(tide_cos_geom g, const float *pix, const uint16_t *mask,
                                tide_cos_noise nm, uint16_t excl, float k, int minrun,
                                uint8_t *blk, uint8_t *out) {
    for (int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; x < g.w;
         x += (int64_t)gridDim.x * blockDim.x)
        cos_col_scan(pix, mask, &g, &nm, excl, k, minrun, x, blk, out);
}

extern "C" int tide_cos_badcol_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                                    const uint16_t *mask, const tide_cos_noise *nm,
                                    uint16_t excl, float k, int minrun, uint8_t *blk,
                                    uint8_t *out) {
    k_badcol<<<(unsigned)((g->w + 63) / 64), 64, 0, STREAM(ctx)>>>(*g, pix, mask, *nm, excl, k, minrun, blk,
                                                       out);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

static __global__ void k_hotcold(tide_cos_geom g, const float *pix, const uint16_t *mask,
                                 tide_cos_noise nm, tide_cos_hot hp, uint8_t *flag) {
    FOR_PIXELS(g, x, y) {
        flag[y * g.w + x] = (uint8_t)cos_hotcold(pix, mask, &g, &nm, &hp, x, y);
    }
}

extern "C" int tide_cos_hotcold_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *pix,
                                     const uint16_t *mask, const tide_cos_noise *nm,
                                     const tide_cos_hot *hp, uint8_t *flag) {
    k_hotcold<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(*g, pix, mask, *nm, *hp, flag);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

/* Add a per-thread count into *total: block sum in shared memory, one atomic per block. */
static __device__ void block_count(unsigned long long c, unsigned long long *total) {
    __shared__ unsigned long long s;
    if (threadIdx.x == 0)
        s = 0;
    __syncthreads();
    if (c)
        atomicAdd(&s, c);
    __syncthreads();
    if (threadIdx.x == 0 && s)
        atomicAdd(total, s);
}

static __global__ void k_apply(tide_cos_geom g, const uint8_t *flag, uint16_t *mask,
                               uint16_t bit1, uint16_t bit2, unsigned long long *total) {
    unsigned long long c = 0;
    FOR_PIXELS(g, x, y) {
        const uint8_t f = flag[y * g.w + x];
        if (!f)
            continue;
        uint16_t *m = &mask[y * g.stride + x];
        const uint16_t old = *m;
        const uint16_t nw = (uint16_t)(old | ((f & 1) ? bit1 : 0) | ((f & 2) ? bit2 : 0));
        *m = nw;
        c += nw != old;
    }
    block_count(c, total);
}

/* Run a counting kernel launch into a fresh device counter array of @p n entries and copy it
 * to @p out (host). */
static int counters_alloc(tide_ctx *ctx, int n, unsigned long long **d) {
    int st = tide_device_alloc(ctx, sizeof(unsigned long long) * (size_t)n, (void **)d);
    if (!st)
        st = tide_memzero(ctx, *d, 1, sizeof(unsigned long long) * (size_t)n);
    return st;
}

extern "C" int tide_cos_apply_cuda(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *flag,
                                   uint16_t *mask, uint16_t bit1, uint16_t bit2, int64_t *nnew) {
    unsigned long long *d = NULL, h = 0;
    int st = counters_alloc(ctx, 1, &d);
    if (st)
        return st;
    k_apply<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(*g, flag, mask, bit1, bit2, d);
    cudaError_t ce = cudaGetLastError();
    if (ce == cudaSuccess)
        st = tide_memcpy(ctx, &h, 0, d, 1, sizeof h);
    tide_device_free(ctx, d);
    if (ce != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "cosmetics apply kernel: %s", cudaGetErrorString(ce));
    if (nnew)
        *nnew = (int64_t)h;
    return st;
}

static __global__ void k_fill(tide_cos_geom g, const float *src, int64_t sld,
                              const uint16_t *mask, float *dst, int64_t dld, uint16_t repl,
                              uint16_t excl, int nonfinite, int use_fallback, float fallback,
                              uint8_t *flag, int inplace) {
    FOR_PIXELS(g, x, y) {
        const float v = src[y * sld + x];
        const int r = (mask[y * g.stride + x] & repl) || (nonfinite && !isfinite(v));
        uint8_t f = 0;
        if (r) {
            float m;
            if (cos_fill_value(src, sld, mask, g.stride, g.w, g.h, x, y, excl, &m)) {
                dst[y * dld + x] = m;
                f = COS_F_SET;
            } else if (use_fallback) {
                dst[y * dld + x] = fallback;
            } else if (!inplace) {
                dst[y * dld + x] = v;
            }
        } else if (!inplace) {
            dst[y * dld + x] = v;
        }
        if (flag)
            flag[y * g.w + x] = f;
    }
}

extern "C" int tide_cos_fill_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *src,
                                  int64_t sld, const uint16_t *mask, float *dst, int64_t dld,
                                  uint16_t repl, uint16_t excl, int nonfinite, int use_fallback,
                                  float fallback, uint8_t *flag) {
    k_fill<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(
        *g, src, sld, mask, dst, dld, repl, excl, nonfinite, use_fallback, fallback, flag,
        (const float *)dst == src);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

/* ---- L.A.Cosmic planes: one block per tile --------------------------------------------------
 * The per-iteration planes run on blocks of COS_TILE × COS_TILE threads, one block per tile
 * of cosmetics_region.h and one output pixel per thread. With a `dirty` tile array (device,
 * ntx·nty bytes) a block whose tile is clean returns at once: the later iterations then
 * recompute only the tiles near the previous iteration's new hits, exactly as the CPU's
 * tide_cos_update_cpu (cosmetics_region.h says why the planes stay current everywhere); with
 * dirty == NULL every tile runs (the full-frame kernels). Tile rows beyond the 65535 blocks a
 * grid's y extent allows are covered by a block-uniform loop.
 *
 * 5×5 medians: the (COS_TILE + 4)² neighbourhood of the tile is staged in shared memory
 * (edges clamped as cos_box_median clamps them), each thread sorts its five columns and takes
 * the 13th smallest with the selection network of cosmetics_network.h: the same comparators
 * on the same wires as the CPU twin (cosmetics_median_cpu.c), compares only, so the same
 * float. A window holding a NaN takes cos_box_median, as the CPU's NaN rows do. */
#define TS COS_TILE
#define SW (COS_TILE + 4)

static dim3 tile_grid(const tide_cos_geom *g) {
    const int64_t ntx = tide_cos_ntiles(g->w), nty = tide_cos_ntiles(g->h);
    return dim3((unsigned)(ntx < 1 ? 1 : ntx),
                (unsigned)(nty < 1 ? 1 : (nty > 65535 ? 65535 : nty)));
}
#define TILE_BLOCK dim3(TS, TS)

/* Loop over the tile rows ty_ of this block's tile column (block-uniform, so __syncthreads
 * inside is safe), skipping clean tiles. */
#define FOR_TILES(g, dirty, ty_)                                                              \
    for (int64_t ty_ = blockIdx.y; ty_ < ((g).h + TS - 1) / TS; ty_ += gridDim.y)             \
        if (!(dirty) || (dirty)[ty_ * (int64_t)gridDim.x + blockIdx.x])

/* Stage the clamped (TS+4)² neighbourhood of tile (blockIdx.x, ty) of a (stride ld). */
static __device__ void stage5(const float *a, int64_t ld, int64_t w, int64_t h, int64_t ty,
                              float *sh) {
    const int64_t x0 = (int64_t)blockIdx.x * TS - 2, y0 = ty * TS - 2;
    for (int k = threadIdx.y * TS + threadIdx.x; k < SW * SW; k += TS * TS) {
        const int r = k / SW, c = k - r * SW;
        sh[k] = a[cos_clamp(y0 + r, h) * ld + cos_clamp(x0 + c, w)];
    }
}

/* 5×5 median of the staged window around this thread's pixel; NaN windows from global. */
static __device__ float med5_staged(const float *sh, const float *a, int64_t ld, int64_t w,
                                    int64_t h, int64_t x, int64_t y) {
    const int tx = threadIdx.x, ty = threadIdx.y;
    /* wire 5c + r = window row r, column c (as the CPU's sorted columns) */
#define SRC_SH(k) sh[(ty + (k) % 5) * SW + tx + (k) / 5]
    DECL25(SRC_SH);
#undef SRC_SH
    const bool nan = v0 != v0 || v1 != v1 || v2 != v2 || v3 != v3 || v4 != v4 || v5 != v5 ||
                     v6 != v6 || v7 != v7 || v8 != v8 || v9 != v9 || v10 != v10 ||
                     v11 != v11 || v12 != v12 || v13 != v13 || v14 != v14 || v15 != v15 ||
                     v16 != v16 || v17 != v17 || v18 != v18 || v19 != v19 || v20 != v20 ||
                     v21 != v21 || v22 != v22 || v23 != v23 || v24 != v24;
    if (nan)
        return cos_box_median(a, ld, w, h, x, y, 2);
    SORT5_AT(0, 1, 2, 3, 4);
    SORT5_AT(5, 6, 7, 8, 9);
    SORT5_AT(10, 11, 12, 13, 14);
    SORT5_AT(15, 16, 17, 18, 19);
    SORT5_AT(20, 21, 22, 23, 24);
    MED25();
    return v12;
}

static __global__ void k_noise(tide_cos_geom g, const float *W, tide_cos_noise nm, float *N,
                               const uint8_t *dirty) {
    __shared__ float sh[SW * SW];
    FOR_TILES(g, dirty, ty) {
        __syncthreads(); /* the previous tile's reads are done */
        stage5(W, g.w, g.w, g.h, ty, sh);
        __syncthreads();
        const int64_t x = (int64_t)blockIdx.x * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        if (x < g.w && y < g.h)
            N[y * g.w + x] = cos_sigma(&nm, med5_staged(sh, W, g.w, g.w, g.h, x, y));
    }
}

extern "C" int tide_cos_noise_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                                   const tide_cos_noise *nm, float *N) {
    k_noise<<<tile_grid(g), TILE_BLOCK, 0, STREAM(ctx)>>>(*g, W, *nm, N, NULL);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

static __global__ void k_lapl(tide_cos_geom g, const float *W, const float *N, float *S,
                              const uint8_t *dirty) {
    FOR_TILES(g, dirty, ty) {
        const int64_t x = (int64_t)blockIdx.x * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        if (x < g.w && y < g.h)
            S[y * g.w + x] =
                COS_DIV(cos_lplus(W, g.w, g.w, g.h, x, y), COS_MUL(2.0f, N[y * g.w + x]));
    }
}

static __global__ void k_sprime(tide_cos_geom g, const float *S, float *SP, float low,
                                const uint8_t *dirty) {
    __shared__ float sh[SW * SW];
    FOR_TILES(g, dirty, ty) {
        __syncthreads();
        stage5(S, g.w, g.w, g.h, ty, sh);
        __syncthreads();
        const int64_t x = (int64_t)blockIdx.x * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        if (x < g.w && y < g.h) {
            const float s = sh[(threadIdx.y + 2) * SW + threadIdx.x + 2];
            SP[y * g.w + x] =
                s > low ? COS_SUB(s, med5_staged(sh, S, g.w, g.w, g.h, x, y)) : s;
        }
    }
}

static int launch_laplace(tide_ctx *ctx, const tide_cos_geom *g, const float *W, const float *N,
                          float *S, float *SP, float low, const uint8_t *dirty) {
    k_lapl<<<tile_grid(g), TILE_BLOCK, 0, STREAM(ctx)>>>(*g, W, N, S, dirty);
    TIDE_CUDA_LAUNCHED();
    k_sprime<<<tile_grid(g), TILE_BLOCK, 0, STREAM(ctx)>>>(*g, S, SP, low, dirty);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

extern "C" int tide_cos_laplace_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                                     const float *N, float *S, float *SP, float low) {
    return launch_laplace(ctx, g, W, N, S, SP, low, NULL);
}

static __global__ void k_cand(tide_cos_geom g, const float *W, const float *N, const float *SP,
                              const uint16_t *mask, tide_cos_lacos lp, uint8_t *cand,
                              const uint8_t *dirty) {
    FOR_TILES(g, dirty, ty) {
        const int64_t x = (int64_t)blockIdx.x * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        if (x < g.w && y < g.h)
            cand[y * g.w + x] = (uint8_t)cos_candidate(W, N, SP, mask, &g, &lp, x, y);
    }
}

extern "C" int tide_cos_candidates_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                                        const float *N, const float *SP, const uint16_t *mask,
                                        const tide_cos_lacos *lp, uint8_t *cand) {
    k_cand<<<tile_grid(g), TILE_BLOCK, 0, STREAM(ctx)>>>(*g, W, N, SP, mask, *lp, cand, NULL);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

static __global__ void k_grow(tide_cos_geom g, const uint8_t *in, const float *SP,
                              const uint16_t *mask, tide_cos_lacos lp, float thr,
                              uint8_t *out, const uint8_t *dirty) {
    FOR_TILES(g, dirty, ty) {
        const int64_t x = (int64_t)blockIdx.x * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        if (x < g.w && y < g.h)
            out[y * g.w + x] = (uint8_t)cos_grow_one(in, SP, mask, &g, &lp, thr, x, y);
    }
}

extern "C" int tide_cos_grow_cuda(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *in,
                                  const float *SP, const uint16_t *mask,
                                  const tide_cos_lacos *lp, float thr, uint8_t *out) {
    k_grow<<<tile_grid(g), TILE_BLOCK, 0, STREAM(ctx)>>>(*g, in, SP, mask, *lp, thr, out, NULL);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

/* mark[t] = some pixel of tile t is newly flagged (flag set, COSMIC not yet set). */
static __global__ void k_mark(tide_cos_geom g, const uint8_t *flag, const uint16_t *mask,
                              uint8_t *mark) {
    __shared__ int any;
    for (int64_t ty = blockIdx.y; ty < (g.h + TS - 1) / TS; ty += gridDim.y) {
        __syncthreads();
        if (threadIdx.x == 0 && threadIdx.y == 0)
            any = 0;
        __syncthreads();
        const int64_t x = (int64_t)blockIdx.x * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        if (x < g.w && y < g.h && flag[y * g.w + x] &&
            !(mask[y * g.stride + x] & TIDE_MASK_COSMIC))
            any = 1; /* every writer stores the same value */
        __syncthreads();
        if (threadIdx.x == 0 && threadIdx.y == 0)
            mark[ty * (int64_t)gridDim.x + blockIdx.x] = (uint8_t)(any != 0);
    }
}

/* dirty[t] = some tile of the 3×3 tiles around t is marked (tide_cos_tile_list). */
static __global__ void k_dilate(int64_t ntx, int64_t nty, const uint8_t *mark, uint8_t *dirty) {
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < ntx * nty;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t ty = t / ntx, tx = t - ty * ntx;
        int near = 0;
        for (int64_t j = ty - 1; j <= ty + 1; j++)
            for (int64_t i = tx - 1; i <= tx + 1; i++)
                if (j >= 0 && j < nty && i >= 0 && i < ntx && mark[j * ntx + i])
                    near = 1;
        dirty[t] = (uint8_t)near;
    }
}

extern "C" int tide_cos_mark_new_cuda(tide_ctx *ctx, const tide_cos_geom *g,
                                      const uint8_t *flag, const uint16_t *mask, uint8_t *mark,
                                      uint8_t *dirty) {
    const int64_t ntx = tide_cos_ntiles(g->w), nty = tide_cos_ntiles(g->h);
    if (ntx * nty == 0)
        return 0;
    k_mark<<<tile_grid(g), TILE_BLOCK, 0, STREAM(ctx)>>>(*g, flag, mask, mark);
    TIDE_CUDA_LAUNCHED();
    k_dilate<<<grid_for(ntx * nty), BLOCK, 0, STREAM(ctx)>>>(ntx, nty, mark, dirty);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

extern "C" int tide_cos_update_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                                    const tide_cos_noise *nm, const uint16_t *mask,
                                    const tide_cos_lacos *lp, float low, float *N, float *S,
                                    float *SP, uint8_t *cand, uint8_t *flag2, uint8_t *flag,
                                    const uint8_t *dirty) {
    const dim3 gr = tile_grid(g);
    cudaStream_t s = STREAM(ctx);
    k_noise<<<gr, TILE_BLOCK, 0, s>>>(*g, W, *nm, N, dirty);
    TIDE_CUDA_LAUNCHED();
    int st = launch_laplace(ctx, g, W, N, S, SP, low, dirty);
    if (st)
        return st;
    k_cand<<<gr, TILE_BLOCK, 0, s>>>(*g, W, N, SP, mask, *lp, cand, dirty);
    TIDE_CUDA_LAUNCHED();
    k_grow<<<gr, TILE_BLOCK, 0, s>>>(*g, cand, SP, mask, *lp, lp->sigclip, flag2, dirty);
    TIDE_CUDA_LAUNCHED();
    k_grow<<<gr, TILE_BLOCK, 0, s>>>(*g, flag2, SP, mask, *lp, low, flag, dirty);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

static __global__ void k_count(tide_cos_geom g, const uint16_t *mask, unsigned long long *tot) {
    __shared__ unsigned long long s[16];
    if (threadIdx.x < 16)
        s[threadIdx.x] = 0;
    __syncthreads();
    unsigned c[16];
    for (int b = 0; b < 16; b++)
        c[b] = 0;
    FOR_PIXELS(g, x, y) {
        const uint16_t m = mask[y * g.stride + x];
        if (m)
            for (int b = 0; b < 16; b++)
                c[b] += (m >> b) & 1u;
    }
    for (int b = 0; b < 16; b++)
        if (c[b])
            atomicAdd(&s[b], (unsigned long long)c[b]);
    __syncthreads();
    if (threadIdx.x < 16 && s[threadIdx.x])
        atomicAdd(&tot[threadIdx.x], s[threadIdx.x]);
}

extern "C" int tide_cos_count_cuda(tide_ctx *ctx, const tide_cos_geom *g, const uint16_t *mask,
                                   int64_t counts[16]) {
    unsigned long long *d = NULL, h[16];
    int st = counters_alloc(ctx, 16, &d);
    if (st)
        return st;
    k_count<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(*g, mask, d);
    cudaError_t ce = cudaGetLastError();
    if (ce == cudaSuccess)
        st = tide_memcpy(ctx, h, 0, d, 1, sizeof h);
    tide_device_free(ctx, d);
    if (ce != cudaSuccess)
        return tide_error(TIDE_E_CUDA, "cosmetics count kernel: %s", cudaGetErrorString(ce));
    for (int b = 0; !st && b < 16; b++)
        counts[b] = (int64_t)h[b];
    return st;
}
