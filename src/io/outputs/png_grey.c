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
