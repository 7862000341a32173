/* cosmetics_lines_math.h — the cosmetics passes that walk whole lines (bad columns, bleed
 * trails), shared by the CPU and CUDA twins: the serial forms the CPU runs and the segmented
 * forms the GPU runs, which give the same bits (tests/unit/test_cosmetics_scan.c). The
 * per-pixel math they use is cosmetics_math.h's. */
#ifndef TIDE_COSMETICS_LINES_MATH_H
#define TIDE_COSMETICS_LINES_MATH_H
#include <math.h>
#include <stdint.h>

#include "cosmetics_math.h"

/* ---- bad columns ---------------------------------------------------------------------------
 * z(x, y) = (I − m)/σ(m) with m the median of the pixels 1 and 2 columns either side on the
 * same row: a column that differs from its neighbours shows a residual of constant sign over
 * many rows, while stars and noise do not. Per column, the median z over blocks of
 * COS_COL_BLOCK rows (at least half of them usable) marks a block when |median| > k; runs of
 * at least `minrun` marked blocks of one sign are bad, extended pixel by pixel into the
 * neighbouring blocks while z keeps that sign beyond k/2 (a partial column starts mid-block). */
#define COS_COL_BLOCK 32

/** Median of four values without sorting: the mean of the two middle ones, max of the pair
 *  minima and min of the pair maxima (the same two numbers the sort would give). */
TIDE_HD static inline float cos_med4(float a, float b, float c, float d) {
    const float lo1 = b < a ? b : a, hi1 = b < a ? a : b;
    const float lo2 = d < c ? d : c, hi2 = d < c ? c : d;
    const float m1 = lo1 < lo2 ? lo2 : lo1, m2 = hi2 < hi1 ? hi2 : hi1;
    return tide_fmul(0.5f, tide_fadd(m1, m2));
}

/** z of a pixel of value v whose neighbours' median is m. */
TIDE_HD static inline float cos_col_zval(const tide_cos_noise *nm, float v, float m) {
    return tide_fdiv(tide_fsub(v, m), cos_sigma(nm, m));
}

/** Column residual z at (x, y), or NaN when the pixel or too many neighbours are unusable. */
TIDE_HD static inline float cos_col_z(const float *pix, const uint16_t *mask,
                                      const tide_cos_geom *g, const tide_cos_noise *nm,
                                      uint16_t excl, int64_t x, int64_t y) {
    const int64_t ld = g->stride;
    const float v = pix[y * ld + x];
    if (!isfinite(v) || (mask[y * ld + x] & excl))
        return NAN;
    float nb[4];
    int n = 0;
    for (int dx = -2; dx <= 2; dx++) {
        const int64_t xx = x + dx;
        if (dx == 0 || xx < 0 || xx >= g->w)
            continue;
        const float u = pix[y * ld + xx];
        if (isfinite(u) && !(mask[y * ld + xx] & excl))
            nb[n++] = u;
    }
    if (n < 2)
        return NAN;
    const float m = n == 4 ? cos_med4(nb[0], nb[1], nb[2], nb[3]) : cos_median(nb, n);
    return cos_col_zval(nm, v, m);
}

/** Block sign from the n usable z values of a block of @p rows rows (sorts z): +1 / -1
 *  when the median is beyond ±k, 0 when it is not or too few rows are usable. */
TIDE_HD static inline int cos_col_sign_of(float m, float k) {
    return m > k ? 1 : (m < -k ? -1 : 0);
}
TIDE_HD static inline int cos_col_sign(float *z, int n, int rows, float k) {
    if (rows < COS_COL_BLOCK / 2 || 2 * n < rows)
        return 0;
    return cos_col_sign_of(cos_median(z, n), k);
}

/** Median z of rows [y0, y0 + COS_COL_BLOCK) of column x, as +1 / -1 / 0 against k. */
TIDE_HD static inline int cos_col_block(const float *pix, const uint16_t *mask,
                                        const tide_cos_geom *g, const tide_cos_noise *nm,
                                        uint16_t excl, float k, int64_t x, int64_t y0) {
    float z[COS_COL_BLOCK];
    int n = 0, rows = 0;
    for (int64_t y = y0; y < y0 + COS_COL_BLOCK && y < g->h; y++, rows++) {
        const float t = cos_col_z(pix, mask, g, nm, excl, x, y);
        if (t == t)
            z[n++] = t;
    }
    return cos_col_sign(z, n, rows, k);
}

