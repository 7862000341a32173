/* reproject.h — resample a frame onto another pixel grid (the first step of the difference
 * path, DESIGN §1): the template's grid, a given WCS, or a north-up TAN grid covering a stack.
 *
 * Mapping. For every output pixel centre (x, y) the input position is
 *     in = in_wcs.sky2pix(out_wcs.pix2sky(x, y)).
 * When both WCSs are TAN or TAN-SIP it is evaluated exactly per pixel (double precision) with
 * the device evaluator of wcs.h, on the GPU or the CPU. For any other pair (TPV, SIN, ZEA,
 * ZPN, ...) it is evaluated exactly by wcslib on a coarse grid of nodes and interpolated per
 * pixel with Catmull-Rom bicubics; the grid is refined (128, 64, 32 ... 4 px) until the
 * interpolation error, measured against wcslib at five points of every cell (its centre and
 * the points at fractions 0.211 and 0.789 of the step in both axes, where the errors of
 * quartic and cubic terms peak) whose input position lies on (or within 4 px of) the input
 * frame, is at most
 * params.grid_tol [0.001 px] (SWarp's approach; Bertin et al. 2002, ASP Conf. 281, 228).
 *
 * Flux. With conserve_flux the interpolated value (a surface brightness per input pixel) is
 * multiplied by J = |det d(in)/d(out)|, the input-pixel area per output pixel, and the
 * variance by J². J comes from central differences (±0.5 px) of the exact mapping at the grid
 * nodes (with the TAN/SIP math itself in exact mode, wcslib otherwise), interpolated like the
 * mapping; its relative interpolation error is measured at the cell centres, and the grid is
 * refined until it is at most 1e-6 too.
 *
 * Kernels (weights w over the footprint, normalised over the valid input pixels):
 *   Lanczos-3: w(d) = sinc(d) sinc(d/3), |d| < 3, 6×6 footprint (Duchon 1979, J. Appl.
 *              Meteor. 18, 1016);  bilinear: 2×2;  nearest: the pixel containing the point.
 *   value = Σ w v / Σ w,   variance = Σ w² var / (Σ w)²  (the input noise taken independent).
 *
 * Masks and coverage. The output mask is the OR of (input mask & params.mask_bits) over every
 * footprint pixel with a non-zero weight, plus TIDE_MASK_EDGE when the footprint runs off the
 * input frame. Non-finite input pixels are left out of the sums. An output pixel whose input
 * position falls outside the input frame, or whose nearest input pixel is not finite, is NaN
 * with TIDE_MASK_NODATA ("no input pixel lands there"), variance NaN and coverage 0.
 * Coverage = Σ|w| over valid footprint pixels / Σ|w| over the whole footprint (1 inside the
 * frame, less where the footprint is cut by the edge or by missing pixels).
 *
 * Backends. A CPU context needs host images. A CUDA context takes device images, or host
 * images which are uploaded, resampled and copied back. The CPU and CUDA twins share their
 * per-pixel math (src/difference/reproject/reproject_math.h) and agree to float rounding.
 * Deterministic: no atomics, each output pixel is one fixed sum. */
#ifndef TIDE_REPROJECT_H
#define TIDE_REPROJECT_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/image.h"
#include "tide/wcs.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Resampling kernels. */
typedef enum {
    TIDE_RESAMPLE_LANCZOS3 = 0, /**< Lanczos-3, 6×6 footprint (default) */
    TIDE_RESAMPLE_BILINEAR,     /**< bilinear, 2×2 */
    TIDE_RESAMPLE_NEAREST       /**< nearest neighbour */
} tide_resample_kind;

/** How the mapping is evaluated. */
typedef enum {
    TIDE_REPROJECT_MAP_AUTO = 0, /**< exact when both WCSs are TAN/TAN-SIP, else grid [AUTO] */
    TIDE_REPROJECT_MAP_GRID = 1, /**< always the interpolated grid */
    TIDE_REPROJECT_MAP_EXACT = 2 /**< exact; TIDE_E_UNSUPPORTED unless both are TAN/TAN-SIP */
} tide_reproject_map;

/** Parameters; initialise with tide_reproject_params_default. */
typedef struct tide_reproject_params {
    tide_resample_kind kernel; /**< [TIDE_RESAMPLE_LANCZOS3] */
    int conserve_flux;         /**< multiply by the Jacobian (flux per pixel preserved) [1] */
    uint16_t mask_bits;        /**< input bits that poison outputs [all, 0xffff] */
    tide_reproject_map map;    /**< [TIDE_REPROJECT_MAP_AUTO] */
    double grid_tol;           /**< grid interpolation error bound, input pixels [0.001] */
    double grid_step;          /**< first (coarsest) grid step, output pixels [128] */
} tide_reproject_params;

/** Fill @p p with the defaults above. */
TIDE_API void tide_reproject_params_default(tide_reproject_params *p);

