/* cosmetics_math.h — per-pixel math of the cosmetics stage, shared by the CPU and CUDA twins
 * (DESIGN §3). Every formula exists here once.
 *
 * Identical masks on both backends need identical arithmetic: every float operation goes
 * through tide_fadd/fsub/fmul/fdiv/fsqrt (core/gpu/unfused.h), the IEEE round-to-nearest
 * intrinsics on the device (never fused into an FMA, never approximated) and plain operators
 * on the host (the C11 build does not contract). Medians are exact (insertion sort), neighbourhoods
 * outside the frame are clamped to the edge (scipy.ndimage mode 'nearest') where a full box is
 * needed. */
#ifndef TIDE_COSMETICS_MATH_H
#define TIDE_COSMETICS_MATH_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "core/gpu/unfused.h"
#include "tide/image.h"

/** Flags in the byte scratch planes. */
enum { COS_F_HOT = 1, COS_F_COLD = 2, COS_F_SET = 1 };

/** Frame geometry: pixels and mask share `stride`; scratch planes have stride w. */
typedef struct tide_cos_geom {
    int64_t w, h, stride;
} tide_cos_geom;

/** Noise model constants (van Dokkum 2001, eq. 10), all float so both sides round alike.
 *  gain 0 means unknown: then rdn2 is the frame's pixel variance in ADU² (cos_sigma). */
typedef struct tide_cos_noise {
    float gain, rdn2, bias; /* e-/ADU, read noise² (e-², or ADU² with gain 0), ADU */
} tide_cos_noise;

/** Constants of the test that releases star-like candidates (cos_psf_like; cosmetics.h,
 *  psf_fwhm), from tide_cos_psf_of (cosmetics_psf.c). on = 0: no test. */
typedef struct tide_cos_psf {
    int on;
    float var_min;   /* least moment eigenvalue of a star: psf_width · that of the FWHM */
    float round_min; /* least ratio of the smaller to the larger eigenvalue */
    float ring_max;  /* most a pixel 2 px from the peak may hold, as a fraction of the peak */
    float clip;      /* pixels at most clip·σ(b) above the background b weigh nothing */
    tide_cos_noise nm;
} tide_cos_psf;

/** Hot/cold test constants. */
typedef struct tide_cos_hot {
    float hot_sigma, cold_sigma, isolation, ratio;
    int do_hot, do_cold;
    uint16_t excl;    /* neighbours and pixels with these bits are ignored */
    tide_cos_psf psf; /* star-like hot candidates are released */
} tide_cos_hot;

/** L.A.Cosmic test constants. */
typedef struct tide_cos_lacos {
    float sigclip, objlim;
    uint16_t excl;    /* pixels with these bits are never flagged */
    int protect;      /* Chebyshev radius around SATURATED|BLEED with no flag */
    tide_cos_psf psf; /* star-like candidates are released */
} tide_cos_lacos;