/** Runs of column x: from the block signs blk (stride w, one row per block, +1 → 1, -1 → 2),
 *  set out = 1 (stride w) on runs of at least `minrun` blocks of one sign, extended pixel by
 *  pixel while z keeps that sign beyond k/2. Writes only the 1s. */
TIDE_HD static inline void cos_col_runs(const float *pix, const uint16_t *mask,
                                        const tide_cos_geom *g, const tide_cos_noise *nm,
                                        uint16_t excl, float k, int minrun, int64_t x,
                                        const uint8_t *blk, uint8_t *out) {
    const int64_t w = g->w, nb = (g->h + COS_COL_BLOCK - 1) / COS_COL_BLOCK;
    const float half = tide_fmul(0.5f, k);
    int64_t b = 0;
    while (b < nb) {
        const uint8_t s = blk[b * w + x];
        int64_t e = b;
        while (e < nb && s && blk[e * w + x] == s)
            e++;
        if (!s || e - b < minrun) {
            b = s ? e : b + 1;
            continue;
        }
        const int64_t y0 = b * COS_COL_BLOCK,
                      y1 = e * COS_COL_BLOCK < g->h ? e * COS_COL_BLOCK : g->h;
        for (int64_t y = y0; y < y1; y++)
            out[y * w + x] = 1;
        /* extend while z keeps the sign beyond k/2 */
        for (int64_t y = y0 - 1; y >= 0; y--) {
            const float t = cos_col_z(pix, mask, g, nm, excl, x, y);
            if (!(s == 1 ? t > half : t < -half))
                break;
            out[y * w + x] = 1;
        }
        for (int64_t y = y1; y < g->h; y++) {
            const float t = cos_col_z(pix, mask, g, nm, excl, x, y);
            if (!(s == 1 ? t > half : t < -half))
                break;
            out[y * w + x] = 1;
        }
        b = e;
    }
}

/** Mark the bad segments of column x in out (stride w, 1 = bad), using blk (stride w, one
 *  row per block) as scratch for the block signs (stored +1 → 1, -1 → 2). */
TIDE_HD static inline void cos_col_scan(const float *pix, const uint16_t *mask,
                                        const tide_cos_geom *g, const tide_cos_noise *nm,
                                        uint16_t excl, float k, int minrun, int64_t x, uint8_t *blk,
                                        uint8_t *out) {
    const int64_t w = g->w, nb = (g->h + COS_COL_BLOCK - 1) / COS_COL_BLOCK;
    for (int64_t y = 0; y < g->h; y++)
        out[y * w + x] = 0;
    for (int64_t b = 0; b < nb; b++) {
        const int s = cos_col_block(pix, mask, g, nm, excl, k, x, b * COS_COL_BLOCK);
        blk[b * w + x] = (uint8_t)(s > 0 ? 1 : (s < 0 ? 2 : 0));
    }
    cos_col_runs(pix, mask, g, nm, excl, k, minrun, x, blk, out);
}

/* ---- bleed trails: three sweeps along each line (column or row) ---------------------------
 * Sweep 1 (forward) marks pixels whose high run contains a saturated pixel at or before them;
 * sweep 2 (backward) completes the run with saturated pixels after them and marks pixels
 * within `grow` before a run pixel; sweep 3 (forward) adds pixels within `grow` after one.
 * State per line is two small integers, so the CPU runs lines in blocks (rows outer, cache
 * friendly) and the GPU one line per thread (coalesced along columns). Scratch bits: */
enum { COS_B_FWD = 1, COS_B_RUN = 2, COS_B_GROW = 4 };

/** Sweep 1 at one pixel. *prev: 1 if the previous pixel was marked. */
TIDE_HD static inline uint8_t cos_bleed_fwd(float v, uint16_t m, float hi, int *prev) {
    const int sat = (m & TIDE_MASK_SATURATED) != 0;
    const int high = sat || (isfinite(v) && v >= hi);
    *prev = high && (sat || *prev);
    return *prev ? (uint8_t)COS_B_FWD : (uint8_t)0;
}

/** Sweep 2 at one pixel (walking backward). *prev as above, *dist pixels since the last run
 *  pixel (start large). Returns the new scratch byte. */