/** Parse "lanczos3" (also "lanczos"), "bilinear", "nearest"; TIDE_E_INVAL otherwise. */
TIDE_API int tide_resample_parse(const char *s, tide_resample_kind *out);

/** "lanczos3", "bilinear" or "nearest". */
TIDE_API const char *tide_resample_name(tide_resample_kind k);

/** What a plan measured about its mapping. */
typedef struct tide_reproject_info {
    int exact;                /**< 1: per-pixel exact TAN/SIP mapping; 0: interpolated grid */
    double grid_step;         /**< grid step in output pixels (the Jacobian grid in exact mode) */
    int64_t grid_nx, grid_ny; /**< grid nodes, including one padding node on each side */
    double map_err_px;       /**< measured max |interpolated - exact| input position, px (grid mode;
                                  0 in exact mode) */
    double jac_err_rel;      /**< measured max relative error of the interpolated Jacobian */
    int64_t n_checked;       /**< check points that entered the two maxima */
    double jac_min, jac_max; /**< range of J over the grid nodes that land on the input */
    int converged;           /**< 1 when map_err_px <= grid_tol was reached */
} tide_reproject_info;

/** A reusable mapping between two grids (per-context device copies included). */
typedef struct tide_reproject_plan tide_reproject_plan;

/** Build the mapping from an @p in_w × @p in_h frame with @p in_wcs onto an @p out_w ×
 *  @p out_h grid with @p out_wcs: the node grid (wcslib, one batched call per refinement),
 *  its measured error, and on a CUDA context the device copies. The plan keeps what it
 *  needs: the WCSs may be freed afterwards. @p p may be NULL (defaults).
 *  Errors: TIDE_E_INVAL (sizes, NULLs, parameters), TIDE_E_UNSUPPORTED (MAP_EXACT with a
 *  non-TAN WCS), TIDE_E_NOMEM, TIDE_E_WCS. */
TIDE_API int tide_reproject_plan_create(tide_ctx *ctx, const tide_wcs *in_wcs, int64_t in_w,
                                        int64_t in_h, const tide_wcs *out_wcs, int64_t out_w,
                                        int64_t out_h, const tide_reproject_params *p,
                                        tide_reproject_plan **plan);

/** The measurements of a plan. */
TIDE_API void tide_reproject_plan_info(const tide_reproject_plan *plan, tide_reproject_info *info);

/** Resample @p in (its size must be the plan's input size; host or device as the context
 *  allows, see above) onto the plan's grid.
 *  @param out      receives out_w × out_h pix + mask (+ var when @p in has a variance plane),
 *                  allocated here where @p in lives (overwritten, not freed first)
 *  @param coverage if non-NULL, receives an out_w × out_h pix-only image of coverage in
 *                  [0, 1], allocated where @p in lives */
TIDE_API int tide_reproject_execute(tide_ctx *ctx, const tide_reproject_plan *plan,
                                    const tide_image *in, tide_image *out, tide_image *coverage);

/** Release a plan (NULL is a no-op). */
TIDE_API void tide_reproject_plan_free(tide_ctx *ctx, tide_reproject_plan *plan);

/** Plan, execute and free in one call; see tide_reproject_execute for @p out and
 *  @p coverage. */
TIDE_API int tide_reproject(tide_ctx *ctx, const tide_image *in, const tide_wcs *in_wcs,
                            const tide_wcs *out_wcs, int64_t out_w, int64_t out_h,
                            const tide_reproject_params *p, tide_image *out, tide_image *coverage);

/** tide_reproject that also reports the plan's measurements in @p info (may be NULL). */
TIDE_API int tide_reproject_ex(tide_ctx *ctx, const tide_image *in, const tide_wcs *in_wcs,
                               const tide_wcs *out_wcs, int64_t out_w, int64_t out_h,
                               const tide_reproject_params *p, tide_image *out,
                               tide_image *coverage, tide_reproject_info *info);

/** A north-up, east-left TAN grid covering @p n frames (frame i: @p wcs[i], @p width[i] ×
 *  @p height[i]) at the finest of their pixel scales (sqrt|det J| at each frame's centre).
 *  The tangent point is the normalised mean of the frames' outline directions; the grid
 *  is the bounding box of every frame's outline (edges sampled every 16 px) projected on
 *  it, and its reference frame (RADESYS, EQUINOX) is the first frame's. Frames in different
 *  celestial systems (longitude type or RADESYS) are TIDE_E_UNSUPPORTED: no frame
 *  conversion is done. A grid over 65536 px on a side is TIDE_E_RANGE.
 *  @param out   receives the new WCS (free with tide_wcs_free)
 *  @param out_w, out_h receive its size */
TIDE_API int tide_reproject_northup(const tide_wcs *const *wcs, const int64_t *width,
                                    const int64_t *height, int n, tide_wcs **out, int64_t *out_w,
                                    int64_t *out_h);

#ifdef __cplusplus
}
#endif
#endif
