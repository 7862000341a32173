/* tile_inflate_kernels.h — the GPU decoder of GZIP_1 / GZIP_2 tiles (tile_inflate_cuda.cu,
 * host side tile_inflate_gpu.c): what the host hands the kernel. The inflate is
 * inflate_math.h, the per-pixel conversion tile_quant_math.h, both shared with the CPU
 * (test_inflate drives the former against libdeflate; tide_tile_decode_cpu uses the latter).
 * Pointers named d_* are device memory. Not public. */
#ifndef TIDE_TILE_INFLATE_KERNELS_H
#define TIDE_TILE_INFLATE_KERNELS_H
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/image.h"
#include "tile_quant_math.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One gzip tile: its member in the data unit, its room in the scratch, where its pixels go. */
typedef struct {
    int64_t stream_off, stream_len; /**< the gzip member's first byte in the data unit, bytes */
    int64_t raw_off, raw_cap;       /**< its inflated bytes' place in the scratch, and room */
    int64_t npix;                   /**< its pixels */
    int64_t x0, y0, tw;             /**< its first column and row in the image, its width */
    int32_t sizes;    /**< the pixel sizes the inflated length may give: bit mask of 1, 2, 4, 8 */
    int32_t fallback; /**< 1: GZIP_COMPRESSED_DATA (IEEE values as they are, null-checked) */
} tide_tile_gzip_job;

/** How the tiles of an image are read (the same for all). */
typedef struct {
    int64_t width;   /**< the image's width (ZNAXIS1) */
    int shuffled;    /**< GZIP_2: the inflated bytes are planes, most significant first */
    int float_image; /**< ZBITPIX < 0 */
    int lossless;    /**< ZQUANTIZ = 'NONE': float tiles hold IEEE values */
} tide_tile_gzip_image;

/** Status of a tile on the device besides TIDE_INFL_*: inflated to no allowed size. */
enum { TIDE_TILE_GZIP_SIZE = 16 };

#ifdef TIDE_HAVE_CUDA
/** Inflate @p ntiles gzip tiles of the data unit @p d_unit, one warp per tile, into the
 *  scratch @p d_raw, then convert each to floats into the image @p d_out (its own pixels
 *  only): integers with the tile's conversion d_conv[3 k + 0/1/2] for 1/2/4-byte values and
 *  the dither sequence @p d_rand, IEEE values as tide_tile_real_value reads them. @p d_err
 *  gets each tile's status (0, TIDE_INFL_*, TIDE_TILE_GZIP_SIZE). With @p d_mask, the reader's
 *  marking too: a pixel that is not finite becomes NaN and TIDE_MASK_NODATA (NULL: the
 *  decoder's values, tide_tile_decode_cpu's bits). Queued on the context's stream. */
int tide_tile_gzip_cuda(tide_ctx *ctx, const uint8_t *d_unit, const tide_tile_gzip_job *d_jobs,
                        int64_t ntiles, tide_tile_gzip_image img, const tide_tile_conv *d_conv,
                        const float *d_rand, uint8_t *d_raw, float *d_out, uint16_t *d_mask,
                        int32_t *d_err);
#endif

#ifdef __cplusplus
}
#endif
#endif
