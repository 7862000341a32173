/* job.h — the whole `tide reduce` of one frame as one library call, frame after frame.
 *
 * tide_reduce_job_run does, for one frame, everything `tide reduce` does: read the frame,
 * resolve its instrument values (config.h, instrument.h), reduce it (reduce.h,
 * tide_pipeline_run), calibrate it when asked (calibrate.h), hash the file for the store's key
 * (on a thread of its own, while the frame is reduced), and write the catalog (FITS, FITS-LDAC
 * or CSV), the background and RMS maps and the store's rows together: every output is begun
 * (outfile.h) before the reduction, so one that cannot be written fails in milliseconds, and
 * all appear, with the store's rows, or none does.
 *
 * A tide_reduce_job keeps what a long-running process should pay for once: the context (its
 * FFT plans, memory pools and the index files of tide_solver_get), the configuration, and the
 * store, opened on the first frame that names it and kept open while later frames name the
 * same one. A worker calls tide_reduce_job_run frame after frame on one job; `tide reduce`
 * makes a job for its one frame. A job is used by one thread at a time.
 *
 * Outcomes: a negative status (nothing written, no store row; `tide reduce` exits 1), or 0
 * with the report. Of a 0, report.incomplete says that the catalog was written but the
 * calibration asked for could not be made (the field did not solve, or no zero point could
 * be measured; `tide reduce` exits 3), and report.warning says why. */
#ifndef TIDE_JOB_H
#define TIDE_JOB_H
#include <stdint.h>

#include "tide/calibrate.h"
#include "tide/config.h"
#include "tide/ctx.h"
#include "tide/export.h"
#include "tide/fits.h"
#include "tide/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The choices of one frame that concern calibration and storing (tide reduce's options);
 *  NULL or 0 leaves the configuration's value. */
typedef struct tide_reduce_calib_opts {
    const char *refcat;       /**< FILE|URI (overrides refcat.path and refcat.command) */
    const char *refcat_table; /**< the table of a PostgreSQL reference catalog */
    const char *index_dir;    /**< astrometry.net index files; asks for a solve as solve does */
    const char *store;        /**< store URI (else store.uri, else $TIDE_STORE; "" = none) */
    int solve;                /**< plate-solve even without a reference catalog */
    int no_astrometry;        /**< keep the header's WCS as it is */
} tide_reduce_calib_opts;

/** One frame to reduce: its file, its outputs and what overrides the configuration.
 *  tide_reduce_request_init gives the values in brackets. */
typedef struct tide_reduce_request {
    const char *frame;   /**< FILE or FILE[ext] [NULL: required] */
    const char *catalog; /**< the catalog, a FITS binary table in HDU 1 [NULL: none] */
    int ldac;            /**< write the catalog as FITS-LDAC [0] */
    const char *csv;     /**< the catalog as CSV ("-" = standard output) [NULL: none]; one of
                              catalog, csv and a store (cal.store, store.uri, $TIDE_STORE) is
                              required: with a store alone the frame goes to its rows only */
    const char *back;    /**< the background map [NULL: none] */
    const char *rms;     /**< the background RMS map [NULL: none] */
    const char *config_files[2]; /**< files the configuration was read from (instrument,
                                      default), which no output may replace [NULL] */
    tide_reduce_calib_opts cal;  /**< calibration and store choices [all unset] */
    /* the pipeline's parameters: from the configuration and the frame's header, then these */
    const tide_pipeline_params *params; /**< the parameters as given instead of the
                                             configuration's (a benchmark's) [NULL] */
    int naper;                          /**< aperture radii given [0: the configuration's] */
    double aper_radii[TIDE_PIPELINE_MAX_APER];
    int have_bias; /**< bias given [0] */
    double bias;   /**< zero level still in the frame, ADU */
    int noise;     /**< a tide_noise_source [-1: the configuration's] */
    int no_cosmetics, no_psf, psf_fit_background; /**< stage switches [0] */
} tide_reduce_request;

