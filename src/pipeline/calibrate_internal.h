/* calibrate_internal.h — what the calibration's files share (calibrate.h is the contract). */
#ifndef TIDE_CALIBRATE_INTERNAL_H
#define TIDE_CALIBRATE_INTERNAL_H
#include <stdint.h>

#include "tide/calibrate.h"
#include "tide/table.h"
#include "tide/wcs.h"

/** The sources of a catalog as the astrometry wants them: 0-based positions, centroid errors,
 *  a brightness for the solver and a mask of clean point-like sources for the fit. */
typedef struct tide_cal_sources {
    int64_t n;
    double *x, *y;   /**< 0-based XWIN/YWIN */
    double *bx, *by; /**< 0-based X_IMAGE/Y_IMAGE (barycentres), for the plate solver */
    double *sigma;   /**< 1σ centroid error per axis, pixels (NaN when unknown) */
    double *flux;    /**< FLUX_APER of the first radius (else FLUX_AUTO): the solvers' order */
    int64_t nclean;  /**< clean sources, packed first into cx, cy, csigma */
    double *cx, *cy, *csigma;
} tide_cal_sources;

/** Gather the sources of @p cat. */
int tide_cal_sources_get(const tide_table *cat, tide_cal_sources *s);
void tide_cal_sources_free(tide_cal_sources *s);

/** The state the astrometry step leaves for the photometric one. */
typedef struct tide_cal_state {
    tide_table ref; /**< reference stars around the field (refcat.h layout), or empty */
    int have_ref;
    tide_wcs *wcs;    /**< the final WCS, or NULL */
    char refname[72]; /**< REFCAT: the catalog's file name or table */
} tide_cal_state;

/** Steps 1–3 of calibrate.h: reference stars, WCS, sky columns and WCS header cards. */
int tide_cal_astrometry(tide_ctx *ctx, const tide_header *frame_hdr, int64_t width, int64_t height,
                        const tide_calib_params *p, tide_pipeline_result *res, tide_cal_state *cs,
                        tide_calib_result *out);

/** Steps 4–6: reference columns, zero point and magnitudes, observing conditions. */
int tide_cal_photometry(tide_ctx *ctx, const tide_header *frame_hdr, int64_t width, int64_t height,
                        const tide_calib_params *p, tide_pipeline_result *res, tide_cal_state *cs,
                        tide_calib_result *out);

/** Fetch the reference stars within @p radius_deg of (@p ra, @p dec) from the source @p p
 *  names, through the cache. */
int tide_cal_refcat_fetch(const tide_calib_params *p, double ra, double dec, double radius_deg,
                          tide_table *out);

/** Milliseconds on a monotonic clock. */
double tide_cal_now_ms(void);

#endif
