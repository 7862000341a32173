/* png_grey.c — tide_grey_table_init: the thresholds of a monotone grey map, found by
 * bisection over the floats in their order (png_grey.h). */
#include "png_grey.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Floats in order as integers: -FLT_MAX .. FLT_MAX maps to -0x7f7fffff .. 0x7f7fffff (both
 * zeros to 0). */
static int64_t ord(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return (u >> 31) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}

static float from_ord(int64_t o) {
    const uint32_t u = o < 0 ? 0x80000000u | (uint32_t)(-o) : (uint32_t)o;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* The floats within this many steps of a threshold are evaluated directly. */
enum { GUARD = 2 };

void tide_grey_table_init(tide_grey_table *g, tide_grey_fn fn, const void *arg) {
    g->fn = fn;
    g->arg = arg;
    g->t[255] = INFINITY;
    const int64_t omin = ord(-FLT_MAX), omax = ord(FLT_MAX);
    for (int k = 1; k <= 255; k++) {
        float t;
        if (fn(FLT_MAX, arg) < k) {
            t = INFINITY; /* no finite pixel reaches level k */
        } else if (fn(-FLT_MAX, arg) >= k) {
            t = -FLT_MAX;
        } else { /* fn(a) < k <= fn(b) */
            int64_t a = omin, b = omax;
            while (b - a > 1) {
                const int64_t m = a + (b - a) / 2;
                if (fn(from_ord(m), arg) >= k)
                    b = m;
                else
                    a = m;
            }
            t = from_ord(b);
        }
        g->t[k - 1] = t;
        if (isinf(t)) {
            g->lo[k - 1] = g->hi[k - 1] = t;
        } else {
            const int64_t o = ord(t);
            g->lo[k - 1] = from_ord(o - GUARD < omin ? omin : o - GUARD);
            g->hi[k - 1] = o + GUARD > omax ? INFINITY : from_ord(o + GUARD);
        }
    }
}

/* Mark buckets [i0, i1] of @p ix ambiguous (clamped to the index). */
static void mark(tide_grey_index *ix, double i0, double i1) {
    if (i1 < 0 || i0 >= ix->n)
        return;
    const int a = i0 < 0 ? 0 : (int)i0, b = i1 >= ix->n ? ix->n - 1 : (int)i1;
    for (int i = a; i <= b; i++)
        ix->lv[i] = TIDE_GREY_AMBIGUOUS;
}

void tide_grey_index_init(tide_grey_index *ix, const tide_grey_table *g) {
    ix->g = g;
    ix->n = 0;
    /* The range: from the lowest guard to the highest, thresholds at the ends of the floats
     * (levels every float reaches, or none) left out, as they would stretch it to ~1e38. */
    double a = INFINITY, b = -INFINITY;
    for (int k = 0; k < 255; k++)
        if (g->lo[k] > -FLT_MAX && g->hi[k] < FLT_MAX) {
            a = fmin(a, g->lo[k]);
            b = fmax(b, g->hi[k]);
        }
    if (!(b > a))
        return;
    /* Buckets wide enough that the index, computed in double, is never more than a bucket
     * off: 16 float steps at the range's largest magnitude, at least. */
    const double ulp = fmax(fabs(a), fabs(b)) * FLT_EPSILON;
    double n = TIDE_GREY_BUCKETS;
    if ((b - a) / n < 16 * ulp)
        n = floor((b - a) / (16 * ulp));
    if (n < 256)
        return; /* a range of a few floats: the thresholds everywhere */
    ix->a = a;
    ix->n = (int)n;
    ix->scale = n / (b - a);
    /* Each guard interval [lo, hi) marks its buckets and two more on either side, covering a
     * pixel whose bucket is misplaced by one and the rounding of the marks themselves: every
     * bucket left unmarked, with its neighbours, holds no threshold and no guard, so the
     * table's search gives one level for all its floats (the count of thresholds below). */
    for (int i = 0; i < ix->n; i++)
        ix->lv[i] = 0;
    for (int k = 0; k < 255; k++)
        if (!isinf(g->t[k]))
            mark(ix, floor(((double)g->lo[k] - a) * ix->scale) - 2,
                 floor(((double)g->hi[k] - a) * ix->scale) + 2);
    for (int i = 0; i < ix->n; i++)
        if (ix->lv[i] != TIDE_GREY_AMBIGUOUS) {
            const float mid = (float)(a + ((double)i + 0.5) / ix->scale);
            ix->lv[i] = tide_grey_level(g, mid);
        }
}
