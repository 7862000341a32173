/* fits_tiles_codec.h — the stream checks of fits_tiles.c for the codecs other than RICE_1
 * (which is decoded whole by rice_decode.c). Each returns 0 or TIDE_E_FORMAT with a detail
 * saying what is wrong with the stream; the caller prefixes the file, HDU and tile. Not
 * public. */
#ifndef TIDE_FITS_TILES_CODEC_H
#define TIDE_FITS_TILES_CODEC_H
#include <stddef.h>
#include <stdint.h>

/** A gzip stream (as cfitsio reads GZIP_1/GZIP_2 tiles: gzip wrapper) must inflate to
 *  exactly @p npix times one of the @p nsizes pixel sizes in @p sizes (bytes). Inflates
 *  through a fixed buffer, stopping as soon as the output exceeds the largest size. */
int tide_tile_check_gzip(const uint8_t *in, size_t nin, int64_t npix, const int *sizes, int nsizes);

/** An HCOMPRESS_1 stream (hcompress_check.c) must start with 0xDD 0x99 and the sizes @p n2
 *  then @p n1 (the tile's second and first axes) as big-endian int32, and hold every field
 *  cfitsio's fits_hdecompress (@p wide: fits_hdecompress64, 64-bit pixels) reads, read the
 *  way it reads them: its bit planes (no more than the pixels have bits, none in an empty
 *  quadrant), format codes 0 or 15, the end code and the sign bits. */
int tide_tile_check_hcompress(const uint8_t *in, size_t nin, int64_t n1, int64_t n2, int wide);

/** A PLIO_1 line list of @p nshort big-endian shorts at @p in: at least 3, its header's
 *  length within them, and no instruction needing a word past them. */
int tide_tile_check_plio(const uint8_t *in, size_t nshort);

#endif
