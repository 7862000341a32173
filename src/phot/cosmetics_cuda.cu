/* cosmetics_cuda.cu — CUDA twins of the cosmetics kernels (cosmetics_kernels.h).
 *
 * One thread per pixel (grid-stride), the per-pixel math from cosmetics_math.h, so results
 * equal the CPU twins bit for bit. Bleed trails run one thread per line: along columns the
 * threads of a warp read consecutive pixels of a row, so the walk is coalesced. Counts use
 * integer atomics only (a per-block shared sum, then one global add per block): integer sums
 * do not depend on their order. Small parameter structs are passed by value (kernel
 * parameter space). */
#include <cuda_runtime.h>
#include <math.h>

#include "phot/cosmetics_kernels.h"
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

static __global__ void k_noise(tide_cos_geom g, const float *W, tide_cos_noise nm, float *N) {
    FOR_PIXELS(g, x, y) {
        N[y * g.w + x] = cos_sigma(&nm, cos_box_median(W, g.w, g.w, g.h, x, y, 2));
    }
}

extern "C" int tide_cos_noise_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                                   const tide_cos_noise *nm, float *N) {
    k_noise<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(*g, W, *nm, N);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

static __global__ void k_lapl(tide_cos_geom g, const float *W, const float *N, float *S) {
    FOR_PIXELS(g, x, y) {
        S[y * g.w + x] =
            COS_DIV(cos_lplus(W, g.w, g.w, g.h, x, y), COS_MUL(2.0f, N[y * g.w + x]));
    }
}

static __global__ void k_sprime(tide_cos_geom g, const float *S, float *SP, float low) {
    FOR_PIXELS(g, x, y) {
        const float s = S[y * g.w + x];
        SP[y * g.w + x] = s > low ? COS_SUB(s, cos_box_median(S, g.w, g.w, g.h, x, y, 2)) : s;
    }
}

extern "C" int tide_cos_laplace_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                                     const float *N, float *S, float *SP, float low) {
    k_lapl<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(*g, W, N, S);
    TIDE_CUDA_LAUNCHED();
    k_sprime<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(*g, S, SP, low);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

static __global__ void k_cand(tide_cos_geom g, const float *W, const float *N, const float *SP,
                              const uint16_t *mask, tide_cos_lacos lp, uint8_t *cand) {
    FOR_PIXELS(g, x, y) {
        cand[y * g.w + x] = (uint8_t)cos_candidate(W, N, SP, mask, &g, &lp, x, y);
    }
}

extern "C" int tide_cos_candidates_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                                        const float *N, const float *SP, const uint16_t *mask,
                                        const tide_cos_lacos *lp, uint8_t *cand) {
    k_cand<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(*g, W, N, SP, mask, *lp, cand);
    TIDE_CUDA_LAUNCHED();
    return 0;
}

static __global__ void k_grow(tide_cos_geom g, const uint8_t *in, const float *SP,
                              const uint16_t *mask, tide_cos_lacos lp, float thr,
                              uint8_t *out) {
    FOR_PIXELS(g, x, y) {
        out[y * g.w + x] = (uint8_t)cos_grow_one(in, SP, mask, &g, &lp, thr, x, y);
    }
}

extern "C" int tide_cos_grow_cuda(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *in,
                                  const float *SP, const uint16_t *mask,
                                  const tide_cos_lacos *lp, float thr, uint8_t *out) {
    k_grow<<<grid_for(g->w * g->h), BLOCK, 0, STREAM(ctx)>>>(*g, in, SP, mask, *lp, thr, out);
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
