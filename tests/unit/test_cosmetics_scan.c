/* test_cosmetics_scan.c — the GPU's parallel forms of the cosmetics line scans, run serially
 * on the host, give the very same masks as the serial scans they replace:
 *   - bleed trails: the segmented form (cos_bleed_t_sum / cos_bleed_carry / cos_bleed_t_run /
 *     cos_bleed_t_grow, in the CUDA kernels' order and indexing) against the three sweeps
 *     (cos_bleed_fwd / bwd / final, one line at a time as the old kernel walked them) and
 *     against the CPU twin tide_cos_bleed_cpu, on random frames along both axes: random and
 *     long high runs crossing segment borders, saturated pixels (also on NaN values), NaN and
 *     infinite pixels, values equal to the threshold, lines wholly high with and without a
 *     saturated pixel, sizes that do and do not divide into segments, lines shorter than a
 *     segment, padded strides, grow 0, 1, 2, 7, 200 and 1024;
 *   - bad columns: the split form (block signs per (column, block), then cos_col_runs per
 *     column after a zeroed `out`, skipping columns with no marked block) against
 *     cos_col_scan;
 *   - hot/cold pixels: cos_hotcold_screened (the CUDA kernel's) against cos_hotcold on random
 *     frames with ties, NaN, infinities, signed zeros and masked pixels;
 *   - L.A.Cosmic candidates: F from a tile's staged 3×3 medians (the CUDA k_cand's indexing)
 *     against cos_candidate. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "reduction/cosmetics/cosmetics_internal.h"
#include "reduction/cosmetics/cosmetics_kernels.h"
#include "reduction/cosmetics/cosmetics_lines_math.h"
#include "reduction/cosmetics/cosmetics_region.h"
#include "tide/tide.h"
#include "tide_test.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint32_t urand32(void) {
    return (uint32_t)(trng_xorshift64(&rs) >> 11);
}
static double urand(void) {
    return (urand32() & 0xFFFFFF) / 16777216.0;
}

#define HI 100.0f

/* One pixel of a bleed test line: high/low value, NaN, infinity, the threshold itself;
 * saturated with probability psat (then high, or NaN with the SATURATED bit only). */
static void bleed_pixel(float *v, uint16_t *m, int high, double psat) {
    const double u = urand();
    *m = (uint16_t)(urand() < 0.05 ? TIDE_MASK_BAD : 0);
    if (urand() < 0.02)
        *m |= TIDE_MASK_BLEED; /* already set: stays set */
    if (high)
        *v = u < 0.1 ? HI : (u < 0.12 ? INFINITY : 150.0f + (float)(100 * u));
    else
        *v = u < 0.05 ? NAN : (u < 0.07 ? -INFINITY : 50.0f * (float)u);
    if (urand() < psat) {
        *m |= TIDE_MASK_SATURATED;
        if (urand() < 0.2)
            *v = NAN;
        else if (!(*v >= HI) || !isfinite(*v))
            *v = 30000.0f;
    }
}

/* A w × h frame (stride w + pad) whose lines along `axis` follow a random regime each. */
static void bleed_frame(float *pix, uint16_t *mask, int64_t w, int64_t h, int64_t ld, int axis) {
    const int64_t nl = axis == 0 ? w : h, len = axis == 0 ? h : w;
    for (int64_t l = 0; l < nl; l++) {
        const int mode = (int)(urand() * 6);
        int high = 0;
        int64_t left = 0; /* pixels left in the current run (modes 1, 2) */
        for (int64_t i = 0; i < len; i++) {
            const int64_t p = axis == 0 ? i * ld + l : l * ld + i;
            double psat = 0.0;
            switch (mode) {
            case 0: /* sparse */
                high = urand() < 0.3;
                psat = 0.03;
                break;
            case 1: /* long runs, saturated pixels rare */
            case 2:
                if (left == 0) {
                    high = !high;
                    left = 1 + (int64_t)(urand() * (mode == 1 ? 400 : 60));
                }
                left--;
                psat = high ? (mode == 1 ? 0.002 : 0.01) : 0.0;
                break;
            case 3: /* wholly high, no saturated pixel */ high = 1; break;
            case 4: /* wholly high, one saturated pixel somewhere */
                high = 1;
                psat = 1.0 / (double)len;
                break;
            default: /* low */ high = urand() < 0.02; psat = 0.0;
            }
            bleed_pixel(&pix[p], &mask[p], high, psat);
        }
    }
}

