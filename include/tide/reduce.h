/* reduce.h — the reduction pipeline: one calibrated frame in, one instrumental source
 * catalog out (DESIGN §1, issue 3).
 *
 * Stage order (tide_pipeline_run):
 *
 *   1. cosmetics      saturation, bleed trails, hot/cold pixels, cosmic rays (cosmetics.h);
 *                     each sets its own mask bit, pixels are not changed
 *   2. background     Source Extractor's mesh background and RMS maps (background.h); the
 *                     frame becomes background-subtracted
 *   3. detection 1    matched filter with a Gaussian of the FWHM guess (detect.h); when the
 *                     median FWHM of its stars is below 2.5 px, cosmetics flagged hot or
 *                     cosmic-ray pixels and cos.psf_fwhm is 0, stages 1–3 run again with
 *                     cos.psf_fwhm = that FWHM (undersampled star cores are not defects;
 *                     header COSPSFFW, 0 when not)
 *   4. PSF model      from the isolated, bright, unsaturated stars of pass 1 (psf.h); too few
 *                     stars: a Gaussian (PSFMODEL = 'GAUSSIAN' in the header, a warning in the
 *                     log)
 *   5. detection 2    matched filter with the local PSF: the final source list
 *   6. photometry     apertures at the configured radii, Kron (AUTO), PSF fit at fixed
 *                     position, aperture-correction model and S/N-optimal radius
 *                     (photometry.h); sky variance from the measured RMS map or the noise
 *                     model, plus the source Poisson term from the gain (none when the
 *                     gain is unknown, 0)
 *   7. catalog        a host table with Source Extractor's column names (FITS 1-based
 *                     coordinates) and a header with the frame's summary (see below)
 *
 * Memory plan. On a CUDA context the frame is uploaded once and every image (frame, mask,
 * background, RMS, variance, S/N maps) stays on the device; per-source arrays are moved in one
 * batch per stage. The background map is released as soon as BACKGROUND has been sampled at
 * the sources and the RMS map is turned into the variance map in place, so the peak is the
 * frame + mask + background + RMS + what detection needs. Peak device memory is reported.
 *
 * Outcomes. A frame without sources is not an error: the catalog has every column and no
 * row. A frame without a single valid pixel is TIDE_E_EMPTY. Every stage is timed with
 * tide_timer under "reduce.<stage>" (ctx timers).
 *
 * Catalog columns (units; FITS 1-based pixel coordinates; Source Extractor's names where one
 * exists — README "Catalog columns" documents each):
 *   NUMBER, X_IMAGE, Y_IMAGE, XWIN_IMAGE, YWIN_IMAGE, ERRX2WIN_IMAGE, ERRY2WIN_IMAGE,
 *   ERRAWIN_IMAGE, ERRBWIN_IMAGE, ERRTHETAWIN_IMAGE, XPEAK_IMAGE, YPEAK_IMAGE, X2_IMAGE,
 *   Y2_IMAGE, XY_IMAGE, A_IMAGE, B_IMAGE, THETA_IMAGE, ELONGATION, ELLIPTICITY, FWHM_IMAGE,
 *   ISOAREA_IMAGE, FLUX_ISO, FLUXERR_ISO, FLUX_MAX, FLUX_APER[naper], FLUXERR_APER[naper],
 *   FLUX_AUTO, FLUXERR_AUTO, KRON_RADIUS, MAG_AUTO, MAGERR_AUTO, FLUX_PSF, FLUXERR_PSF,
 *   BACKGROUND, FLAGS (int16, Source Extractor's bits), ALPHA_J2000, DELTA_J2000 (only when
 *   the frame has a celestial WCS), and tide's own: FLUX_OPT, FLUXERR_OPT, RAD_OPT, SNR,
 *   CHI2_PSF, PARENT, FLAGS_TIDE (int32: every detection and photometry bit).
 *
 * Header of the catalog (tide_pipeline_result.header): TIDEVERS, BACKEND, DEVICE, IMAGEW,
 * IMAGEH, GAIN, RDNOISE, SATURATE, NCOMBINE, BIAS, SKYLEVEL, SKYRMS, BACKSIZE, BACKFILT,
 * NOISESRC, DETTHRES, DETMINAR, NFIRST, NDETECT, NFIRSTKP (first-pass sources the second pass
 * lost, kept), the PSF summary of tide_psf_to_header (FWHM, FWHMLL/LR/UL/UR, PSFBETA,
 * PSFELLIP, PSFTHETA, PSFNSTAR, PSFMODEL ..., PSFFBWHY), PSFFALLB, NAPER,
 * APER01.. (radii, pixels), APCOR01.. (aperture correction F(r)/F(r_ref) at the frame centre),
 * APCREF, APCNSTAR, APCLAWA, APCLAWB, APCFALLB, ROPT10/30/100/300/1000 (S/N-optimal radius at
 * those detection S/N), NSATPIX, NBLEED, NHOTPIX, NCOLDPIX, NCOSMIC. No timings: the same frame
 * gives the same header. */
