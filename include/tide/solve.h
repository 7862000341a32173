/* solve.h — plate solving through the astrometry.net library, in process.
 *
 * A tide_solver holds a set of astrometry.net index files, loaded once (memory-mapped) and
 * kept for the life of the solver, so a long-lived process pays the loading cost once;
 * tide_solver_get keeps one on a tide_ctx. tide_solve matches a list of detected sources
 * (0-based pixel positions and fluxes) against those indexes: first with the hints given
 * (pointing and radius, pixel-scale range), then, when allowed, blind (no position, a wide
 * scale range). The solution is astrometry.net's: the quad match verified by its Bayesian
 * log-odds test (Lang et al. 2010, AJ 139, 1782), refined by its "tweak" fit over all matched
 * stars to a TAN (order 1) or TAN-SIP (order >= 2) WCS, as solve-field does by default.
 *
 * Pixel conventions. tide's positions are 0-based pixel centres; astrometry.net works in FITS
 * 1-based coordinates (its xylists and WCS headers use them: the centre of the first pixel is
 * (1, 1) and the field spans 0..IMAGEW, 0..IMAGEH in engine.c), so tide adds exactly 1.0 to
 * each coordinate on the way in; the CRPIX it returns is FITS 1-based, as every header is.
 *
 * astrometry.net keeps global state (its logger and error stack): tide silences its logger
 * (the library never prints) and a solver must be used by one thread at a time. The
 * astrometry.net logger is process-wide, so two solvers must not run in parallel threads. */
#ifndef TIDE_SOLVE_H
#define TIDE_SOLVE_H
#include "tide/export.h"
#include <stddef.h>
#include <stdint.h>
#include "tide/ctx.h"
#include "tide/header.h"
#include "tide/table.h"
#include "tide/wcs.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A set of loaded astrometry.net index files. */
typedef struct tide_solver tide_solver;

/** Load every index file of @p index_dir: each regular file whose name starts with "index-"
 *  and ends with ".fits" (Debian's index-tycho2-08.littleendian.fits, 4200-series
 *  index-4208.fits, the output of tide_index_build), in name order. Loading maps the files;
 *  their contents are paged in on use.
 *  @return 0; TIDE_E_NOTFOUND when the directory cannot be read or holds no index file (the
 *          detail names the directory), TIDE_E_FORMAT when a file is not a valid index (the
 *          detail names it), TIDE_E_NOMEM. */
TIDE_API int tide_solver_open(const char *index_dir, tide_solver **out);

/** Release the solver and unmap its indexes. NULL is a no-op. */
TIDE_API void tide_solver_free(tide_solver *s);

/** The directory the solver was opened on. */
TIDE_API const char *tide_solver_dir(const tide_solver *s);

/** Number of index files loaded. */
TIDE_API int tide_solver_nindex(const tide_solver *s);

/** Quad-size range of index @p i (0-based), arcsec; its file name in @p name (may be NULL). */
TIDE_API int tide_solver_index_info(const tide_solver *s, int i, double *quad_lo_arcsec,
                                    double *quad_hi_arcsec, char *name, size_t name_len);

/** The solver cached on @p ctx: opened on first use, kept while later
 *  calls name the same directory, re-opened (and the old one freed) when the directory
 *  differs. Freed with the context. *out stays owned by the context. */
TIDE_API int tide_solver_get(tide_ctx *ctx, const char *index_dir, tide_solver **out);

/** The stars of index @p name (a file name as tide_solver_index_info gives; NULL or "": of
 *  every index) within @p radius_deg of (@p ra, @p dec), degrees, into malloc'd arrays
 *  *@p ra_out, *@p dec_out of *@p n: reference stars to refine a solution on when no
 *  reference catalogue is given. @return 0; TIDE_E_EMPTY when none; TIDE_E_INVAL, TIDE_E_NOMEM. */
