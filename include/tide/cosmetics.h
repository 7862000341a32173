/* cosmetics.h — the first reduction stage: mask what the detector, not the sky, put in a frame.
 *
 * tide_cosmetics_apply runs, in this order, each pass setting its own mask bit (image.h):
 *
 *   1. Saturation (TIDE_MASK_SATURATED): pixels at or above `saturation` ADU.
 *   2. Bleed trails (TIDE_MASK_BLEED): along the readout axis (columns by default), every
 *      contiguous run of pixels above bias + bleed_frac·(saturation − bias) that contains a
 *      saturated pixel, grown by `bleed_grow` pixels at both ends. The run's saturated pixels
 *      keep SATURATED only; the others get BLEED (so a saturated star's core neighbourhood is
 *      BLEED too: it is non-linear).
 *   2b. Bad columns (TIDE_MASK_BAD): segments of columns that differ from their neighbours by
 *      a residual of one sign over many rows: per column, z = (I − m)/σ(m) with m the median of
 *      the pixels 1–2 columns either side on the same row; the median z of each block of 32
 *      rows marks the block when |median z| > badcol_sigma; runs of >= badcol_minrun marked
 *      blocks of one sign are bad, extended pixel by pixel while z keeps its sign beyond
 *      badcol_sigma/2. (A camera's bad-pixel mask, when there is one, is better: pass it in
 *      as BAD and this pass adds what it misses.)
 *   3. Hot and cold pixels (TIDE_MASK_HOT, TIDE_MASK_COLD): isolated single pixels. With med8,
 *      max8, min8 the median, maximum and minimum of the 8 neighbours, ring the median of the
 *      16 pixels on the border of the 5×5 box, and σ the noise model at med8, a pixel v is hot
 *      when (a) v − med8 > hot_sigma·σ, (b) v − max8 > hot_isolation·(v − med8): it stands
 *      alone, and (c) v − med8 > hot_ratio·(med8 − ring): its neighbours are consistent with
 *      the local level instead of being the wings of a PSF (a star with FWHM ≥ 1.5 px has
 *      (v − med8)/(med8 − ring) below ~1.5, a hot pixel on sky far above). Cold mirrors
 *      (a) and (b) downwards. In a single frame a one-pixel cosmic-ray hit is indistinguishable
 *      from a hot pixel and gets HOT.
 *   4. Cosmic rays (TIDE_MASK_COSMIC): L.A.Cosmic, van Dokkum 2001, PASP 113, 1420 — Laplacian
 *      edge detection of the 2×-subsampled frame with the fine-structure test that protects
 *      stars, iterated (details in src/reduction/cosmetics/cosmetics_lacosmic.c).
 *   3–4 with psf_fwhm > 0 (undersampled stars): the fine-structure test cannot protect a star
 *      of FWHM below ~2 px (its 3×3 median is far below its peak), and at FWHM 1.2–1.3 px the
 *      hot test takes centred stars too. A pixel that either pass would flag (an L.A.Cosmic
 *      candidate, or a pixel its growth steps would add) is then released when it is the
 *      core of a profile as broad and as round as a star of that FWHM: P, the brightest
 *      pixel of its 3×3 box, must be the brightest of its own; with b the median of the 24
 *      pixels on the border of P's 7×7 box, no pixel 2 px from P (the border of its 5×5 box)
 *      may exceed b by more than half P's excess (more for FWHM > 2.5 px: 1.5 times a
 *      Gaussian's most); and the pixels of P's 3×3 box more than 2σ(b) above b, weighted by
 *      that excess, must have second moments whose smaller eigenvalue reaches psf_width
 *      times the smallest a pixel-sampled Gaussian of FWHM psf_fwhm has there (over
 *      sub-pixel positions) and psf_round times the larger one. Cosmic rays are not blurred
 *      by the optics: a hit or a track one pixel wide has almost no width across it, a
 *      stepped track is long and thin, a hot pixel has no width at all, a hit beside a star
 *      is no peak; a star has both widths. psf_fwhm is measured on the pixels (the pixel's
 *      own 1/12 px² is taken out). (astroscrappy's fsmode 'convolve' builds F from the
 *      frame convolved with the PSF instead; at objlim 5 it then misses nearly every cosmic
 *      ray at FWHM 1.3–1.6 px, and objlim would need setting per frame.) tide reduce sets
 *      psf_fwhm itself below a first-pass FWHM of 2.5 px (reduce.h).
 *   5. Optional inpainting (TIDE_MASK_INTERP): pixels carrying `inpaint_bits` are replaced by
 *      the median of the unmasked pixels in their 5×5 box. They keep their defect bits, so a
 *      stage that excludes masked pixels still excludes them: inpainting never changes
 *      photometry silently. Pixels with no unmasked neighbour are left as they were.
 *
 * Noise model (ADU): σ(m) = sqrt(gain·max(m − bias, 1e-5) + rdnoise²) / gain, with m a local
 * median level in ADU and rdnoise in electrons (van Dokkum 2001, eq. 10). The 1e-5 floor is in
 * ADU of a known gain, i.e. ~1e-5 electrons: physical units, so it assumes nothing about the
 * data's scale. The model is checked against the frame: when the σ measured at the sky (as
 * below) exceeds the model's there by more than 25% (a frame whose sky was subtracted still
 * carries the sky's photon noise), the read-noise term is raised to make them meet, with a
 * warning. With gain 0 (unknown, as a frame in flux units or without GAIN) there is no
 * Poisson term: σ is one value for the whole frame, `noise_rms` when it is > 0, else measured
 * from the frame as the global RMS of the background estimate (background.h, its defaults):
 * the median of the clipped σ of 64×64 meshes, which neither sky gradients nor sources move.
 * Multiplying such a frame by any factor, or adding a constant, then gives the same masks.
 *
 * Pixels with `skip_bits` (and non-finite pixels) are never flagged and never serve as
 * neighbours. Pixels flagged SATURATED or BLEED are not tested by passes 3–4, and no cosmic ray
 * is flagged within `sat_protect` pixels of them (a saturated core's edges are as sharp as a
 * cosmic ray).
 *
 * Backends. A CPU context needs a host image; a CUDA context takes a device image (the
 * pipeline's path) or a host image, which is uploaded, cleaned and copied back. Both backends
 * give identical masks and inpainted values: the per-pixel math (cosmetics_math.h) is shared,
 * every median is an exact sort, and no floating-point operation is contracted. */