/* The three sweeps, one line at a time (the old CUDA kernel's order). */
static void bleed_sweeps(const tide_cos_geom *g, const float *pix, uint16_t *mask, float hi,
                         int axis, int grow, uint8_t *scratch) {
    const tide_cos_lines L = cos_bleed_lines(g, axis);
    for (int64_t l = 0; l < L.nlines; l++) {
        int prev = 0, dist = 1 << 30;
        for (int64_t i = 0; i < L.len; i++)
            scratch[l * L.ss_l + i * L.ss_i] = cos_bleed_fwd(
                pix[l * L.ps_l + i * L.ps_i], mask[l * L.ps_l + i * L.ps_i], hi, &prev);
        prev = 0;
        for (int64_t i = L.len - 1; i >= 0; i--) {
            const int64_t p = l * L.ps_l + i * L.ps_i, s = l * L.ss_l + i * L.ss_i;
            scratch[s] = cos_bleed_bwd(pix[p], mask[p], hi, scratch[s], grow, &prev, &dist);
        }
        dist = 1 << 30;
        for (int64_t i = 0; i < L.len; i++) {
            const int64_t p = l * L.ps_l + i * L.ps_i, s = l * L.ss_l + i * L.ss_i;
            if (cos_bleed_final(mask[p], scratch[s], grow, &dist))
                mask[p] |= TIDE_MASK_BLEED;
        }
    }
}

/* The segmented form, as the CUDA kernels run it (each loop one kernel; the work items of
 * a kernel are independent, so any order gives the same). Scratch starts as garbage. */
static void bleed_segmented(const tide_cos_geom *g, const float *pix, uint16_t *mask, float hi,
                            int axis, int grow, uint8_t *scratch, uint8_t *sum) {
    const tide_cos_lines L = cos_bleed_lines(g, axis);
    const int64_t nt = L.nlines * L.nseg;
    for (int64_t t = nt - 1; t >= 0; t--) /* reversed: order must not matter */
        cos_bleed_t_sum(&L, pix, mask, hi, sum, t);
    for (int64_t l = 0; l < L.nlines; l++)
        cos_bleed_carry(sum + l, L.nlines, L.nseg);
    for (int64_t t = 0; t < nt; t++)
        cos_bleed_t_run(&L, pix, mask, hi, sum, scratch, t);
    for (int64_t t = 0; t < nt; t++)
        cos_bleed_t_grow(&L, mask, scratch, sum, grow, t);
}

static int bleed_case(tide_ctx *ctx, int64_t w, int64_t h, int64_t pad, int axis, int grow) {
    const int64_t ld = w + pad, n = ld * h;
    float *pix = malloc(sizeof(float) * (size_t)n);
    uint16_t *m0 = malloc(sizeof(uint16_t) * (size_t)n), *m1 = malloc(sizeof(uint16_t) * (size_t)n),
             *m2 = malloc(sizeof(uint16_t) * (size_t)n), *m3 = malloc(sizeof(uint16_t) * (size_t)n);
    uint8_t *scr = malloc((size_t)(w * h)), *sum = malloc((size_t)(w * h));
    bleed_frame(pix, m0, w, h, ld, axis);
    memcpy(m1, m0, sizeof(uint16_t) * (size_t)n);
    memcpy(m2, m0, sizeof(uint16_t) * (size_t)n);
    memcpy(m3, m0, sizeof(uint16_t) * (size_t)n);
    const tide_cos_geom g = {w, h, ld};
    bleed_sweeps(&g, pix, m1, HI, axis, grow, scr);
    for (int64_t i = 0; i < w * h; i++)
        scr[i] = (uint8_t)urand32(); /* garbage: the segmented form must not depend on it */
    bleed_segmented(&g, pix, m2, HI, axis, grow, scr, sum);
    CHECK_OK(tide_cos_bleed_cpu(ctx, &g, pix, m3, HI, axis, grow, scr));
    int64_t nbleed = 0, ndiff = 0, ndiff_cpu = 0;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            const int64_t p = y * ld + x;
            nbleed += (m1[p] & TIDE_MASK_BLEED) && !(m0[p] & TIDE_MASK_BLEED);
            ndiff += m1[p] != m2[p];
            ndiff_cpu += m1[p] != m3[p];
        }
    if (ndiff || ndiff_cpu)
        printf("bleed %lldx%lld pad %lld axis %d grow %d: %lld new BLEED, %lld differ "
               "(segmented), %lld differ (cpu twin)\n",
               (long long)w, (long long)h, (long long)pad, axis, grow, (long long)nbleed,
               (long long)ndiff, (long long)ndiff_cpu);
    CHECK(ndiff == 0);
    CHECK(ndiff_cpu == 0);
    free(pix), free(m0), free(m1), free(m2), free(m3), free(scr), free(sum);
    return nbleed > 0;
}

