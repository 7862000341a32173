/* cosmetics_region_cpu.c — L.A.Cosmic planes recomputed on a list of tiles
 * (cosmetics_region.h). Every value comes from the same per-pixel functions (and the same
 * exact median networks) as the full-frame kernels of cosmetics_cpu.c. */
#include "cosmetics_region.h"

#include <stdlib.h>

#include "cosmetics_median.h"

#define NT(ctx) ((ctx)->threads > 0 ? (ctx)->threads : 1)

int tide_cos_mark_new_cpu(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *flag,
                          const uint16_t *mask, uint8_t *mark) {
    const int64_t w = g->w, ntx = tide_cos_ntiles(g->w), nty = tide_cos_ntiles(g->h);
#pragma omp parallel for schedule(static) num_threads(NT(ctx))
    for (int64_t ty = 0; ty < nty; ty++) {
        for (int64_t tx = 0; tx < ntx; tx++)
            mark[ty * ntx + tx] = 0;
        const int64_t y1 = (ty + 1) * COS_TILE < g->h ? (ty + 1) * COS_TILE : g->h;
        for (int64_t y = ty * COS_TILE; y < y1; y++)
            for (int64_t x = 0; x < w; x++)
                if (flag[y * w + x] && !(mask[y * g->stride + x] & TIDE_MASK_COSMIC))
                    mark[ty * ntx + x / COS_TILE] = 1;
    }
    return 0;
}

int64_t tide_cos_tile_list(const uint8_t *mark, int64_t ntx, int64_t nty, int64_t *list) {
    int64_t n = 0;
    for (int64_t ty = 0; ty < nty; ty++)
        for (int64_t tx = 0; tx < ntx; tx++) {
            int near = 0;
            for (int64_t j = ty - 1; j <= ty + 1 && !near; j++)
                for (int64_t i = tx - 1; i <= tx + 1; i++)
                    if (j >= 0 && j < nty && i >= 0 && i < ntx && mark[j * ntx + i]) {
                        near = 1;
                        break;
                    }
            if (near)
                list[n++] = ty * ntx + tx;
        }
    return n;
}

/* Pixel bounds of tile t. */
static void bounds(const tide_cos_geom *g, int64_t t, int64_t *x0, int64_t *x1, int64_t *y0,
                   int64_t *y1) {
    const int64_t ntx = tide_cos_ntiles(g->w);
    *x0 = (t % ntx) * COS_TILE;
    *y0 = (t / ntx) * COS_TILE;
    *x1 = *x0 + COS_TILE < g->w ? *x0 + COS_TILE : g->w;
    *y1 = *y0 + COS_TILE < g->h ? *y0 + COS_TILE : g->h;
}

int tide_cos_update_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                        const tide_cos_noise *nm, const uint16_t *mask, const tide_cos_lacos *lp,
                        float low, float *N, float *S, float *SP, uint8_t *cand, uint8_t *flag2,
                        uint8_t *flag, const int64_t *list, int64_t n) {
    const int64_t w = g->w, h = g->h;
#pragma omp parallel num_threads(NT(ctx))
    {
        /* median scratch; without it the scalar medians below give the same numbers */
        float *cs = malloc(sizeof(float) * 5 * (COS_TILE + 4));
        int64_t x0, x1, y0, y1;
        /* N = σ(med5 W) */
#pragma omp for schedule(dynamic, 4)
        for (int64_t k = 0; k < n; k++) {
            bounds(g, list[k], &x0, &x1, &y0, &y1);
            if (cs)
                tide_cos_med5_block(W, w, w, h, y0, y1, x0, x1, N + y0 * w + x0, w, cs);
            for (int64_t y = y0; y < y1; y++)
                for (int64_t x = x0; x < x1; x++)
                    N[y * w + x] =
                        cos_sigma(nm, cs ? N[y * w + x] : cos_box_median(W, w, w, h, x, y, 2));
        }
        /* S = L⁺ / 2N */
#pragma omp for schedule(dynamic, 4)
        for (int64_t k = 0; k < n; k++) {
            bounds(g, list[k], &x0, &x1, &y0, &y1);
            for (int64_t y = y0; y < y1; y++)
                for (int64_t x = x0; x < x1; x++)
                    S[y * w + x] =
                        tide_fdiv(cos_lplus(W, w, w, h, x, y), tide_fmul(2.0f, N[y * w + x]));
        }
        /* S' = S − med5 S where S > low */
#pragma omp for schedule(dynamic, 4)
        for (int64_t k = 0; k < n; k++) {
            bounds(g, list[k], &x0, &x1, &y0, &y1);
            if (cs)
                tide_cos_med5_block(S, w, w, h, y0, y1, x0, x1, SP + y0 * w + x0, w, cs);
            for (int64_t y = y0; y < y1; y++)
                for (int64_t x = x0; x < x1; x++) {
                    const float s = S[y * w + x];
                    const float m =
                        cs ? SP[y * w + x] : (s > low ? cos_box_median(S, w, w, h, x, y, 2) : 0);
                    SP[y * w + x] = s > low ? tide_fsub(s, m) : s;
                }
        }
        /* candidates, then the two growth steps */
#pragma omp for schedule(dynamic, 4)
        for (int64_t k = 0; k < n; k++) {
            bounds(g, list[k], &x0, &x1, &y0, &y1);
            for (int64_t y = y0; y < y1; y++)
                for (int64_t x = x0; x < x1; x++)
                    cand[y * w + x] = (uint8_t)cos_candidate(W, N, SP, mask, g, lp, x, y);
        }
#pragma omp for schedule(dynamic, 4)
        for (int64_t k = 0; k < n; k++) {
            bounds(g, list[k], &x0, &x1, &y0, &y1);
            for (int64_t y = y0; y < y1; y++)
                for (int64_t x = x0; x < x1; x++)
                    flag2[y * w + x] =
                        (uint8_t)cos_grow_one(W, cand, SP, mask, g, lp, lp->sigclip, x, y);
        }
#pragma omp for schedule(dynamic, 4)
        for (int64_t k = 0; k < n; k++) {
            bounds(g, list[k], &x0, &x1, &y0, &y1);
            for (int64_t y = y0; y < y1; y++)
                for (int64_t x = x0; x < x1; x++)
                    flag[y * w + x] = (uint8_t)cos_grow_one(W, flag2, SP, mask, g, lp, low, x, y);
        }
        free(cs);
    }
    return 0;
}
