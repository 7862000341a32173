/* cosmetics_region.h — L.A.Cosmic's later iterations on the CPU, recomputed only where they
 * can change (cosmetics_lacosmic.c says why that gives the same masks).
 *
 * After an iteration flags new pixels D and cleans them in W, W changes only within 2 px of
 * D (the cleaned pixels and the older hits whose 5×5 clean neighbourhood lost a pixel), so
 *   N = σ(med5 W)              changes within 4 px of D,
 *   S = L⁺(W) / 2N             within 4 px,
 *   S' = S − med5 S            within 6 px,
 *   candidates (S', F, N)      within 6 px (F = med3 W − med7 med3 W reaches 4 px, and so
 *                              does the star-like test, cos_psf_like: a peak within 1 px,
 *                              its 7×7 box),
 *   grow 1, grow 2             within 7 and 8 px (the star-like test of the grown pixel
 *                              within 6).
 * Everywhere else every plane keeps its value, and the final flags there were already
 * applied. So the next iteration only recomputes the planes, in this order, on the tiles of
 * COS_TILE pixels within one tile of a tile holding a pixel of D (any COS_TILE >= 8 covers
 * the 8 px reach), reading the current planes elsewhere: a plane recomputed on a superset of
 * where it can change, from inputs that are current everywhere, is current everywhere. */
#ifndef TIDE_COSMETICS_REGION_H
#define TIDE_COSMETICS_REGION_H
#include <stdint.h>

#include "cosmetics_math.h"
#include "tide/ctx.h"

#define COS_TILE 16

/** Tile grid of a frame: ntx × nty tiles of COS_TILE pixels. */
static inline int64_t tide_cos_ntiles(int64_t n) {
    return (n + COS_TILE - 1) / COS_TILE;
}

/** mark[t] = 1 for each tile t holding a pixel that tide_cos_apply(flag, COSMIC) would newly
 *  flag (flag set, COSMIC not yet set); mark has ntx·nty bytes. */
int tide_cos_mark_new_cpu(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *flag,
                          const uint16_t *mask, uint8_t *mark);

/** The tiles within one tile (8-neighbourhood) of a marked one, as a list of tile indices;
 *  returns how many (list has room for ntx·nty). */
int64_t tide_cos_tile_list(const uint8_t *mark, int64_t ntx, int64_t nty, int64_t *list);

/** Recompute N, S, SP, cand, flag2 and flag (the planes of one iteration, as the full-frame
 *  kernels define them) on the @p n listed tiles, in that order. */
int tide_cos_update_cpu(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                        const tide_cos_noise *nm, const uint16_t *mask, const tide_cos_lacos *lp,
                        float low, float *N, float *S, float *SP, uint8_t *cand, uint8_t *flag2,
                        uint8_t *flag, const int64_t *list, int64_t n);

#ifdef TIDE_HAVE_CUDA
#ifdef __cplusplus
extern "C" {
#endif
/** CUDA twin of tide_cos_mark_new_cpu plus tide_cos_tile_list, all on the device: mark[t]
 *  as tide_cos_mark_new_cpu, then dirty[t] = 1 for each tile within one tile of a marked one
 *  (the tiles tide_cos_tile_list would list); mark and dirty: device, ntx·nty bytes each. */
int tide_cos_mark_new_cuda(tide_ctx *ctx, const tide_cos_geom *g, const uint8_t *flag,
                           const uint16_t *mask, uint8_t *mark, uint8_t *dirty);

/** CUDA twin of tide_cos_update_cpu: the planes of one iteration recomputed on the tiles
 *  with dirty[t] != 0 (device, ntx·nty bytes); the other tiles keep their values. */
int tide_cos_update_cuda(tide_ctx *ctx, const tide_cos_geom *g, const float *W,
                         const tide_cos_noise *nm, const uint16_t *mask, const tide_cos_lacos *lp,
                         float low, float *N, float *S, float *SP, uint8_t *cand, uint8_t *flag2,
                         uint8_t *flag, const uint8_t *dirty);
#ifdef __cplusplus
}
#endif
#endif

#endif
