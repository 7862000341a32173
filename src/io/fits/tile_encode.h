/* tile_encode.h — tide's encoder of tile-compressed FITS images (RICE_1; the tiled-image
 * convention, Pence et al. 2009; FITS standard 4.0, sec. 10), the inverse of tile_decode.h.
 *
 * An image is cut into tiles (rows by default, as fpack), each tile coded on its own
 * (tile_encode_core.h): integers losslessly (BYTEPIX 1, 2 or 4), floats quantized as fpack
 * -q 4 does (SUBTRACTIVE_DITHER_1, ZSCALE / ZZERO per tile, nulls as ZBLANK; a tile that
 * cannot be quantized is stored losslessly, gzipped, as cfitsio does). The tiles are coded
 * in parallel (OpenMP), or on the GPU (tile_encode_cuda.cu) with the same bytes, and written
 * as one compressed-image HDU by tide_tile_write_hdu (tile_write.c). Not public. */
#ifndef TIDE_TILE_ENCODE_H
#define TIDE_TILE_ENCODE_H
#include <fitsio.h>
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/header.h"
#include "tile_encode_core.h"

/** The RICE_1 block size tide writes (fpack's). */
#define TIDE_TILE_ENC_BLOCKSIZE 32

/** An image's tiles once coded: each tile's stream in its own slot of plan.cap bytes. */
typedef struct {
    tide_tile_enc_plan plan;
    uint8_t *slots;         /**< plan.ntiles * plan.cap bytes */
    tide_tile_enc_out *out; /**< plan.ntiles results */
} tide_tile_encoded;

/** Plan the coding of a @p width x @p height image of @p kind (tide_enc_kind), rows
 *  @p stride elements apart, in tiles of @p ztile1 x @p ztile2 pixels (0, 0: one tile per
 *  row), dither offset @p dither0 (1..10000; floats only). Returns 0 or TIDE_E_INVAL. */
int tide_tile_enc_plan_init(tide_tile_enc_plan *p, int kind, int64_t width, int64_t height,
                            int64_t stride, int64_t ztile1, int64_t ztile2, int dither0);

/** ZDITHER0 for an image: 1 + a hash of its first row's bits mod 10000, so that a file is
 *  the same on every run (fpack's default seed comes from the clock) while different images
 *  start at different places of the dither sequence. */
int tide_tile_enc_seed(const float *pix, int64_t width);

/** Allocate @p e's slots and results for plan @p p. TIDE_E_NOMEM. */
int tide_tile_encoded_alloc(tide_tile_encoded *e, const tide_tile_enc_plan *p);

/** Free what tide_tile_encoded_alloc allocated (zeroed struct: no-op). */
void tide_tile_encoded_free(tide_tile_encoded *e);

/** Code every tile of @p img (host memory, the plan's kind) on @p threads threads (0:
 *  OpenMP's default). Returns 0 or TIDE_E_NOMEM. */
int tide_tile_encode_cpu(tide_tile_encoded *e, const void *img, int threads);

#ifdef TIDE_HAVE_CUDA
/** The CUDA twin of tide_tile_encode_cpu (tile_encode_gpu.c): @p img is host memory; it is
 *  uploaded, every tile coded by one GPU thread with tile_encode_core.h, and the slots and
 *  results downloaded: the same bytes as the CPU twin. Returns 0 or a negative TIDE_E_*. */
int tide_tile_encode_cuda(tide_ctx *ctx, tide_tile_encoded *e, const void *img);
#endif

/** Append @p e, the coded image @p img, to @p f as a compressed-image HDU: ZSIMPLE when
 *  @p primary (the image stands for a primary HDU, as fpack's first HDU), else ZTENSION
 *  'IMAGE'; EXTNAME @p extname (NULL: COMPRESSED_IMAGE); then the cards of @p hdr
 *  (tide_fits_put_cards' rules) and those of @p own as they are (tide's TIDEMASK, BITn; may
 *  be NULL). Lossless float tiles are gzipped here (libdeflate). Returns 0 or TIDE_E_IO /
 *  TIDE_E_NOMEM naming @p path. */
int tide_tile_write_hdu(fitsfile *f, const tide_tile_encoded *e, const void *img,
                        const tide_header *hdr, const tide_header *own, const char *extname,
                        int primary, const char *path);

#endif
