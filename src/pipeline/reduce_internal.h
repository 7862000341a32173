/* reduce_internal.h — what the reduce*.c files of the pipeline share. Not public. */
#ifndef TIDE_REDUCE_INTERNAL_H
#define TIDE_REDUCE_INTERNAL_H
#include <pthread.h>
#include <stdint.h>

#include "tide/reduce.h"
#include "tide/wcs.h"

/** Per-source results of the photometry stage, host arrays of n (or n·naper) elements. Any
 *  pointer may be NULL when that measurement was not made (its columns are then NaN). */
typedef struct tide_pipe_phot {
    int64_t n;
    int naper;
    const double *radii;
    double *x, *y;                    /**< positions used (0-based): tide_pipe_centres' */
    double *flux_aper, *fluxerr_aper; /**< n*naper, source-major */
    int32_t *aper_flags;
    double *kron_radius, *flux_auto, *fluxerr_auto;
    int32_t *kron_flags;
    double *flux_psf, *fluxerr_psf, *chi2_psf;
    int32_t *psf_flags;
    double *flux_opt, *fluxerr_opt, *rad_opt;
    int32_t *opt_flags;
    float *background; /**< background map at the sources, ADU */
    double *ra, *dec;  /**< degrees, when the frame has a celestial WCS */
} tide_pipe_phot;

/** Allocate every array of @p ph for n sources and naper radii (NaN / 0 filled). */
int tide_pipe_phot_alloc(tide_pipe_phot *ph, int64_t n, int naper, const double *radii);
/** Free the arrays and zero the struct. */
void tide_pipe_phot_free(tide_pipe_phot *ph);

/** Build the catalog table (columns of reduce.h, FITS 1-based coordinates) from the
 *  detection table @p det (0-based columns of detect.h) and the photometry. @p det may have
 *  0 rows; then every column exists with no row. */
int tide_pipe_catalog_build(const tide_table *det, const tide_pipe_phot *ph, tide_table *out);

/** Append to @p det (the second detection pass) every source of @p first (the first pass,
 *  same columns) with no @p det source within @p fwhm (at least 1) pixels, flagged
 *  TIDE_DETECT_FLAG_FIRST_PASS with PARENT -1; their count into *ncarried
 *  (reduce_carry.c). */
int tide_pipe_carry_first(const tide_table *first, tide_table *det, double fwhm, int64_t *ncarried);

/** 1 when a source whose windowed centroid lies (@p dx, @p dy) from its isophotal barycentre,
 *  of FWHM @p fwhm (detection's FWHM column), where the PSF's FWHM is @p fwhm_psf, is to be
 *  centred on its barycentre: it is resolved (fwhm > 2 fwhm_psf) and its windowed centroid
 *  wandered more than sigma_w / 2 from the barycentre (reduce_centre.c says why). 0 for a
 *  fwhm_psf that is not positive. */
int tide_pipe_centre_on_barycentre(double dx, double dy, double fwhm, double fwhm_psf);

/** The centres photometry measures the sources of the detection table @p det at, 0-based,
 *  into @p x, @p y (det->nrows each): the windowed centroid (XWIN, YWIN), or the barycentre
 *  (X, Y) where that is not finite or where tide_pipe_centre_on_barycentre says so with the
 *  FWHM of @p psf (may be NULL: no such rule) at the source, on a frame of @p width x
 *  @p height. How many the rule moved to the barycentre into *nbary (may be NULL). */
int tide_pipe_centres(const tide_table *det, const tide_psf_model *psf, int64_t width,
                      int64_t height, double *x, double *y, int64_t *nbary);

/** Write the run's summary cards into @p h (see reduce.h). */
int tide_pipe_header_build(tide_ctx *ctx, const tide_pipeline_params *p,
                           const tide_pipeline_result *r, int64_t width, int64_t height,
                           tide_header *h);

/** Source Extractor's ERRAWIN/ERRBWIN/ERRTHETAWIN from the position covariance
 *  (x2, y2, xy): the semi-axes of the 1-sigma error ellipse and its angle, degrees
 *  counter-clockwise from +x in (-90, 90]. */
void tide_pipe_error_ellipse(double x2, double y2, double xy, double *a, double *b, double *theta);

/** A frame header's WCS parsed on its own host thread beside the reduction (reduce_wcs.c). */
typedef struct tide_pipe_wcs_job {
    const tide_header *hdr; /**< the caller's, unchanged until the job is finished */
    char source[256];       /**< the frame's name, for messages */
    pthread_t thread;
    int running;      /**< the thread is started and not yet joined */
    int done;         /**< finished or discarded */
    int status;       /**< tide_wcs_from_header's */
    char detail[512]; /**< its error detail (thread-local there) */
    tide_wcs *wcs;    /**< the result until handed over */
} tide_pipe_wcs_job;

/** Start parsing @p hdr's WCS on a new thread (or, when no thread can be started, at
 *  tide_pipe_wcs_finish). @p hdr may be NULL: then there is nothing to parse. */
void tide_pipe_wcs_start(tide_pipe_wcs_job *j, const tide_header *hdr, const char *source);
/** Wait for the parse and hand its WCS to the caller (*w, freed with tide_wcs_free), or
 *  return tide_wcs_from_header's status with its detail raised in this thread
 *  (TIDE_E_NOTFOUND for a NULL header or no celestial WCS). Once per job. */
int tide_pipe_wcs_finish(tide_pipe_wcs_job *j, tide_wcs **w);
/** Wait for the thread, if running, and free what it made that was not handed over. Safe after
 *  tide_pipe_wcs_finish and more than once. */
void tide_pipe_wcs_discard(tide_pipe_wcs_job *j);

#endif
