/* correlate_kernels.h — the correlator's state and the few kernels its algorithm
 * (correlate.c) needs from a backend (correlate_cpu.c, correlate_cuda.cu).
 *
 * Kernel spectra in compact form (why: a padded spectrum per kernel costs an FFT and
 * px*py*4 bytes of memory, but a kw x kh kernel's 2-D DFT is separable over its rows):
 *   H_k(u, v) = p_v * sum_j rows_k[j][u] * w_v^j            (Horner in j, see correlate_math.h)
 *   rows_k[j][u] = sum_i k(i - rx, j - ry) exp(+s 2 pi i u (i - rx) / px)
 *   w_v = exp(+s 2 pi i v / py),  p_v = exp(-s 2 pi i v ry / py) / (px py)
 * with s = +1 for correlation (the DFT of the reversed kernel), -1 for convolution; the
 * 1/(px py) normalises the unnormalised inverse FFT. Both tables are built in double and
 * stored as float pairs, cols[v] = (w_v, p_v): the phases on the host, the rows from them
 * where the context computes (tide_corr_rows), with the same bits on both backends. */
#ifndef TIDE_CORRELATE_KERNELS_H
#define TIDE_CORRELATE_KERNELS_H
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/fft.h"
#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tide_correlator {
    tide_backend backend;
    int64_t w, h;           /**< frame size */
    int64_t kw, kh, rx, ry; /**< kernel size and half-size */
    int64_t px, py;         /**< padded transform size (of one tile when tiled) */
    int64_t ox, oy;         /**< output pixels per tile: px - kw + 1, py - kh + 1, or w, h */
    int64_t ntx, nty;       /**< tiles per axis; 1 x 1 (untiled) on CUDA and small frames */
    int64_t tx0, ty0;       /**< origin (frame pixels) of the tile being processed */
    int nbuf;               /**< CPU tiles: threads working on tiles at once */
    float **tbuf;           /**< CPU tiles: 2 padded buffers (X, Y) per thread, else NULL */
    int64_t cw, pitch;      /**< px/2+1 complex per row; 2*cw floats per padded row */
    int nk;
    tide_correlate_options opt;
    float *kernels; /**< host copy of the kernels as given, nk * kw * kh */
    tide_fft_plan *fwd, *inv;
    float *X;    /**< padded image, then its spectrum (py * pitch floats) */
    float *Y;    /**< product spectrum, then one result (== X when nk == 1) */
    float *rows; /**< nk * kh * cw complex, backend memory */
    float *cols; /**< py * 2 complex (w_v, p_v), backend memory */
    float *spec; /**< CPU only: nk * py * cw complex full spectra; NULL on CUDA */
};

/** c->rows (backend memory, allocated) from the kernels and @p root, the px-th roots of unity
 *  (host, px complex doubles, exp(2 pi i m / px)): every entry tide_corr_row_entry
 *  (correlate_math.h), the same bits on both backends. */
int tide_corr_rows_cpu(tide_ctx *ctx, struct tide_correlator *c, const double *root);
/** Whatever the backend precomputes from rows/cols (the CPU expands full spectra). */
int tide_corr_prepare_cpu(tide_ctx *ctx, struct tide_correlator *c);
/** Fill c->X (all py * pitch floats) from @p in with padding and NaN/mask zeroing: the
 *  padded cell (a, b) holds the frame at (tx0 + a - rx, ty0 + b - ry) (tide_corr_source). */
int tide_corr_pad_cpu(tide_ctx *ctx, const struct tide_correlator *c, const tide_image *in);
/** c->Y = c->X * H_k, over the half-spectrum. */
int tide_corr_multiply_cpu(tide_ctx *ctx, const struct tide_correlator *c, int k);
/** Copy the linear result of the tile from c->Y (offset rx, ry) into @p out at (tx0, ty0):
 *  min(ox, w - tx0) x min(oy, h - ty0) pixels. */
int tide_corr_crop_cpu(tide_ctx *ctx, const struct tide_correlator *c, tide_image *out);

/** CPU, tiled correlators only: every tile on its own thread (buffers c->tbuf, the cached
 *  plans executed concurrently, which FFTW allows), pad, forward, per kernel product, inverse
 *  and crop; the tiles' outputs are disjoint, so the result does not depend on the order. */
int tide_corr_run_tiles_cpu(tide_ctx *ctx, const struct tide_correlator *c, const tide_image *in,
                            tide_image *out);

#ifdef TIDE_HAVE_CUDA
int tide_corr_rows_cuda(tide_ctx *ctx, struct tide_correlator *c, const double *root);
int tide_corr_prepare_cuda(tide_ctx *ctx, struct tide_correlator *c);
/** @p in must live on the device. */
int tide_corr_pad_cuda(tide_ctx *ctx, const struct tide_correlator *c, const tide_image *in);
/** Computes H_k on the fly from the compact tables, fused with the product. */
int tide_corr_multiply_cuda(tide_ctx *ctx, const struct tide_correlator *c, int k);
/** @p out may live on the host or the device. */
int tide_corr_crop_cuda(tide_ctx *ctx, const struct tide_correlator *c, tide_image *out);
#endif

#ifdef __cplusplus
}
#endif

#endif
