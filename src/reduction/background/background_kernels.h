/* background_kernels.h — the plan of a background estimate and the kernels its algorithm
 * (background.c) needs from a backend (background_cpu.c, background_cuda.cu).
 *
 * Data flow: mesh statistics run where the image lives (one CUDA block per mesh); the mesh
 * grid (a few thousand values) comes back to the host, where bad meshes are filled, the
 * median filter and the optional smooth fit run and the spline coefficients are built
 * (background_grid.c); the coefficient planes go back and the interpolation kernel writes
 * the full-resolution maps.
 *
 * Interpolation planes (tide_bkg_coef, each nx × ny floats, row-major): for each map
 * (background, then RMS) the node values V, their y-spline coefficients DV (Source
 * Extractor's makebackspline, along y per mesh column), and the x-spline coefficients of
 * both, XV = Sx(V), XDV = Sx(DV), where Sx is Source Extractor's x recurrence applied to each
 * mesh row. Sx is linear, so the x coefficients of an interpolated row y,
 * Sx(cdy·V[j] + dy·V[j+1] + cdy3·DV[j] + dy3·DV[j+1]), are the same combination of XV and
 * XDV: a pixel needs no per-row solve and every pixel is independent (GPU-friendly). With a
 * single mesh row Source Extractor interpolates linearly along x (its DV is 0 there), and
 * XV, XDV are 0. */
#ifndef TIDE_BACKGROUND_KERNELS_H
#define TIDE_BACKGROUND_KERNELS_H
#include <stdint.h>

#include "tide/background.h"
#include "tide/ctx.h"
#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Mesh geometry of one estimate. */
typedef struct tide_bkg_plan {
    int64_t w, h;   /**< frame size */
    int64_t bw, bh; /**< mesh size (the last column/row of meshes may be smaller) */
    int64_t nx, ny, nmesh;
    double min_good_frac; /**< a mesh with fewer valid pixels than this fraction is bad */
    uint16_t mask_bits;
} tide_bkg_plan;

/** Smooth mode: a 2-D polynomial sum_t c[t]·u^pa[t]·v^pb[t] in the scaled mesh position
 *  u = ((x + 0.5)/bw − 0.5)·su − ou, v = (y/bh − 0.5)·sv − ov (the node positions of the
 *  spline, mapped so the mesh grid spans [−1, 1]). */
#define TIDE_BKG_POLY_MAXT 28
typedef struct tide_bkg_poly {
    int nt;
    int pa[TIDE_BKG_POLY_MAXT], pb[TIDE_BKG_POLY_MAXT];
    double c[TIDE_BKG_POLY_MAXT];
    double su, ou, sv, ov;
} tide_bkg_poly;

/** Planes of tide_bkg_coef, in this order, each nmesh floats. */
enum { TIDE_BKG_V = 0, TIDE_BKG_DV, TIDE_BKG_XV, TIDE_BKG_XDV, TIDE_BKG_NPLANES = 8 };

/** Per-mesh statistics. mesh[2k] = background (mode) of mesh k (row-major, k = j·nx + i),
 *  mesh[2k+1] = its RMS; a bad mesh has NaN in both. @p mesh is a host array. */
int tide_bkg_mesh_stats_cpu(tide_ctx *ctx, const tide_bkg_plan *p, const tide_image *im,
                            float *mesh);
/** Full-resolution maps from the host coefficient planes @p coef (8 × nmesh floats: V, DV,
 *  XV, XDV of the background, then of the RMS). @p bkg or @p rms may be NULL. */
int tide_bkg_interp_cpu(tide_ctx *ctx, const tide_bkg_plan *p, const float *coef, tide_image *bkg,
                        tide_image *rms);
/** Smooth-mode maps: poly[0] evaluated into @p bkg, poly[1] into @p rms (either NULL). */
int tide_bkg_poly_cpu(tide_ctx *ctx, const tide_bkg_plan *p, const tide_bkg_poly *poly,
                      tide_image *bkg, tide_image *rms);
/** var = tide_noise_var(bkg) per pixel; both images where the backend computes. */
int tide_noise_model_cpu(tide_ctx *ctx, const tide_image *bkg, double inv_gain, double rn2g2,
                         double inv_n, tide_image *var);

#ifdef TIDE_HAVE_CUDA
/** As the CPU twins; images on the device, @p mesh and @p coef on the host. */
int tide_bkg_mesh_stats_cuda(tide_ctx *ctx, const tide_bkg_plan *p, const tide_image *im,
                             float *mesh);
int tide_bkg_interp_cuda(tide_ctx *ctx, const tide_bkg_plan *p, const float *coef, tide_image *bkg,
                         tide_image *rms);
int tide_bkg_poly_cuda(tide_ctx *ctx, const tide_bkg_plan *p, const tide_bkg_poly *poly,
                       tide_image *bkg, tide_image *rms);
int tide_noise_model_cuda(tide_ctx *ctx, const tide_image *bkg, double inv_gain, double rn2g2,
                          double inv_n, tide_image *var);
#endif

/* ---- host grid work (background_grid.c) ------------------------------------------------ */

/** Fill bad (NaN) meshes from the nearest good ones, median-filter both grids, and compute
 *  the global values. @p mesh as from the stats kernel; on return back[k], sig[k] hold the
 *  filtered grids. Returns the counts in @p s (global_back, global_rms, n_bad_mesh,
 *  n_replaced). TIDE_E_NOMEM only. */
int tide_bkg_grid_filter(const tide_bkg_plan *p, const tide_bkg_params *prm, const float *mesh,
                         float *back, float *sig, tide_bkg_summary *s);

/** Fit @p grid (nx × ny) with a robust least-squares 2-D polynomial of total degree
 *  @p degree (1..6) in the mesh position (fewer terms when the grid cannot constrain them). */
int tide_bkg_grid_smooth(const tide_bkg_plan *p, int degree, const float *grid,
                         tide_bkg_poly *poly);

/** Build the four coefficient planes of one map from its grid @p v into @p coef
 *  (V, DV, XV, XDV, each nmesh floats). */
int tide_bkg_grid_spline(const tide_bkg_plan *p, const float *v, float *coef);

#ifdef __cplusplus
}
#endif
#endif