TIDE_HD static inline int64_t cos_clamp(int64_t i, int64_t n) {
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

/** Sort v[0..n) ascending (insertion sort: n <= 49, deterministic, no NaN in input). */
TIDE_HD static inline void cos_sort(float *v, int n) {
    for (int i = 1; i < n; i++) {
        float x = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
}

/** Median of v[0..n), n >= 1 (sorts v): middle value, or the mean of the two middle ones. */
TIDE_HD static inline float cos_median(float *v, int n) {
    cos_sort(v, n);
    if (n & 1)
        return v[n / 2];
    return tide_fmul(0.5f, tide_fadd(v[n / 2 - 1], v[n / 2]));
}

/** σ in ADU at local level m (ADU): sqrt(g·max(m − bias, 1e-5) + rn²)/g (eq. 10). The floor
 *  is ~1e-5 electrons, a physical unit, so it holds at any data scale once the gain is known.
 *  Without a gain (g <= 0) there is no Poisson term and σ = sqrt(rdn2), the frame's measured
 *  noise: monotone (constant) in m, as the hot/cold screen needs. */
TIDE_HD static inline float cos_sigma(const tide_cos_noise *nm, float m) {
    if (!(nm->gain > 0.0f))
        return tide_fsqrt(nm->rdn2);
    float s = tide_fsub(m, nm->bias);
    if (!(s > 1e-5f))
        s = 1e-5f;
    return tide_fdiv(tide_fsqrt(tide_fadd(tide_fmul(nm->gain, s), nm->rdn2)), nm->gain);
}

/** Median of the (2r+1)² box of a (stride ld) around (x, y), edges clamped; r <= 3. */
TIDE_HD static inline float cos_box_median(const float *a, int64_t ld, int64_t w, int64_t h,
                                           int64_t x, int64_t y, int r) {
    float v[49];
    int n = 0;
    for (int dy = -r; dy <= r; dy++) {
        const float *row = a + cos_clamp(y + dy, h) * ld;
        for (int dx = -r; dx <= r; dx++)
            v[n++] = row[cos_clamp(x + dx, w)];
    }
    return cos_median(v, n);
}

/** L⁺ of van Dokkum 2001, eqs. 2–5, at one pixel without building the 2×-subsampled image:
 *  each pixel becomes a 2×2 block of its own value, the Laplacian kernel
 *  [[0,-1,0],[-1,4,-1],[0,-1,0]] at a sub-pixel sees two neighbours inside the block (equal to
 *  I) and one horizontal (left or right) and one vertical (up or down) neighbour outside it,
 *  so the four sub-pixel responses are 2I − I_h − I_v; negatives are clipped (eq. 4) and the
 *  block is averaged back (eq. 5). Edges replicate (the subsampled frame's symmetric
 *  boundary). cos_lplus5 is the value from the centre c and its left, right, up and down
 *  neighbours; cos_lpterm one clipped response 2I − I_h − I_v (c2 = 2I). */
TIDE_HD static inline float cos_lpterm(float c2, float h, float v) {
    const float t = tide_fsub(tide_fsub(c2, h), v);
    return t > 0.0f ? t : 0.0f;
}
/** The block average of the four clipped responses (in this order). */
TIDE_HD static inline float cos_lpsum(float t0, float t1, float t2, float t3) {
    float s = 0.0f;
    s = tide_fadd(s, t0);
    s = tide_fadd(s, t1);
    s = tide_fadd(s, t2);
    s = tide_fadd(s, t3);
    return tide_fmul(0.25f, s);
}
TIDE_HD static inline float cos_lplus5(float c, float l, float r, float u, float d) {
    const float c2 = tide_fadd(c, c);
    return cos_lpsum(cos_lpterm(c2, l, u), cos_lpterm(c2, r, u), cos_lpterm(c2, l, d),
                     cos_lpterm(c2, r, d));
}

/** cos_lplus5 at (x, y) of a (stride ld), edges replicated. */
TIDE_HD static inline float cos_lplus(const float *a, int64_t ld, int64_t w, int64_t h, int64_t x,
                                      int64_t y) {
    const float c = a[y * ld + x];
    const float l = a[y * ld + cos_clamp(x - 1, w)], r = a[y * ld + cos_clamp(x + 1, w)];
    const float u = a[cos_clamp(y - 1, h) * ld + x], d = a[cos_clamp(y + 1, h) * ld + x];
    return cos_lplus5(c, l, r, u, d);
}

/** F from the 49 3×3 medians m3[7·(dy + 3) + dx + 3] around a pixel (sorts m3). */
TIDE_HD static inline float cos_fine_of(float m3[49]) {
    const float centre = m3[24];
    return tide_fsub(centre, cos_median(m3, 49));
}

/** Fine-structure value F = med3(I) − med7(med3(I)) at (x, y) (van Dokkum 2001, eq. 11),
 *  edges clamped: the 7×7 median of the 3×3 medians around (x, y). */
TIDE_HD static inline float cos_fine(const float *a, int64_t ld, int64_t w, int64_t h, int64_t x,
                                     int64_t y) {
    float m3[49];
    int n = 0;
    for (int dy = -3; dy <= 3; dy++)
        for (int dx = -3; dx <= 3; dx++)
            m3[n++] = cos_box_median(a, ld, w, h, cos_clamp(x + dx, w), cos_clamp(y + dy, h), 1);
    return cos_fine_of(m3);
}

/** 1 when a pixel within Chebyshev distance r of (x, y) is SATURATED or BLEED. */
TIDE_HD static inline int cos_near_saturation(const uint16_t *mask, int64_t ld, int64_t w,
                                              int64_t h, int64_t x, int64_t y, int r) {
    const int64_t y0 = y - r < 0 ? 0 : y - r, y1 = y + r >= h ? h - 1 : y + r;
    const int64_t x0 = x - r < 0 ? 0 : x - r, x1 = x + r >= w ? w - 1 : x + r;
    for (int64_t j = y0; j <= y1; j++)
        for (int64_t i = x0; i <= x1; i++)
            if (mask[j * ld + i] & (TIDE_MASK_SATURATED | TIDE_MASK_BLEED))
                return 1;
    return 0;
}

/** A pixel of a (stride ld) counts in cos_psf_like: finite, and (with a mask) none of excl. */
TIDE_HD static inline int cos_psf_usable(const float *a, int64_t ld, const uint16_t *mask,
                                         uint16_t excl, int64_t x, int64_t y) {
    return isfinite(a[y * ld + x]) && (!mask || !(mask[y * ld + x] & excl));
}

/** The brightest usable pixel of the 3×3 box around (*x, *y) of a, the centre on ties (scan
 *  order otherwise): moves (*x, *y) there. */
TIDE_HD static inline void cos_psf_brightest(const float *a, int64_t ld, const uint16_t *mask,
                                             uint16_t excl, int64_t w, int64_t h, int64_t *x,
                                             int64_t *y) {
    const int64_t x0 = *x, y0 = *y;
    float bv = a[y0 * ld + x0];
    for (int64_t j = y0 - 1; j <= y0 + 1; j++)
        for (int64_t i = x0 - 1; i <= x0 + 1; i++)
            if (j >= 0 && j < h && i >= 0 && i < w && cos_psf_usable(a, ld, mask, excl, i, j) &&
                a[j * ld + i] > bv) {
                *x = i;
                *y = j;
                bv = a[j * ld + i];
            }
}

/** 1 when pixel (x, y) of a is in the core of a profile as broad and as round as a star
 *  (cosmetics.h, 3–4 with psf_fwhm). P is the brightest usable pixel of its 3×3 box, and
 *  must be the brightest of its own (a pixel farther from a peak is no star core: a hit
 *  beside a star stays flagged). b is the median of the usable pixels on the border of P's
 *  7×7 box (at least 8, else no release) and d = v − b. Every usable pixel on the border of
 *  P's 5×5 box must have d <= ring_max·d(P): no star's wing holds that 2 px from its peak,
 *  a track leaving the core or a neighbouring hit does. The usable pixels of P's 3×3 box
 *  with d > clip·σ(b) weigh the second moments about their centroid; the smaller eigenvalue
 *  λ− of that 2×2 matrix must reach var_min and round_min·λ+. @p mask may be NULL (every
 *  finite pixel counts); its stride is ld. */
TIDE_HD static inline int cos_psf_like(const float *a, int64_t ld, const uint16_t *mask,
                                       uint16_t excl, int64_t w, int64_t h, int64_t x, int64_t y,
                                       const tide_cos_psf *ps) {
    cos_psf_brightest(a, ld, mask, excl, w, h, &x, &y);
    int64_t px = x, py = y;
    cos_psf_brightest(a, ld, mask, excl, w, h, &px, &py);
    if (px != x || py != y)
        return 0;
    float ring[24];
    int n = 0;
    for (int dy = -3; dy <= 3; dy++)
        for (int dx = -3; dx <= 3; dx += (dy == -3 || dy == 3) ? 1 : 6) {
            const int64_t i = x + dx, j = y + dy;
            if (j >= 0 && j < h && i >= 0 && i < w && cos_psf_usable(a, ld, mask, excl, i, j))
                ring[n++] = a[j * ld + i];
        }
    if (n < 8)
        return 0;
    const float b = cos_median(ring, n);
    const float lim = tide_fmul(ps->ring_max, tide_fsub(a[y * ld + x], b));
    for (int dy = -2; dy <= 2; dy++)
        for (int dx = -2; dx <= 2; dx += (dy == -2 || dy == 2) ? 1 : 4) {
            const int64_t i = x + dx, j = y + dy;
            if (j >= 0 && j < h && i >= 0 && i < w && cos_psf_usable(a, ld, mask, excl, i, j) &&
                tide_fsub(a[j * ld + i], b) > lim)
                return 0;
        }
    const float thr = tide_fmul(ps->clip, cos_sigma(&ps->nm, b));
    float s0 = 0.0f, sx = 0.0f, sy = 0.0f, sxx = 0.0f, syy = 0.0f, sxy = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            const int64_t i = x + dx, j = y + dy;
            if (j < 0 || j >= h || i < 0 || i >= w || !cos_psf_usable(a, ld, mask, excl, i, j))
                continue;
            const float d = tide_fsub(a[j * ld + i], b);
            if (!(d > thr))
                continue;
            s0 = tide_fadd(s0, d);
            if (dx) {
                sx = dx > 0 ? tide_fadd(sx, d) : tide_fsub(sx, d);
                sxx = tide_fadd(sxx, d);
            }
            if (dy) {
                sy = dy > 0 ? tide_fadd(sy, d) : tide_fsub(sy, d);
                syy = tide_fadd(syy, d);
            }
            if (dx && dy)
                sxy = dx == dy ? tide_fadd(sxy, d) : tide_fsub(sxy, d);
        }
    if (!(s0 > 0.0f))
        return 0;
    const float mx = tide_fdiv(sx, s0), my = tide_fdiv(sy, s0);
    const float xx = tide_fsub(tide_fdiv(sxx, s0), tide_fmul(mx, mx));
    const float yy = tide_fsub(tide_fdiv(syy, s0), tide_fmul(my, my));
    const float xy = tide_fsub(tide_fdiv(sxy, s0), tide_fmul(mx, my));
    const float t = tide_fmul(0.5f, tide_fadd(xx, yy));
    const float hd = tide_fmul(0.5f, tide_fsub(xx, yy));
    const float dd = tide_fsqrt(tide_fadd(tide_fmul(hd, hd), tide_fmul(xy, xy)));
    const float lmin = tide_fsub(t, dd), lmax = tide_fadd(t, dd);
    return lmin >= ps->var_min && lmin >= tide_fmul(ps->round_min, lmax);
}

/** Hot/cold decision at (x, y): COS_F_HOT, COS_F_COLD or 0 (see cosmetics.h, pass 3). Only
 *  in-frame, finite neighbours without excluded bits count; fewer than 3 of the 8 means no
 *  decision.
 *
 *  Order of work (the answer is that of the plain test): with hot_sigma, cold_sigma and
 *  isolation >= 0 (cosmetics_params_check), a hot pixel has v − med > 0 and v − max >
 *  isolation·(v − med) >= 0, so v > max of the 8; a cold one has v < min. Most pixels are
 *  neither, and skip the median; the outer ring (for the hot ratio test) is read only for a
 *  pixel that passed the other hot tests. The medians do not depend on the order in which
 *  the values were gathered. */
TIDE_HD static inline int cos_hotcold(const float *pix, const uint16_t *mask,
                                      const tide_cos_geom *g, const tide_cos_noise *nm,
                                      const tide_cos_hot *hp, int64_t x, int64_t y) {
    const int64_t ld = g->stride;
    const float v = pix[y * ld + x];
    if (!isfinite(v) || (mask[y * ld + x] & hp->excl))
        return 0;
    float nb[8];
    int n8 = 0;
    for (int dy = -1; dy <= 1; dy++) {
        const int64_t yy = y + dy;
        if (yy < 0 || yy >= g->h)
            continue;
        for (int dx = -1; dx <= 1; dx++) {
            const int64_t xx = x + dx;
            if ((dx == 0 && dy == 0) || xx < 0 || xx >= g->w)
                continue;
            const float u = pix[yy * ld + xx];
            if (isfinite(u) && !(mask[yy * ld + xx] & hp->excl))
                nb[n8++] = u;
        }
    }
    if (n8 < 3)
        return 0;
    float mx = nb[0], mn = nb[0];
    for (int i = 1; i < n8; i++) {
        mx = nb[i] > mx ? nb[i] : mx;
        mn = nb[i] < mn ? nb[i] : mn;
    }
    if (hp->isolation >= 0.0f && hp->hot_sigma >= 0.0f && hp->cold_sigma >= 0.0f && !(v > mx) &&
        !(v < mn))
        return 0;
    const float med = cos_median(nb, n8);
    const float sig = cos_sigma(nm, med);
    if (hp->do_hot) {
        const float e = tide_fsub(v, med);
        if (e > tide_fmul(hp->hot_sigma, sig) && tide_fsub(v, mx) > tide_fmul(hp->isolation, e)) {
            float ring[16];
            int nr = 0;
            for (int dy = -2; dy <= 2; dy++) {
                const int64_t yy = y + dy;
                if (yy < 0 || yy >= g->h)
                    continue;
                for (int dx = -2; dx <= 2; dx++) {
                    const int64_t xx = x + dx;
                    if ((dx >= -1 && dx <= 1 && dy >= -1 && dy <= 1) || xx < 0 || xx >= g->w)
                        continue;
                    const float u = pix[yy * ld + xx];
                    if (isfinite(u) && !(mask[yy * ld + xx] & hp->excl))
                        ring[nr++] = u;
                }
            }
            const float rm = nr >= 3 ? cos_median(ring, nr) : med;
            if (e > tide_fmul(hp->ratio, tide_fsub(med, rm)) &&
                !(hp->psf.on && cos_psf_like(pix, ld, mask, hp->excl, g->w, g->h, x, y, &hp->psf)))
                return COS_F_HOT;
        }
    }
    if (hp->do_cold) {
        const float d = tide_fsub(med, v);
        if (d > tide_fmul(hp->cold_sigma, sig) && tide_fsub(mn, v) > tide_fmul(hp->isolation, d))
            return COS_F_COLD;
    }
    return 0;
}

/** cos_hotcold with a screen that proves the answer 0 for most pixels without the median
 *  (the CPU twin's screen, per pixel): where (x, y) is inside the frame's 1-pixel border and it
 *  and its 8 neighbours are usable, the neighbours' median med lies in [mn, mx] (their min and
 *  max) and every float step of cos_sigma is monotone, so a hot pixel needs v > mx and
 *  v − mn > hot_sigma·σ(mn), a cold one v < mn and mx − v > cold_sigma·σ(mn) (with the
 *  thresholds >= 0 as cos_hotcold's own shortcut assumes). Pixels that pass, and all others,
 *  take cos_hotcold. The same answer as cos_hotcold everywhere. */
TIDE_HD static inline int cos_hotcold_screened(const float *pix, const uint16_t *mask,
                                               const tide_cos_geom *g, const tide_cos_noise *nm,
                                               const tide_cos_hot *hp, int64_t x, int64_t y) {
    const int64_t ld = g->stride;
    if (x >= 1 && x < g->w - 1 && y >= 1 && y < g->h - 1 && hp->isolation >= 0.0f &&
        hp->hot_sigma >= 0.0f && hp->cold_sigma >= 0.0f) {
        const float *a = pix + (y - 1) * ld + x, *b = a + ld, *c = b + ld;
        const uint16_t *ma = mask + (y - 1) * ld + x, *mb = ma + ld, *mc = mb + ld;
        const uint16_t mor =
            (uint16_t)(ma[-1] | ma[0] | ma[1] | mb[-1] | mb[0] | mb[1] | mc[-1] | mc[0] | mc[1]);
        const float u[8] = {a[-1], a[0], a[1], b[-1], b[1], c[-1], c[0], c[1]};
        const float v = b[0];
        int fin = isfinite(v);
        float mx = u[0], mn = u[0];
        for (int k = 0; k < 8; k++) {
            fin &= isfinite(u[k]);
            mx = u[k] > mx ? u[k] : mx;
            mn = u[k] < mn ? u[k] : mn;
        }
        if (fin && !(mor & hp->excl)) {
            if (!(v > mx) && !(v < mn))
                return 0;
            const float sg = cos_sigma(nm, mn);
            const int maybe = v > mx
                                  ? hp->do_hot && tide_fsub(v, mn) > tide_fmul(hp->hot_sigma, sg)
                                  : hp->do_cold && tide_fsub(mx, v) > tide_fmul(hp->cold_sigma, sg);
            if (!maybe)
                return 0;
        }
    }
    return cos_hotcold(pix, mask, g, nm, hp, x, y);
}

/** Median of the usable pixels of the 5×5 box around (x, y) of src: in frame, finite, no
 *  `excl` bit. Returns 0 when none (out untouched), 1 with *out set. */
TIDE_HD static inline int cos_fill_value(const float *src, int64_t sld, const uint16_t *mask,
                                         int64_t mld, int64_t w, int64_t h, int64_t x, int64_t y,
                                         uint16_t excl, float *out) {
    float v[24];
    int n = 0;
    for (int dy = -2; dy <= 2; dy++) {
        const int64_t yy = y + dy;
        if (yy < 0 || yy >= h)
            continue;
        for (int dx = -2; dx <= 2; dx++) {
            const int64_t xx = x + dx;
            if ((dx == 0 && dy == 0) || xx < 0 || xx >= w)
                continue;
            const float u = src[yy * sld + xx];
            if (isfinite(u) && !(mask[yy * mld + xx] & excl))
                v[n++] = u;
        }
    }
    if (n == 0)
        return 0;
    *out = cos_median(v, n);
    return 1;
}

/** A pixel may be flagged as a cosmic ray: no excluded bit, not near saturation. */
TIDE_HD static inline int cos_may_flag(const uint16_t *mask, const tide_cos_geom *g,
                                       const tide_cos_lacos *lp, int64_t x, int64_t y) {
    if (mask[y * g->stride + x] & lp->excl)
        return 0;
    return lp->protect <= 0 || !cos_near_saturation(mask, g->stride, g->w, g->h, x, y, lp->protect);
}

/** The last step of cos_candidate, for a pixel that may be flagged with S' = sp > sigclip,
 *  fine structure F and noise n. */
TIDE_HD static inline int cos_candidate_f(float sp, float F, float n, const tide_cos_lacos *lp) {
    float f = tide_fdiv(F, n);
    if (!(f > 0.01f))
        f = 0.01f;
    return tide_fdiv(sp, f) > lp->objlim;
}

/** The step of cos_candidate after cos_candidate_f: 1 unless the test of star-like
 *  profiles is on and (x, y) of the working frame W belongs to one (cos_psf_like). */
TIDE_HD static inline int cos_candidate_psf(const float *W, const tide_cos_geom *g,
                                            const tide_cos_lacos *lp, int64_t x, int64_t y) {
    return !lp->psf.on || !cos_psf_like(W, g->w, NULL, 0, g->w, g->h, x, y, &lp->psf);
}

/** Candidate test at (x, y) (eqs. 11–13): S' > σ_lim and S'/f > f_lim with
 *  f = max(F/N, 0.01), the fine-structure contrast in units of the noise as lacosmic.cl;
 *  then cos_candidate_psf. */
TIDE_HD static inline int cos_candidate(const float *W, const float *N, const float *SP,
                                        const uint16_t *mask, const tide_cos_geom *g,
                                        const tide_cos_lacos *lp, int64_t x, int64_t y) {
    const int64_t i = y * g->w + x;
    if (!(SP[i] > lp->sigclip) || !cos_may_flag(mask, g, lp, x, y))
        return 0;
    return cos_candidate_f(SP[i], cos_fine(W, g->w, g->w, g->h, x, y), N[i], lp) &&
           cos_candidate_psf(W, g, lp, x, y);
}

/** Growth step of the detection (lacosmic.cl): a flaggable pixel with S' > thr next to (or
 *  on) a pixel of `in` in its 3×3 box, and (cos_candidate_psf) not in a star-like core of the
 *  working frame W: a hit beside a star does not grow into it. */
TIDE_HD static inline int cos_grow_one(const float *W, const uint8_t *in, const float *SP,
                                       const uint16_t *mask, const tide_cos_geom *g,
                                       const tide_cos_lacos *lp, float thr, int64_t x, int64_t y) {
    if (!(SP[y * g->w + x] > thr))
        return 0;
    int any = 0;
    for (int64_t j = y - 1; j <= y + 1 && !any; j++) {
        if (j < 0 || j >= g->h)
            continue;
        for (int64_t i = x - 1; i <= x + 1; i++)
            if (i >= 0 && i < g->w && in[j * g->w + i]) {
                any = 1;
                break;
            }
    }
    return any && cos_may_flag(mask, g, lp, x, y) && cos_candidate_psf(W, g, lp, x, y);
}

#endif
