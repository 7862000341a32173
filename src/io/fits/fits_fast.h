/* fits_fast.h — direct (cfitsio-bypassing) data transfer for the common plain cases: reading an
 * uncompressed image's data unit with parallel pread(2), writing a binary table's data unit
 * in one call and an image's data unit converted by several threads. Each reproduces, bit for bit,
 * what the cfitsio path it replaces produces, and declines (returns 1) for anything else so the
 * caller takes that path. Not public. */
#ifndef TIDE_FITS_FAST_H
#define TIDE_FITS_FAST_H
#include <string.h>

#include "fits_internal.h"
#include "tide/ctx.h"
#include "tide/image.h"
#include "tide/table.h"

/** Read the pixels of the current HDU of @p src (a 2-D image of @p im's size, already
 *  allocated on the host with a zeroed mask) straight from the file: NaN where cfitsio would
 *  give its null value (BLANK, NaN, Inf) with TIDE_MASK_NODATA in the mask, every other value
 *  exactly as fits_read_pixll(TFLOAT) converts it. Plain on-disk, uncompressed, unsectioned
 *  images of BITPIX 8, 16, 32 (any BSCALE/BZERO that cannot overflow a float) and -32 (no
 *  scaling) only. Runs on ctx->threads threads (all cores when ctx is NULL or 0).
 *  Returns 0 when done, 1 when the case is not one of those (nothing was changed), or a
 *  negative TIDE_E_* (a read error). */
int tide_fits_fast_read_pixels(tide_ctx *ctx, tide_fits_src *src, int hdu, tide_image *im);

/** The same for tide's own extra planes in the current HDU (tide_fits_write_image's MASK and
 *  VAR extensions, @p im's size): @p is_mask ORs the stored bits into im->mask as
 *  fits_read_pixll(TUSHORT) reads them (BITPIX 16, BZERO 32768 only); else im->var gets the
 *  variance as fits_read_pixll(TFLOAT) with null NaN reads it (unscaled BITPIX -32 only).
 *  Returns 0, 1 (not such a case: read it with cfitsio) or a negative TIDE_E_*. */
int tide_fits_fast_read_aux(tide_ctx *ctx, tide_fits_src *src, int hdu, tide_image *im,
                            int is_mask);

struct tide_fits_plain_unit;
/** Whether the current HDU of @p src (HDU @p hdu, a 2-D image of @p w x @p h) is one that
 *  tide_fits_fast_read_pixels reads, whole inside the file: then 1 with @p u filled (the
 *  file, its data unit's offset and conversion), for a reader that converts the raw bytes
 *  itself (the cuFile path, fits_stack.h); else 0. */
int tide_fits_fast_plain_unit(tide_fits_src *src, int hdu, int64_t w, int64_t h,
                              struct tide_fits_plain_unit *u);

/** Write all rows of @p t into the current HDU of @p f, a binary table just created with the
 *  columns of @p t in order (TFORM "<repeat><letter>", no scaling), as one block of FITS
 *  row-major big-endian bytes: the same bytes fits_write_col / fits_write_col_str produce.
 *  @p path names the output in messages. Returns 0 or a negative TIDE_E_*. */
int tide_fits_fast_write_rows(fitsfile *f, const tide_table *t, const char *path);

/** tide_fits_write_table, with the rows written column by column through fits_write_col when
 *  @p by_column (the cfitsio reference the fast writer is tested against), else in one block
 *  by tide_fits_fast_write_rows. */
int tide_fits_write_table_by(const char *path, const tide_table *t, const tide_header *hdr,
                             const char *extname, int by_column);

/** Store @p n values from host order at @p src to big-endian (FITS order) at @p dst, 8, 4 or
 *  2 bytes each (a byte swap each: the compiler vectorises it as a shuffle). */
static inline void tide_fits_put_be8(unsigned char *restrict dst, const unsigned char *restrict src,
                                     int64_t n) {
    for (int64_t k = 0; k < n; k++) {
        uint64_t v;
        memcpy(&v, src + 8 * k, 8);
        v = __builtin_bswap64(v);
        memcpy(dst + 8 * k, &v, 8);
    }
}

/** 4-byte values (tide_fits_put_be8). */
static inline void tide_fits_put_be4(unsigned char *restrict dst, const unsigned char *restrict src,
                                     int64_t n) {
    for (int64_t k = 0; k < n; k++) {
        uint32_t v;
        memcpy(&v, src + 4 * k, 4);
        v = __builtin_bswap32(v);
        memcpy(dst + 4 * k, &v, 4);
    }
}

/** 2-byte values (tide_fits_put_be8). */
static inline void tide_fits_put_be2(unsigned char *restrict dst, const unsigned char *restrict src,
                                     int64_t n) {
    for (int64_t k = 0; k < n; k++) {
        uint16_t v;
        memcpy(&v, src + 2 * k, 2);
        v = __builtin_bswap16(v);
        memcpy(dst + 2 * k, &v, 2);
    }
}

/** Write @p n contiguous values (float32, or uint16 when @p u16, stored with BZERO 32768) as
 *  the current image HDU's whole data unit, converted by several threads (fits_fast_planes.c);
 *  the same bytes as fits_write_pixll. 0 or a tide status naming @p path. */
int tide_fits_fast_write_plane(fitsfile *f, const char *path, const void *data, int64_t n, int u16);

#endif
