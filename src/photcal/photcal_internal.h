/* photcal_internal.h — what photcal.c and photcal_apply.c share. */
#ifndef TIDE_PHOTCAL_INTERNAL_H
#define TIDE_PHOTCAL_INTERNAL_H
#include <stdint.h>

/** Theil–Sen line y = a + b x over pairs with |x_j − x_i| > @p min_dx: b the median of the
 *  pairwise slopes, a the median of y − b x. At most 600 points enter (an evenly spaced
 *  subset in input order when there are more), so the cost stays ~2·10^5 pairs. Returns 0, or
 *  -1 without two usable points; -2 on no memory. */
int tide_photcal_theil_sen(const double *x, const double *y, int64_t n, double min_dx, double *b,
                           double *a);

#endif