TIDE_API int tide_solver_index_stars(const tide_solver *s, const char *name, double ra, double dec,
                                     double radius_deg, double **ra_out, double **dec_out,
                                     int64_t *n);

/** Resolve the index directory: @p explicit_dir (--index-dir) if non-empty, else
 *  @p config_dir (instrument configuration) if non-empty, else the environment variable
 *  TIDE_INDEX_DIR if set and non-empty, else "/usr/share/astrometry" (Debian's
 *  astrometry-data-* packages). Writes it to @p out (size @p n).
 *  @return 0; TIDE_E_RANGE if it does not fit. */
TIDE_API int tide_solve_index_dir(const char *explicit_dir, const char *config_dir, char *out,
                                  size_t n);

/** Parity of the image (astrometry.net's PARITY_*). */
enum { TIDE_SOLVE_PARITY_BOTH = 0, TIDE_SOLVE_PARITY_NORMAL = 1, TIDE_SOLVE_PARITY_FLIP = 2 };

/** What a solve is asked to do. tide_solve_params_init sets the values in brackets. */
typedef struct tide_solve_params {
    int64_t width, height; /**< frame size, pixels (required) */
    int64_t nbright;       /**< the brightest sources used [500]; astrometry.net itself
                                looks at no more than 1000 */
    int uniformize;        /**< spread the sources over about this many cells of the field
                                before the brightest nbright are taken: round r takes the r-th
                                brightest of every cell, as solve-field's --uniformize does
                                (its default is 10) [0: plain brightness order]. Off by
                                default: on the real frames tried it did not help, and the
                                blind solve of apod4 took 1.86 s with 10 cells against 0.32 s
                                without. */
    /* hints */
    int has_position;          /**< 1: search near (ra, dec) in the hinted attempt [0] */
    double ra, dec;            /**< pointing hint, degrees ICRS */
    double radius_deg;         /**< search radius around the hint, degrees; 0 = twice the field
                                    diagonal at scale_hi, or 2 degrees when no scale is known [0] */
    double scale_lo, scale_hi; /**< pixel scale range, arcsec/px; 0 = unknown [0, 0] */
    /* fallback */
    int blind_fallback; /**< if the hinted attempt fails (or there is no hint), solve
                             blind: no position, scale in [blind_scale_lo, blind_scale_hi]
                             [1] */
    double blind_scale_lo, blind_scale_hi; /**< blind scale range, arcsec/px; 0 = derived
                                from a field width of 0.1 to 180 degrees, as solve-field
                                does [0, 0] */
    double timeout_s; /**< wall-clock limit of each attempt, seconds [60]: a watchdog
                           raises the solver's quit flag when it passes (astrometry.net's
                           own timer is polled only between field objects) */
    /* astrometry.net's thresholds (engine.c defaults) */
    double logodds_solve;    /**< log-odds to accept a solution [log(1e9)] */
    double logodds_keep;     /**< log-odds to keep (and tweak) a match [log(1e9)] */
    double logodds_tune;     /**< log-odds to try tuning up a match [log(1e6)] */
    double logodds_bail;     /**< log-odds at which verification gives up [log(1e-100)] */
    int parity;              /**< TIDE_SOLVE_PARITY_* [BOTH] */
    double code_tol;         /**< code-space tolerance [0.01] */
    double verify_pix;       /**< positional noise of the sources, pixels [1] */
    double distractor_ratio; /**< fraction of sources with no catalogue match [0.25] */
    double quad_size_min;    /**< smallest quad tried, fraction of min(width, height) [0.1] */
    int tweak_order;         /**< order of the final fit over all matches: 1 = TAN, 2..9 = TAN-SIP
                                  of that order, 0 = none: the TAN fitted to the matched quad
                                  (for a caller that refines the WCS itself) [2, solve-field's
                                  default] */
    int crpix_center;        /**< 1: put CRPIX at the frame centre (solve-field --crpix-center)
                                  [0: astrometry.net's choice, the matched quad's centre] */
} tide_solve_params;

