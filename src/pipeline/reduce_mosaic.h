/* reduce_mosaic.h — what the files of a mosaic exposure's reduction share (job.h,
 * tide_reduce_job_run_mosaic is the contract). */
#ifndef TIDE_REDUCE_MOSAIC_H
#define TIDE_REDUCE_MOSAIC_H
#include <pthread.h>

#include "reduce_job_internal.h"
#include "tide/fits.h"

/** A CCD being read on a thread of its own while the one before it is reduced: the
 *  reduction's time hides the file's. */
typedef struct tide_reduce_prefetch {
    pthread_t thread;
    int started;     /**< the thread runs (join it with tide_reduce_prefetch_wait) */
    int pending;     /**< started and not yet waited for: its image is still to be taken */
    char spec[1100]; /**< FILE[hdu] */
    tide_image im;   /**< the CCD, host memory */
    tide_header hdr; /**< its header */
    int status;      /**< the read's status */
    char err[512];   /**< its error detail */
} tide_reduce_prefetch;

/** Start reading @p spec (read at once on this thread when no thread can be made). */
void tide_reduce_prefetch_start(tide_reduce_prefetch *f, const char *spec);

/** Wait for the read and hand its image and header over to @p im and @p hdr (the caller
 *  frees them, the image with a NULL context); returns its status. */
int tide_reduce_prefetch_wait(tide_reduce_prefetch *f, tide_image *im, tide_header *hdr);

/** Append "[hdu]" to the file's checksum @p hex: the store key of one CCD. */
int tide_reduce_ccd_key(char hex[72], int hdu);

/** The header of CCD @p c's catalog HDU into @p out (initialised here): the CCD's own keys
 *  from @p ccd_hdr (CCDNUM, DETPOS, DETSEC, DATASEC, ...), CCDHDU, CCDSTAT and, when it
 *  failed, CCDMSG, then every card of the catalog header @p cat_hdr (may be NULL). */
int tide_reduce_ccd_header(const tide_header *ccd_hdr, const tide_reduce_ccd *c,
                           const tide_header *cat_hdr, tide_header *out);

#endif
