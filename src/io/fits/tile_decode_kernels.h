/* tile_decode_kernels.h — the CUDA kernels of the tile decoder (tile_decode_cuda.cu) and what
 * the host side (tile_decode_gpu.c) hands them. The CPU twin is tide_tile_decode_cpu
 * (tile_decode.c) with rice_decode.c; the per-pixel conversion is tile_quant_math.h, shared by
 * both. Pointers named d_* are device memory. Not public. */
#ifndef TIDE_TILE_DECODE_KERNELS_H
#define TIDE_TILE_DECODE_KERNELS_H
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/image.h"
#include "tile_quant_math.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One RICE_1 tile: its stream in the data unit, where its pixels go. */
typedef struct {
    int64_t stream_off;  /**< first byte of the stream in the data unit */
    int64_t stream_len;  /**< its bytes */
    int64_t scratch_off; /**< its first decoded value in the scratch (tile order) */
    int64_t npix;        /**< its pixels */
    int64_t x0, y0, tw;  /**< its first column and row in the image, its width */
} tide_tile_job;

/** Per-tile status of the device decoder: 0, or why the stream is wrong (the CPU twin then
 *  names the first wrong tile). */
enum { TIDE_TILE_OK = 0, TIDE_TILE_SHORT = 1, TIDE_TILE_BADCODE = 2, TIDE_TILE_WIDE = 3 };

#ifdef TIDE_HAVE_CUDA
/** Decode @p ntiles RICE_1 tiles of the data unit @p d_unit (@p bytepix 1, 2 or 4 bytes,
 *  blocks of @p blocksize), one tile per thread, into @p d_scratch as int32 (bytes unsigned,
 *  shorts sign-extended) at each job's scratch_off; @p d_err gets each tile's status. Every
 *  read is checked against the tile's stream. Queued on the context's stream. */
int tide_tile_rice_cuda(tide_ctx *ctx, const uint8_t *d_unit, const tide_tile_job *d_jobs,
                        int64_t ntiles, int bytepix, int blocksize, int32_t *d_scratch,
                        int32_t *d_err);

/** Convert the decoded values to the @p width x @p height image @p d_out, one pixel per
 *  thread: pixel (x, y) is in tile (y / ztile2) * ntile1 + x / ztile1, converted with its
 *  tide_tile_conv (tile_quant_math.h) and the dither sequence @p d_rand: the CPU twin's bits.
 *  With @p d_mask (may be NULL) the reader's marking is done in the same pass, as
 *  tide_fits_read_image marks a host read: a value that is not finite (a blank, or an integer
 *  scaled past FLT_MAX) becomes NaN with TIDE_MASK_NODATA, every other pixel's mask 0. */
int tide_tile_convert_cuda(tide_ctx *ctx, const int32_t *d_scratch, const tide_tile_job *d_jobs,
                           const tide_tile_conv *d_conv, const float *d_rand, int64_t width,
                           int64_t height, int64_t ztile1, int64_t ztile2, int64_t ntile1,
                           float *d_out, uint16_t *d_mask);
#endif

#ifdef __cplusplus
}
#endif
#endif
