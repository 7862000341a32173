/* stats_internal.h — links between stats.c (plain statistics, scratch, views) and
 * select.c (order statistics, sigma clipping). Not public API. */
#ifndef TIDE_REDUCE_INTERNAL_H
#define TIDE_REDUCE_INTERNAL_H
#include "stats_kernels.h"
#include "tide/image.h"

/** Check @p im and describe it for the kernels of ctx's backend: a host image on a CUDA
 *  context is uploaded into the scratch. Bounds are -inf, +inf. */
int tide_reduce_view_make(tide_ctx *ctx, const tide_image *im, uint16_t maskbits,
                          tide_reduce_view *v);

/** Count, mean and population std of the pixels a view selects (two passes, fixed order);
 *  mean and std are NaN when the count is 0. @p mom receives the first pass. */
int tide_reduce_view_stats(tide_ctx *ctx, const tide_reduce_view *v, tide_reduce_moments *mom,
                           double *mean, double *std);

/** Exact order statistics: keys[i] = tide_reduce_key of the ranks[i]-th smallest (0-based)
 *  of the @p n pixels the view selects; ranks must be ascending and < n. */
int tide_reduce_select(tide_ctx *ctx, const tide_reduce_view *v, int64_t n, const int64_t *ranks,
                       int nranks, uint32_t *keys);

/** numpy.median of the n selected pixels (n > 0). */
int tide_reduce_view_median(tide_ctx *ctx, const tide_reduce_view *v, int64_t n, double *med);

#endif