/** Fill @p rq with the defaults in brackets. */
TIDE_API void tide_reduce_request_init(tide_reduce_request *rq);

/** What one frame gave. Free with tide_reduce_report_free. */
typedef struct tide_reduce_report {
    tide_pipeline_result res; /**< the reduction (calibrated in place when calibrated) */
    int64_t width, height;    /**< the frame's size */
    int calibrated;           /**< 1: a calibration was asked for and run; cal holds it */
    tide_calib_result cal;    /**< what the calibration did */
    const char *store;        /**< the store used ("" = none; the request's, the
                                   configuration's or the environment's string) */
    int64_t image_id;         /**< the frame's id in the store (-1 without one) */
    int incomplete;           /**< 1: written without the sky positions or the zero point the
                                   calibration was asked for */
    char warning[512];        /**< why, when incomplete ("FRAME: catalog written without ...") */
    /* wall times, milliseconds */
    double ms_read;          /**< reading the frame and resolving its parameters */
    double ms_reduce;        /**< tide_pipeline_run */
    double ms_calibrate;     /**< tide_calibrate_run */
    double ms_checksum_wait; /**< waiting for the file's hash after the calibration */
    double ms_store;         /**< the store's transaction (with opening it on a first frame) */
    double ms_write;         /**< writing the catalog file (on a thread of its own) */
    double ms_outputs;       /**< every output and the store together */
    double ms_total;         /**< the whole call */
} tide_reduce_report;

/** Release a report and zero it. */
TIDE_API void tide_reduce_report_free(tide_reduce_report *r);

/** The warm state of a sequence of frames (see above). */
typedef struct tide_reduce_job tide_reduce_job;

/** Make a job on @p ctx and @p cfg, both borrowed: they must outlive the job. */
TIDE_API int tide_reduce_job_create(tide_ctx *ctx, const tide_config *cfg, tide_reduce_job **out);

/** Reduce one frame as described above. On a negative status *out is empty and nothing was
 *  written; on 0 free *out with tide_reduce_report_free. Errors: those of the frame, the
 *  configuration (TIDE_E_CONFIG), the parameters (TIDE_E_INVAL, prefixed with the frame),
 *  an output that is an input or another output (TIDE_E_INVAL), an unreadable reference
 *  catalog (TIDE_E_IO), the reduction, the calibration (calibrate.h), the files and the
 *  store. */
TIDE_API int tide_reduce_job_run(tide_reduce_job *j, const tide_reduce_request *rq,
                                 tide_reduce_report *out);

/** One CCD of a mosaic exposure reduced by tide_reduce_job_run_mosaic. */
typedef struct tide_reduce_ccd {
    tide_fits_mosaic_ccd where; /**< its HDU, EXTNAME, CCDNUM and size */
    char spec[1100];            /**< FILE[hdu]: the name it was reduced as (its FRAME) */
    int failed;                 /**< 1: not reduced (error says why): its catalog HDU is an
                                     empty table with CCDSTAT = 'FAILED' and CCDMSG, it has no
                                     side outputs, and its earlier store rows are removed */
    char error[512];            /**< why, when failed */
    tide_reduce_report rep;     /**< its report (the catalog kept, the maps freed) */
} tide_reduce_ccd;

/** What a mosaic exposure gave. Free with tide_reduce_mosaic_report_free. */
typedef struct tide_reduce_mosaic_report {
    tide_fits_mosaic_plan plan; /**< the CCDs, and the HDUs that are not CCDs with why */
    int nccd;                   /**< = plan.nccd */
    tide_reduce_ccd *ccd;       /**< nccd of them, in file order */
    int nfailed;                /**< CCDs that failed */
    int nincomplete;            /**< CCDs written without the calibration asked for */
    const char *store;          /**< the store used ("" = none) */
    char warning[512];          /**< the first failed or incomplete CCD, when any */
    double ms_total;            /**< the whole call, milliseconds */
} tide_reduce_mosaic_report;

