/* fits_tiles.h — checking a tile-compressed image against the bytes its file holds, before
 * cfitsio decodes anything.
 *
 * cfitsio 4.2.0 trusts a compressed image's keywords and streams: ZNAXISn x ZTILEn products
 * that wrap past 64 bits reach its allocations (a 2^32 x 2^32 image with 0-byte planes, a
 * 7 x 7.9e18 one whose tile is "1 pixel"), a ZTILEn of 0 divides by zero, its RICE decoder
 * reads past a cut or crafted stream (it checks for the end only after each block), and its
 * HCOMPRESS decoder writes as many pixels as the stream's own header says. The check below
 * runs on the raw BINTABLE header and the file's bytes (pread on a descriptor, no cfitsio),
 * so that a file that passes is one cfitsio can decode within its buffers.
 *
 * Checked (each failure is TIDE_E_FORMAT, "PATH[HDU n]: what", naming the tile when one is
 * involved, or TIDE_E_UNSUPPORTED for a codec cfitsio cannot decode):
 *  - ZCMPTYPE one of RICE_1 (RICE_ONE), GZIP_1, GZIP_2, HCOMPRESS_1, PLIO_1, NOCOMPRESS
 *    (decoded by tide: its tiles are UNCOMPRESSED_DATA, or the pixels themselves as bytes
 *    of COMPRESSED_DATA, which must then be exactly the tile); BZIP2_1 is refused (cfitsio's
 *    public build does not decode it); ZBITPIX in
 *    {8,16,32,64,-32,-64}; 1 <= ZNAXIS <= 999; every ZNAXISn >= 1; every ZTILEn >= 1
 *    (defaults ZNAXIS1 and 1, as cfitsio). cfitsio itself writes ZTILEn > ZNAXISn (it does
 *    not clamp a requested tile to the image) and reads such files, clamping only the tiles
 *    at the image's far edges; its per-tile buffers, though, are sized from the unclamped
 *    product of the ZTILEn (maxtilelen), so that product is bounded too.
 *  - ZDITHER0, for floats quantized with SUBTRACTIVE_DITHER_1/_2 (not NOCOMPRESS, whose tiles
 *    are not dithered), in 1..10000 (cfitsio indexes its dither table with it unchecked).
 *  - with overflow-checked 64-bit arithmetic (core/checked.h): the image's pixel count and
 *    byte size, the tile count (product of ceil(ZNAXISn / ZTILEn)), the nominal tile
 *    (product of ZTILEn) and the largest actual tile; a tile of more than 1 GiB
 *    (TIDE_FITS_TILE_MAX_BYTES) is refused.
 *  - the table: BINTABLE, BITPIX 8, NAXIS 2, GCOUNT 1; NAXIS2 (rows) equal to the tile count;
 *    NAXIS1 equal to the sum of the widths of the TFORMn; THEAP (default NAXIS1 * NAXIS2)
 *    and PCOUNT within the data unit, the data unit within the file.
 *  - the columns: COMPRESSED_DATA (required) and GZIP_COMPRESSED_DATA / UNCOMPRESSED_DATA
 *    (where present) are 1P or 1Q descriptors (P: two big-endian int32, nelem and offset;
 *    Q: two int64) of bytes (shorts for PLIO_1, the image's type for UNCOMPRESSED_DATA),
 *    without TSCALn/TZEROn; every row's descriptors point inside the heap; ZSCALE / ZZERO
 *    columns, where present, are scalar numeric, ZBLANK scalar integer.
 *  - each tile's stream, as cfitsio will read it: a row with an empty COMPRESSED_DATA is read
 *    from UNCOMPRESSED_DATA (then exactly the tile's pixel count) or GZIP_COMPRESSED_DATA
 *    (floating-point images only, inflating to the tile's size in floats or doubles).
 *     RICE_1: decoded by tide_rice_decode (rice_decode.h) with cfitsio's parameters
 *       (block size ZVAL1, default 32; bytes per pixel ZVAL2, default 4, the two swapped when
 *       ZVAL1 < 16 and ZVAL2 > 8; 1, 2 and anything else meaning 4), which must give the
 *       tile's pixel count from at most the stream's bytes.
 *     GZIP_1 / GZIP_2: inflated (gzip wrapper, as cfitsio) through a fixed 64 KiB buffer to
 *       exactly the tile's pixel count times the stored pixel size (|ZBITPIX| / 8; 4 or 8
 *       for ZBITPIX -64, quantized or not); more or less is an error.
 *     HCOMPRESS_1: the stream starts with 0xDD 0x99 and its two big-endian int32 sizes are
 *       the tile's (the second axis first, as cfitsio writes them), the tile being 2-D; then
 *       the stream is walked as fits_hdecompress reads it (hcompress_check.c: bit planes,
 *       quadtree codes, end code, sign bits), each read within the stream's bytes.
 *     PLIO_1: at least 3 shorts, and the line list's own length (from its header) within
 *       the stored shorts, no instruction needing a word past them.
 * Not checked: the HCOMPRESS pixel values (no inverse H-transform is run; cfitsio's
 * fits_hdecompress takes no stream length, so the walk is what keeps it inside the stream),
 * PLIO instructions beyond the bound above, the values of ZSCALE / ZZERO / ZBLANK,
 * checksums, and what the pixels mean. */
#ifndef TIDE_FITS_TILES_H
#define TIDE_FITS_TILES_H
#include <stddef.h>
#include <stdint.h>

#include "tide/header.h"

