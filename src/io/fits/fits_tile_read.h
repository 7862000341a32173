/* fits_tile_read.h — reading a tile-compressed image's pixels with tide's decoder
 * (tile_decode.h) instead of cfitsio's. Not public. */
#ifndef TIDE_FITS_TILE_READ_H
#define TIDE_FITS_TILE_READ_H
#include "fits_internal.h"
#include "tide/ctx.h"
#include "tide/image.h"
#include "tile_decode.h"

/** Read the pixels of the current HDU of @p src, a tile-compressed 2-D image of @p im's size
 *  (allocated on the host), with tide's decoder: every value as fits_read_pixll(TFLOAT, null
 *  NaN) gives it (the caller then marks the NaNs no-data). Plain on-disk, unsectioned files
 *  of RICE_1, GZIP_1, GZIP_2 and uncompressed or gzipped fallback tiles only; threads from
 *  ctx->threads (0: all). Returns 0, 1 when the case is not one tide decodes (nothing was
 *  changed: read with cfitsio), or a negative TIDE_E_* naming file, HDU and tile. */
int tide_fits_tile_read_pixels(tide_ctx *ctx, tide_fits_src *src, int hdu, tide_image *im);

/** tide_fits_tile_read_pixels into a device image @p im of @p w x @p h, allocated here (a CUDA
 *  context; pixels and a mask plane): RICE_1 decoded on the device with the no-data marking
 *  (tide_tile_rice_file_to_device: the heap read in chunks beside the decoding), GZIP_1 and
 *  GZIP_2 inflated there from the unit read whole (tide_tile_inflate_to_device), no pixel
 *  through the host. Returns 0, 1 when it cannot
 *  (another codec, whose data unit is then not read; a tile the CPU twin must decode or
 *  name; TIDE_GPU_TILE_DECODE=0; a CPU build: read on the host instead; *im left empty), or a
 *  negative TIDE_E_*. */
int tide_fits_tile_read_device(tide_ctx *ctx, tide_fits_src *src, int hdu, int64_t w, int64_t h,
                               tide_image *im);

/** pread of @p n bytes at @p off of @p fd, whole (a short read is retried, EINTR too): 0, or
 *  -1 on an error or an early end of file (errno then says why, or is 0). */
int tide_fits_pread_full(int fd, void *buf, size_t n, int64_t off);

/** 1 when TIDE_DECODE_TIMES=1 (tide bench --decode sets it): the device read then adds the
 *  time of its pieces to the context's stage timers (read.*, rice.*), else 0 so that other
 *  commands' timing lists stay as they were. */
int tide_fits_times_on(void);

/** With tide_fits_times_on, add the milliseconds since @p t0 (tide_now()) to @p stage. */
void tide_fits_time_since(tide_ctx *ctx, const char *stage, double t0);

/** The first compressed image of the plain file @p path that tide decodes, ready for
 *  tide_tile_decode_cpu (and its CUDA twin): its layout and keys in *ti and its data unit in
 *  *data (the caller frees *ti with free and *data with tide_host_free; ti->lay.path is @p path). 0
 * or a negative TIDE_E_* (TIDE_E_NOTFOUND when the file holds no such image). For benchmarks and
 * tests. */
int tide_fits_tile_load(const char *path, tide_tile_image **ti, uint8_t **data);

#endif