/** Release a mosaic report and zero it. */
TIDE_API void tide_reduce_mosaic_report_free(tide_reduce_mosaic_report *r);

/** The per-CCD name of a side output (CSV, maps, difference products): @p path with
 *  ".EXTNAME" (or ".hduN" for a CCD without EXTNAME) before its last extension
 *  ("back.fits" -> "back.CCD07.fits"), or at its end when it has none. TIDE_E_RANGE when it
 *  does not fit in @p n bytes. */
TIDE_API int tide_reduce_ccd_path(const char *path, const tide_fits_mosaic_ccd *c, char *out,
                                  size_t n);

/** Reduce every CCD of the mosaic exposure rq->frame (tide_fits_mosaic_plan_make; the HDUs
 *  that are not CCDs are logged at level info, with why) on the job's one context, CCD after
 *  CCD, so device buffers, FFT plans and the open store are reused; the next CCD is read on a
 *  thread of its own while one is reduced. Each CCD is reduced exactly as tide_reduce_job_run
 *  reduces FILE[hdu] alone (the same catalog, row for row and bit for bit). Outputs, all
 *  staged and appearing together:
 *  - rq->catalog: an empty primary HDU with the exposure's primary cards and NCCDS, then one
 * BINTABLE per CCD in file order, EXTNAME the CCD's (or "HDUn"), holding the CCD's keywords
 * (CCDNUM, DETPOS, DETSEC, DATASEC, ...), CCDSTAT ('OK' or 'FAILED') and the catalog header of
 * tide_reduce_job_run; FITS-LDAC is refused (TIDE_E_UNSUPPORTED);
 *  - rq->csv, rq->back, rq->rms: one file per CCD, named by tide_reduce_ccd_path ("-" is
 *    refused);
 *  - the store: each CCD is a frame of its own, file FILE[hdu], keyed CHECKSUM[hdu] (the
 *    file's checksum and the HDU), one transaction per CCD after every file is complete, so
 *    re-running the exposure (or one CCD as FILE[hdu]) replaces its rows.
 *  A CCD that fails with an error of its own data (TIDE_E_EMPTY, _INVAL, _FORMAT, _RANGE,
 *  _UNSUPPORTED, _WCS, _NOSOLVE, _NOTFOUND: an empty, broken or strange CCD) is flagged, logged
 *  at level warn, and the others are still written; any other error (memory, device, files,
 *  store, configuration) or every CCD failing fails the exposure, and nothing is written.
 *  TIDE_E_INVAL when rq->frame is not a mosaic. On 0 free *out with
 *  tide_reduce_mosaic_report_free; on an error it is empty. */
TIDE_API int tide_reduce_job_run_mosaic(tide_reduce_job *j, const tide_reduce_request *rq,
                                        tide_reduce_mosaic_report *out);

/** Run the following frames with configuration @p cfg (borrowed, as for
 *  tide_reduce_job_create): a task with options of its own (task.h). The store stays open
 *  while the frames name the same one. Errors: TIDE_E_INVAL for a NULL argument. */
TIDE_API int tide_reduce_job_set_config(tide_reduce_job *j, const tide_config *cfg);

/** Close the job's store and free the job (not its context or configuration). NULL is a
 *  no-op. */
TIDE_API void tide_reduce_job_destroy(tide_reduce_job *j);

/** Refuse outputs that are the same file as an input (@p frame, @p config_files, @p refcat,
 *  an SQLite @p store) or as each other, before anything is written: TIDE_E_INVAL naming
 *  both. @p outs are the catalog, CSV, background and RMS files (NULL = none); the store is
 *  written too, so no output may take its name. tide_reduce_job_run checks again once the
 *  configuration's reference catalog and store are known. */
TIDE_API int tide_reduce_check_outputs(const char *frame, const char *const config_files[2],
                                       const char *refcat, const char *store,
                                       const char *const outs[4]);

#ifdef __cplusplus
}
#endif
#endif
