/* cosmetics_kernels.h — the per-pixel passes cosmetics.c needs from a backend (DESIGN §3).
 * Each has a _cpu twin (cosmetics_cpu.c, OpenMP) and a _cuda twin (cosmetics_cuda.cu) built
 * on the same cosmetics_math.h, so their results are identical. Pointers live where the
 * backend computes; `pix`/`mask` have stride g->stride, scratch planes (float or byte) have
 * stride g->w. Counts are returned on the host and are exact integers. */
#ifndef TIDE_COSMETICS_KERNELS_H
#define TIDE_COSMETICS_KERNELS_H
#include <stdint.h>

#include "cosmetics_math.h"
#include "tide/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declares name_cpu and (with CUDA) name_cuda with the same arguments. */
#ifdef TIDE_HAVE_CUDA
#define COS_KERNEL(name, ...)                                                                      \
    int name##_cpu(tide_ctx *ctx, __VA_ARGS__);                                                    \
    int name##_cuda(tide_ctx *ctx, __VA_ARGS__)
#else
#define COS_KERNEL(name, ...) int name##_cpu(tide_ctx *ctx, __VA_ARGS__)
#endif

/** mask |= SATURATED where pix is finite and >= level. */
COS_KERNEL(tide_cos_saturate, const tide_cos_geom *g, const float *pix, uint16_t *mask,
           float level);

/** mask |= BLEED on trails (cosmetics.h, pass 2); @p scratch: w·h bytes. axis 0 = columns. */
COS_KERNEL(tide_cos_bleed, const tide_cos_geom *g, const float *pix, uint16_t *mask, float hi,
           int axis, int grow, uint8_t *scratch);

/** out = 1 on bad column segments (cos_col_scan; the GPU twin splits it per 32-row block,
 *  cosmetics_lines_math.h); @p blk: w·h bytes
 *  of scratch. */
COS_KERNEL(tide_cos_badcol, const tide_cos_geom *g, const float *pix, const uint16_t *mask,
           const tide_cos_noise *nm, uint16_t excl, float k, int minrun, uint8_t *blk,
           uint8_t *out);

/** flag = COS_F_HOT / COS_F_COLD / 0 per pixel (cos_hotcold). */
COS_KERNEL(tide_cos_hotcold, const tide_cos_geom *g, const float *pix, const uint16_t *mask,
           const tide_cos_noise *nm, const tide_cos_hot *hp, uint8_t *flag);

/** mask |= bit1 where flag & 1, |= bit2 where flag & 2; *nnew = pixels whose mask changed. */
COS_KERNEL(tide_cos_apply, const tide_cos_geom *g, const uint8_t *flag, uint16_t *mask,
           uint16_t bit1, uint16_t bit2, int64_t *nnew);

/** Replace pixels: dst = src, except pixels with `repl` bits (and, when @p nonfinite, also
 *  non-finite pixels) which get the median of the usable 5×5 neighbours (cos_fill_value with
 *  excl ⊇ repl), or @p fallback when there is none and @p use_fallback, else stay. @p flag
 *  (may be NULL) gets COS_F_SET where a value was replaced by a median. dst may equal src
 *  (then only replaced pixels are written, and they are never read as neighbours). src and
 *  dst have strides sld and dld. */
COS_KERNEL(tide_cos_fill, const tide_cos_geom *g, const float *src, int64_t sld,
           const uint16_t *mask, float *dst, int64_t dld, uint16_t repl, uint16_t excl,
           int nonfinite, int use_fallback, float fallback, uint8_t *flag);

/** N = σ(med5(W)) (noise model at the 5×5 median, eq. 10); W, N stride w. */
COS_KERNEL(tide_cos_noise, const tide_cos_geom *g, const float *W, const tide_cos_noise *nm,
           float *N);

/** S = L⁺(W) / (2 N) (eq. 9), then SP = S − med5(S) (eq. 12) where S > low, else SP = S
 *  (S' <= S because med5(S) >= 0, so thresholds at or above `low` see the same answer).
 *  S is a scratch plane. */
COS_KERNEL(tide_cos_laplace, const tide_cos_geom *g, const float *W, const float *N, float *S,
           float *SP, float low);

/** cand = 1 where the pixel may be flagged, SP > sigclip and SP / max(F/N, 0.01) > objlim
 *  (van Dokkum 2001, eqs. 11–13, as lacosmic.cl and astroscrappy). */
COS_KERNEL(tide_cos_candidates, const tide_cos_geom *g, const float *W, const float *N,
           const float *SP, const uint16_t *mask, const tide_cos_lacos *lp, uint8_t *cand);

/** out = 1 where the pixel may be flagged, SP > thr, some pixel of the 3×3 box has in and
 *  the pixel is not in a star-like core of W (cos_grow_one). */
COS_KERNEL(tide_cos_grow, const tide_cos_geom *g, const float *W, const uint8_t *in,
           const float *SP, const uint16_t *mask, const tide_cos_lacos *lp, float thr,
           uint8_t *out);

/** counts[b] = pixels with mask bit b set, b = 0..15. */
COS_KERNEL(tide_cos_count, const tide_cos_geom *g, const uint16_t *mask, int64_t counts[16]);

#ifdef __cplusplus
}
#endif
#endif