TIDE_HD static inline uint8_t cos_bleed_bwd(float v, uint16_t m, float hi, uint8_t s, int grow,
                                            int *prev, int *dist) {
    const int sat = (m & TIDE_MASK_SATURATED) != 0;
    const int high = sat || (isfinite(v) && v >= hi);
    *prev = high && (sat || *prev);
    const int run = *prev || (s & COS_B_FWD);
    *dist = run ? 0 : (*dist < 1 << 30 ? *dist + 1 : *dist);
    return (uint8_t)((run ? COS_B_RUN : 0) | (*dist <= grow ? COS_B_GROW : 0));
}

/** Sweep 3 at one pixel (forward): 1 when the pixel gets BLEED. */
TIDE_HD static inline int cos_bleed_final(uint16_t m, uint8_t s, int grow, int *dist) {
    *dist = (s & COS_B_RUN) ? 0 : (*dist < 1 << 30 ? *dist + 1 : *dist);
    const int in = (s & COS_B_GROW) || *dist <= grow;
    return in && !(m & TIDE_MASK_SATURATED);
}

/* ---- bleed trails, segmented: the same bits with a short serial depth (the GPU's form) ----
 * What the three sweeps compute: a pixel is RUN when it is high (SATURATED, or finite and
 * >= hi) and its maximal high run along the line contains a SATURATED pixel (sweep 1 finds
 * one at or before it in the run, sweep 2 one at or after it); it gets BLEED when it is not
 * SATURATED and some RUN pixel lies within ±grow along the line (sweep 2's GROW bit looks
 * ahead, sweep 3 behind; a RUN pixel is within 0 of itself).
 *
 * Here a line is cut into segments of COS_SEG pixels (the last may be shorter):
 *   1. per segment, with carries 0: all-high?, does the tail run (ending at its last pixel)
 *      hold a SATURATED pixel (sweep 1's state at the end), does the head run (starting at
 *      its first pixel; sweep 2's state at the start), any SATURATED, first/last pixel high;
 *   2. per line, the carries: sweep 1's state entering segment s is FEND of s − 1, or, when
 *      s − 1 is all high, also the carry entering s − 1 (cos_bleed_carry); sweep 2 mirrored;
 *   3. per segment that holds a RUN pixel, RUN bits by the two sweeps started from the
 *      carries (cos_bleed_seg_run);
 *   4. per segment, BLEED from the RUN bits within ±grow (cos_bleed_seg_grow), reading RUN
 *      only in segments that hold one (scratch elsewhere is never written).
 * tests/unit/test_cosmetics_scan.c checks it against the sweeps on random lines. */
#define COS_SEG 128
/* Unrolled on the device, so that a thread has several pixels' loads in flight. */
#ifdef __CUDA_ARCH__
#define COS_UNROLL8 _Pragma("unroll 8")
#else
#define COS_UNROLL8
#endif
enum {
    COS_S_ALL = 1,   /* every pixel high */
    COS_S_FEND = 2,  /* tail run holds a SATURATED pixel (forward state at the end, carry 0) */
    COS_S_BEND = 4,  /* head run holds one (backward state at the start, carry 0) */
    COS_S_SAT = 8,   /* some pixel SATURATED */
    COS_S_HEAD = 16, /* first pixel high */
    COS_S_TAIL = 32, /* last pixel high */
    COS_S_CINF = 64, /* forward carry in: the run entering from the left holds one */
    COS_S_CINB = 128 /* backward carry in: the run entering from the right holds one */
};

/** Segments of a line of @p len pixels. */
TIDE_HD static inline int64_t cos_bleed_nseg(int64_t len) {
    return (len + COS_SEG - 1) / COS_SEG;
}

/** The high test of the sweeps (cos_bleed_fwd). */
TIDE_HD static inline int cos_bleed_high(float v, uint16_t m, float hi) {
    return (m & TIDE_MASK_SATURATED) || (isfinite(v) && v >= hi);
}

