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

/** Remove every staged temporary (a failure before the commit). */
void tide_reduce_outputs_abort(tide_reduce_outputs *o);

#endif
