/* tile_decode_kernels.h — the CUDA side of the RICE_1 tile decoder (tile_decode_cuda.cu) and
 * what the host side (tile_decode_gpu.c) hands it. The CPU twin is tide_tile_decode_cpu
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

/** The most pieces a data unit is moved up in (tide_rice_plan). */
#define TIDE_RICE_MAX_CHUNKS 32

/** One device decode of a RICE_1 image, planned on the host (tile_decode_gpu.c). The data unit
 *  goes up in @c nchunks pieces of whole tiles, in file order, so that the copy of one piece and
 *  the host's read of the next overlap the decoding of those before. */
typedef struct {
    int64_t ntiles, unit_bytes; /**< tiles; bytes of the data unit (the device copy's size) */
    int64_t scratch_ints;       /**< decoded values of all tiles (the jobs' scratch extent) */
    int bytepix, blocksize;     /**< ZVAL2 / ZVAL1 of RICE_1 */
    int64_t width, height, ztile1, ztile2, ntile1; /**< the image and its tile grid */
    int nchunks;                                   /**< 1..TIDE_RICE_MAX_CHUNKS */
    /** chunk c decodes tiles [tile0[c], tile0[c + 1]) once unit bytes [byte0[c], byte0[c + 1])
     *  are on the device (with those of the chunks before: every stream of its tiles ends by
     *  byte0[c + 1] and starts at byte0[0] or later) */
    int64_t tile0[TIDE_RICE_MAX_CHUNKS + 1], byte0[TIDE_RICE_MAX_CHUNKS + 1];
    const tide_tile_job *jobs;  /**< host, from tide_rice_host_tables */
    const tide_tile_conv *conv; /**< host, from tide_rice_host_tables */
} tide_rice_plan;

/** The host half of the pipeline: put unit bytes [@p lo, @p hi) at @p dst (page-locked memory
 *  of at least hi - lo bytes). 0 or a negative TIDE_E_*. */
typedef int (*tide_rice_fill)(void *arg, uint8_t *dst, int64_t lo, int64_t hi);

/** Where one tide_rice_run_cuda's time went, in milliseconds, measured (CUDA events on the
 *  streams it used, the host clock for the host's parts). */
typedef struct {
    double fill;    /**< host: the fill calls (the file's reads), summed */
    double h2d;     /**< device: the unit's copies, summed (the copy engine's busy time) */
    double decode;  /**< device: first decode start to last decode end (the chunks overlap) */
    double tail;    /**< device: last copy's end to last decode's end (decoding not hidden) */
    double convert; /**< device: the conversion kernel */
    double wait;    /**< host: waiting for the stream after everything was queued */
    double total;   /**< host: the whole call */
} tide_rice_times;

#ifdef TIDE_HAVE_CUDA
/** Page-locked host room, kept on the context, for the jobs and conversions of @p ntiles tiles
 *  that tide_rice_run_cuda moves up without a copy through pageable memory; valid until the
 *  next call on the context. 0 or a negative TIDE_E_*. */
int tide_rice_host_tables(tide_ctx *ctx, int64_t ntiles, tide_tile_job **jobs,
                          tide_tile_conv **conv);

/** Decode the planned image into the device image @p d_out (and, when @p d_mask is not NULL,
 *  its no-data mask: a value that is not finite becomes NaN with TIDE_MASK_NODATA, every
 *  other pixel's mask 0, as tide_fits_read_image marks a host read) on the context's device. The
 * unit comes from @p unit when it is page-locked host memory, else chunk by chunk from @p fill into
 * a page-locked ring kept on the context (with @p unit pageable, @p fill copies from it). The
 *  copies run on a copy stream and chunk c's tiles decode on a stream of their own once its
 *  bytes are up, one tile per thread with every read inside the tile's stream; the conversion
 *  then runs on the context's stream. Returns when all is done: *@p bad is 1 when a tile's
 *  stream is wrong (the CPU twin must name it; @p d_out then holds no image), else 0; @p t
 *  (may be NULL) gets the timings. 0 or a negative TIDE_E_*. */
int tide_rice_run_cuda(tide_ctx *ctx, const tide_rice_plan *p, const uint8_t *unit,
                       tide_rice_fill fill, void *arg, float *d_out, uint16_t *d_mask, int *bad,
                       tide_rice_times *t);
#endif

#ifdef __cplusplus
}
#endif
#endif