static void test_bleed(tide_ctx *ctx) {
    /* line lengths around the segment length and its multiples, and short lines */
    const int64_t lens[] = {1,
                            2,
                            5,
                            COS_SEG - 1,
                            COS_SEG,
                            COS_SEG + 1,
                            2 * COS_SEG,
                            3 * COS_SEG - 1,
                            3 * COS_SEG + 7,
                            1000,
                            2049};
    const int grows[] = {0, 1, 2, 7, 200, 1024};
    const int nl = (int)(sizeof lens / sizeof lens[0]), ng = (int)(sizeof grows / sizeof grows[0]);
    int cases = 0, with_bleed = 0;
    for (int axis = 0; axis < 2; axis++)
        for (int a = 0; a < nl; a++)
            for (int k = 0; k < ng; k++) {
                const int64_t len = lens[a], nlines = 1 + (int64_t)(urand() * 40);
                const int64_t w = axis == 0 ? nlines : len, h = axis == 0 ? len : nlines;
                const int64_t pad = (int64_t)(urand() * 3);
                with_bleed += bleed_case(ctx, w, h, pad, axis, grows[k]);
                cases++;
            }
    /* many random small frames */
    for (int r = 0; r < 300; r++) {
        const int64_t w = 1 + (int64_t)(urand() * 600), h = 1 + (int64_t)(urand() * 600);
        const int g = (int)(urand() * 10);
        with_bleed += bleed_case(ctx, w, h, (int64_t)(urand() * 4), (int)(urand() * 2), g);
        cases++;
    }
    printf("bleed: %d cases (%d with new BLEED pixels), segmented = sweeps = cpu twin\n", cases,
           with_bleed);
    CHECK(with_bleed > cases / 2); /* the test exercises trails */
}

/* ---- bad columns ---- */
static void test_badcol(void) {
    int cases = 0, with_bad = 0;
    for (int r = 0; r < 40; r++) {
        const int64_t w = 1 + (int64_t)(urand() * 70), h = 1 + (int64_t)(urand() * 400);
        const int64_t ld = w + (int64_t)(urand() * 3), n = ld * h;
        float *pix = malloc(sizeof(float) * (size_t)n);
        uint16_t *mask = calloc((size_t)n, sizeof(uint16_t));
        for (int64_t i = 0; i < n; i++)
            pix[i] = (float)(1000 + 30 * (urand() - 0.5) * 3.4);
        /* bad columns: offsets over a whole column or a part; some NaN and masked pixels */
        for (int c = 0; c < 1 + (int)(urand() * 4); c++) {
            const int64_t x = (int64_t)(urand() * w), y0 = (int64_t)(urand() * h);
            const int64_t y1 = urand() < 0.5 ? h : y0 + (int64_t)(urand() * (double)(h - y0));
            const float off = (urand() < 0.5 ? 1 : -1) * (float)(200 + 400 * urand());
            for (int64_t y = y0; y < y1; y++)
                pix[y * ld + x] += off;
        }
        for (int64_t i = 0; i < n / 50; i++) {
            const int64_t p = (int64_t)(urand() * (double)n);
            if (urand() < 0.5)
                pix[p] = NAN;
            else
                mask[p] = TIDE_MASK_SATURATED;
        }
        const tide_cos_geom g = {w, h, ld};
        const tide_cos_noise nm = {2.0f, 64.0f, 0.0f};
        const uint16_t excl = TIDE_MASK_SATURATED | TIDE_MASK_NODATA;
        const float k = 3.0f;
        const int minrun = 1 + (int)(urand() * 3);
        uint8_t *blk = malloc((size_t)(w * h)), *o1 = malloc((size_t)(w * h)),
                *o2 = malloc((size_t)(w * h));
        for (int64_t x = 0; x < w; x++)
            cos_col_scan(pix, mask, &g, &nm, excl, k, minrun, x, blk, o1);
        /* split: zeroed out, block signs per (column, block), runs per column */
        const int64_t nb = (h + COS_COL_BLOCK - 1) / COS_COL_BLOCK;
        memset(o2, 0, (size_t)(w * h));
        memset(blk, 0xAB, (size_t)(w * h));
        for (int64_t t = w * nb - 1; t >= 0; t--) {
            const int64_t b = t / w, x = t - b * w;
            const int s = cos_col_block(pix, mask, &g, &nm, excl, k, x, b * COS_COL_BLOCK);
            blk[t] = (uint8_t)(s > 0 ? 1 : (s < 0 ? 2 : 0));
        }
        for (int64_t x = 0; x < w; x++) {
            unsigned any = 0;
            for (int64_t b = 0; b < nb; b++)
                any |= blk[b * w + x];
            if (any)
                cos_col_runs(pix, mask, &g, &nm, excl, k, minrun, x, blk, o2);
        }
        int64_t nbad = 0;
        for (int64_t i = 0; i < w * h; i++)
            nbad += o1[i];
        CHECK(memcmp(o1, o2, (size_t)(w * h)) == 0);
        with_bad += nbad > 0;
        cases++;
        free(pix), free(mask), free(blk), free(o1), free(o2);
    }
    printf("badcol: %d cases (%d with bad pixels), split = cos_col_scan\n", cases, with_bad);
    CHECK(with_bad > cases / 4);
}

