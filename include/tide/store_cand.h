/* store_cand.h — difference images, their candidates, cutouts and objects in a store (the
 * store of store.h: SQLite or PostgreSQL with Q3C, the same tables and columns on both).
 *
 * Tables (created when a store is opened for writing; the SQL names are the ones given):
 *
 *   diffs       one row per difference image: id, the key pair sci_checksum + tmpl_checksum
 *               (tide_store_file_checksum of the two input files), the files, the output
 *               directory, processing date and tide version, both inputs' MJD-OBS, filter,
 *               the output grid (naxis1, naxis2, ra_center, dec_center, scale_arcsec and
 *               grid_header: the difference's header cards as text, WCS included), the kernel
 *               summary (fwhm_sci, fwhm_tmpl, kernel_sum, kernel_chi2, kernel_w,
 *               kernel_nfit, convolved: 1 template, 2 science), the noise (var_scale, noise:
 *               the median per-pixel 1-sigma of the difference) and counts (ncand, nfit,
 *               nreject). See tide_store_diff.
 *   candidates  one row per candidate: id (never reused), diff_id, seq (1-based row of
 *               candidates.fits), object_id, mjd (the science frame's), cell (HEALPix NESTED
 *               order 11 of the position, -1 without one, as the sources' CELL), score
 *               (the real/bogus score RB_SCORE when the table has one, tide diff
 *               --rb-model; else NULL), then every numeric column of the
 *               candidate table under its FITS name, quoted ("X_IMAGE", "SNR", "FLAGS",
 *               "DIP_FLUX", "PS_FLUX", "ALPHA_J2000"...): integer columns as INTEGER /
 *               bigint, real ones as REAL / double precision, NaN stored as NULL. A column
 *               that appears for the first time is added. tide diff --store adds
 *               RBF_VERSION and RBF_<NAME>, the real/bogus features of rb.h (training
 *               from the labels, docs/review.md). PostgreSQL also indexes
 *               q3c_ang2ipix("ALPHA_J2000", "DELTA_J2000").
 *   cutouts     candidate_id, kind ('science', 'template', 'diff', 'residual'), w, h, zero,
 *               scale, data: w*h little-endian int16 q, row after row (y upwards), the pixel
 *               value zero + scale * q; q = -32768 is NaN (blank). Each cutout's own
 *               zero/scale map its finite range onto [-32767, 32767]: a relative precision of
 *               1/65534 of the cutout's range (0.0015% — far under the noise of any stamp
 *               with a source in it), 2 bytes a pixel (a 63 x 63 cutout is 7.9 kB).
 *   objects     id (never reused), ra, dec (mean of its detections, as the normalised sum of
 *               their unit vectors sx, sy, sz), cell, ndet, first_mjd, last_mjd, last_diff
 *               (the difference that last gave it a detection). A candidate within the
 *               association radius of an object's position joins the nearest such object
 *               that has no detection of the same difference yet (updating it), else it
 *               starts a new one: a source seen at several epochs is one object with a light
 *               curve (as Rubin's DIAObjects, one detection per object and epoch).
 *   reviewers   id, name (unique), created, token_hash (the SHA-256 of the reviewer's token)
 *               — for the review tools (store_review.h).
 *   labels      id, candidate_id, reviewer_id, label ('real' | 'bogus' | 'unsure'), tags,
 *               comment, time (ISO 8601) — human labels, written by the review tools (one
 *               per reviewer and candidate).
 *
 * A difference is written in one transaction (tide_store_put_diff): the rows of the same
 * pair (science and template checksums) are deleted first with their cutouts, the objects
 * they belonged to recomputed from their remaining detections (removed when none is left),
 * then the diff, its candidates, their cutouts and the association. Labels are kept: they
 * are human work, and name the candidate ids of the run they were made on. On PostgreSQL an
 * advisory lock serialises these transactions, so two writers never create one object twice. */
#ifndef TIDE_STORE_CAND_H
#define TIDE_STORE_CAND_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/store.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One difference image's diffs row. Unknown numbers are NaN (or -1 for counts). */
typedef struct tide_store_diff {
    int64_t id;               /**< diffs.id; set by tide_store_put_diff, ignored on input */
    char sci_checksum[72];    /**< tide_store_file_checksum of the science file (key) */
    char tmpl_checksum[72];   /**< ... of the template file (key) */
    char sci_file[1024];      /**< science frame as given */
    char tmpl_file[1024];     /**< template as given */
    char outdir[1024];        /**< output directory ("" when none) */
    char processed[32];       /**< ISO 8601 UTC ["" = now] */
    char tide_version[32];    /**< ["" = this build's] */
    double mjd_sci, mjd_tmpl; /**< MJD-OBS of the two frames */
    char filter[32];          /**< FILTER of the science frame */
    int64_t naxis1, naxis2;   /**< output grid size */
    double ra_center, dec_center, scale_arcsec; /**< output grid centre (deg), scale */
    double fwhm_sci, fwhm_tmpl;                 /**< on the output grid, pixels */
    double kernel_sum, kernel_chi2;             /**< flux ratio, reduced chi2 of the kernel */
    int64_t kernel_w, kernel_nfit, convolved;   /**< kernel side, pixels fitted, 1|2 */
    double var_scale;                           /**< the variance calibration factor */
    double noise;                               /**< median per-pixel 1-sigma of the diff */
    int64_t ncand, nfit, nreject;               /**< candidates, fitted, rejected */
    const char *grid_header; /**< the output header's cards as text (may be NULL); borrowed
                                  on input, malloc'd by tide_store_get_diff */
} tide_store_diff;

