/* cosmetics_median.h — fast exact box medians for the CPU twin of the cosmetics stage.
 *
 * The CPU kernels of cosmetics_cpu.c spend most of their time in 5×5 medians (the noise
 * model med5(W) over the whole frame and med5(S) of the Laplacian). cos_box_median sorts each
 * window by insertion: exact, but branchy and slow. The functions here give the very same
 * value at every pixel (the 13th smallest of the same 25 numbers, edges clamped the same way)
 * with a branch-free selection network that the compiler vectorises across x:
 *
 *   1. each column of the 5-row band is sorted once (a 9-comparator network), and shared by
 *      the five windows that contain it;
 *   2. the median of five sorted columns comes from a 62-comparator selection network (100
 *      min/max operations; cosmetics_median_cpu.c says how it was made and why it is exact;
 *      tests/unit/test_cosmetics_median.c checks it on every 0/1 input, which by the 0-1
 *      principle proves it for all inputs).
 *
 * Rows touching a NaN take the scalar path (cos_box_median) so that even NaN inputs, whose
 * order the insertion sort defines in its own way, give the same answer bit for bit. */
#ifndef TIDE_COSMETICS_MEDIAN_H
#define TIDE_COSMETICS_MEDIAN_H
#include <stdint.h>

/** Median of the 5×5 box around every pixel of rows [y0, y1) of @p a (w × h, stride @p ld,
 *  edges clamped), written to out[(y - y0) * old + x]; equal to cos_box_median(a, ld, w, h,
 *  x, y, 2) bit for bit. @p scratch: 5·w floats. */
void tide_cos_med5_rows(const float *a, int64_t ld, int64_t w, int64_t h, int64_t y0, int64_t y1,
                        float *out, int64_t old, float *scratch);

/** For each of @p n columns x, the 16th and 17th smallest (lo[x] <= hi[x]) of the 32 values
 *  z[r·ld + x], r = 0..31 (NaN-free input), by a selection network vectorised across x: the
 *  two middle values of cos_median over a full block of the bad-column pass. */
void tide_cos_mid32_cols(const float *z, int64_t ld, int64_t n, float *lo, float *hi);

/** tide_cos_med5_rows on the columns [x0, x1) only: out[(y - y0) * old + x - x0];
 *  @p scratch: 5·(x1 − x0 + 4) floats. */
void tide_cos_med5_block(const float *a, int64_t ld, int64_t w, int64_t h, int64_t y0, int64_t y1,
                         int64_t x0, int64_t x1, float *out, int64_t old, float *scratch);

/** The selection network of step 2 on one window: @p v holds five sorted columns (v[5c + r]
 *  ascending in r); returns their median (the 13th smallest of the 25). Exposed for the
 *  exhaustive 0-1 test. */
float tide_cos_med25_sorted(const float v[25]);

/** Step 1 on one column: sort v[0..5) ascending (the same network). */
void tide_cos_sort5(float v[5]);

#endif
