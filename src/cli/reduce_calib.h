/* reduce_calib.h — `tide reduce`'s second half: calibration (calibrate.h) and the catalog
 * store (store.h), and what the command prints about them. */
#ifndef TIDE_CLI_REDUCE_CALIB_H
#define TIDE_CLI_REDUCE_CALIB_H
#include <stdio.h>

#include "tide/calibrate.h"
#include "tide/pipeline.h"

/** The command-line choices that concern calibration and storing. */
typedef struct tide_reduce_calib_opts {
    const char *refcat;       /**< --refcat FILE|URI (overrides refcat.path) */
    const char *refcat_table; /**< --refcat-table NAME */
    const char *index_dir;    /**< --index-dir DIR */
    const char *store;        /**< --store URI (else store.uri, else $TIDE_STORE) */
    int solve;                /**< --solve: solve even without a reference catalog */
    int no_astrometry;        /**< --no-astrometry */
} tide_reduce_calib_opts;

/** 1 when the options or the configuration ask for calibration. */
int tide_reduce_calib_wanted(const tide_reduce_calib_opts *o, const tide_calib_params *p);

/** Fill @p p from the configuration and the options. Returns a status. */
int tide_reduce_calib_params(const tide_reduce_calib_opts *o, const tide_config *cfg,
                             const tide_instrument *inst, const char *spec,
                             tide_calib_params *p);

/** The store URI to use ("" = none) from the options, the configuration and $TIDE_STORE. */
const char *tide_reduce_store_uri(const tide_reduce_calib_opts *o, const tide_config *cfg);

/** Put the frame's catalog into the store @p uri: one transaction, replacing an earlier run of
 *  the same file (by checksum). A catalog without sky positions is stored with NaN ones
 *  (never found by cone searches) and the columns are removed again afterwards. */
int tide_reduce_store_put(const char *uri, const char *spec, const tide_header *frame_hdr,
                          tide_pipeline_result *res, int64_t *image_id, double *ms);

/** Print what the calibration did: text lines, or JSON members (each line ",\n  \"key\": ..."
 *  so it can follow the other members of an object). */
void tide_reduce_calib_print(FILE *f, const tide_calib_result *c, int json);

#endif