#ifndef TIDE_COSMETICS_H
#define TIDE_COSMETICS_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/header.h"
#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Parameters of tide_cosmetics_apply; tide_cosmetics_params_default gives the values in
 *  brackets. */
typedef struct tide_cosmetics_params {
    /* detector and noise model */
    double gain;    /**< e-/ADU [1.0]; >= 0, 0 = unknown: no Poisson term (see above) */
    double rdnoise; /**< read noise, e- rms [0.0] */
    double bias;    /**< zero-signal level still in the frame, ADU [0.0] */
    /* saturation and bleed trails */
    double saturation; /**< saturation level, ADU (SATURATE); NaN = no saturation or bleed
                            pass [NaN]. Full-well pixels read up to ~2× their shot noise
                            below a hard clamp, so a level ~2% of the range below the clamp
                            catches them (the truth test uses bias + 0.98·(SATURATE − bias)) */
    int bleed;         /**< 1: mask bleed trails [1] */
    int bleed_axis;    /**< 0: trails run along columns (y, the usual CCD readout axis);
                            1: along rows (x) [0] */
    double bleed_frac; /**< a trail is the run above bias + bleed_frac·(saturation − bias)
                            [0.5] */
    int bleed_grow;    /**< pixels added at both ends of every trail [2] */
    /* bad columns */
    int badcol;          /**< 1: bad-column pass [1] */
    double badcol_sigma; /**< block median residual, in σ [3.0] */
    int badcol_minrun;   /**< consecutive 32-row blocks a bad segment needs [3] */
    /* hot and cold pixels */
    int hot;              /**< 1: hot-pixel pass [1] */
    int cold;             /**< 1: cold-pixel pass [1] */
    double hot_sigma;     /**< residual above the neighbour median, in σ [5.0] */
    double cold_sigma;    /**< residual below the neighbour median, in σ [5.0] */
    double hot_isolation; /**< the pixel must exceed its brightest (cold: undercut its
                               faintest) neighbour by this fraction of its residual [0.5] */
    double hot_ratio;     /**< sharpness: residual / (neighbour median − ring median) [4.0] */
    /* cosmic rays (L.A.Cosmic) */
    int cosmic;      /**< 1: cosmic-ray pass [1] */
    double sigclip;  /**< detection limit on the Laplacian S/N, σ_lim [4.5] */
    double sigfrac;  /**< neighbours of a hit need sigfrac·sigclip [0.3] */
    double objlim;   /**< contrast limit against the fine-structure image, f_lim [5.0] */
    int niter;       /**< at most this many detect-and-clean iterations, 1..16 [4] */
    int sat_protect; /**< no cosmic ray within this many pixels (Chebyshev) of a SATURATED
                          or BLEED pixel, 0..8 [2] */
    /* inpainting */
    int inpaint;           /**< 1: replace flagged pixels (see above) [0] */
    uint16_t inpaint_bits; /**< which pixels [HOT | COLD | COSMIC] */
    /* input mask */
    uint16_t skip_bits; /**< pixels never tested nor used as neighbours
                             [NODATA | BAD | USER] */
    /* noise without a gain */
    double noise_rms; /**< with gain 0: the pixel noise σ, ADU; 0 = measure it from the frame
                           [0.0] */
    /* undersampled stars (see 3–4 above) */
    double psf_fwhm;  /**< the stars' FWHM, px; > 0: release hot and cosmic-ray candidates as
                           broad and round as such a star; 0 = no such test [0.0] */
    double psf_width; /**< fraction of the star's least width (moment eigenvalue) a released
                           profile needs, 0..1 [0.4] */
    double psf_round; /**< least ratio of the smaller to the larger eigenvalue, 0..1 [0.3] */
} tide_cosmetics_params;

