/* background.h — sky background and noise maps: Source Extractor's mesh method, and a
 * modelled noise map from gain, read noise and the number of co-added frames.
 *
 * The estimate follows Source Extractor (Bertin & Arnouts 1996, A&AS 117, 393, §3.1; the
 * algorithm of its back.c, also ported by sep) so that maps compare with those tools:
 *
 *  1. The frame is cut into meshes of mesh_w × mesh_h pixels; the last column and row of
 *     meshes are partial when the size is not a multiple. A mesh with fewer than
 *     min_good_frac of its pixels valid (finite, no excluded mask bit) is "bad".
 *  2. Per mesh: mean and σ of the valid pixels, then again of those within mean ± 2σ; a
 *     histogram of N = min(4096, int(0.997·n + 1)) bins spanning mean ± 5σ; on it, iterative
 *     3σ clipping about the (interpolated) median until σ changes by < 1e-4 (at most 100
 *     passes). The mesh background is the mode 2.5·median − 1.5·mean, or the median when
 *     |mean − median| / σ ≥ 0.3 (a crowded mesh); the mesh RMS is the clipped σ.
 *  3. Bad meshes take the mean of the nearest good meshes (all at the minimal distance).
 *  4. Both grids are median-filtered over filter_w × filter_h meshes (the window shrinks
 *     symmetrically at the grid's edges); a mesh is replaced only where
 *     |median − value| >= filter_thresh (BACK_FILTERTHRESH).
 *  5. The grids are interpolated to every pixel with Source Extractor's bicubic spline:
 *     a cubic spline through the mesh nodes along y for each mesh column, then one along x
 *     through the interpolated nodes of each row, with "natural" ends and linear-cubic
 *     extrapolation beyond the outer nodes. Node i along x sits at the mesh centre
 *     (i + 0.5)·mesh_w − 0.5 (0-based pixel centres), node j along y at (j + 0.5)·mesh_h;
 *     the spline coefficients follow Source Extractor's recurrence exactly, so tide's maps
 *     reproduce its BACKGROUND and BACKGROUND_RMS check-images.
 *
 * Determinism: every sum has a fixed order (integer histogram counts; lane-ordered double sums)
 * and every product that feeds an addition is rounded on its own, so the CPU and CUDA backends
 * are built to give bitwise-identical maps and summaries (tests/gpu/test_gpu_background.c
 * requires 1e-6 relative and reports any differing bits). Agreement with Source Extractor
 * 2.x and sep 1.2 on the same float32 pixels: ~1e-7 relative (tests/peer, tests/unit). */
#ifndef TIDE_BACKGROUND_H
#define TIDE_BACKGROUND_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Parameters of the background estimate (Source Extractor's names in parentheses). */
typedef struct tide_bkg_params {
    int64_t mesh_w, mesh_h; /**< mesh size in pixels (BACK_SIZE) [64, 64]; >= 1 */
    int filter_w, filter_h; /**< median filter over meshes (BACK_FILTERSIZE) [3, 3]; >= 1,
                                 an even size acts as the next odd one below */
    double filter_thresh;   /**< replace a mesh by its filtered value only when they differ
                                 by at least this much, ADU (BACK_FILTERTHRESH) [0.0] */
    uint16_t mask_bits;     /**< mask bits that exclude a pixel [0xFFFF: every bit] */
    double min_good_frac;   /**< a mesh needs this fraction of valid pixels [0.5] */
    /** Large-scale smooth mode for nebulous or extended-emission fields [0 = off]: after the
     *  median filter, each mesh grid (background, RMS) is fitted with a 2-D polynomial of this
     *  total degree (1..6) in the mesh position, by least squares with iterative 3σ rejection
     *  of meshes (at most 5 passes), and the maps are that polynomial evaluated at every pixel
     *  (instead of the spline through every mesh). Large meshes (e.g. 128 or 256) keep
     *  compact emission out of the mesh values; the polynomial cannot follow structure smaller
     *  than the field, so nebulosity stays in the background-subtracted frame. */
    int smooth_degree;
} tide_bkg_params;

/** Fill @p p with the defaults in brackets above (Source Extractor's). */
TIDE_API void tide_bkg_params_default(tide_bkg_params *p);

/** What the estimate found. */
typedef struct tide_bkg_summary {
    double global_back;       /**< median of the filtered mesh backgrounds, ADU (SE's BACKGROUND
                                   in its log) */
    double global_rms;        /**< median of the filtered mesh RMS (median of the positive ones if
                                   that is <= 0; 1 if none is), ADU */
    int64_t nx_mesh, ny_mesh; /**< mesh grid size */
    int64_t n_bad_mesh;       /**< meshes with too few valid pixels, filled from neighbours */
    int64_t n_replaced;       /**< meshes changed by the median filter */
} tide_bkg_summary;

/** Estimate the background and background-RMS maps of @p im (see above).
 *
 *  @p im lives where the context computes (host on CPU, host or device on CUDA); its mask
 *  plane, if any, excludes pixels with (mask & p->mask_bits) != 0; NaN and Inf are always
 *  excluded. @p bkg and @p rms (either may be NULL to skip that map) are allocated by the
 *  call, width × height, pixels only, where @p im lives; free them with tide_image_free.
 *  @p p NULL means the defaults; @p s may be NULL.
 *
 *  A frame smaller than one mesh is one partial mesh. When no mesh has enough valid pixels,
 *  the whole frame is used as a single mesh (any number of valid pixels); a frame with no
 *  valid pixel at all returns TIDE_E_EMPTY. Bad parameters return TIDE_E_INVAL. */
TIDE_API int tide_background_estimate(tide_ctx *ctx, const tide_image *im, const tide_bkg_params *p,
                                      tide_image *bkg, tide_image *rms, tide_bkg_summary *s);

/** Modelled sky variance per pixel, ADU², of a frame that is the average of @p ncombine
 *  exposures, each with gain @p gain (e-/ADU, > 0) and read noise @p rdnoise (e-, >= 0):
 *
 *      var = ( max(bkg, 0) / gain + (rdnoise / gain)² ) / ncombine
 *
 *  where bkg is the sky level of the averaged frame in ADU (a background map of the frame
 *  before subtraction, above bias). Derivation: one exposure at level b ADU holds b·gain
 *  electrons, Poisson variance b·gain e-², plus rdnoise² e-²; in ADU² that is
 *  b/gain + rdnoise²/gain². The mean of N such exposures (at the same level b) has 1/N of that
 *  variance. Equivalently the frame behaves as one exposure with effective gain N·gain and
 *  read noise rdnoise·sqrt(N): the effective-gain rule for averaged co-adds that Source
 *  Extractor users apply to GAIN. For a frame that is the *sum* of N exposures (level
 *  N·b), pass ncombine = 1 and rdnoise·sqrt(N). NaN in @p bkg gives NaN.
 *  @p var is allocated by the call (width × height, pixels only) where @p bkg lives. */
TIDE_API int tide_noise_model(tide_ctx *ctx, const tide_image *bkg, double gain, double rdnoise,
                              int ncombine, tide_image *var);

#ifdef __cplusplus
}
#endif
#endif
