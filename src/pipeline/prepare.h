/* prepare.h — one frame's preparation, shared by the reduction (reduce.c) and the difference
 * pipeline (diff_prep.c): the working copy, cosmetics, background and its subtraction, the
 * first detection and the FWHM of its stars. The pipelines choose the parameters (and their
 * own policies around them); the steps and their order are written once, here. Not public. */
#ifndef TIDE_PIPELINE_PREPARE_H
#define TIDE_PIPELINE_PREPARE_H
#include <math.h>
#include <stdint.h>

#include "tide/background.h"
#include "tide/cosmetics.h"
#include "tide/detect.h"
#include "tide/image.h"

/** Timer names of the steps (tide_timer, timer.h); NULL: that step is not timed. */
typedef struct tide_prep_timers {
    const char *upload;     /**< the working copy */
    const char *cosmetics;  /**< the cosmetics stage */
    const char *background; /**< the background estimate, and (a second call) its subtraction */
} tide_prep_timers;

/** How a frame is prepared by tide_prep_frame. */
typedef struct tide_prep_params {
    const char *name;                 /**< the frame, for messages */
    const tide_cosmetics_params *cos; /**< NULL: no cosmetics stage */
    /** 1: when the cosmetics flag more than 1% of the frame, their noise model does not fit
     *  it (a sky-subtracted frame): the flags are dropped with a warning (the difference
     *  pipeline, whose inputs are often such cutouts). 0: the flags are kept (tide reduce). */
    int cos_guard;
    const tide_bkg_params *bkg; /**< background parameters */
    /** 0: the working copy has a mask and the background is subtracted (tide reduce). 1: it
     *  also has a variance plane, and the subtraction computes it from the maps with
     *  @p gain and flags the pixels at or above @p saturate (the difference pipeline,
     *  noise_ops.h tide_diffp_prepare). */
    int variance;
    double gain;     /**< e-/ADU, <= 0: unknown (variance 1 only) */
    double saturate; /**< ADU, NaN: none (variance 1 only) */
    tide_prep_timers timers;
} tide_prep_params;

/** A prepared frame: the background-subtracted working copy and the maps. */
typedef struct tide_prepared {
    tide_image work;          /**< where the context computes; MASK (and VAR) planes */
    tide_image bkg, rms;      /**< background and RMS maps (row stride = width) */
    tide_bkg_summary bkgs;    /**< global background and RMS */
    tide_cosmetics_report cr; /**< the cosmetics stage's report (zero without it) */
    int cos_dropped;          /**< 1: its flags were dropped (cos_guard) */
} tide_prepared;

/** Prepare @p frame (host or, on a CUDA context, device) into @p out: a working copy where
 *  the context computes (the input's own variance, if any, is not copied), the cosmetics
 *  stage, the background maps, and the background subtracted. TIDE_E_EMPTY names the frame
 *  when it has no valid pixel. On error @p out is released. */
int tide_prep_frame(tide_ctx *ctx, const tide_image *frame, const tide_prep_params *p,
                    tide_prepared *out);

/** Release a prepared frame (each image may already have been freed or taken over). */
void tide_prep_frame_free(tide_ctx *ctx, tide_prepared *f);

/** The first detection of a prepared frame: tide_detect of @p work with the RMS map @p rms
 *  and no PSF, timed as @p timer (NULL: untimed), into @p out. */
int tide_prep_first_pass(tide_ctx *ctx, const tide_image *work, const tide_image *rms,
                         const tide_detect_params *dp, const char *timer, tide_table *out);

/** Which first-pass sources make the FWHM estimate of tide_prep_fwhm. */
typedef struct tide_prep_fwhm_rule {
    int64_t min_stars; /**< fewer qualifying sources: no estimate (0) */
    double max_fwhm;   /**< sources of this FWHM or more are left out (INFINITY: none) */
    /** > 0: a second median, of the sources within this fraction of the first (galaxies and
     *  blends sit above the stars' mode), when at least min_stars remain */
    double clip;
} tide_prep_fwhm_rule;

/** tide reduce's rule: 5 stars, no upper bound, no clip (the PSF stage's guess). */
#define TIDE_PREP_FWHM_REDUCE ((tide_prep_fwhm_rule){5, INFINITY, 0.0})
/** tide diff's rule: 3 stars below 100 px, then those within 25% of their median. */
#define TIDE_PREP_FWHM_DIFF ((tide_prep_fwhm_rule){3, 100.0, 0.25})

/** The median FWHM of the clean (FLAGS 0), bright (SNR >= 20) sources of the first pass @p t
 *  with a finite FWHM above 0.5 px, by @p rule; 0 when too few qualify (or on no memory).
 *  *nused (may be NULL) gets the number of sources behind the estimate (0: none). */
double tide_prep_fwhm(const tide_table *t, const tide_prep_fwhm_rule *rule, int64_t *nused);

#endif