/** Fill @p p with the defaults documented in brackets. */
TIDE_API void tide_cosmetics_params_default(tide_cosmetics_params *p);

/** Take saturation (SATURATE), gain (GAIN, else EGAIN) and read noise (RDNOISE, else
 *  READNOIS, else RON) from a header where present; other fields are left alone. Returns 0
 *  even when keys are missing; TIDE_E_FORMAT if a key is present but not a number. */
TIDE_API int tide_cosmetics_params_from_header(tide_cosmetics_params *p, const tide_header *h);

/** Check parameters: gain >= 0, rdnoise >= 0, noise_rms >= 0, positive sigmas and ratios, 0 <
 * bleed_frac < 1, 0 <= bleed_grow <= 1024, badcol_minrun >= 1, 1 <= niter <= 16, 0 <= sat_protect
 * <= 8, psf_fwhm 0 or in [0.5, 20], psf_width and psf_round in [0, 1]. TIDE_E_INVAL with a
 * detail naming the field. */
TIDE_API int tide_cosmetics_params_check(const tide_cosmetics_params *p);

/** What a call did: pixels newly flagged per class (bits already set on input are not
 *  counted) and wall time per pass (device time on a CUDA context), milliseconds. */
typedef struct tide_cosmetics_report {
    int64_t n_saturated, n_bleed, n_hot, n_cold, n_cosmic, n_interp;
    int64_t n_bad;               /**< pixels of bad-column segments */
    int cosmic_iterations;       /**< L.A.Cosmic iterations run */
    int64_t cosmic_per_iter[16]; /**< new cosmic-ray pixels found by each iteration */
    double ms_saturation, ms_bleed, ms_badcol, ms_hotcold, ms_cosmic, ms_inpaint, ms_total;
} tide_cosmetics_report;

/** Run the passes above on @p im, which must have a mask plane (TIDE_E_INVAL otherwise).
 *  Only the mask plane changes, and the pixels only where inpainting is on. @p p NULL means
 *  the defaults; @p r may be NULL. Stage timings are also added to the context's timers
 *  ("cosmetics.saturation", ...). An all-NaN or empty-of-valid-pixels frame is not an error. */
TIDE_API int tide_cosmetics_apply(tide_ctx *ctx, tide_image *im, const tide_cosmetics_params *p,
                                  tide_cosmetics_report *r);

/** sizeof(tide_cosmetics_params), so ctypes users can check their layout. */
TIDE_API int64_t tide_cosmetics_params_size(void);

#ifdef __cplusplus
}
#endif
#endif