/** Step 1: summary of the @p n (>= 1) pixels pix[i·ps], mask[i·ps] of one segment. */
TIDE_HD static inline uint8_t cos_bleed_seg_sum(const float *pix, const uint16_t *mask, int64_t ps,
                                                int64_t n, float hi) {
    int all = 1, fend = 0, bend = 0, head_open = 1, any = 0, first = 0, last = 0;
    COS_UNROLL8
    for (int64_t i = 0; i < n; i++) {
        const uint16_t m = mask[i * ps];
        const int sat = (m & TIDE_MASK_SATURATED) != 0;
        const int high = cos_bleed_high(pix[i * ps], m, hi);
        if (i == 0)
            first = high;
        last = high;
        all &= high;
        any |= sat;
        fend = high && (sat || fend);
        head_open &= high;
        bend |= head_open && sat;
    }
    return (uint8_t)((all ? COS_S_ALL : 0) | (fend ? COS_S_FEND : 0) | (bend ? COS_S_BEND : 0) |
                     (any ? COS_S_SAT : 0) | (first ? COS_S_HEAD : 0) | (last ? COS_S_TAIL : 0));
}

/** Step 2 on one line: set CINF / CINB in its @p nseg summaries sum[s·sst]. */
TIDE_HD static inline void cos_bleed_carry(uint8_t *sum, int64_t sst, int64_t nseg) {
    int c = 0;
    for (int64_t s = 0; s < nseg; s++) {
        const uint8_t b = (uint8_t)((sum[s * sst] & ~COS_S_CINF) | (c ? COS_S_CINF : 0));
        sum[s * sst] = b;
        c = (b & COS_S_FEND) || ((b & COS_S_ALL) && c);
    }
    c = 0;
    for (int64_t s = nseg - 1; s >= 0; s--) {
        const uint8_t b = (uint8_t)((sum[s * sst] & ~COS_S_CINB) | (c ? COS_S_CINB : 0));
        sum[s * sst] = b;
        c = (b & COS_S_BEND) || ((b & COS_S_ALL) && c);
    }
}

/** 1 when a segment with (carried) summary @p b holds a RUN pixel: a SATURATED one, or a
 *  run entering from either side through a high end pixel. */
TIDE_HD static inline int cos_bleed_hasrun(uint8_t b) {
    return (b & COS_S_SAT) || ((b & COS_S_CINF) && (b & COS_S_HEAD)) ||
           ((b & COS_S_CINB) && (b & COS_S_TAIL));
}

/** Step 3 on one segment of @p n pixels with carried summary @p b: scr[i·ss] = COS_B_RUN on
 *  RUN pixels, else 0 (the two sweeps of cos_bleed_fwd / cos_bleed_bwd from the carries). */
TIDE_HD static inline void cos_bleed_seg_run(const float *pix, const uint16_t *mask, int64_t ps,
                                             int64_t n, float hi, uint8_t b, uint8_t *scr,
                                             int64_t ss) {
    int prev = (b & COS_S_CINF) != 0;
    for (int64_t i = 0; i < n; i++)
        scr[i * ss] = cos_bleed_fwd(pix[i * ps], mask[i * ps], hi, &prev);
    prev = (b & COS_S_CINB) != 0;
    for (int64_t i = n - 1; i >= 0; i--) {
        const int bwd = cos_bleed_fwd(pix[i * ps], mask[i * ps], hi, &prev) != 0;
        scr[i * ss] = (uint8_t)((bwd || (scr[i * ss] & COS_B_FWD)) ? COS_B_RUN : 0);
    }
}

/** RUN at position j of a line (scr stride ss, summaries stride sst). */
TIDE_HD static inline int cos_bleed_run_at(const uint8_t *scr, int64_t ss, const uint8_t *sum,
                                           int64_t sst, int64_t j) {
    return cos_bleed_hasrun(sum[(j / COS_SEG) * sst]) && (scr[j * ss] & COS_B_RUN);
}

/** Step 4 on pixels [i0, i1) of a line of @p len pixels (mask stride ps; scr, sum as in
 *  cos_bleed_run_at): mask |= BLEED where not SATURATED and a RUN pixel is within ±grow.
 *  Walks forward once: `last` is the last RUN at or before i, `nxt` the first RUN in
 *  [i, i + grow] (positions up to p − 1 already looked at, each once). */
