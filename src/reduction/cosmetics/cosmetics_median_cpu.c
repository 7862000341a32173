/* cosmetics_median_cpu.c — exact 5×5 box medians by selection networks (cosmetics_median.h).
 *
 * How the networks were made (a throw-away script, not part of the build): Knuth's merge
 * exchange (Batcher) sorting network on 25 wires, preceded by sorting the five rows of the
 * column-sorted window; comparators that never exchange on inputs with sorted columns were
 * dropped, then every comparator whose outputs do not reach the median wire, keeping only the
 * min or max half where one output is unused; finally comparators were removed greedily while
 * the network stayed exact. Exactness was checked on all 6^5 0/1 inputs with sorted columns;
 * since a comparator network commutes with every monotone map of its inputs, that implies
 * exactness on every real input with sorted columns (the 0-1 principle, Knuth TAOCP vol. 3,
 * 5.3.4). tests/unit/test_cosmetics_median.c repeats that check on this code.
 *
 * Comparators are written with `q < p ? q : p` so that the compiler turns them into packed
 * min/max instructions and vectorises the loops over x. Which of two equal values a
 * comparator returns does not matter: they are the same number (the sign of a zero aside,
 * and no caller can tell ±0 apart: the medians only enter subtractions from other values and
 * comparisons). */
#include "cosmetics_median.h"

#include <stdlib.h>

#include "cosmetics_math.h"

/* On x86-64 with GCC the vectorised loops are also built for AVX2 and AVX-512 and the best
 * one is picked when the library loads (function multiversioning): the same comparisons on
 * wider vectors, so the same numbers. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define COS_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define COS_CLONES
#endif

#include "cosmetics_network.h"

float tide_cos_med25_sorted(const float in[25]) {
#define SRC_IN(k) in[k]
    DECL25(SRC_IN);
    MED25();
    return v12;
}

void tide_cos_sort5(float v[5]) {
    float v0 = v[0], v1 = v[1], v2 = v[2], v3 = v[3], v4 = v[4];
    SORT5();
    v[0] = v0, v[1] = v1, v[2] = v2, v[3] = v3, v[4] = v4;
}

/* Median at x from the sorted columns cs (5 planes of w, ascending) of the window's columns
 * c0..c4; v[5k + r] = cs[r·w + ck]. */
static inline float med_cols(const float *restrict cs, int64_t w, int64_t c0, int64_t c1,
                             int64_t c2, int64_t c3, int64_t c4) {
    const int64_t c[5] = {c0, c1, c2, c3, c4};
#define SRC_CS(k) cs[((k) % 5) * w + c[(k) / 5]]
    DECL25(SRC_CS);
    MED25();
    return v12;
}

/* cs[r·w + x] = the r-th smallest of p0[x]..p4[x]. */
COS_CLONES static void sort_columns(const float *restrict p0, const float *restrict p1,
                                    const float *restrict p2, const float *restrict p3,
                                    const float *restrict p4, int64_t w, float *restrict cs) {
    for (int64_t x = 0; x < w; x++) {
        float v0 = p0[x], v1 = p1[x], v2 = p2[x], v3 = p3[x], v4 = p4[x];
        SORT5();
        cs[x] = v0;
        cs[w + x] = v1;
        cs[2 * w + x] = v2;
        cs[3 * w + x] = v3;
        cs[4 * w + x] = v4;
    }
}

static int row_has_nan(const float *row, int64_t n) {
    int any = 0;
    for (int64_t x = 0; x < n; x++)
        any |= row[x] != row[x];
    return any;
}

