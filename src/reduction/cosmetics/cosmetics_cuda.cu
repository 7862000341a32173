/* cosmetics_cuda.cu — CUDA twins of the cosmetics kernels (cosmetics_kernels.h).
 *
 * One thread per pixel (grid-stride; the L.A.Cosmic planes one block per tile, see below),
 * the per-pixel math from cosmetics_math.h, so results equal the CPU twins bit for bit. Bleed
 * trails and bad columns, scans along lines, are in cosmetics_lines_cuda.cu. Counts use
 * integer atomics only (a per-block shared sum, then one global add per block): integer sums
 * do not depend on their order. Small parameter structs are passed by value (kernel
 * parameter space). */
#include <cuda_runtime.h>
#include <math.h>

#include "cosmetics_kernels.h"
#include "cosmetics_network.h"
#include "cosmetics_region.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "core/gpu/cuda_check.h"

#include "cosmetics_cuda_util.h"

/* Pixel i_ → (x, y): a 32-bit division when the frame has fewer than 2³² pixels (a 64-bit
 * one is a long software routine on the GPU), the same quotient. */
#define FOR_PIXELS(g, x, y)                                                                        \
    for (int64_t i_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, n_ = (g).w * (g).h; i_ < n_; \
         i_ += (int64_t)gridDim.x * blockDim.x)                                                    \
        for (int64_t y = n_ <= (int64_t)UINT32_MAX ? (int64_t)((uint32_t)i_ / (uint32_t)(g).w)     \
                                                   : i_ / (g).w,                                   \
                     x = i_ - y * (g).w, once_ = 1;                                                \
             once_; once_ = 0)