/* The star-like release test (cos_psf_like) on in half of the calls, at a FWHM of 1–2 px. */
static tide_cos_psf random_psf(tide_cos_noise nm) {
    tide_cosmetics_params p;
    tide_cosmetics_params_default(&p);
    p.psf_fwhm = urand() < 0.5 ? 1.0 + urand() : 0.0;
    tide_cos_psf ps = tide_cos_psf_of(&p);
    ps.nm = nm;
    return ps;
}

/* ---- hot/cold screen ---- */
static void test_hotcold_screen(void) {
    int64_t nflag = 0, npix = 0, bad = 0;
    for (int r = 0; r < 60; r++) {
        const int64_t w = 1 + (int64_t)(urand() * 80), h = 1 + (int64_t)(urand() * 80);
        const int64_t ld = w + (int64_t)(urand() * 3), n = ld * h;
        float *pix = malloc(sizeof(float) * (size_t)n);
        uint16_t *mask = calloc((size_t)n, sizeof(uint16_t));
        const int quant = urand() < 0.3; /* few distinct values: ties */
        for (int64_t i = 0; i < n; i++) {
            const double u = urand();
            float v = (float)(100 + 10 * (urand() - 0.5) * 3.4);
            if (quant)
                v = (float)(int)(v / 5) * 5;
            if (u < 0.03)
                v += 300; /* hot */
            else if (u < 0.06)
                v -= 90; /* cold */
            else if (u < 0.07)
                v = NAN;
            else if (u < 0.075)
                v = urand() < 0.5 ? INFINITY : -INFINITY;
            else if (u < 0.08)
                v = urand() < 0.5 ? 0.0f : -0.0f;
            pix[i] = v;
            if (urand() < 0.03)
                mask[i] = urand() < 0.5 ? TIDE_MASK_SATURATED : TIDE_MASK_COSMIC;
        }
        const tide_cos_geom g = {w, h, ld};
        const tide_cos_noise nm = {(float)(0.5 + 2 * urand()), (float)(10 * urand()),
                                   (float)(50 * urand())};
        tide_cos_hot hp;
        hp.hot_sigma = (float)(1 + 6 * urand());
        hp.cold_sigma = (float)(1 + 6 * urand());
        hp.isolation = (float)urand();
        hp.ratio = (float)(0.5 + 5 * urand());
        hp.do_hot = urand() < 0.8;
        hp.do_cold = urand() < 0.8;
        hp.excl = TIDE_MASK_SATURATED | TIDE_MASK_NODATA;
        hp.psf = random_psf(nm); /* the screen must hold with the star-like release too */
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++) {
                const int a = cos_hotcold(pix, mask, &g, &nm, &hp, x, y);
                const int b = cos_hotcold_screened(pix, mask, &g, &nm, &hp, x, y);
                bad += a != b;
                nflag += a != 0;
                npix++;
            }
        free(pix), free(mask);
    }
    printf("hotcold: %lld pixels, %lld flagged, %lld differ (screened vs plain)\n", (long long)npix,
           (long long)nflag, (long long)bad);
    CHECK(bad == 0);
    CHECK(nflag > npix / 100);
}

