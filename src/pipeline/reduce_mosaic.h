/* reduce_mosaic.h — what the files of a mosaic exposure's reduction share (job.h,
 * tide_reduce_job_run_mosaic is the contract). */
#ifndef TIDE_REDUCE_MOSAIC_H
#define TIDE_REDUCE_MOSAIC_H
#include "reduce_job_internal.h"
#include "tide/fits.h"

/** An error of the CCD's own data: the CCD is flagged and the exposure goes on. Anything else
 *  (memory, the device, files, the store, the configuration) would fail every CCD alike. */
int tide_reduce_ccd_own_error(int st);

/** The workers that reduce a mosaic's CCDs (reduce_mosaic_workers.c). */
typedef struct tide_reduce_ccd_pool tide_reduce_ccd_pool;

/** Start reducing the CCDs of @p out (its plan made, each CCD's spec set) on the job's context
 *  and its helper, two at a time, each into out->ccd[k].rep with its header in @p hdrs[k]
 *  (the error of a failed one in out->ccd[k].error). 0 or TIDE_E_NOMEM. */
int tide_reduce_ccd_pool_start(tide_reduce_job *j, const tide_reduce_request *rq,
                               tide_reduce_mosaic_report *out, tide_header *hdrs,
                               tide_reduce_ccd_pool **pool);

/** Wait for CCD @p k: *reduced is 1 and its status returned once it is reduced, 0 when it
 *  never will be (an earlier CCD's error that is not its own stopped the pool). */
int tide_reduce_ccd_pool_wait(tide_reduce_ccd_pool *p, int k, int *reduced);

/** Stop the workers (each finishes its CCD), wait for them and free the pool. NULL: no-op. */
void tide_reduce_ccd_pool_finish(tide_reduce_ccd_pool *p);

/** Append "[hdu]" to the file's checksum @p hex: the store key of one CCD. */
int tide_reduce_ccd_key(char hex[72], int hdu);

/** The header of CCD @p c's catalog HDU into @p out (initialised here): the CCD's own keys
 *  from @p ccd_hdr (CCDNUM, DETPOS, DETSEC, DATASEC, ...), CCDHDU, CCDSTAT and, when it
 *  failed, CCDMSG, then every card of the catalog header @p cat_hdr (may be NULL). */
int tide_reduce_ccd_header(const tide_header *ccd_hdr, const tide_reduce_ccd *c,
                           const tide_header *cat_hdr, tide_header *out);

#endif