#ifndef TIDE_PIPELINE_H
#define TIDE_PIPELINE_H
#include "tide/export.h"
#include <stddef.h>
#include <stdint.h>

#include "tide/background.h"
#include "tide/config.h"
#include "tide/cosmetics.h"
#include "tide/ctx.h"
#include "tide/detect.h"
#include "tide/header.h"
#include "tide/image.h"
#include "tide/instrument.h"
#include "tide/photometry.h"
#include "tide/psf.h"
#include "tide/table.h"
#include "tide/wcs.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most aperture radii in one run. */
#define TIDE_PIPELINE_MAX_APER 32

/** Where the sky variance of the photometry errors comes from. */
typedef enum {
    TIDE_NOISE_MEASURED = 0, /**< the background RMS map squared (Source Extractor's way) */
    TIDE_NOISE_MODEL = 1     /**< tide_noise_model: (bkg − bias)/gain + (rdnoise/gain)², over
                                  ncombine; needs a correct gain, read noise and bias */
} tide_noise_source;

/** Parameters of the pipeline. The detector values (gain, rdnoise, saturate, bias, ncombine)
 *  and fwhm_guess are copied into the stage parameters by tide_pipeline_run, so set them here,
 *  not in the nested structs. tide_pipeline_params_default gives the values in brackets. */
typedef struct tide_pipeline_params {
    /* detector */
    double gain;     /**< e-/ADU; 0 = unknown: no Poisson term, cosmetics measure the noise
                          [0.0] */
    double rdnoise;  /**< read noise, e- [0] */
    double saturate; /**< saturation level of the frame, ADU; NaN = none [NaN] */
    double bias;     /**< zero-signal level still in the frame, ADU (SIMBIAS of `tide sim`
                          frames) [0] */
    int ncombine;    /**< frames averaged into this one [1] */
    /* stages */
    int cosmetics;             /**< 1: run the cosmetics stage [1] */
    tide_cosmetics_params cos; /**< cosmetics options (detector fields are overwritten) */
    tide_bkg_params bkg;       /**< background mesh options */
    tide_noise_source noise;   /**< sky variance for the errors [MEASURED] */
    double fwhm_guess;         /**< FWHM guess, pixels, for the first pass [3.0] */
    int refine_fwhm;           /**< 1: the PSF stage's guess is the median FWHM of the
                                    first pass's clean bright sources [1] */
    tide_detect_params det;    /**< detection options (thresh, minarea, deblending) */
    int psf;                   /**< 1: build a PSF model; 0: Gaussian of the guess [1] */
    tide_psf_params psfp;      /**< PSF-model options */
    int naper;                 /**< number of aperture radii [3] */
    double aper_radii[TIDE_PIPELINE_MAX_APER]; /**< radii, pixels [3, 5, 8] */
    tide_aper_params aper;     /**< aperture options (gain, ncombine are overwritten);
                                    mask_bits [NODATA|BAD|HOT|COLD|COSMIC|USER: saturated
                                    pixels keep their light, the flags say so],
                                    mask_correct [1] */
    tide_kron_params kron;     /**< Kron options */
    tide_psffit_params psffit; /**< PSF-fit options */
    tide_apcorr_params apcorr; /**< aperture-correction options (fwhm is set from the
                                    PSF model) */
    int keep_maps;             /**< 1: return host copies of the background and RMS maps
                                    in the result [0] */
    char source[256];          /**< the frame's name for messages and the header [""] */
} tide_pipeline_params;

