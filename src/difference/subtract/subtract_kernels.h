/* subtract_kernels.h — the few kernels the subtraction algorithm (subtract.c) needs from a
 * backend (subtract_cpu.c, subtract_cuda.cu). Arrays named "backend memory" live on the host
 * for the CPU twin and on the device for the CUDA twin; images likewise.
 *
 * Design matrix layout: D[s][c][i], stamp s, column c (nb basis images, then a column of ones
 * for the background, the pixel's total variance 1/W (so that Q[var][c] = sum over the stamp's
 * weighted pixels of column c, unweighted), then the target), pixel i of the (2hs+1)^2 stamp,
 * row-major in the stamp; W[s][i] the pixel's weight (1 / variance, 0 when excluded). */
#ifndef TIDE_SUBTRACT_KERNELS_H
#define TIDE_SUBTRACT_KERNELS_H
#include <stdint.h>
#include "tide/ctx.h"
#include "tide/image.h"
#ifdef __cplusplus
extern "C" {
#endif

/** Largest number of polynomial terms passed by value (spatial degree <= 4). */
#define TIDE_SUB_MAXPOLY 15

/** Stamp geometry shared by the stamp kernels. */
typedef struct tide_sub_geom {
    int64_t width, height; /**< frame */
    int ns;                /**< stamps */
    int hs;                /**< stamp half-width; stamps are (2hs+1)^2 */
    int64_t npx;           /**< (2hs+1)^2 */
    int nc;                /**< columns of D */
    int kh;                /**< kernel half-width */
    uint16_t bits;         /**< mask bits that exclude */
} tide_sub_geom;

/** What the combine kernel needs, by value. */
typedef struct tide_sub_model {
    const float *conv[TIDE_SUB_MAXPOLY]; /**< R correlated with K_p, width x height, stride w */
    int npoly, sdeg;
    double bg[TIDE_SUB_MAXPOLY];
    int bgdeg;
    const float *var_ref; /**< the reference's variance plane (stride var_ref_stride), or NULL:
                               use var_ref_const */
    int64_t var_ref_stride;
    float var_ref_const;
    float k2;            /**< sum of the squared kernel at the centre: the convolved
                              reference's variance is var_R(x) k2 (exact where var_R is flat
                              over the kernel, a slight overestimate next to star cores,
                              and one full-frame correlation cheaper than var_R * K^2) */
    float var_tgt_const; /**< used when the target has no variance plane */
    float sign;          /**< +1: diff = target - model; -1: diff = model - target */
    float var_scale;     /**< factor on the difference variance (decorrelation) [1] */
} tide_sub_model;

/** Per cell of an ncx x ncy grid: the index y*W+x of the brightest pixel of @p ref that is a
 *  local peak (tide_sub_peak) with no @p g->bits in either mask, finite in both, at least @p margin
 * from every edge; -1 when none; a pixel must also be >= @p vmin. Ties go to the smallest index. @p
 * centre: backend memory, ncx*ncy. */
int tide_sub_select_cpu(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                        const tide_sub_geom *g, int ncx, int ncy, int margin, float vmin,
                        int64_t *centre);
/** Weights W and the ones, variance (1/W, 0 when excluded) and target columns of D (the last
 *  three). A pixel has weight 1/(var_t + var_r)
 *  (planes when present, else the constants) when the target pixel is finite and unmasked,
 *  every reference pixel of its (2kh+1)^2 neighbourhood is finite and unmasked, and it lies
 *  >= kh from the edges; else 0. */
int tide_sub_weights_cpu(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                         const tide_sub_geom *g, float var_ref_const, float var_tgt_const,
                         const int64_t *centre, float *W, float *D);
/** Copy the stamp pixels of @p im (a basis-convolved image) into column @p col of D. */
int tide_sub_gather_cpu(tide_ctx *ctx, const tide_image *im, const tide_sub_geom *g, int col,
                        const int64_t *centre, float *D);
/** Columns 0..nb-1 of D computed directly, D[s][b][i] = sum_j K_b(j) R(p_i + j) over the
 *  kernel's (2kh+1)^2 pixels (correlation; non-finite or masked reference pixels count 0, as
 *  in the FFT correlator), float sums taken kernel row by kernel row, tap by tap. @p kernels:
 *  backend memory, nb * (2kh+1)^2. */
int tide_sub_basis_stamps_cpu(tide_ctx *ctx, const tide_image *ref, const tide_sub_geom *g,
                              const float *kernels, int nb, const int64_t *centre, float *D);
/** Q[s][a][b] = sum_i W[s][i] D[s][a][i] D[s][b][i] in double, fixed order; full matrix. */
int tide_sub_normal_cpu(tide_ctx *ctx, const tide_sub_geom *g, const float *D, const float *W,
                        double *Q);
/** The product of the global normal equations' assembly (tide_sub_assemble): G[r][k] =
 *  sum_j Q[kept[j]][off[r]] PP[j][k] for r < R, k < nppad, where Q holds the ns per-stamp
 *  nc x nc matrices and off[r] an entry of one. Each output is one chain over j in order, every
 *  product and sum rounded on its own (no fused multiply-add), so both backends give the same
 *  bits. @p nppad is 8, or a multiple of 24. @p Q where the context computes; @p kept (m),
 *  @p off (R), @p PP (m x nppad) and @p G (R x nppad) host memory. */
int tide_sub_pairs_cpu(tide_ctx *ctx, const double *Q, int nc, const int *kept, int m,
                       const int *off, int R, const double *PP, int nppad, double *G);
/** matched = sum_p P_p(x,y) conv_p + bg(x,y); diff = sign (target - matched) (pix and var;
 *  the mask is tide_sub_mask's). diff.var = (var_t + k2 var_r) var_scale. Images of the frame's
 * size. */
int tide_sub_combine_cpu(tide_ctx *ctx, const tide_sub_model *m, const tide_image *tgt,
                         tide_image *diff, tide_image *matched);
/** out = (tgt.mask) | (ref.mask & bits grown by a (2kh+1)^2 box) | EDGE within kh of the
 *  frame edges; @p out is diff.mask (width x height, stride diff.stride). */
int tide_sub_mask_cpu(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                      const tide_sub_geom *g, tide_image *diff);

#ifdef TIDE_HAVE_CUDA
int tide_sub_select_cuda(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                         const tide_sub_geom *g, int ncx, int ncy, int margin, float vmin,
                         int64_t *centre);
int tide_sub_weights_cuda(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                          const tide_sub_geom *g, float var_ref_const, float var_tgt_const,
                          const int64_t *centre, float *W, float *D);
int tide_sub_basis_stamps_cuda(tide_ctx *ctx, const tide_image *ref, const tide_sub_geom *g,
                               const float *kernels, int nb, const int64_t *centre, float *D);
int tide_sub_gather_cuda(tide_ctx *ctx, const tide_image *im, const tide_sub_geom *g, int col,
                         const int64_t *centre, float *D);
int tide_sub_normal_cuda(tide_ctx *ctx, const tide_sub_geom *g, const float *D, const float *W,
                         double *Q);
int tide_sub_pairs_cuda(tide_ctx *ctx, const double *Q, int nc, const int *kept, int m,
                        const int *off, int R, const double *PP, int nppad, double *G);
int tide_sub_combine_cuda(tide_ctx *ctx, const tide_sub_model *m, const tide_image *tgt,
                          tide_image *diff, tide_image *matched);
int tide_sub_mask_cuda(tide_ctx *ctx, const tide_image *ref, const tide_image *tgt,
                       const tide_sub_geom *g, tide_image *diff);
#endif

#ifdef __cplusplus
}
#endif
#endif