COS_CLONES void tide_cos_med5_block(const float *a, int64_t ld, int64_t w, int64_t h, int64_t y0,
                                    int64_t y1, int64_t x0, int64_t x1, float *out, int64_t old,
                                    float *scratch) {
    /* sorted columns of [c0, c1): every column a window of [x0, x1) reaches, clamped */
    const int64_t c0 = x0 - 2 < 0 ? 0 : x0 - 2, c1 = x1 + 2 > w ? w : x1 + 2, nc = c1 - c0;
    float *restrict cs = scratch;
    /* NaN rows: one flag per source row in reach, checked once over [c0, c1) */
    const int64_t r0 = y0 - 2 < 0 ? 0 : y0 - 2, r1 = y1 + 2 > h ? h : y1 + 2;
    unsigned char *nanrow = malloc((size_t)(r1 - r0));
    for (int64_t r = r0; r < r1; r++) {
        const int f = row_has_nan(a + r * ld + c0, nc);
        if (nanrow) {
            nanrow[r - r0] = (unsigned char)f;
        } else if (f) { /* no memory for the flags: be safe, every row scalar */
            for (int64_t y = y0; y < y1; y++)
                for (int64_t x = x0; x < x1; x++)
                    out[(y - y0) * old + x - x0] = cos_box_median(a, ld, w, h, x, y, 2);
            return;
        }
    }
    /* interior windows (all five columns in the frame) run vectorised: [xi0, xi1) */
    const int64_t xi0 = x0 < 2 ? 2 : x0, xi1 = x1 > w - 2 ? w - 2 : x1;
    for (int64_t y = y0; y < y1; y++) {
        float *restrict o = out + (y - y0) * old - x0;
        const float *rw[5];
        int nan = 0;
        for (int k = 0; k < 5; k++) {
            const int64_t yy = cos_clamp(y + k - 2, h);
            rw[k] = a + yy * ld + c0;
            nan |= nanrow ? nanrow[yy - r0] : 0;
        }
        if (nan || w < 5) {
            for (int64_t x = x0; x < x1; x++)
                o[x] = cos_box_median(a, ld, w, h, x, y, 2);
            continue;
        }
        sort_columns(rw[0], rw[1], rw[2], rw[3], rw[4], nc, cs);
        /* column x of the frame is cs[.. + x - c0] */
        const float *restrict s0 = cs - c0, *restrict s1 = cs + nc - c0,
                              *restrict s2 = cs + 2 * nc - c0, *restrict s3 = cs + 3 * nc - c0,
                              *restrict s4 = cs + 4 * nc - c0;
        for (int64_t x = xi0; x < xi1; x++) {
            float v0 = s0[x - 2], v1 = s1[x - 2], v2 = s2[x - 2], v3 = s3[x - 2], v4 = s4[x - 2];
            float v5 = s0[x - 1], v6 = s1[x - 1], v7 = s2[x - 1], v8 = s3[x - 1], v9 = s4[x - 1];
            float v10 = s0[x], v11 = s1[x], v12 = s2[x], v13 = s3[x], v14 = s4[x];
            float v15 = s0[x + 1], v16 = s1[x + 1], v17 = s2[x + 1], v18 = s3[x + 1],
                  v19 = s4[x + 1];
            float v20 = s0[x + 2], v21 = s1[x + 2], v22 = s2[x + 2], v23 = s3[x + 2],
                  v24 = s4[x + 2];
            MED25();
            o[x] = v12;
        }
        /* windows touching the left or right edge: clamped columns */
        const int64_t le = x1 < xi0 ? x1 : xi0, rb = x0 > xi1 ? x0 : xi1;
        for (int64_t x = x0; x < le; x++)
            o[x] = med_cols(cs, nc, cos_clamp(x - 2, w) - c0, cos_clamp(x - 1, w) - c0, x - c0,
                            cos_clamp(x + 1, w) - c0, cos_clamp(x + 2, w) - c0);
        for (int64_t x = rb; x < x1; x++)
            o[x] = med_cols(cs, nc, cos_clamp(x - 2, w) - c0, cos_clamp(x - 1, w) - c0, x - c0,
                            cos_clamp(x + 1, w) - c0, cos_clamp(x + 2, w) - c0);
    }
    free(nanrow);
}

void tide_cos_med5_rows(const float *a, int64_t ld, int64_t w, int64_t h, int64_t y0, int64_t y1,
                        float *out, int64_t old, float *scratch) {
    tide_cos_med5_block(a, ld, w, h, y0, y1, 0, w, out, old, scratch);
}