/** Fill @p p with the defaults in brackets above (and each stage's own defaults). */
TIDE_API void tide_pipeline_params_default(tide_pipeline_params *p);

/** Take the parameters from a configuration (config.h: processing.back_size,
 *  back_filtersize, detect_thresh, detect_minarea, deblend_nthresh, deblend_cont, fwhm_guess,
 *  psf_stamp, psf_nstars, psf_neigen, aper_radii, clean_cosmics, cr_sigma) and, when @p inst
 *  is not NULL, the frame's resolved instrument values (gain, rdnoise, saturate, ncombine;
 *  missing ones leave the field alone). Returns TIDE_E_RANGE when aper_radii has more than
 *  TIDE_PIPELINE_MAX_APER elements. */
TIDE_API int tide_pipeline_params_from_config(tide_pipeline_params *p, const tide_config *cfg,
                                              const tide_instrument *inst);

/** Check the parameters: gain >= 0 (0 only with the measured noise), rdnoise >= 0, bias finite,
 * ncombine >= 1, fwhm_guess > 0, 1 <= naper <= TIDE_PIPELINE_MAX_APER with radii > 0. TIDE_E_INVAL
 * naming the field. */
TIDE_API int tide_pipeline_params_check(const tide_pipeline_params *p);

/** What a run produced. Everything is host memory; free with tide_pipeline_result_free. */
typedef struct tide_pipeline_result {
    tide_table catalog;        /**< one row per source, columns listed above */
    tide_header header;        /**< cards for the catalog HDU (listed above) */
    tide_psf_model psf;        /**< the PSF model of detection 2 and the PSF fit */
    tide_apcorr_model apcorr;  /**< aperture-correction model (valid when has_apcorr) */
    int has_apcorr;            /**< 0: too few correction stars; FLUX_OPT is NaN */
    tide_bkg_summary bkg;      /**< background summary */
    tide_cosmetics_report cos; /**< cosmetics counts (zero when the stage is off) */
    int64_t n_first;           /**< sources of the first (Gaussian) detection pass */
    int64_t n_sources;         /**< rows of the catalog */
    int64_t n_carried;         /**< of which first-pass sources the second pass lost, kept
                                    (FLAGS_TIDE 2048) */
    int psf_fallback;          /**< 1: the PSF is a Gaussian (too few stars or no model) */
    double ms_total;           /**< wall time of tide_pipeline_run, milliseconds */
    size_t device_peak;        /**< peak device-pool bytes during the run (0 on the CPU) */
    tide_image back_map;       /**< host background map when keep_maps, else empty */
    tide_image rms_map;        /**< host background-RMS map when keep_maps, else empty */
    tide_wcs *wcs;             /**< the frame's WCS, parsed once: the header's after
                                    tide_pipeline_run (NULL when it has none that parses), the
                                    final one after tide_calibrate_run (NULL when unsolved) */
} tide_pipeline_result;

/** Reduce one frame. @p frame: a host image (or, on a CUDA context, a device image) in ADU,
 *  with or without a mask plane (its bits are kept and extended); it is not modified: the
 *  pipeline works on its own copy (on the device for a CUDA context). @p hdr: the frame's
 *  header (may be NULL), used for the WCS columns and copied into nothing else. @p p NULL
 *  means the defaults. On success @p out holds the catalog (free with
 *  tide_pipeline_result_free); on failure it is empty.
 *  Errors: TIDE_E_INVAL (bad parameters or image), TIDE_E_EMPTY (no valid pixel),
 *  TIDE_E_NOMEM, TIDE_E_CUDA, and those of the stages. */
TIDE_API int tide_pipeline_run(tide_ctx *ctx, const tide_image *frame, const tide_header *hdr,
                               const tide_pipeline_params *p, tide_pipeline_result *out);

/** Release a result and zero it. NULL is a no-op. */
TIDE_API void tide_pipeline_result_free(tide_pipeline_result *r);

#ifdef __cplusplus
}
#endif
#endif
