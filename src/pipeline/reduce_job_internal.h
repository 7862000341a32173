/* reduce_job_internal.h — what the files of the reduce job share (job.h is the contract):
 * the file's checksum on a thread, the outputs staged together with the store's rows, and
 * the calibration's and store's settings from a request. */
#ifndef TIDE_REDUCE_JOB_INTERNAL_H
#define TIDE_REDUCE_JOB_INTERNAL_H
#include <pthread.h>
#include <stdint.h>

#include "tide/fits.h"
#include "tide/job.h"
#include "tide/outfile.h"
#include "tide/store.h"

/** The job (job.h): what a sequence of frames keeps. */
struct tide_reduce_job {
    tide_ctx *ctx;          /**< borrowed: plans, pools, the solver's index files */
    const tide_config *cfg; /**< borrowed */
    tide_store *store;      /**< open since the first frame that named store_uri, or NULL */
    char *store_uri;
};

/** The store of a frame, kept open from an earlier one when it names the same ("" = none). */
int tide_reduce_job_use_store(tide_reduce_job *j, const char *uri);

/** Close the job's store (after a failed write: the next frame opens it afresh). */
void tide_reduce_job_close_store(tide_reduce_job *j);

/** A frame's parameters from its header (@p spec names it in messages): the instrument's
 *  values, the pipeline's and the calibration's parameters, whether a calibration is asked
 *  for, and the reference catalog readable. The part of a job a mosaic repeats per CCD. */
int tide_reduce_frame_setup(tide_reduce_job *j, const tide_reduce_request *rq, const char *spec,
                            const tide_header *hdr, tide_pipeline_params *p, tide_calib_params *cp,
                            int *calibrated);

/** Reduce a frame read and set up, and calibrate it when out->calibrated: out->res, out->cal,
 *  ms_reduce and ms_calibrate. */
int tide_reduce_frame_compute(tide_reduce_job *j, const tide_image *im, const tide_header *hdr,
                              const tide_pipeline_params *p, const tide_calib_params *cp,
                              tide_reduce_report *out);

/** Set out->incomplete and the warning when the calibration asked for was not complete: the
 *  catalog was written without sky positions or a zero point (`tide reduce` exits 3). */
void tide_reduce_report_incomplete(const char *spec, tide_reduce_report *out);

/** The store key of a frame whose file's checksum is @p hex (rewritten in place): a CCD of a
 *  mosaic (@p spec selects one HDU of a file that tide_reduce_mosaic_plan calls a mosaic) is
 *  keyed "CHECKSUM[HDU]", so the CCDs of one exposure are kept apart and a re-run of one
 *  replaces only its rows; any other frame keeps the file's checksum. */
int tide_reduce_frame_key(const char *spec, char hex[72]);

/** 1 when the options or the configuration ask for calibration. */
int tide_reduce_calib_wanted(const tide_reduce_calib_opts *o, const tide_calib_params *p);

/** Fill @p p from the configuration and the options. Returns a status. */
int tide_reduce_calib_params(const tide_reduce_calib_opts *o, const tide_config *cfg,
                             const tide_instrument *inst, const char *spec, tide_calib_params *p);

/** The store URI to use ("" = none) from the options, the configuration and $TIDE_STORE. */
const char *tide_reduce_store_uri(const tide_reduce_calib_opts *o, const tide_config *cfg);

/** The store key of a frame (tide_store_file_checksum of its file), computed on a thread of
 *  its own while the frame is reduced: hashing a 605 MB frame costs as much as reducing it. */
typedef struct tide_reduce_checksum {
    pthread_t thread;
    int started;     /**< the thread runs (join it with tide_reduce_checksum_wait) */
    int status;      /**< its result */
    char path[1024]; /**< the file */
    char hex[72];    /**< the checksum, when status is 0 */
    char err[256];   /**< the error detail, when not */
} tide_reduce_checksum;

/** Start hashing the file of @p spec (FILE of FILE[ext]). */
int tide_reduce_checksum_start(tide_reduce_checksum *c, const char *spec);

/** Wait for the hash; returns its status (with the error detail set again on this thread). */
int tide_reduce_checksum_wait(tide_reduce_checksum *c);

/** The files of one frame, staged together (outfile.h): each output asked for is begun (its
 *  private directory made) before any work, so an output that cannot be written fails in
 *  milliseconds, and all appear, with the store's rows, or none does. */
typedef struct tide_reduce_outputs {
    tide_outset set;
    tide_outfile *cat, *csv, *back, *rms; /**< NULL when not asked for */
    int ldac;                             /**< the catalog as FITS-LDAC */
    const char *csv_stream;               /**< "-" or a pipe: written in place after the commit */
    tide_fits_compress how; /**< how the background and rms maps are stored (output.compress) */
} tide_reduce_outputs;

/** Begin the outputs (NULL paths are not written). On failure nothing is left behind. */
int tide_reduce_outputs_begin(tide_reduce_outputs *o, const char *cat, int ldac, const char *csv,
                              const char *back, const char *rms);

/** Write every file of @p res into its temporary (the catalog on a thread of its own), then,
 *  when all are complete and @p uri is not empty, put the frame into the store: *@p store
 *  when open, else opened here from @p uri and left open in *@p store for the next frame. One
 *  transaction, replacing an earlier run of the same file (by @p checksum). A catalog without
 *  sky positions is stored with NaN ones (never found by cone searches). Then rename all
 *  files into place. Any failure before the store's commit leaves no file and no store row.
 *  Finishes @p o either way. */
int tide_reduce_outputs_commit(tide_reduce_outputs *o, const char *uri, tide_store **store,
                               const char *spec, const char *checksum, const tide_header *frame_hdr,
                               const tide_pipeline_result *res, int64_t *image_id, double *ms_store,
                               double *ms_write);

/** Put one frame's catalog into *@p store (opened from @p uri when NULL, and kept): its
 *  images row from @p frame_hdr and the catalog header, keyed @p checksum (computed from
 *  the file of @p spec when NULL), replacing an earlier run of the same key. */
int tide_reduce_store_put(const char *uri, tide_store **store, const char *spec,
                          const char *checksum, const tide_header *frame_hdr,
                          const tide_pipeline_result *res, int64_t *image_id, double *ms);

/** Remove every staged temporary (a failure before the commit). */
void tide_reduce_outputs_abort(tide_reduce_outputs *o);

#endif
