/* tile_decode.h — tide's own decoder of tile-compressed FITS images (the tiled-image
 * convention, Pence et al. 2009; FITS standard 4.0, sec. 10), in parallel over tiles.
 *
 * Decodes RICE_1 (every BYTEPIX and block size, through the bounded rice_decode.c), GZIP_1
 * and GZIP_2 (libdeflate, then GZIP_2's byte unshuffle), NOCOMPRESS, the uncompressed and gzipped
 * fallback tiles cfitsio writes for floats it cannot quantize (UNCOMPRESSED_DATA,
 * GZIP_COMPRESSED_DATA), and reconstructs quantized floats (ZSCALE / ZZERO per tile or as
 * keywords, ZBLANK column or keyword, BLANK, BSCALE / BZERO, ZQUANTIZ NO_DITHER /
 * SUBTRACTIVE_DITHER_1 / _2 with ZDITHER0) with tile_quant_math.h. The result is what
 * cfitsio's fits_read_pixll(TFLOAT, null NaN) gives, bit for bit. HCOMPRESS_1, PLIO_1 and
 * 64-bit integer images are declined (cfitsio decodes those). Not public. */
#ifndef TIDE_TILE_DECODE_H
#define TIDE_TILE_DECODE_H
#include <stdint.h>

#include "fits_tiles.h"
#include "tide/ctx.h"
#include "tide/header.h"
#include "tile_quant_math.h"

/** A compressed image tide decodes: its layout and the keywords of the pixel conversion. */
typedef struct {
    tide_tile_layout lay;
    double bscale, bzero; /**< BSCALE / BZERO (1, 0 when absent) */
    int zscale_key;       /**< ZSCALE / ZZERO are keywords, not columns */
    double zscale, zzero; /**< their values then */
    int blank_key;        /**< a ZBLANK (else BLANK) keyword, when no ZBLANK column */
    int64_t blank;        /**< its value */
    int lossless;         /**< ZQUANTIZ = 'NONE': float tiles hold IEEE values */
    int dither;           /**< TIDE_TILE_SCALE / _DITHER1 / _DITHER2 (float images only) */
    int64_t dither0;      /**< ZDITHER0 (1 when absent; 1..10000) */
} tide_tile_image;

/** Read the raw (unconverted) header @p raw of the compressed image in HDU @p hdu of the file
 *  open on @p fd (@p path for messages), whose data unit starts at byte @p data_start of a
 *  file of @p file_size bytes. Returns 0, 1 when tide leaves this image to cfitsio
 *  (HCOMPRESS_1, PLIO_1, ZBITPIX 64, more than 2 axes of more than one pixel), or
 *  TIDE_E_FORMAT / TIDE_E_UNSUPPORTED naming the file and HDU. */
int tide_tile_image_open(tide_tile_image *ti, int fd, const char *path, int hdu,
                         const tide_header *raw, int64_t data_start, int64_t file_size);

/** The dither sequence (tide_tile_randoms), computed once; never NULL. */
const float *tide_tile_random_table(void);

/** The conversion of tile @p k (0-based) whose table row is @p row (the whole row), for
 *  raw values of @p bytes bytes each (1: unsigned, 2 and 4: signed). */
void tide_tile_conv_for(const tide_tile_image *ti, int64_t k, const uint8_t *row, int bytes,
                        tide_tile_conv *c);

/** Decode every tile of @p ti from its data unit @p data (ti->lay.data_end bytes, the table
 *  then the heap) into @p out, the ZNAXIS1 x ZNAXIS2 image row by row, on @p threads threads
 *  (0: OpenMP's default). Returns 0 or TIDE_E_FORMAT "PATH[HDU n]: tile K: what" naming the
 *  first bad tile (TIDE_E_NOMEM); never reads outside @p data. */
int tide_tile_decode_cpu(const tide_tile_image *ti, const uint8_t *data, float *out, int threads);