/** Set every field to "unknown". */
TIDE_API void tide_store_diff_init(tide_store_diff *d);

/** Kinds of cutouts. */
typedef enum {
    TIDE_CUTOUT_SCIENCE = 0,
    TIDE_CUTOUT_TEMPLATE = 1,
    TIDE_CUTOUT_DIFF = 2,
    TIDE_CUTOUT_RESIDUAL = 3
} tide_cutout_kind;

/** The kind's name in the cutouts table ("science", "template", "diff", "residual"), or
 *  NULL for an unknown kind. */
TIDE_API const char *tide_cutout_kind_name(int kind);

/** One cutout to store. */
typedef struct tide_store_cutout {
    int64_t row;      /**< the candidate's row in the candidate table, 0-based */
    int kind;         /**< tide_cutout_kind */
    int w, h;         /**< size, pixels */
    const float *pix; /**< w*h values, row after row (NaN: blank) */
} tide_store_cutout;

/** Encode @p n values as the cutouts table does: q (n int16), *zero and *scale such that
 *  v ~ zero + scale * q (q = -32768: NaN). */
TIDE_API void tide_cutout_encode(const float *v, int64_t n, int16_t *q, double *zero,
                                 double *scale);

/** Decode @p n values (the inverse of tide_cutout_encode, up to its quantisation). */
TIDE_API void tide_cutout_decode(const int16_t *q, int64_t n, double zero, double scale, float *v);

/** Store one difference image: @p d, the candidate table @p cands (F64 ALPHA_J2000 and
 *  DELTA_J2000 required; numeric columns of repeat 1 are stored, others skipped), the
 *  cutouts @p cuts (@p ncut of them, each naming its candidate by row), and the association
 *  of every candidate with a finite position to an object within @p radius_arcsec (> 0).
 *  A stored difference of the same sci_checksum and tmpl_checksum is replaced (see above).
 *  One transaction: on error nothing changes. The new diffs.id goes to *id_out (may be
 *  NULL). Errors: TIDE_E_INVAL (read-only store, missing key, bad arguments), TIDE_E_DB. */
TIDE_API int tide_store_put_diff(tide_store *s, const tide_store_diff *d, const tide_table *cands,
                                 const tide_store_cutout *cuts, int64_t ncut, double radius_arcsec,
                                 int64_t *id_out);

/** The diffs row of id @p id into @p out (its grid_header malloc'd: free it with
 *  tide_store_diff_free). TIDE_E_NOTFOUND when there is none. */
TIDE_API int tide_store_get_diff(tide_store *s, int64_t id, tide_store_diff *out);

/** Free the grid_header of a row read by tide_store_get_diff (and reset it). */
TIDE_API void tide_store_diff_free(tide_store_diff *d);

/** What tide_store_candidates selects; tide_store_cand_query_init: everything. */
typedef struct tide_store_cand_query {
    double ra, dec, radius_deg; /**< cone (great circle, tide_store_separation) [radius < 0:
                                     no cone] */
    int64_t diff_id;            /**< only this difference [-1: any] */
    int64_t object_id;          /**< only this object's detections [-1: any] */
    int64_t cand_id;            /**< only this candidate [-1: any] */
} tide_store_cand_query;

/** No filter. */
TIDE_API void tide_store_cand_query_init(tide_store_cand_query *q);

/** The candidates @p q selects, ordered by id, into @p out (initialised or freed by the
 *  caller; it is reset): CAND_ID, DIFF_ID, SEQ, OBJECT_ID (-1: none), CELL (I64), MJD,
 *  SCORE (F64, NaN: none), then every stored candidate column (integer ones I64, real ones
 *  F64; NULL reads NaN, or 0 in an integer column). SQLite finds a cone by the cell column,
 *  PostgreSQL by q3c_radial_query; both keep exactly the rows tide_store_separation puts
 *  within the radius, as a brute-force scan does. */
TIDE_API int tide_store_candidates(tide_store *s, const tide_store_cand_query *q, tide_table *out);

/** One objects row. */
typedef struct tide_store_object {
    int64_t id, ndet;
    double ra, dec, first_mjd, last_mjd;
} tide_store_object;

/** The objects row of id @p id. TIDE_E_NOTFOUND when there is none. */
TIDE_API int tide_store_get_object(tide_store *s, int64_t id, tide_store_object *out);

/** Every object, ordered by id, into @p out (reset): OBJECT_ID, NDET (I64), RA, DEC,
 *  FIRST_MJD, LAST_MJD (F64). */
TIDE_API int tide_store_objects(tide_store *s, tide_table *out);

/** A stored cutout: candidate @p cand_id's of kind @p kind, decoded into *pix (malloc'd,
 *  w*h floats; free() it), *w, *h. TIDE_E_NOTFOUND when there is none. */
TIDE_API int tide_store_get_cutout(tide_store *s, int64_t cand_id, int kind, float **pix, int *w,
                                   int *h);

/** Rows of diffs, candidates, cutouts and objects (any pointer may be NULL). */
TIDE_API int tide_store_count_diffs(tide_store *s, int64_t *ndiffs, int64_t *ncands,
                                    int64_t *ncutouts, int64_t *nobjects);

#ifdef __cplusplus
}
#endif
#endif