/* ---- L.A.Cosmic candidates from a tile's staged 3×3 medians ----
 * The CUDA k_cand's indexing, on the host: per COS_TILE tile, the (COS_TILE + 6)² medians at
 * clamped positions, then each pixel passing the cheap tests gathers its 49. */
static void test_candidates_tiled(void) {
    int64_t ncand = 0, npre = 0, bad = 0;
    enum { SW3 = COS_TILE + 6 };
    for (int r = 0; r < 30; r++) {
        const int64_t w = 1 + (int64_t)(urand() * 70), h = 1 + (int64_t)(urand() * 70);
        const int64_t n = w * h;
        float *W = malloc(sizeof(float) * (size_t)n), *N = malloc(sizeof(float) * (size_t)n),
              *SP = malloc(sizeof(float) * (size_t)n);
        uint16_t *mask = calloc((size_t)n, sizeof(uint16_t));
        for (int64_t i = 0; i < n; i++) {
            W[i] = (float)(100 + 20 * urand());
            if (urand() < 0.05)
                W[i] += (float)(500 * urand()); /* hits and star-like bumps */
            N[i] = (float)(3 + urand());
            SP[i] = (float)(10 * urand());
            if (urand() < 0.01)
                mask[i] = TIDE_MASK_SATURATED;
        }
        const tide_cos_geom g = {w, h, w};
        tide_cos_lacos lp;
        lp.sigclip = 4.5f;
        lp.objlim = (float)(1 + 40 * urand());
        lp.excl = TIDE_MASK_SATURATED | TIDE_MASK_HOT;
        lp.protect = (int)(urand() * 3);
        const tide_cos_noise nm = {1.0f, 9.0f, 0.0f};
        lp.psf = random_psf(nm);
        float m3s[SW3 * SW3];
        for (int64_t ty = 0; ty * COS_TILE < h; ty++)
            for (int64_t tx = 0; tx * COS_TILE < w; tx++) {
                const int64_t x0 = tx * COS_TILE - 3, y0 = ty * COS_TILE - 3;
                for (int k = 0; k < SW3 * SW3; k++) {
                    const int rr = k / SW3, c = k - rr * SW3;
                    m3s[k] =
                        cos_box_median(W, w, w, h, cos_clamp(x0 + c, w), cos_clamp(y0 + rr, h), 1);
                }
                for (int py = 0; py < COS_TILE; py++)
                    for (int px = 0; px < COS_TILE; px++) {
                        const int64_t x = tx * COS_TILE + px, y = ty * COS_TILE + py;
                        if (x >= w || y >= h)
                            continue;
                        const int64_t i = y * w + x;
                        const int pre = SP[i] > lp.sigclip && cos_may_flag(mask, &g, &lp, x, y);
                        int c = 0;
                        if (pre) {
                            float m3[49];
                            int k = 0;
                            for (int dy = 0; dy < 7; dy++)
                                for (int dx = 0; dx < 7; dx++)
                                    m3[k++] = m3s[(py + dy) * SW3 + px + dx];
                            c = cos_candidate_f(SP[i], cos_fine_of(m3), N[i], &lp) &&
                                cos_candidate_psf(W, &g, &lp, x, y);
                        }
                        const int ref = cos_candidate(W, N, SP, mask, &g, &lp, x, y);
                        bad += c != ref;
                        ncand += ref;
                        npre += pre;
                    }
            }
        free(W), free(N), free(SP), free(mask);
    }
    printf("candidates: %lld pass the cheap tests, %lld candidates, %lld differ (tiled)\n",
           (long long)npre, (long long)ncand, (long long)bad);
    CHECK(bad == 0);
    CHECK(ncand > 0 && ncand < npre); /* F decides some of them */
}

int main(void) {
    tide_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = TIDE_BACKEND_CPU;
    tide_ctx *ctx = NULL;
    CHECK_OK(tide_ctx_create(&ctx, &o));
    if (!ctx)
        return TIDE_TEST_RESULT();
    test_bleed(ctx);
    test_badcol();
    test_hotcold_screen();
    test_candidates_tiled();
    tide_ctx_destroy(ctx);
    return TIDE_TEST_RESULT();
}