#ifdef TIDE_HAVE_CUDA
/** The CUDA twin of tide_tile_decode_cpu for RICE_1, GZIP_1 and GZIP_2 images
 *  (tile_decode_gpu.c): @p data and @p out are host memory; the data unit is uploaded, decoded
 *  on the context's device and the image downloaded: the same bits as the CPU twin. RICE_1:
 *  one tile per thread, then one pixel per thread; GZIP: tide_tile_inflate_cuda. A wrong tile
 *  (or a fallback tile of a RICE image) is left to the CPU twin, so the error is the CPU's.
 *  Returns 0, 1 when the image is not one it decodes (another codec, or lossless RICE floats),
 *  or a negative TIDE_E_*. */
int tide_tile_decode_cuda(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                          float *out);

/** 1 when the GPU's RICE decoder takes the image (RICE_1, not lossless floats, a tile count
 *  within int32), else 0. */
int tide_tile_rice_on_device(const tide_tile_image *ti);

/** A decoder of tiles into device memory (tide_tile_rice_to_device, tide_tile_inflate_to_device):
 *  the image into @p d_out, its no-data marking into @p d_mask when given; 0, 2 when the device
 *  did not take or refused a tile, 1 when it does not decode the codec, or a negative TIDE_E_*. */
typedef int (*tide_tile_to_device_fn)(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                                      float *d_out, uint16_t *d_mask);

/** @p fn's image brought to host memory @p out through a device buffer of the image's size;
 *  returns as @p fn (2: @p out then holds no image, and the CPU twin must decide). */
int tide_tile_decode_through_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                                    float *out, tide_tile_to_device_fn fn);

/** The RICE_1 image of tide_tile_decode_cuda decoded into device memory: @p d_out (the
 *  image's pixels, width × height floats) and, when @p d_mask is not NULL, its mask plane,
 *  TIDE_MASK_NODATA where a value is not finite (that pixel then NaN) and 0 elsewhere, the
 *  marking tide_fits_read_image does on the host. @p data is host memory. Returns 0, 1 when
 *  the image is not RICE_1 (or lossless RICE floats), 2 when a tile must go to the CPU twin
 *  (a wrong tile, whose error the CPU names, or a fallback tile), or a negative TIDE_E_*. */
int tide_tile_rice_to_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                             float *d_out, uint16_t *d_mask);

/** tide_tile_rice_to_device with the data unit still in the file: @p table holds only its
 *  table rows (the first naxis1 * naxis2 bytes); the heap is read from ti->lay.fd (at
 *  ti->lay.data_start) in chunks on the context's threads into page-locked memory, each chunk
 *  copied up and decoded while the next is read. Returns as tide_tile_rice_to_device (a file
 *  that cannot be read: TIDE_E_IO). */
int tide_tile_rice_file_to_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *table,
                                  float *d_out, uint16_t *d_mask);

/** GZIP_1 / GZIP_2 images on the device (tile_inflate_gpu.c): every tile, and the gzipped
 *  fallback tiles of floats, inflated by inflate_math.h one warp per tile in one launch and
 *  converted straight into the image; any tile it does not take or refuses hands the image to
 *  the CPU twin. Returns as tide_tile_decode_cuda (1: not a GZIP image). */
int tide_tile_inflate_cuda(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                           float *out);

/** tide_tile_inflate_cuda without the CPU twin: 0 when the device decoded every tile, 2 when
 *  it did not take or refused one (@p out then holds no image), 1 when the image is not a
 *  GZIP one, or a negative TIDE_E_*. For tests that must know the device did the work. */
int tide_tile_inflate_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                             float *out);

/** A GZIP_1 / GZIP_2 image (@p data: its whole data unit) inflated on the device straight into
 *  device memory @p d_out, with the reader's marking into @p d_mask when given (non-finite pixels
 * NaN and TIDE_MASK_NODATA, as tide_tile_rice_file_to_device): returns as tide_tile_inflate_device.
 */
int tide_tile_inflate_to_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                                float *d_out, uint16_t *d_mask);
#endif

#endif
