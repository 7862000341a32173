/* fits_internal.h — what the fits_*.c files share: opening a spec with clear errors, mapping
 * cfitsio status codes to tide ones, header transfer, and atomic output files. Not public. */
#ifndef TIDE_FITS_INTERNAL_H
#define TIDE_FITS_INTERNAL_H
#include <fitsio.h>
#include <stdint.h>

#include "tide/fits.h"
#include "tide/outfile.h"

/** An opened input: the cfitsio handle and what the spec asked for. */
typedef struct tide_fits_src {
    fitsfile *f;
    char root[FLEN_FILENAME]; /**< the file name without selector or section (for messages) */
    int explicit_hdu;         /**< the spec named an HDU (FILE[N] or FILE[EXTNAME]) */
    int section;              /**< the spec had a section or filter (cfitsio made a memory copy) */
    int64_t file_size;        /**< size of the plain on-disk FITS file, -1 if not one */
} tide_fits_src;

/** Open @p spec read-only at the HDU it names (the primary when none). Failures say whether the
 *  file is missing (TIDE_E_NOTFOUND), not FITS or truncated (TIDE_E_FORMAT), or the HDU does
 *  not exist (TIDE_E_NOTFOUND). */
int tide_fits_open(const char *spec, tide_fits_src *src);

/** Scan the raw headers of the file @p path (inflated first when @p gzipped) before cfitsio
 *  reads it: control characters, value types of the keywords cfitsio interprets, BITPIX,
 *  NAXIS, overflow-checked data sizes inside the file, BSCALE (fits_scan.c). TIDE_E_FORMAT
 *  naming the HDU and card; a file that passed before, unchanged, is not scanned again. The
 *  streams of a tile-compressed image are checked when @p streams or @p gzipped (cfitsio
 *  will decode them), else only those of the codecs tide does not decode itself. */
int tide_fits_scan_file(const char *path, int gzipped, int streams);

/** Close (NULL handle is a no-op). */
void tide_fits_close(tide_fits_src *src);

/** The current HDU, 0-based. */
int tide_fits_cur_hdu(fitsfile *f);

/** Map a non-zero cfitsio status to a tide status and record "PATH[HDU n]: WHAT (cfitsio: ...)"
 *  (hdu < 0 leaves the HDU out). Clears cfitsio's message stack. */
int tide_fits_status(int cfstatus, const char *path, int hdu, const char *what);

/** TIDE_E_FORMAT naming the HDU when the current HDU's data run past the end of the file. */
int tide_fits_check_extent(const tide_fits_src *src, int hdu, int64_t *data_bytes);

/** Check every HDU of the file for a complete data unit and the file for a cut-off header
 *  after its last HDU (a truncated transfer), then return to the current HDU. Plain on-disk
 *  files only (a no-op otherwise). */
int tide_fits_check_file(const tide_fits_src *src);

/** The current HDU's header (the uncompressed image's header for a compressed image,
 *  converted by tide: fits_tile_header.h). */
int tide_fits_get_header(fitsfile *f, const char *path, int hdu, tide_header *hdr);

/** The current HDU's header as cfitsio's fits_convert_hdr2str gives it (for a compressed
 *  image, cfitsio's conversion): tide_fits_get_header's fallback, and its tests' reference. */
int tide_fits_header_by_cfitsio(fitsfile *f, const char *path, int hdu, tide_header *hdr);

/** Write the cards of @p hdr to the current HDU, skipping structural, compression, column
 *  and checksum keywords (and EXTNAME when @p skip_extname), and tide's own TIDEMASK/TIDEVAR.
 *  Non-printable characters are replaced by blanks. */
int tide_fits_put_cards(fitsfile *f, const tide_header *hdr, int skip_extname, const char *path);

/** A FITS output being written by cfitsio into its staged temporary (outfile.h). */
typedef struct tide_fits_out {
    fitsfile *f;
    const char *path; /**< the final name (for messages) */
    tide_outfile own; /**< the staging, when the writer owns it */
    tide_outfile *of; /**< &own, or the caller's output of a set */
    int staged;       /**< of is the caller's: commit only completes and flushes it */
} tide_fits_out;

/** Stage an output for @p path (tide_outfile_begin) and create it with cfitsio. */
int tide_fits_out_begin(tide_fits_out *o, const char *path);

/** Create the temporary of the caller's staged output @p of with cfitsio; commit then
 *  completes and flushes it, and the caller (its output set) renames it into place. */
int tide_fits_out_begin_staged(tide_fits_out *o, tide_outfile *of);

/** Close and flush; rename over the final name unless staged. On failure the temporary is
 *  removed. */
int tide_fits_out_commit(tide_fits_out *o);

/** Close and remove the temporary file (after a failure). Keeps the current error detail. */
void tide_fits_out_abort(tide_fits_out *o);

/** Append table @p t as a BINTABLE HDU (number @p hdu, for messages) with the cards of
 *  @p hdr (EXTNAME from @p extname, NULL or "" = none), the rows in one block or, with
 *  @p by_column, column by column through cfitsio. */
int tide_fits_table_hdu(tide_fits_out *o, const tide_table *t, const tide_header *hdr,
                        const char *extname, int by_column, int hdu);

/** Append host image @p im (pixels only: a mask or variance plane is not written) as a
 *  float32 image extension, number @p hdu, with the cards of @p hdr and EXTNAME @p extname. */
int tide_fits_image_hdu(tide_fits_out *o, const tide_image *im, const tide_header *hdr,
                        const char *extname, int hdu);

/** Append the BITn cards naming tide's mask bits to @p h. */
int tide_fits_mask_bit_cards(tide_header *h);

/** tide_fits_write_image's planes, RICE_1 tile-compressed, into the begun output @p o
 *  (fits_write_rice.c): an empty primary, then the pixels (ZSIMPLE, EXTNAME COMPRESSED_IMAGE),
 *  MASK and VAR as compressed HDUs. */
int tide_fits_write_rice(tide_fits_out *o, const tide_image *im, const tide_header *hdr);

/** Check the streams of the current HDU of @p src (HDU @p hdu, for messages) before cfitsio
 *  decodes them: a compressed image's tiles are checked by the file's scan only as far as tide
 *  decodes them itself (tide_fits_check_tile_table), so every cfitsio read of a compressed
 *  image's pixels is preceded by this. 0 (checked, or not compressed, or a gzipped file whose
 *  scan checked everything) or the error naming the first wrong tile (fits_tile_read.c). */
int tide_fits_check_streams(tide_fits_src *src, int hdu);

#endif
