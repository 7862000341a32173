/* fits_tile_bands.h — the tile-compressed images tide leaves to cfitsio (HCOMPRESS_1, PLIO_1)
 * read on several threads, in bands of whole tile rows. Not public. */
#ifndef TIDE_FITS_TILE_BANDS_H
#define TIDE_FITS_TILE_BANDS_H
#include <stdint.h>

#include "fits_internal.h"
#include "tide/ctx.h"

/** Read rows [@p y0, @p y0 + @p nrows) of the image through @p f (the thread's own handle, at
 *  the image's HDU); 0 or a cfitsio status. */
typedef int (*tide_fits_band_fn)(fitsfile *f, int64_t y0, int64_t nrows, void *arg);

/** Call @p fn over bands of whole tile rows covering the @p height rows of the compressed
 *  image in HDU @p hdu of @p src, on ctx->threads threads (0: all), each with a cfitsio handle
 *  of its own on the file (opened as /proc/self/fd/N: cfitsio shares one FITSfile, buffers
 *  and tile cache included, between handles of one name). Tiles are decoded once each, as in
 *  one whole-image read, so the pixels are the same. Returns 0, 1 when the case is not one
 *  for threads (not a plain on-disk file, a section, one thread or one band: the caller reads
 *  through src->f), or a negative TIDE_E_* naming the file and HDU. */
int tide_fits_tile_bands(tide_ctx *ctx, const tide_fits_src *src, int hdu, int64_t height,
                         tide_fits_band_fn fn, void *arg);

/** Rows per band of the image in @p f, @p width x @p height, read on @p threads threads:
 *  whole tile rows, about 1 Mpixel, fewer where that leaves fewer than 4 bands a thread. */
int64_t tide_fits_band_rows(fitsfile *f, int64_t width, int64_t height, int threads);

#endif
