/* png_grey.h — a stretch's grey levels as a table of thresholds (png_grey.c): the level of a
 * pixel found by comparisons instead of an asinh per pixel, the same bytes. Internal to the
 * library. */
#ifndef TIDE_IO_PNG_GREY_H
#define TIDE_IO_PNG_GREY_H
#include <math.h>

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

/** Buckets of a tide_grey_index: 128 KiB of levels, which stays in a core's L2 cache. */
#define TIDE_GREY_BUCKETS 65536

/** A table's levels by direct lookup: [a, a + n / scale) cut into n equal buckets of values,
 *  each holding the level every float in it maps to, or TIDE_GREY_AMBIGUOUS where a threshold's
 *  guard interval lies in the bucket or next to it (there, and outside the range, the
 *  thresholds decide). One multiply and one load a pixel instead of eight dependent compares:
 *  the stretch of a 4096² picture drops from ~165 to ~35 ms of CPU. */
typedef struct {
    const tide_grey_table *g; /**< the thresholds (borrowed) */
    double a, scale;          /**< bucket of x: (int)((x - a) * scale) */
    int n;                    /**< buckets (0: none, the thresholds decide everywhere) */
    unsigned short lv[TIDE_GREY_BUCKETS]; /**< level, or TIDE_GREY_AMBIGUOUS */
} tide_grey_index;

/** The mark of a bucket whose floats need the thresholds. */
#define TIDE_GREY_AMBIGUOUS 0x100

/** Build the index of @p g (which must outlive it). */
void tide_grey_index_init(tide_grey_index *ix, const tide_grey_table *g);

/** The level of @p x (any float; 0 for NaN and infinities, as png.c draws them): exactly
 *  tide_grey_level(ix->g, x) for finite @p x. */
static inline unsigned char tide_grey_index_level(const tide_grey_index *ix, float x) {
    const double d = ((double)x - ix->a) * ix->scale; /* NaN, inf: outside, below */
    if (d >= 0 && d < ix->n) {
        const unsigned v = ix->lv[(int)d];
        if (v < TIDE_GREY_AMBIGUOUS)
            return (unsigned char)v;
    }
    return isfinite(x) ? tide_grey_level(ix->g, x) : 0;
}

#endif
