/* catalog.h — writing source catalogs: FITS binary table, FITS-LDAC (for SCAMP and PSFEx) and
 * CSV.
 *
 * A catalog is a tide_table (table.h) whose columns carry Source Extractor's names, units and
 * FITS 1-based pixel coordinates (the pipeline builds it; reduce.h lists the columns), plus
 * a header of summary cards. Every writer is atomic: the file appears complete under its name
 * or not at all (an existing file is replaced). */
#ifndef TIDE_CATALOG_H
#define TIDE_CATALOG_H
#include "tide/export.h"
#include "tide/header.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** FITS: an empty primary HDU, then the table as a BINTABLE in HDU 1 (EXTNAME 'OBJECTS')
 *  carrying the cards of @p hdr (may be NULL). Vector columns (FLUX_APER) keep one element
 *  per radius. */
TIDE_API int tide_catalog_write_fits(const char *path, const tide_table *t, const tide_header *hdr);

/** FITS-LDAC, the layout Source Extractor writes with CATALOG_TYPE FITS_LDAC and SCAMP and
 *  PSFEx read: an empty primary HDU; HDU 1 'LDAC_IMHEAD', a one-row table whose single column
 *  'Field Header Card' (TFORM nA, TDIM1 = '(80, ncards)') holds the frame's header
 *  @p frame_hdr card by card, ending with END (NAXIS1/NAXIS2 are set from the catalog
 *  header's IMAGEW/IMAGEH when the frame header lacks them; may be NULL); HDU 2
 *  'LDAC_OBJECTS', the table with the cards of @p hdr (may be NULL). */
TIDE_API int tide_catalog_write_ldac(const char *path, const tide_table *t,
                                     const tide_header *frame_hdr, const tide_header *hdr);

/** CSV (RFC 4180): one header line of column names, then one line per row. A vector column
 *  of repeat r becomes r columns NAME_1 .. NAME_r; strings are quoted when they hold a comma,
 *  quote or line break; numbers are written with enough digits to read back the same value
 *  (%.17g for doubles, %.9g for floats); NaN is written as "nan". The header cards are not
 *  written (the FITS catalog carries them). */
TIDE_API int tide_catalog_write_csv(const char *path, const tide_table *t);

struct tide_outfile;
/** The three writers above into the staged output @p of of an output set (outfile.h): on
 *  success the file is complete and on disk and appears under its name when the set is
 *  committed; on failure its temporary is removed. */
TIDE_API int tide_catalog_write_fits_to(struct tide_outfile *of, const tide_table *t,
                                        const tide_header *hdr);
/** FITS-LDAC into a staged output (see tide_catalog_write_fits_to). */
TIDE_API int tide_catalog_write_ldac_to(struct tide_outfile *of, const tide_table *t,
                                        const tide_header *frame_hdr, const tide_header *hdr);
/** CSV into a staged output (see tide_catalog_write_fits_to); "-" and special files are not
 *  staged: give them to tide_catalog_write_csv. */
TIDE_API int tide_catalog_write_csv_to(struct tide_outfile *of, const tide_table *t);

#ifdef __cplusplus
}
#endif
#endif
