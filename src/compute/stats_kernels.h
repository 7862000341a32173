/* stats_kernels.h — the kernel entry points stats.c needs from a backend (DESIGN §3).
 *
 * Each has a _cpu twin (stats_cpu.c, OpenMP) and a _cuda twin (stats_cuda.cu). Both walk
 * the same fixed order (include/tide/stats.h): chunks of TIDE_REDUCE_CHUNK pixels, lanes
 * summed sequentially, lanes and then chunks added in pairwise trees, so results agree
 * bit for bit. The view's pointers live where the backend computes (host or device);
 * outputs are always host values. */
#ifndef TIDE_REDUCE_KERNELS_H
#define TIDE_REDUCE_KERNELS_H
#include <stddef.h>
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/stats.h"
#include "core/ctx_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a kernel reads: the pixels, the optional mask, and which pixels count. */
typedef struct tide_reduce_view {
    const float *pix;
    const uint16_t *mask; /**< NULL = no mask plane */
    int64_t width, height, stride;
    uint16_t maskbits;
    double lo, hi; /**< inclusive value bounds (-inf, +inf when not clipping) */
} tide_reduce_view;

/** First pass: count, sum (fixed tree, double) and min/max as order keys
 *  (tide_reduce_key; 0xFFFFFFFF / 0 when count is 0). */
typedef struct tide_reduce_moments {
    int64_t count;
    double sum;
    uint32_t kmin, kmax;
} tide_reduce_moments;

/** Number of chunks for n pixels. */
static inline int64_t tide_reduce_nchunks(int64_t n) {
    return (n + TIDE_REDUCE_CHUNK - 1) / TIDE_REDUCE_CHUNK;
}

int tide_reduce_moments_cpu(tide_ctx *ctx, const tide_reduce_view *v, tide_reduce_moments *out);
/** Second pass: sum over valid pixels of (x - mean)², same order. */
int tide_reduce_m2_cpu(tide_ctx *ctx, const tide_reduce_view *v, double mean, double *m2);
/** Histograms of radix level @p level (0, 1, 2) of the keys of valid pixels whose higher
 *  digits equal prefix[t] (prefix unused at level 0), for t < ntargets <=
 *  TIDE_RSEL_MAX_TARGETS; hist receives ntargets × TIDE_RSEL_BINS counts (host). */
int tide_reduce_hist_cpu(tide_ctx *ctx, const tide_reduce_view *v, int level,
                         const uint32_t *prefix, int ntargets, uint64_t *hist);

#ifdef TIDE_HAVE_CUDA
int tide_reduce_moments_cuda(tide_ctx *ctx, const tide_reduce_view *v, tide_reduce_moments *out);
int tide_reduce_m2_cuda(tide_ctx *ctx, const tide_reduce_view *v, double mean, double *m2);
int tide_reduce_hist_cuda(tide_ctx *ctx, const tide_reduce_view *v, int level,
                          const uint32_t *prefix, int ntargets, uint64_t *hist);
#endif

/* ---- scratch cached in ctx->ext[TIDE_EXT_REDUCE] (stats.c) ---------------------------- */

/** Buffers kept between calls; each grows to the largest need and is then reused. */
typedef struct tide_reduce_scratch {
    void *d_part; /**< device chunk partials */
    size_t d_part_bytes;
    void *d_small; /**< device histograms, prefixes and the final result */
    size_t d_small_bytes;
    void *d_pix; /**< device copy of a host image (CUDA context) */
    size_t d_pix_bytes;
    void *d_mask;
    size_t d_mask_bytes;
    void *h_part; /**< host chunk partials (CPU backend) */
    size_t h_part_bytes;
} tide_reduce_scratch;

/** The context's scratch, created on first use. NULL only when out of memory. */
tide_reduce_scratch *tide_reduce_scratch_get(tide_ctx *ctx);

/** Make *buf hold at least @p need bytes (on the device when @p on_device), keeping it when
 *  it already does. Contents are not preserved. */
int tide_reduce_scratch_ensure(tide_ctx *ctx, void **buf, size_t *cap, size_t need, int on_device);

#ifdef __cplusplus
}
#endif
#endif
