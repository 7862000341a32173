/* png_grey.h — a stretch's grey levels as a table of thresholds (png_grey.c): the level of a
 * pixel found by comparisons instead of an asinh per pixel, the same bytes. Internal to the
 * library. */
#ifndef TIDE_IO_PNG_GREY_H
#define TIDE_IO_PNG_GREY_H

/** A monotone map from finite floats to grey levels 0..255. */
typedef unsigned char (*tide_grey_fn)(float x, const void *arg);

/** The thresholds of a map: t[k - 1] is the smallest float of level k or more (+inf when
 *  none reaches it), and [lo[k - 1], hi[k - 1]) the few floats around it where the map is
 *  evaluated directly, so that a last-bit wobble of the maths near a threshold (libm's asinh
 *  is faithful, not proven monotone) cannot change a pixel. */
typedef struct {
    float t[256], lo[255], hi[255]; /**< t[255] = +inf */
    tide_grey_fn fn;
    const void *arg;
} tide_grey_table;

/** Build the table of @p fn (with @p arg) by bisection over the floats: 255 x 32 evaluations. */
void tide_grey_table_init(tide_grey_table *g, tide_grey_fn fn, const void *arg);

/** The level of finite @p x: fn(x, arg), bit for bit. */
static inline unsigned char tide_grey_level(const tide_grey_table *g, float x) {
    int k = 0; /* without branches: t[255] is +inf, so k never passes 255 */
    for (int step = 128; step; step >>= 1)
        k += (x >= g->t[k + step - 1]) * step;
    /* next to the threshold below or above: the map itself */
    if ((k > 0 && x < g->hi[k - 1]) || (k < 255 && x >= g->lo[k]))
        return g->fn(x, g->arg);
    return (unsigned char)k;
}

#endif