static __global__ void k_saturate(tide_cos_geom g, const float *pix, uint16_t *mask, float level) {
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

static __global__ void k_hotcold(tide_cos_geom g, const float *pix, const uint16_t *mask,
                                 tide_cos_noise nm, tide_cos_hot hp, uint8_t *flag) {
    FOR_PIXELS(g, x, y) {
        flag[y * g.w + x] = (uint8_t)cos_hotcold_screened(pix, mask, &g, &nm, &hp, x, y);
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

static __global__ void k_apply(tide_cos_geom g, const uint8_t *flag, uint16_t *mask, uint16_t bit1,
                               uint16_t bit2, unsigned long long *total) {
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
    if (total)
        block_count(c, total);
}

/* Run a counting kernel launch into a fresh device counter array of @p n entries and copy it
 * to @p out (host). */
static int counters_alloc(tide_ctx *ctx, int n, unsigned long long **d) {
    int st = tide_device_alloc(ctx, sizeof(unsigned long long) * (size_t)n, (void **)d);
    if (st)
        return st;
    /* stream-ordered zeroing: the copy back (tide_memcpy) is the one wait */
    const cudaError_t ce =
        cudaMemsetAsync(*d, 0, sizeof(unsigned long long) * (size_t)n, STREAM(ctx));
    if (ce != cudaSuccess) {
        tide_device_free(ctx, *d);
        *d = NULL;
        return tide_error(TIDE_E_CUDA, "cosmetics counters: %s", cudaGetErrorString(ce));
    }
    return 0;
}

extern "C" int tide_cos_apply_cuda(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *flag,
                                   uint16_t *mask, uint16_t bit1, uint16_t bit2, int64_t *nnew) {
    if (!nnew) { /* no count asked: no counter, no wait for the stream */
        k_apply<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(*g, flag, mask, bit1, bit2, NULL);
        TIDE_CUDA_LAUNCHED();
        return 0;
    }
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

static __global__ void k_fill(tide_cos_geom g, const float *src, int64_t sld, const uint16_t *mask,
                              float *dst, int64_t dld, uint16_t repl, uint16_t excl, int nonfinite,
                              int use_fallback, float fallback, uint8_t *flag, int inplace) {
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
 * ntx·nty bytes) only the dirty tiles run (FOR_TILES): the later iterations then recompute
 * only the tiles near the previous iteration's new hits, exactly as the CPU's
 * tide_cos_update_cpu (cosmetics_region.h says why the planes stay current everywhere); with
 * dirty == NULL every tile runs (the full-frame kernels). Tile rows beyond the 65535 blocks a
 * grid's y extent allows are covered by a block-uniform loop.
 *
 * 5×5 medians: the (COS_TILE + 4)² neighbourhood of the tile is staged in shared memory
 * (edges clamped as cos_box_median clamps them), its 5-row columns are sorted once per tile,
 * and each thread takes the 13th smallest of its five sorted columns with the selection
 * network of cosmetics_network.h: the same comparators on the same wires as the CPU twin
 * (cosmetics_median_cpu.c), compares only, so the same float. A window holding a NaN takes
 * cos_box_median, as the CPU's NaN rows do. */
#define TS COS_TILE
#define SW (COS_TILE + 4)

static dim3 tile_grid(const tide_cos_geom *g) {
    const int64_t ntx = tide_cos_ntiles(g->w), nty = tide_cos_ntiles(g->h);
    return dim3((unsigned)(ntx < 1 ? 1 : ntx),
                (unsigned)(nty < 1 ? 1 : (nty > 65535 ? 65535 : nty)));
}
#define TILE_BLOCK dim3(TS, TS)

/* With a dirty array, one block per chunk of consecutive tiles (one flag per thread, at most
 * TILE_CHUNK): the block lists the chunk's dirty tiles in shared memory and runs only those,
 * so a clean tile costs a byte read instead of a block of its own (the later iterations touch
 * few tiles of a large frame). The chunk grows with the frame so that the grid keeps about
 * CHUNK_BLOCKS blocks (a few waves on one GPU: a wholly dirty iteration still spreads over all
 * SMs); the kernel finds it back from the grid size. The list's order depends on the atomics,
 * but the tiles of one kernel are independent (each writes only its own pixels), so the
 * planes do not. */
#define TILE_CHUNK (TS * TS)
#define CHUNK_BLOCKS 4096
static dim3 tiles_grid(const tide_cos_geom *g, const uint8_t *dirty) {
    if (!dirty)
        return tile_grid(g);
    const int64_t n = tide_cos_ntiles(g->w) * tide_cos_ntiles(g->h);
    int64_t chunk = (n + CHUNK_BLOCKS - 1) / CHUNK_BLOCKS;
    chunk = chunk < 1 ? 1 : (chunk > TILE_CHUNK ? TILE_CHUNK : chunk);
    const int64_t c = (n + chunk - 1) / chunk;
    return dim3((unsigned)(c < 1 ? 1 : c));
}

/* The dirty tiles of this block's chunk (ceil(ntiles / gridDim.x) tiles, <= TILE_CHUNK by
 * tiles_grid) into lst as tile indices; returns how many. Every thread of the block calls it. */
static __device__ int tile_chunk(const uint8_t *dirty, int64_t ntiles, int64_t *lst, int *cnt) {
    const int tid = threadIdx.y * TS + threadIdx.x;
    const int64_t chunk = (ntiles + gridDim.x - 1) / gridDim.x;
    const int64_t t = (int64_t)blockIdx.x * chunk + tid;
    if (tid == 0)
        *cnt = 0;
    __syncthreads();
    if (tid < chunk && t < ntiles && dirty[t])
        lst[atomicAdd(cnt, 1)] = t;
    __syncthreads();
    return *cnt;
}

/* Loop over this block's tiles (tx_, ty_), block-uniform (so __syncthreads inside is safe):
 * without `dirty` the tile column blockIdx.x, tile rows from blockIdx.y (grid tile_grid;
 * rows beyond the grid's 65535 by the loop); with it the dirty tiles of the block's chunk
 * (grid tiles_grid). Declares shared memory: once per kernel. */
#define FOR_TILES(g, dirty, tx_, ty_)                                                              \
    __shared__ int64_t lst_[TILE_CHUNK];                                                           \
    __shared__ int cnt_;                                                                           \
    const int64_t ntx_ = ((g).w + TS - 1) / TS, nty_ = ((g).h + TS - 1) / TS;                      \
    const int64_t nit_ = (dirty) ? tile_chunk((dirty), ntx_ * nty_, lst_, &cnt_)                   \
                                 : (nty_ - blockIdx.y + gridDim.y - 1) / gridDim.y;                \
    for (int64_t j_ = 0; j_ < nit_; j_++)                                                          \
        for (int64_t t_ = (dirty) ? lst_[j_] : 0,                                                  \
                     ty_ = (dirty) ? t_ / ntx_ : (int64_t)blockIdx.y + j_ * gridDim.y,             \
                     tx_ = (dirty) ? t_ - ty_ * ntx_ : (int64_t)blockIdx.x, once_ = 1;             \
             once_; once_ = 0)

/* Stage the clamped (TS+4)² neighbourhood of tile (tx, ty) of a (stride ld). */
static __device__ void stage5(const float *a, int64_t ld, int64_t w, int64_t h, int64_t tx,
                              int64_t ty, float *sh) {
    const int64_t x0 = tx * TS - 2, y0 = ty * TS - 2;
    for (int k = threadIdx.y * TS + threadIdx.x; k < SW * SW; k += TS * TS) {
        const int r = k / SW, c = k - r * SW;
        sh[k] = a[cos_clamp(y0 + r, h) * ld + cos_clamp(x0 + c, w)];
    }
}

/* Step 1 of the 5×5 medians once per tile: each 5-row column of the staged window is shared
 * by the five windows that contain it, so the tile sorts each of its TS × SW columns once
 * (the SORT5 comparators, the same as SORT5_AT on a window's column wires) into srt[(r·SW +
 * c)·5 + k] (odd stride: no bank conflicts across a row of threads), with a NaN flag per
 * column; every thread then runs only MED25 on its five sorted columns. */
static __device__ void sort_cols5(const float *sh, float *srt, uint8_t *nanc) {
    for (int k = threadIdx.y * TS + threadIdx.x; k < TS * SW; k += TS * TS) {
        const int r = k / SW, c = k - r * SW;
        const float *col = sh + r * SW + c;
        float v0 = col[0], v1 = col[SW], v2 = col[2 * SW], v3 = col[3 * SW], v4 = col[4 * SW];
        nanc[k] = (uint8_t)(v0 != v0 || v1 != v1 || v2 != v2 || v3 != v3 || v4 != v4);
        SORT5();
        float *o = srt + 5 * k;
        o[0] = v0, o[1] = v1, o[2] = v2, o[3] = v3, o[4] = v4;
    }
}

/* 5×5 median of this thread's window from the sorted columns (wire 5c + r = row r of
 * column c, as the CPU's sorted columns); windows holding a NaN from global. */
static __device__ float med5_sorted(const float *srt, const uint8_t *nanc, const float *a,
                                    int64_t ld, int64_t w, int64_t h, int64_t x, int64_t y) {
    const int k0 = threadIdx.y * SW + threadIdx.x;
    if (nanc[k0] | nanc[k0 + 1] | nanc[k0 + 2] | nanc[k0 + 3] | nanc[k0 + 4])
        return cos_box_median(a, ld, w, h, x, y, 2);
#define SRC_SRT(k) srt[5 * (k0 + (k) / 5) + (k) % 5]
    DECL25(SRC_SRT);
#undef SRC_SRT
    MED25();
    return v12;
}

/* Shared memory of the median kernels: the staged window, its sorted columns, NaN flags. */
#define MED5_SHARED                                                                                \
    __shared__ float sh[SW * SW];                                                                  \
    __shared__ float srt[TS * SW * 5];                                                             \
    __shared__ uint8_t nanc[TS * SW]

static __global__ void k_noise(tide_cos_geom g, const float *W, tide_cos_noise nm, float *N,
                               const uint8_t *dirty) {
    MED5_SHARED;
    FOR_TILES(g, dirty, tx, ty) {
        __syncthreads(); /* the previous tile's reads are done */
        stage5(W, g.w, g.w, g.h, tx, ty, sh);
        __syncthreads();
        sort_cols5(sh, srt, nanc);
        __syncthreads();
        const int64_t x = tx * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        if (x < g.w && y < g.h)
            N[y * g.w + x] = cos_sigma(&nm, med5_sorted(srt, nanc, W, g.w, g.w, g.h, x, y));
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
    FOR_TILES(g, dirty, tx, ty) {
        const int64_t x = tx * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        if (x < g.w && y < g.h)
            S[y * g.w + x] =
                tide_fdiv(cos_lplus(W, g.w, g.w, g.h, x, y), tide_fmul(2.0f, N[y * g.w + x]));
    }
}

static __global__ void k_sprime(tide_cos_geom g, const float *S, float *SP, float low,
                                const uint8_t *dirty) {
    MED5_SHARED;
    FOR_TILES(g, dirty, tx, ty) {
        __syncthreads();
        stage5(S, g.w, g.w, g.h, tx, ty, sh);
        __syncthreads();
        sort_cols5(sh, srt, nanc);
        __syncthreads();
        const int64_t x = tx * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        if (x < g.w && y < g.h) {
            const float s = sh[(threadIdx.y + 2) * SW + threadIdx.x + 2];
            SP[y * g.w + x] =
                s > low ? tide_fsub(s, med5_sorted(srt, nanc, S, g.w, g.w, g.h, x, y)) : s;
        }
    }
}

static int launch_laplace(tide_ctx *ctx, const tide_cos_geom *g, const float *W, const float *N,
                          float *S, float *SP, float low, const uint8_t *dirty) {
    k_lapl<<<tiles_grid(g, dirty), TILE_BLOCK, 0, STREAM(ctx)>>>(*g, W, N, S, dirty);
    TIDE_CUDA_LAUNCHED();
    k_sprime<<<tiles_grid(g, dirty), TILE_BLOCK, 0, STREAM(ctx)>>>(*g, S, SP, low, dirty);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

extern "C" int tide_cos_laplace_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                                     const float *N, float *S, float *SP, float low) {
    return launch_laplace(ctx, g, W, N, S, SP, low, NULL);
}

/* Candidates (cos_candidate). F needs the 3×3 medians at the 49 (clamped) positions around
 * a pixel; neighbouring candidates share most of them, so a tile holding any pixel that
 * passes the cheap tests (S' > sigclip, may be flagged) first computes the (TS + 6)² medians
 * of its neighbourhood once into shared memory, at the same clamped positions and by the
 * same cos_box_median, and each such pixel gathers its 49 in cos_fine's order: the same
 * floats, so the same F. Tiles with no such pixel compute no median. */
#define SW3 (COS_TILE + 6)
static __global__ void k_cand(tide_cos_geom g, const float *W, const float *N, const float *SP,
                              const uint16_t *mask, tide_cos_lacos lp, uint8_t *cand,
                              const uint8_t *dirty) {
    __shared__ float m3s[SW3 * SW3];
    FOR_TILES(g, dirty, tx, ty) {
        __syncthreads(); /* the previous tile's reads of m3s are done */
        const int64_t x = tx * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        const int64_t i = y * g.w + x;
        const bool in = x < g.w && y < g.h;
        const int pre = in && SP[i] > lp.sigclip && cos_may_flag(mask, &g, &lp, x, y);
        if (!__syncthreads_or(pre)) {
            if (in)
                cand[i] = 0;
            continue;
        }
        const int64_t x0 = tx * TS - 3, y0 = ty * TS - 3;
        for (int k = threadIdx.y * TS + threadIdx.x; k < SW3 * SW3; k += TS * TS) {
            const int r = k / SW3, c = k - r * SW3;
            m3s[k] =
                cos_box_median(W, g.w, g.w, g.h, cos_clamp(x0 + c, g.w), cos_clamp(y0 + r, g.h), 1);
        }
        __syncthreads();
        if (!in)
            continue;
        int c = 0;
        if (pre) {
            float m3[49];
            int n = 0;
            for (int dy = 0; dy < 7; dy++)
                for (int dx = 0; dx < 7; dx++)
                    m3[n++] = m3s[(threadIdx.y + dy) * SW3 + threadIdx.x + dx];
            c = cos_candidate_f(SP[i], cos_fine_of(m3), N[i], &lp) &&
                cos_candidate_psf(W, &g, &lp, x, y);
        }
        cand[i] = (uint8_t)c;
    }
}

extern "C" int tide_cos_candidates_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                                        const float *N, const float *SP, const uint16_t *mask,
                                        const tide_cos_lacos *lp, uint8_t *cand) {
    k_cand<<<tile_grid(g), TILE_BLOCK, 0, STREAM(ctx)>>>(*g, W, N, SP, mask, *lp, cand, NULL);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

static __global__ void k_grow(tide_cos_geom g, const float *W, const uint8_t *in, const float *SP,
                              const uint16_t *mask, tide_cos_lacos lp, float thr, uint8_t *out,
                              const uint8_t *dirty) {
    FOR_TILES(g, dirty, tx, ty) {
        const int64_t x = tx * TS + threadIdx.x, y = ty * TS + threadIdx.y;
        if (x < g.w && y < g.h)
            out[y * g.w + x] = (uint8_t)cos_grow_one(W, in, SP, mask, &g, &lp, thr, x, y);
    }
}

extern "C" int tide_cos_grow_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                                  const uint8_t *in, const float *SP, const uint16_t *mask,
                                  const tide_cos_lacos *lp, float thr, uint8_t *out) {
    k_grow<<<tile_grid(g), TILE_BLOCK, 0, STREAM(ctx)>>>(*g, W, in, SP, mask, *lp, thr, out, NULL);
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
        if (x < g.w && y < g.h && flag[y * g.w + x] && !(mask[y * g.stride + x] & TIDE_MASK_COSMIC))
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

extern "C" int tide_cos_mark_new_cuda(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *flag,
                                      const uint16_t *mask, uint8_t *mark, uint8_t *dirty) {
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
    const dim3 gr = tiles_grid(g, dirty);
    cudaStream_t s = STREAM(ctx);
    k_noise<<<gr, TILE_BLOCK, 0, s>>>(*g, W, *nm, N, dirty);
    TIDE_CUDA_LAUNCHED();
    int st = launch_laplace(ctx, g, W, N, S, SP, low, dirty);
    if (st)
        return st;
    k_cand<<<gr, TILE_BLOCK, 0, s>>>(*g, W, N, SP, mask, *lp, cand, dirty);
    TIDE_CUDA_LAUNCHED();
    k_grow<<<gr, TILE_BLOCK, 0, s>>>(*g, W, cand, SP, mask, *lp, lp->sigclip, flag2, dirty);
    TIDE_CUDA_LAUNCHED();
    k_grow<<<gr, TILE_BLOCK, 0, s>>>(*g, W, flag2, SP, mask, *lp, low, flag, dirty);
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