/** Largest tile tide lets cfitsio (or its own check) decode, in bytes of image pixels. */
#define TIDE_FITS_TILE_MAX_BYTES ((int64_t)1 << 30)

/** Most axes of a compressed image (ZNAXIS). */
#define TIDE_TILE_MAX_DIM 999

/** The codecs (ZCMPTYPE) tide knows. */
enum { CODEC_RICE, CODEC_GZIP1, CODEC_GZIP2, CODEC_HCOMP, CODEC_PLIO, CODEC_NOCOMP };

/** A stream column: where its descriptor lies in a row and what its elements are. */
typedef struct {
    int col;     /**< 1-based column number, 0 when the table has none */
    int64_t off; /**< byte offset of the descriptor in a row */
    int q;       /**< 1: Q descriptor (two int64), 0: P (two int32) */
    char type;   /**< element type letter */
    int elem;    /**< bytes per element */
} tide_tile_col;

/** A scalar column of the table (ZSCALE, ZZERO, ZBLANK): where it lies in a row. */
typedef struct {
    int col;     /**< 1-based column number, 0 when the table has none */
    int64_t off; /**< byte offset of the field in a row */
    char type;   /**< TFORM type letter (B, I, J, K, E, D) */
} tide_tile_scalar;

/** A compressed image's layout, as its raw header and table say (read and checked by
 *  tide_tile_layout_read). */
typedef struct {
    const char *path; /**< for messages */
    int hdu;          /**< 0-based, for messages */
    int fd;           /**< the file, read with pread */
    int codec;        /**< CODEC_* */
    int zbitpix, ndim;
    int64_t znaxis[TIDE_TILE_MAX_DIM], ztile[TIDE_TILE_MAX_DIM], ntile[TIDE_TILE_MAX_DIM];
    int64_t ntiles, maxpix; /**< tile count, largest actual tile's pixels */
    int rice_block, rice_bytepix;
    int64_t naxis1, naxis2, pcount, theap, table_bytes; /**< the table's layout */
    int64_t data_end;                                   /**< the data unit's size */
    int64_t data_start;                                 /**< its first byte in the file */
    tide_tile_col cmp, gz, unc;
    tide_tile_scalar zscale, zzero, zblank;
    int64_t row_lo;       /**< offset in a row of the first byte held of each row */
    size_t scratch_bytes; /**< one decoded RICE tile */
} tide_tile_layout;

/** Read and check the keywords and the table layout of the compressed image (as
 *  tide_fits_check_tiles does, without reading the tiles' streams) into @p t, whose path, hdu,
 *  fd and data_start the caller has set. 0, or TIDE_E_FORMAT / TIDE_E_UNSUPPORTED with a
 *  detail "PATH[HDU n]: ...". */
int tide_tile_layout_read(tide_tile_layout *t, const tide_header *hdr, int64_t file_size);

/** Row @p row's (0-based tile @p tile's) descriptor of column @p c: element count and heap
 *  offset, checked to lie in the heap (TIDE_E_FORMAT naming the tile otherwise). @p row holds
 *  the row's bytes from t->row_lo on. */
int tide_tile_descriptor(const tide_tile_layout *t, const tide_tile_col *c, const uint8_t *row,
                         int64_t tile, int64_t *nelem, int64_t *off);

/** Tile @p k (0-based, axis 1 fastest): its sizes along axes 1 and 2 and its pixel count. */
void tide_tile_shape(const tide_tile_layout *t, int64_t k, int64_t *n1, int64_t *n2, int64_t *npix);

/** Check the tile-compressed image in the BINTABLE HDU @p hdu (0-based, for messages) of the
 *  file open on @p fd (@p path for messages), whose raw header (the file's own cards, Z*
 *  keywords not converted) is @p hdr and whose data unit starts at byte @p data_start of a
 *  file of @p file_size bytes. Reads with pread; allocates one stream and one tile per thread.
 *  Returns 0 when cfitsio can decode every tile within its buffers, else TIDE_E_FORMAT (or
 *  TIDE_E_UNSUPPORTED, TIDE_E_IO, TIDE_E_NOMEM) with a detail "PATH[HDU n]: ...", naming
 *  the first wrong tile. The tiles' streams are checked on OpenMP's default number of
 *  threads (each with its own stream and tile buffer, at most 1 GiB of tiles in all). */
int tide_fits_check_tiles(int fd, const char *path, int hdu, const tide_header *hdr,
                          int64_t data_start, int64_t file_size);

/** The same on @p threads threads (0: OpenMP's default; 1: the calling thread alone). The
 *  verdict and its detail do not depend on the number of threads. */
int tide_fits_check_tiles_threads(int fd, const char *path, int hdu, const tide_header *hdr,
                                  int64_t data_start, int64_t file_size, int threads);

/** tide_fits_check_tiles without the streams of the codecs tide decodes itself (RICE_1,
 *  GZIP_1, GZIP_2, NOCOMPRESS): the keywords, the table and every row's descriptors, and the
 *  streams of HCOMPRESS_1 and PLIO_1 tiles only. Why: checking a stream is decoding it, as
 *  long as tide's decode that follows (a 151 Mpix RICE frame was decoded twice per read), and
 *  tide's decoders check each stream as they decode it. A file that passes this check alone
 *  must have its streams checked (tide_fits_check_streams) before cfitsio decodes them. */
int tide_fits_check_tile_table(int fd, const char *path, int hdu, const tide_header *hdr,
                               int64_t data_start, int64_t file_size);

#endif