/** Fill @p p with the defaults above (width, height 0). */
TIDE_API void tide_solve_params_init(tide_solve_params *p);

/** Hints from a frame's header, for a @p w × @p h frame:
 *  - pointing: RA/DEC (degrees, or sexagesimal hours / degrees strings), else OBJCTRA /
 *    OBJCTDEC (sexagesimal, as MaxIm DL and others write), else the sky position of the
 *    frame's centre through the header's WCS, else CRVAL1/CRVAL2;
 *  - scale: the header WCS's scale at the centre (CD or CDELT), else
 *    206.265 * @p pixsize_um / @p focal_mm (when both are > 0); the range is
 *    scale * (1 ± @p tolerance) [tolerance 0.1 when <= 0].
 *  Sets has_position, ra, dec, scale_lo, scale_hi, width, height; leaves the rest of @p p.
 *  Missing hints are not an error (the solve goes blind).
 *  @return 0; TIDE_E_INVAL for a non-positive size. */
TIDE_API int tide_solve_hints_from_header(const tide_header *hdr, int64_t w, int64_t h,
                                          double pixsize_um, double focal_mm, double tolerance,
                                          tide_solve_params *p);

/** tide_solve_hints_from_header with the header's WCS already parsed: @p wcs (NULL when the
 *  header has none) instead of a second parse of @p hdr, the same hints. */
TIDE_API int tide_solve_hints(const tide_header *hdr, const tide_wcs *wcs, int64_t w, int64_t h,
                              double pixsize_um, double focal_mm, double tolerance,
                              tide_solve_params *p);

/** What a solve did. */
typedef struct tide_solve_info {
    int solved;           /**< 1 when a solution was accepted */
    int blind;            /**< 1 when the accepted solution came from the blind attempt */
    int attempts;         /**< attempts run (1 or 2) */
    int timed_out;        /**< some attempt hit its time limit */
    char index_name[256]; /**< file name (no directory) of the index that solved */
    int nmatch, nconflict, nfield, nindex; /**< astrometry.net's verification counts */
    double logodds;                        /**< log-odds of the solution */
    double scale_arcsec;                   /**< pixel scale at the frame centre, arcsec/px */
    double rotation_deg;          /**< position angle of +y, degrees east of north (wcs.h) */
    int parity;                   /**< 0 normal (det CD < 0, sky as seen), 1 flipped */
    double ra_center, dec_center; /**< sky position of the frame centre, degrees */
    int64_t nused;                /**< sources handed to astrometry.net */
    double ms_hinted;             /**< wall time of the hinted attempt, ms (0 if not run) */
    double ms_blind;              /**< wall time of the blind attempt, ms (0 if not run) */
    double ms_total;              /**< wall time of tide_solve, ms */
} tide_solve_info;

/** Solve a field.
 *  @param s     loaded indexes
 *  @param x, y  0-based pixel positions of @p n sources
 *  @param flux  their fluxes (used to keep and order the brightest); may be NULL: the given
 *               order is taken as brightest first
 *  @param p     parameters (width, height required)
 *  @param wcs   receives the solution (TAN or TAN-SIP; free with tide_wcs_free); NULL if only
 *               @p info is wanted. Untouched on failure.
 *  @param info  may be NULL; filled in on success and failure
 *  @return 0; TIDE_E_INVAL (size, scale range, timeout or order out of range; sources that are
 *          NaN are dropped, not an error); TIDE_E_EMPTY (fewer than 4 usable sources; the
 *          detail says how many); TIDE_E_NOSOLVE (no attempt found a solution: the detail
 *          names the attempts with their scale ranges, hint, indexes tried and "time limit"
 *          for an attempt stopped by its limit); TIDE_E_NOMEM. */
TIDE_API int tide_solve(tide_solver *s, const double *x, const double *y, const double *flux,
                        int64_t n, const tide_solve_params *p, tide_wcs **wcs,
                        tide_solve_info *info);