TIDE_HD static inline void cos_bleed_seg_grow(uint16_t *mask, int64_t ps, const uint8_t *scr,
                                              int64_t ss, const uint8_t *sum, int64_t sst,
                                              int64_t len, int64_t i0, int64_t i1, int grow) {
    const int64_t j0 = i0 - grow > 0 ? i0 - grow : 0;
    const int64_t j1 = i1 - 1 + grow < len - 1 ? i1 - 1 + grow : len - 1;
    int any = 0;
    for (int64_t s = j0 / COS_SEG; s <= j1 / COS_SEG && !any; s++)
        any = cos_bleed_hasrun(sum[s * sst]);
    if (!any)
        return;
    int64_t last = i0 - grow - 1; /* none within reach */
    for (int64_t j = i0 - 1; j >= j0; j--)
        if (cos_bleed_run_at(scr, ss, sum, sst, j)) {
            last = j;
            break;
        }
    int64_t nxt = -1, p = i0;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t lim = i + grow < len - 1 ? i + grow : len - 1;
        while (nxt < i && p <= lim) {
            if (cos_bleed_run_at(scr, ss, sum, sst, p))
                nxt = p;
            p++;
        }
        if (nxt == i)
            last = i;
        if ((nxt >= i || i - last <= grow) && !(mask[i * ps] & TIDE_MASK_SATURATED))
            mask[i * ps] |= TIDE_MASK_BLEED;
    }
}

/** Where the lines of the bleed pass lie: @p nlines lines of @p len pixels, @p nseg segments
 *  each; pixel i of line l at l·ps_l + i·ps_i (pix/mask), at l·ss_l + i·ss_i (scratch).
 *  Segment s of line l has its summary at sum[s·nlines + l] (consecutive lines adjacent, so
 *  along columns the threads of a warp read consecutive pixels of a row). */
typedef struct tide_cos_lines {
    int64_t nlines, len, nseg, ps_l, ps_i, ss_l, ss_i;
} tide_cos_lines;

TIDE_HD static inline tide_cos_lines cos_bleed_lines(const tide_cos_geom *g, int axis) {
    tide_cos_lines L;
    L.nlines = axis == 0 ? g->w : g->h;
    L.len = axis == 0 ? g->h : g->w;
    L.nseg = cos_bleed_nseg(L.len);
    L.ps_l = axis == 0 ? 1 : g->stride;
    L.ps_i = axis == 0 ? g->stride : 1;
    L.ss_l = axis == 0 ? 1 : g->w;
    L.ss_i = axis == 0 ? g->w : 1;
    return L;
}

/** Steps 1, 3 and 4 for work item t = s·nlines + l (segment s of line l), 0 <= t <
 *  nlines·nseg; step 2 is cos_bleed_carry(sum + l, nlines, nseg) per line. */
TIDE_HD static inline void cos_bleed_t_sum(const tide_cos_lines *L, const float *pix,
                                           const uint16_t *mask, float hi, uint8_t *sum,
                                           int64_t t) {
    const int64_t s = t / L->nlines, l = t - s * L->nlines, i0 = s * COS_SEG;
    const int64_t n = L->len - i0 < COS_SEG ? L->len - i0 : COS_SEG;
    const int64_t o = l * L->ps_l + i0 * L->ps_i;
    sum[t] = cos_bleed_seg_sum(pix + o, mask + o, L->ps_i, n, hi);
}
TIDE_HD static inline void cos_bleed_t_run(const tide_cos_lines *L, const float *pix,
                                           const uint16_t *mask, float hi, const uint8_t *sum,
                                           uint8_t *scr, int64_t t) {
    const uint8_t b = sum[t];
    if (!cos_bleed_hasrun(b))
        return;
    const int64_t s = t / L->nlines, l = t - s * L->nlines, i0 = s * COS_SEG;
    const int64_t n = L->len - i0 < COS_SEG ? L->len - i0 : COS_SEG;
    const int64_t o = l * L->ps_l + i0 * L->ps_i;
    cos_bleed_seg_run(pix + o, mask + o, L->ps_i, n, hi, b, scr + l * L->ss_l + i0 * L->ss_i,
                      L->ss_i);
}
TIDE_HD static inline void cos_bleed_t_grow(const tide_cos_lines *L, uint16_t *mask,
                                            const uint8_t *scr, const uint8_t *sum, int grow,
                                            int64_t t) {
    const int64_t s = t / L->nlines, l = t - s * L->nlines, i0 = s * COS_SEG;
    const int64_t i1 = L->len < i0 + COS_SEG ? L->len : i0 + COS_SEG;
    cos_bleed_seg_grow(mask + l * L->ps_l, L->ps_i, scr + l * L->ss_l, L->ss_i, sum + l, L->nlines,
                       L->len, i0, i1, grow);
}

#endif
