/* select_f64.h — order statistics of a host array of doubles (or floats) by selection (not a
 * sort), for the small robust statistics of the stages (clipping scales, Theil–Sen slopes,
 * medians of separations, the background's mesh medians). Internal to the library. */
#ifndef TIDE_COMPUTE_SELECT_F64_H
#define TIDE_COMPUTE_SELECT_F64_H
#include <stdint.h>

/** The k-th smallest (0-based) of v[0..n), n > 0, no NaN. Hoare's selection with a
 *  median-of-three pivot, O(n) on average; v is reordered so that v[0..k) <= v[k] <= v[k+1..n). */
double tide_select_kth_f64(double *v, int64_t n, int64_t k);
/** tide_select_kth_f64 for floats. */
float tide_select_kth_f32(float *v, int64_t n, int64_t k);

/** The median (5th smallest) of 9 floats with no NaN, by a fixed network of 19
 *  compare-exchanges (no branches, no reordering of the caller's array): the value
 *  tide_select_kth_f32(v, 9, 4) gives. */
float tide_median9_f32(const float *v);

/** numpy.median of v[0..n) (n > 0, no NaN): the middle value, or the mean of the two middle
 *  values; v is reordered. */
double tide_median_f64(double *v, int64_t n);

/** tide_median_f64 for large arrays, with up to @p threads threads and v left unchanged: a
 *  sample of v brackets the middle ranks, one parallel pass counts the values below the
 *  bracket and gathers those inside it, and selection within the bracket gives the same
 *  order statistics (so the same value) as tide_median_f64. Falls back to tide_median_f64
 *  (reordering v) for small n or when the sample's bracket misses. */
double tide_median_f64_par(double *v, int64_t n, int threads);

#endif
