/* stats.h — deterministic reductions, exact selection and sigma-clipped statistics.
 *
 * Every function works over the *valid* pixels of an image: a pixel is valid when its value
 * is finite and, if the image has a mask plane, (mask & maskbits) == 0. Pass
 * TIDE_REDUCE_ALL_BITS to exclude a pixel that has any mask bit set, or e.g.
 * TIDE_MASK_NODATA to exclude only missing data.
 *
 * Determinism. Sums are accumulated in double in one fixed order that does not depend on the
 * backend or the number of threads: the valid region (row-major, width × height, padding
 * columns of the stride ignored) is cut into chunks of TIDE_REDUCE_CHUNK pixels; inside a
 * chunk lane l (0..TIDE_REDUCE_LANES-1) adds pixels l, l+LANES, ... sequentially, the lanes are
 * added in a pairwise tree, and the chunk partials are added in a pairwise tree
 * (stride 1, 2, 4, ...). The CPU (OpenMP) and CUDA backends run this same order with the same
 * IEEE operations (no FMA contraction), so count, sum, min, max, mean and std are bitwise
 * identical across runs, thread counts and backends. Variance is two-pass (sum, then sum of
 * squared deviations about the mean), population (ddof = 0) like numpy.std.
 *
 * Selection is exact: order statistics are found by radix selection over the order-preserving
 * integer image of the float bit patterns (11 + 11 + 10 bits) on both backends, so medians and
 * percentiles are identical on CPU and GPU.
 *
 * Images. A CPU context needs a host image. A CUDA context takes a device image (the fast
 * path) or a host image, which is uploaded into a scratch buffer cached in the context
 * (an extension slot); scratch memory grows to the largest frame seen and is then
 * reused, so repeated calls on one frame shape do not allocate. */
#ifndef TIDE_REDUCE_H
#define TIDE_REDUCE_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Pixels per chunk and lanes per chunk of the fixed reduction order (see above). */
#define TIDE_REDUCE_CHUNK 4096
#define TIDE_REDUCE_LANES 256

/** Mask bits that exclude a pixel: every bit. */
#define TIDE_REDUCE_ALL_BITS 0xFFFFu

/** Plain statistics of the valid pixels. Values are NaN when n_valid is 0. */
typedef struct tide_stats {
    int64_t n_total; /**< width × height */
    int64_t n_valid; /**< finite pixels with no excluded mask bit */
    double sum;      /**< sum of valid pixels (data units) */
    double mean;     /**< sum / n_valid */
    double std;      /**< population standard deviation (ddof = 0, as numpy.std) */
    double min;      /**< smallest valid pixel */
    double max;      /**< largest valid pixel */
} tide_stats;

/** Count, sum, min, max, mean and std of the valid pixels of @p im (definitions above).
 *  Returns TIDE_E_EMPTY (with *out filled: counts set, values NaN) when no pixel is valid,
 *  TIDE_E_INVAL for a bad image or an image on the wrong side for the context. */
TIDE_API int tide_reduce_stats(tide_ctx *ctx, const tide_image *im, uint16_t maskbits,
                               tide_stats *out);

/** Percentiles of the valid pixels, as numpy.percentile(valid, q) with its default
 *  'linear' method: with the n valid values sorted x_0 <= ... <= x_{n-1}, h = (n-1)·q/100,
 *  j = floor(h), g = h - j, the result is x_j + g·(x_{j+1} - x_j) (evaluated as numpy does:
 *  x_{j+1} - (x_{j+1} - x_j)·(1-g) when g >= 0.5). @p q holds @p nq percentages in [0, 100]
 *  (TIDE_E_RANGE otherwise); @p out receives nq values. Order statistics are exact.
 *  TIDE_E_EMPTY when no pixel is valid (out set to NaN). */
TIDE_API int tide_reduce_percentiles(tide_ctx *ctx, const tide_image *im, uint16_t maskbits,
                                     const double *q, int nq, double *out);

/** Median of the valid pixels, as numpy.median: the middle value, or the mean of the two
 *  middle values ((a + b) / 2 in double) when n is even. TIDE_E_EMPTY when none is valid. */
TIDE_API int tide_reduce_median(tide_ctx *ctx, const tide_image *im, uint16_t maskbits,
                                double *median);

/** Parameters of sigma clipping. */
typedef struct tide_sigclip_params {
    double sigma; /**< clip at median ± sigma·std [3.0]; must be > 0 */
    int maxiters; /**< at most this many clipping iterations; <= 0 = until convergence [5] */
} tide_sigclip_params;

/** Defaults: sigma 3, maxiters 5 (astropy's). */
static inline tide_sigclip_params tide_sigclip_defaults(void) {
    tide_sigclip_params p = {3.0, 5};
    return p;
}

/** Result of sigma-clipped statistics. */
typedef struct tide_sigclip_result {
    double mean;    /**< mean of the kept pixels */
    double median;  /**< median of the kept pixels (numpy.median) */
    double std;     /**< population std of the kept pixels (ddof = 0) */
    int64_t n_kept; /**< pixels kept after the last iteration */
    int iterations; /**< clipping iterations performed (astropy's niterations) */
    double lo, hi;  /**< the last bounds applied: median ∓ sigma·std of the previous set */
} tide_sigclip_result;

/** Sigma-clipped mean, median and std of the valid pixels, defined exactly as
 *  astropy.stats.sigma_clipped_stats(valid, sigma, maxiters=maxiters, cenfunc='median',
 *  stdfunc='std', std_ddof=0) on the float64 values: starting from S = valid pixels, repeat
 *  at most maxiters times: m = median(S), s = std(S), S' = {x in S : m - sigma·s <= x <=
 *  m + sigma·s}; stop early when S' has as many pixels as S. The result is mean, median and
 *  std of the final S. @p p may be NULL for the defaults. TIDE_E_EMPTY when no pixel is valid;
 *  values are NaN if clipping removed everything. */
TIDE_API int tide_reduce_sigma_clip(tide_ctx *ctx, const tide_image *im, uint16_t maskbits,
                                    const tide_sigclip_params *p, tide_sigclip_result *out);

/** Make the context's reduction scratch (device partials, histograms and, for host images on
 *  a CUDA context, the upload buffer) large enough for width × height images, so the calls
 *  above do not allocate. Optional: they grow the scratch themselves when needed. */
TIDE_API int tide_reduce_reserve(tide_ctx *ctx, int64_t width, int64_t height, int host_images);

#ifdef __cplusplus
}
#endif
#endif
