/* diff_job.h — the whole `tide diff` of one science frame as one library call, frame after
 * frame against one template.
 *
 * tide_diff_job_run does, for one science frame, everything `tide diff` does: refuse an
 * output directory that would replace an input (tide_diff_check_outputs), read the science
 * frame and the template, resolve each frame's instrument values through the job's
 * configuration (tide_diff_params.config), difference them (diff.h) and write the outputs
 * into the request's directory, all or nothing (tide_diff_write).
 *
 * A tide_diff_job keeps what a long-running process should pay for once: the context, the
 * configuration and, for requests on the template's grid that ask for it (warm), the template
 * prepared once (tide_diff_template_prepare) and kept while later requests name the same
 * template file (with the template settings of the request that prepared it). A worker calls
 * tide_diff_job_run frame after frame on one job; `tide diff` makes one job for all its science
 * frames. A job is used by one thread at a time.
 *
 * Outcomes: a negative status (nothing written; `tide diff` reports it and exits 1), or 0
 * with the report. */
#ifndef TIDE_DIFF_JOB_H
#define TIDE_DIFF_JOB_H
#include <stdint.h>

#include "tide/config.h"
#include "tide/ctx.h"
#include "tide/diff.h"
#include "tide/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One science frame to difference. tide_diff_request_init gives the values in brackets. */
typedef struct tide_diff_request {
    const char *science;            /**< the science frame, FILE or FILE[ext] [NULL: required] */
    const char *tmpl;               /**< the template, FILE or FILE[ext] [NULL: required] */
    const char *outdir;             /**< the output directory (tide_diff_write) [NULL: required] */
    const char *make_dir;           /**< a directory to create, when missing, once the template is
                                         ready and before the frame is read: a batch's DIR [NULL] */
    const tide_diff_params *params; /**< the difference's parameters [NULL: defaults]; the
                                         job sets config, sci_name, tmpl_name, keep_stamps */
    int64_t ntop;                   /**< candidates drawn and their stamps kept [16] */
    int warm; /**< 1: difference against the job's prepared template (prepared now when the
                   job holds none for this file), on the template's grid; 0: one pair,
                   tide_diff_run, any grid [0] */
    const char *const *inputs;   /**< further files no output may replace (the configuration
                                      files) [NULL] */
    int ninputs;                 /**< entries of inputs [0] */
    const char *store;           /**< store URI (store.h) for the difference's rows
                                      (store_cand.h): the files staged, then the store's one
                                      transaction, then the files renamed into place [NULL or
                                      "": none]. The job opens it on first use and keeps it */
    double object_radius_arcsec; /**< association radius of candidates into objects [<= 0:
                                      the configuration's store.object_radius_arcsec, 1.0] */
    int cutout_px;               /**< side of the stored cutouts [<= 0: store.cutout_px, 63] */
    const char *rb_model;        /**< a real/bogus model file (rb.h): the candidates get an
                                      RB_SCORE column, the headers RBMODEL; loaded once per job
                                      and before the frames are read [NULL: none] */
} tide_diff_request;

/** Fill @p rq with the defaults in brackets. */
TIDE_API void tide_diff_request_init(tide_diff_request *rq);

/** What one science frame gave. Free with tide_diff_report_free. */
typedef struct tide_diff_report {
    tide_diff_result res;  /**< the difference, as written */
    int template_prepared; /**< 1: this call prepared the template (warm requests) */
    /* wall times, milliseconds */
    double ms_template; /**< reading and preparing the template (0 when it was warm) */
    double ms_read;     /**< reading the science frame (and a cold pair's template) */
    double ms_diff;     /**< tide_diff_run or tide_diff_run_template */
    double ms_write;    /**< tide_diff_write (the files; the store's rows apart; a replaced
                             previous run is removed after the call, as tide_diff_write
                             does) */
    double ms_store;    /**< the store's transaction (with opening the store on first use) */
    int64_t diff_id;    /**< the difference's diffs.id in the store (-1 without one) */
    double ms_rb;       /**< real/bogus features and scores (0 without a model) */
    double ms_total;    /**< the whole call */
} tide_diff_report;

/** Release a report and zero it. NULL is a no-op. */
TIDE_API void tide_diff_report_free(tide_diff_report *r);

/** The warm state of a sequence of science frames (see above). */
typedef struct tide_diff_job tide_diff_job;

/** Make a job on @p ctx and @p cfg, both borrowed: they must outlive the job. @p cfg NULL:
 *  the camera's defaults for every frame. */
TIDE_API int tide_diff_job_create(tide_ctx *ctx, const tide_config *cfg, tide_diff_job **out);

/** Read and prepare template @p tmpl with @p p's template settings (NULL: defaults) and keep
 *  it on the job, unless the job already holds the one of that file; *ms (may be NULL) is
 *  the time taken, 0 when it was warm. A failure leaves the job without a template. Errors:
 *  those of the file and of tide_diff_template_prepare. */
TIDE_API int tide_diff_job_prepare(tide_diff_job *j, const char *tmpl, const tide_diff_params *p,
                                   double *ms);

/** Difference one science frame as described above. On a negative status *out is empty and
 *  nothing was written; on 0 free *out with tide_diff_report_free. Errors: TIDE_E_INVAL (a
 *  request without its files, an output that is an input), those of the frames, of
 *  tide_diff_job_prepare, tide_diff_run or tide_diff_run_template and of tide_diff_write;
 *  TIDE_E_IO when make_dir cannot be created; those of the store (after TIDE_E_DB the job
 *  closes its store and the next request opens it again). A previous run that the outputs
 *  replace is removed after the call returns, as by tide_diff_write; the next request and
 *  tide_diff_job_destroy wait for it. */
TIDE_API int tide_diff_job_run(tide_diff_job *j, const tide_diff_request *rq,
                               tide_diff_report *out);

/** Free the job, its template and its store (not its context or configuration), once the
 *  removal of a replaced previous run (tide_diff_job_run) is done. NULL is a no-op. */
TIDE_API void tide_diff_job_destroy(tide_diff_job *j);

#ifdef __cplusplus
}
#endif
#endif
