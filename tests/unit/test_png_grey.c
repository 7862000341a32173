/* test_png_grey.c — the grey-level threshold table of the PNG writer (io/outputs/png_grey.h)
 * gives exactly its map's level: for asinh stretches (one-sided and symmetric about zero) and
 * a linear one, on random floats of every magnitude, on every float within 4 steps of each
 * threshold, and on the extremes; and the bucket index over the table (tide_grey_index) gives
 * the table's level for the same floats, those at every bucket edge too. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/test_rng.h"
#include "io/outputs/png_grey.h"
#include "tide_test.h"

typedef struct {
    int kind; /* 0 asinh, 1 symmetric asinh, 2 linear */
    double lo, hi, soft;
} stretch;

/* The maps of png.c's grey(), written out again. */
static unsigned char level(float x, const void *arg) {
    const stretch *s = arg;
    double t;
    if (s->kind == 0)
        t = asinh(((double)x - s->lo) / s->soft) / asinh((s->hi - s->lo) / s->soft);
    else if (s->kind == 1)
        t = 0.5 + 0.5 * asinh((double)x / s->soft) / asinh(s->hi / s->soft);
    else
        t = ((double)x - s->lo) / (s->hi - s->lo);
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    return (unsigned char)floor(t * 255.0 + 0.5);
}

static float step(float x, int n) {
    for (int i = 0; i < n; i++)
        x = nextafterf(x, INFINITY);
    for (int i = 0; i > n; i--)
        x = nextafterf(x, -INFINITY);
    return x;
}

/* The @p i-th float of a test: odd ones around the stretch's range, even ones any bits. */
static float draw(const stretch *s, int i, uint64_t *rng) {
    float x;
    if (i % 2) {
        x = (float)(s->lo + (s->hi - s->lo) * (1.4 * trng_unit(trng_splitmix64(rng)) - 0.2));
    } else {
        const uint32_t u = (uint32_t)trng_splitmix64(rng);
        memcpy(&x, &u, 4);
    }
    return x;
}

int main(void) {
    const stretch cases[] = {{0, 950.0, 1800.0, 0.02 * 850.0},
                             {1, -35.0, 35.0, 0.1 * 70.0},
                             {2, -3.5, 120.25, 1.0},
                             {0, 0.0, 1e-30, 1e-33}};
    uint64_t rng = 19;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tide_grey_table g;
        tide_grey_table_init(&g, level, &cases[c]);
        int64_t bad = 0, n = 0;
        for (int i = 0; i < 2000000; i++) { /* around the range, and any bits at all */
            const float x = draw(&cases[c], i, &rng);
            if (!isfinite(x))
                continue;
            bad += tide_grey_level(&g, x) != level(x, &cases[c]);
            n++;
        }
        for (int k = 0; k < 255; k++)
            for (int d = -4; d <= 4 && isfinite(g.t[k]); d++) {
                const float x = step(g.t[k], d);
                if (isfinite(x)) {
                    bad += tide_grey_level(&g, x) != level(x, &cases[c]);
                    n++;
                }
            }
        const float ends[] = {-FLT_MAX, FLT_MAX, 0.f, -0.f, FLT_MIN, -FLT_MIN};
        for (size_t e = 0; e < sizeof ends / sizeof *ends; e++, n++)
            bad += tide_grey_level(&g, ends[e]) != level(ends[e], &cases[c]);
        printf("stretch %zu: %lld of %lld floats differ\n", c, (long long)bad, (long long)n);
        CHECK(bad == 0);
        /* the bucket index: the table's level for the same floats, NaN and infinities 0 */
        static tide_grey_index ix;
        tide_grey_index_init(&ix, &g);
        int64_t ibad = 0, amb = 0;
        for (int i = 0; i < ix.n; i++)
            amb += ix.lv[i] == TIDE_GREY_AMBIGUOUS;
        for (int i = 0; i < 2000000; i++) {
            const float x = draw(&cases[c], i, &rng);
            ibad += tide_grey_index_level(&ix, x) != (isfinite(x) ? tide_grey_level(&g, x) : 0);
        }
        for (int k = 0; k < 255; k++) /* every float near the thresholds and bucket edges */
            for (int d = -40; d <= 40 && isfinite(g.t[k]); d++) {
                const float x = step(g.t[k], d);
                ibad += isfinite(x) && tide_grey_index_level(&ix, x) != tide_grey_level(&g, x);
            }
        for (int i = 0; i <= ix.n; i += 7)
            for (int d = -3; d <= 3; d++) {
                const float x = step((float)(ix.a + i / ix.scale), d);
                ibad += isfinite(x) && tide_grey_index_level(&ix, x) != tide_grey_level(&g, x);
            }
        const float odd[] = {NAN, INFINITY, -INFINITY};
        for (int e = 0; e < 3; e++)
            ibad += tide_grey_index_level(&ix, odd[e]) != 0;
        for (size_t e = 0; e < sizeof ends / sizeof *ends; e++)
            ibad += tide_grey_index_level(&ix, ends[e]) != tide_grey_level(&g, ends[e]);
        printf("  index: %d buckets (%lld ambiguous), %lld floats differ\n", ix.n, (long long)amb,
               (long long)ibad);
        CHECK(ibad == 0);
        CHECK(c == 3 || ix.n > 1000); /* the tiny range is the one without buckets */
    }
    return TIDE_TEST_RESULT();
}