/* v0..v31: leaves the 16th and 17th smallest in v15 and v16. Knuth's merge exchange network
 * on 32 wires (191 comparators) pruned to those two outputs (157 comparators, 284 min/max
 * operations): exact by construction, since pruning only drops comparators whose results
 * never reach v15 or v16. */
#define MID32()                                                                                    \
    do {                                                                                           \
        CX(0, 16);                                                                                 \
        CX(1, 17);                                                                                 \
        CX(2, 18);                                                                                 \
        CX(3, 19);                                                                                 \
        CX(4, 20);                                                                                 \
        CX(5, 21);                                                                                 \
        CX(6, 22);                                                                                 \
        CX(7, 23);                                                                                 \
        CX(8, 24);                                                                                 \
        CX(9, 25);                                                                                 \
        CX(10, 26);                                                                                \
        CX(11, 27);                                                                                \
        CX(12, 28);                                                                                \
        CX(13, 29);                                                                                \
        CX(14, 30);                                                                                \
        CX(15, 31);                                                                                \
        CX(0, 8);                                                                                  \
        CX(1, 9);                                                                                  \
        CX(2, 10);                                                                                 \
        CX(3, 11);                                                                                 \
        CX(4, 12);                                                                                 \
        CX(5, 13);                                                                                 \
        CX(6, 14);                                                                                 \
        CX(7, 15);                                                                                 \
        CX(16, 24);                                                                                \
        CX(17, 25);                                                                                \
        CX(18, 26);                                                                                \
        CX(19, 27);                                                                                \
        CX(20, 28);                                                                                \
        CX(21, 29);                                                                                \
        CX(22, 30);                                                                                \
        CX(23, 31);                                                                                \
        CX(8, 16);                                                                                 \
        CX(9, 17);                                                                                 \
        CX(10, 18);                                                                                \
        CX(11, 19);                                                                                \
        CX(12, 20);                                                                                \
        CX(13, 21);                                                                                \
        CX(14, 22);                                                                                \
        CX(15, 23);                                                                                \
        CX(0, 4);                                                                                  \
        CX(1, 5);                                                                                  \
        CX(2, 6);                                                                                  \
        CX(3, 7);                                                                                  \
        CX(8, 12);                                                                                 \
        CX(9, 13);                                                                                 \
        CX(10, 14);                                                                                \
        CX(11, 15);                                                                                \
        CX(16, 20);                                                                                \
        CX(17, 21);                                                                                \
        CX(18, 22);                                                                                \
        CX(19, 23);                                                                                \
        CX(24, 28);                                                                                \
        CX(25, 29);                                                                                \
        CX(26, 30);                                                                                \
        CX(27, 31);                                                                                \
        CX(4, 16);                                                                                 \
        CX(5, 17);                                                                                 \
        CX(6, 18);                                                                                 \
        CX(7, 19);                                                                                 \
        CX(12, 24);                                                                                \
        CX(13, 25);                                                                                \
        CX(14, 26);                                                                                \
        CX(15, 27);                                                                                \
        CX(4, 8);                                                                                  \
        CX(5, 9);                                                                                  \
        CX(6, 10);                                                                                 \
        CX(7, 11);                                                                                 \
        CX(12, 16);                                                                                \
        CX(13, 17);                                                                                \
        CX(14, 18);                                                                                \
        CX(15, 19);                                                                                \
        CX(20, 24);                                                                                \
        CX(21, 25);                                                                                \
        CX(22, 26);                                                                                \
        CX(23, 27);                                                                                \
        CX(0, 2);                                                                                  \
        CX(1, 3);                                                                                  \
        CX(4, 6);                                                                                  \
        CX(5, 7);                                                                                  \
        CX(8, 10);                                                                                 \
        CX(9, 11);                                                                                 \
        CX(12, 14);                                                                                \
        CX(13, 15);                                                                                \
        CX(16, 18);                                                                                \
        CX(17, 19);                                                                                \
        CX(20, 22);                                                                                \
        CX(21, 23);                                                                                \
        CX(24, 26);                                                                                \
        CX(25, 27);                                                                                \
        CX(28, 30);                                                                                \
        CX(29, 31);                                                                                \
        CX(2, 16);                                                                                 \
        CX(3, 17);                                                                                 \
        CX(6, 20);                                                                                 \
        CX(7, 21);                                                                                 \
        CX(10, 24);                                                                                \
        CX(11, 25);                                                                                \
        CX(14, 28);                                                                                \
        CX(15, 29);                                                                                \
        CX(2, 8);                                                                                  \
        CX(3, 9);                                                                                  \
        CX(6, 12);                                                                                 \
        CX(7, 13);                                                                                 \
        CX(10, 16);                                                                                \
        CX(11, 17);                                                                                \
        CX(14, 20);                                                                                \
        CX(15, 21);                                                                                \
        CX(18, 24);                                                                                \
        CX(19, 25);                                                                                \
        CX(22, 28);                                                                                \
        CX(23, 29);                                                                                \
        CX(2, 4);                                                                                  \
        CX(3, 5);                                                                                  \
        CX(6, 8);                                                                                  \
        CX(7, 9);                                                                                  \
        CX(10, 12);                                                                                \
        CX(11, 13);                                                                                \
        CX(14, 16);                                                                                \
        CX(15, 17);                                                                                \
        CX(18, 20);                                                                                \
        CX(19, 21);                                                                                \
        CX(22, 24);                                                                                \
        CX(23, 25);                                                                                \
        CX(26, 28);                                                                                \
        CX(27, 29);                                                                                \
        CM(0, 1);                                                                                  \
        CM(2, 3);                                                                                  \
        CM(4, 5);                                                                                  \
        CM(6, 7);                                                                                  \
        CM(8, 9);                                                                                  \
        CM(10, 11);                                                                                \
        CM(12, 13);                                                                                \
        CM(14, 15);                                                                                \
        CN(16, 17);                                                                                \
        CN(18, 19);                                                                                \
        CN(20, 21);                                                                                \
        CN(22, 23);                                                                                \
        CN(24, 25);                                                                                \
        CN(26, 27);                                                                                \
        CN(28, 29);                                                                                \
        CN(30, 31);                                                                                \
        CM(1, 16);                                                                                 \
        CM(3, 18);                                                                                 \
        CM(5, 20);                                                                                 \
        CM(7, 22);                                                                                 \
        CN(9, 24);                                                                                 \
        CN(11, 26);                                                                                \
        CN(13, 28);                                                                                \
        CN(15, 30);                                                                                \
        CM(9, 16);                                                                                 \
        CM(11, 18);                                                                                \
        CN(13, 20);                                                                                \
        CN(15, 22);                                                                                \
        CM(13, 16);                                                                                \
        CN(15, 18);                                                                                \
        CX(15, 16);                                                                                \
    } while (0)

COS_CLONES void tide_cos_mid32_cols(const float *z, int64_t ld, int64_t n, float *lo, float *hi) {
    const float *restrict zz = z;
    float *restrict l = lo, *restrict hh = hi;
    /* no dependence between iterations (GCC otherwise gives up on the many alias checks) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
    for (int64_t x = 0; x < n; x++) {
#define Z(r) zz[(r)*ld + x]
        float v0 = Z(0), v1 = Z(1), v2 = Z(2), v3 = Z(3), v4 = Z(4), v5 = Z(5), v6 = Z(6),
              v7 = Z(7), v8 = Z(8), v9 = Z(9), v10 = Z(10), v11 = Z(11), v12 = Z(12), v13 = Z(13),
              v14 = Z(14), v15 = Z(15), v16 = Z(16), v17 = Z(17), v18 = Z(18), v19 = Z(19),
              v20 = Z(20), v21 = Z(21), v22 = Z(22), v23 = Z(23), v24 = Z(24), v25 = Z(25),
              v26 = Z(26), v27 = Z(27), v28 = Z(28), v29 = Z(29), v30 = Z(30), v31 = Z(31);
#undef Z
        MID32();
        l[x] = v15;
        hh[x] = v16;
    }
}