/** Plate-solve against the reference catalogue @p ref itself (columns RA, DEC, MAG): build
 *  astrometry.net index files from it for the quads of the hinted field (a quarter to 0.8 of
 *  its smaller side, at the hinted scale range) in a private temporary directory ($TMPDIR,
 *  else /tmp), run tide_solve's hinted attempt on them (no blind fallback: the catalogue
 *  covers the hinted cone only), and remove them. For fields no installed index covers:
 *  simulated skies, narrow fields. @p p must give a position and a scale; its timeout_s
 *  bounds the build and the solve together.
 *  @return as tide_solve; TIDE_E_NOSOLVE also when no index can be built from the catalogue
 *          for the field's quad sizes (the detail says why). */
TIDE_API int tide_solve_refcat(const tide_table *ref, const double *x, const double *y,
                               const double *flux, int64_t n, const tide_solve_params *p,
                               tide_wcs **wcs, tide_solve_info *info);

/* ---- index building ------------------------------------------------------------------- */

/** How to build index files. tide_index_build_params_init sets the values in brackets. */
typedef struct tide_index_build_params {
    int scale_lo, scale_hi; /**< astrometry.net scale numbers to build (inclusive); scale k
                                 holds quads of diameter qk..q(k+1) with q = 2, 2.8, 4, 5.6,
                                 8, 11, 16, 22, 30, 42, 60, 85, 120, 170, 240, 340, 480, 680,
                                 1000, 1400, 2000 arcmin (build-astrometry-index -P) [-1, -1:
                                 from fov_arcmin] */
    double fov_arcmin;      /**< field of view the indexes serve (its smaller side): scales
                                 whose quads lie within [0.1, 1.0] x the field [0 = unset] */
    int index_id_base;      /**< INDEXID of scale k is index_id_base + k [6000] */
    const char *ra_col, *dec_col, *mag_col; /**< column names ["RA", "DEC", "MAG"] */
    int stars_per_cell;   /**< stars kept per uniformisation cell (-n sweeps) [10] */
    int passes;           /**< quads built per healpix cell (hpquads passes) [16] */
    double jitter_arcsec; /**< positional error of the catalogue [1] */
    const char *prefix;   /**< output file name prefix ["index-tide"]: files are
                               PREFIX-SS.fits, SS the scale number */
} tide_index_build_params;

/** Fill @p p with the defaults. */
TIDE_API void tide_index_build_params_init(tide_index_build_params *p);

/** Scale numbers whose quads fit a field of @p fov_arcmin: the k with q(k+1) > 0.1 fov and
 *  q(k) < fov. @return 0; TIDE_E_RANGE when the field is outside 2'..2000'. */
TIDE_API int tide_index_scales_for_fov(double fov_arcmin, int *lo, int *hi);

/** Build index files from a reference catalogue (columns RA, DEC in degrees and MAG; float or
 *  double; rows with NaN are dropped) into @p out_dir (created if missing), one per scale, with
 *  astrometry.net's build-index machinery (uniformize, star k-d tree, hpquads, code tree).
 *  Each file is staged in a private directory and renamed (outfile.h), so a failure leaves
 *  nothing.
 *  @param paths  if non-NULL, receives up to @p npaths written file names (each < 4096)
 *  @param nbuilt if non-NULL, receives the number of files written
 *  @return 0; TIDE_E_NOTFOUND (a column is missing), TIDE_E_EMPTY (fewer than 4 valid rows,
 *          or a scale for which no quad could be built: too few stars for it), TIDE_E_RANGE,
 *          TIDE_E_IO (cannot create the directory or write), TIDE_E_INTERNAL (astrometry.net
 *          failed; its message is in the detail). */
TIDE_API int tide_index_build(const tide_table *ref, const char *out_dir,
                              const tide_index_build_params *p, char (*paths)[4096], int npaths,
                              int *nbuilt);

#ifdef __cplusplus
}
#endif
#endif
