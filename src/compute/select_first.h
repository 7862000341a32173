/* select_first.h — partial selection on the host: the k first elements of a total order.
 *
 * Stages that keep only the best k of n candidates (PSF stars, aperture-correction stars)
 * sort just those k instead of all n: O(n + k log k) instead of O(n log n). */
#ifndef TIDE_SELECT_FIRST_H
#define TIDE_SELECT_FIRST_H
#include <stddef.h>
#include <stdint.h>

/** Reorder @p n elements of @p size bytes at @p base so that the @p k first of the order
 *  @p cmp (which must be total, e.g. with an index tie-break) sit in base[0..k), in any order
 *  (quickselect, Hoare partition with the middle element as pivot). qsort of those k then
 *  gives exactly the head of a full sort. */
void tide_select_first(void *base, int64_t n, int64_t k, size_t size,
                       int (*cmp)(const void *, const void *));

#endif
