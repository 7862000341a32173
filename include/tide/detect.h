/* detect.h — source detection: PSF matched filter, S/N map, thresholded segmentation,
 * multi-threshold deblending and per-source measurements (issue 3, stage 4).
 *
 * The algorithm, once for both backends:
 *
 *  1. Matched filter with the local PSF. The local PSF at pixel (x, y) is
 *         K_xy = sum_b c_b(x, y) B_b
 *     (B_b the model's basis stamps, c_b its polynomial coefficient fields; with psf == NULL a
 *     single unit-sum Gaussian of p->fwhm_guess and c_0 = 1). Because correlation is linear,
 *     correlating the frame once with every basis stamp (R_b = sub ⋆ B_b, FFT correlation,
 *     fft.h) and combining per pixel gives the correlation with the local kernel exactly:
 *         F(x, y) = sum_b c_b(x, y) R_b(x, y).
 *     The frame is transformed once; with several bases the R_b are made one at a time and
 *     each is folded into F (double, b = 0, 1, ... in order) before the next, so one
 *     correlation exists at a time (device memory at 151 MP: F 1.13 GiB instead of nbasis
 *     0.56 GiB images; a CPU frame correlated in tiles makes them all at once). The call
 *     owns its correlator and releases it before it returns.
 *  2. S/N map. For white noise of standard deviation sigma = rms(x, y), Var F = sigma^2 E
 *     with E the exact local kernel energy sum_pixels K_xy^2, computed from the basis Gram
 *     matrix G_ab = <B_a, B_b> (double, on the host, once):
 *         E(x, y) = sum_ab c_a c_b G_ab,      SNR(x, y) = F / (rms · sqrt(E)).
 *     For an isolated point source of flux f centred on a pixel, F = f E, so SNR is the
 *     optimal (matched-filter) S/N f sqrt(E) / sigma. Pixels whose value or rms is not finite,
 *     whose rms is <= 0 or whose mask has TIDE_MASK_NODATA get SNR = NaN. Pixels with any of
 *     p->filter_mask_bits count as 0 inside the filter. rms is taken at the output pixel
 *     (locally white noise).
 *  3. Segmentation. Pixels with SNR >= p->thresh form footprints (8-connectivity); footprints
 *     of fewer than p->minarea pixels are dropped. Footprints ("parents") are numbered by
 *     their first pixel in raster order (y, then x).
 *  4. Deblending (Source Extractor's multi-threshold scheme, Bertin & Arnouts 1996, §2.3) on
 *     the S/N map: p->deblend_nthresh levels t_i = thresh (peak/thresh)^(i/nthresh) between the
 *     detection level and the parent's peak S/N; at each level a branch whose pixels above t_i
 *     number >= minarea and whose summed S/N is >= p->deblend_mincont times the parent's total
 *     is significant; a node with two or more significant branches splits into them.
 *     Pixels outside the final branches are given to the branch whose elliptical Gaussian
 *     (S/N-weighted moments of its pixels, amplitude = its peak S/N) is largest there (SE's
 *     probabilistic assignment made deterministic). When a parent would produce more than
 *     p->deblend_limit sources it is kept whole and flagged TIDE_DETECT_FLAG_DEBLEND_LIMIT.
 *     Every scratch buffer is sized from the parent's own pixel count and the limit, so no
 *     crowding can overflow a fixed buffer.
 *  5. Measurements on the (unfiltered) @p sub pixels of each final footprint, then windowed
 *     quantities; see the column list of tide_detect.
 *
 * Determinism. Rows are ordered by parent (first pixel, raster order), then by each child's
 * first pixel. Per-source sums run in one fixed order (32 lanes, pixel p of the bounding box
 * in lane p mod 32, lanes merged in a fixed tree) on both backends, so the CPU and CUDA
 * backends give the same rows; only the FFT rounding differs (a pixel at S/N == thresh to
 * within 1e-6 may fall on either side). The CUDA result is bitwise reproducible.
 *
 * Limits. Frames of up to 2^31 - 1 pixels (labels are int32). */
#ifndef TIDE_DETECT_H
#define TIDE_DETECT_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/image.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The PSF model (defined in psf.h by the PSF stage); detection reads its basis stamps,
 * coefficient polynomials and corner FWHMs. */
typedef struct tide_psf_model tide_psf_model;

/** FLAGS bits. The low byte follows Source Extractor's FLAGS; higher bits are tide's own. */
enum {
    TIDE_DETECT_FLAG_NEIGHBOURS = 1,       /**< another source's footprint lies within 1.5 FWHM of
                                                the windowed centre */
    TIDE_DETECT_FLAG_DEBLENDED = 2,        /**< the source was deblended from a larger footprint */
    TIDE_DETECT_FLAG_SATURATED = 4,        /**< a footprint pixel is saturated (mask SATURATED or
                                                BLEED, or value >= p->saturation) */
    TIDE_DETECT_FLAG_TRUNCATED = 8,        /**< the footprint touches the frame edge */
    TIDE_DETECT_FLAG_APER_INCOMPLETE = 16, /**< the window (4 sigma_w) holds masked, non-finite
                                               or out-of-frame pixels */
    TIDE_DETECT_FLAG_DEBLEND_LIMIT = 64,   /**< deblending stopped at p->deblend_limit; the
                                               parent was kept whole (SE's "deblend overflow") */
    TIDE_DETECT_FLAG_COSMIC = 256,         /**< a footprint pixel has TIDE_MASK_COSMIC */
    TIDE_DETECT_FLAG_MASKED = 512,         /**< a footprint pixel has another bad mask bit
                                                (NODATA, BAD, HOT, COLD, USER) */
    TIDE_DETECT_FLAG_WIN_FAILED = 1024,    /**< windowed centroid did not converge or left the
                                               footprint: XWIN/YWIN are the barycentre */
    TIDE_DETECT_FLAG_FIRST_PASS = 2048     /**< set by the reduction pipeline, never by
                                                tide_detect: a first-pass source the second pass
                                                lost, kept with its first-pass measurements */
};

/** Detection parameters; tide_detect_params_default gives the values in brackets. */
typedef struct tide_detect_params {
    double thresh;             /**< detection threshold on the matched-filter S/N [5.0] */
    int64_t minarea;           /**< minimum footprint area, pixels above threshold [5] */
    double fwhm_guess;         /**< FWHM (pixels) of the Gaussian kernel used when psf == NULL,
                                    and of the centroid window then [3.0] */
    int deblend_nthresh;       /**< deblending levels; < 2 disables deblending [32] */
    double deblend_mincont;    /**< minimum contrast of a branch, fraction of the parent's summed
                                    S/N; >= 1 disables deblending [0.005] */
    int deblend_limit;         /**< most sources one footprint may split into [1024] */
    double saturation;         /**< pixel value of @p sub at which a pixel counts as saturated;
                                    <= 0: only the mask bits say so [0] */
    double gain;               /**< e-/ADU for the source Poisson term of the centroid errors;
                                    <= 0: background noise only [0] */
    uint16_t filter_mask_bits; /**< pixels with these bits count as 0 in the matched filter
                                    [NODATA | BAD | HOT | COLD | COSMIC] */
    uint16_t bad_mask_bits;    /**< pixels with these bits are skipped by the windowed
                                    measurements [NODATA | BAD | HOT | COLD | COSMIC] */
    int winpos_niter;  /**< maximum windowed-centroid iterations (SE WINPOS_NITERMAX) [16] */
    double winpos_eps; /**< convergence step, pixels [1e-4] */
} tide_detect_params;

/** Fill @p p with the defaults documented in brackets. */
TIDE_API void tide_detect_params_default(tide_detect_params *p);

/** Optional by-products of tide_detect_ex. Maps live where the context computes (host on a
 *  CPU context, device on a CUDA one). */
typedef struct tide_detect_maps {
    tide_image snr; /**< matched-filter S/N map (pixels only) */
    int32_t *seg;   /**< width*height (stride = width) segmentation: row index of the source
                         owning the pixel, -1 for none */
    int64_t width, height;
    tide_location location; /**< where snr and seg live */
    int64_t nparents;       /**< footprints before deblending */
} tide_detect_maps;

/** Release the maps of tide_detect_ex and zero the struct. */
TIDE_API void tide_detect_maps_free(tide_ctx *ctx, tide_detect_maps *m);

/** Detect sources on the background-subtracted frame @p sub with the noise map @p rms (same
 *  size; rms in the units of sub, one standard deviation per pixel).
 *
 *  @p psf: local PSF model (psf.h); NULL: a Gaussian of p->fwhm_guess. @p p may be NULL for
 *  the defaults. Images live on the host for a CPU context; a CUDA context takes device
 *  images (or host images, which are uploaded). @p sources must be an initialised (empty)
 *  host table; it receives one row per (deblended) source and these columns, 0-based pixel
 *  coordinates throughout:
 *
 *   X, Y               barycentre of the footprint's pixel values (SE X_IMAGE - 1) [pixel]
 *   XWIN, YWIN         SE's windowed centroid: x <- x + 2 sum w I (x_i - x) / sum w I with
 *                      w = exp(-r^2 / 2 sigma_w^2) over r <= 4 sigma_w, from the barycentre,
 *                      at most winpos_niter steps, until the step < winpos_eps. SE takes
 *                      sigma_w = d50 / sqrt(8 ln 2) from each object's half-light diameter;
 *                      tide uses the local PSF FWHM instead, sigma_w = FWHM_psf / 2.3548
 *                      (for a Gaussian star d50 equals the FWHM, so stars get SE's window and
 *                      the window does not depend on a noisy d50) [pixel]
 *   ERRX_WIN, ERRY_WIN sqrt of SE's ERRX2WIN = 4 sum w^2 s_i^2 (x_i - xwin)^2 / (sum w I)^2,
 *                      s_i^2 = rms^2 (+ max(I, 0) / gain when p->gain > 0) [pixel]
 *   X2, Y2, XY         second moments of the footprint (SE X2_IMAGE...; a footprint with
 *                      X2 Y2 - XY^2 < 1/144 gets 1/12 added to X2 and Y2, as SE does) [pixel^2]
 *   A, B               semi-major / minor RMS axes from X2, Y2, XY (SE A_IMAGE, B_IMAGE) [pixel]
 *   THETA              major-axis angle, degrees counter-clockwise from +x, in (-90, 90] [deg]
 *   FWHM               Gaussian-equivalent FWHM from the windowed second moments with the
 *                      window deconvolved: s^2 = M sigma_w^2 / (sigma_w^2 - M), M = half the
 *                      trace of the windowed covariance (exact for a Gaussian); for sources
 *                      much larger than the window, from X2, Y2 [pixel]
 *   PEAK               largest footprint pixel value of sub [sub units]
 *   XPEAK, YPEAK       pixel of the largest S/N (int64) [pixel]
 *   ISOAREA            footprint pixels (int64) [pixel^2]
 *   SNR                matched-filter S/N at the footprint's S/N peak
 *   FLUX_ISO           sum of footprint pixel values [sub units]
 *   FLUXERR_ISO        sqrt(sum rms^2 (+ max(I,0)/gain)) over the footprint [sub units]
 *   FLAGS              TIDE_DETECT_FLAG_* (int32)
 *   PARENT             index of the parent footprint (int64, 0-based)
 *
 *  A frame without sources gives 0 rows and status 0. Errors: TIDE_E_INVAL (bad arguments,
 *  sizes or locations), TIDE_E_RANGE (frame of 2^31 pixels or more), TIDE_E_NOMEM. */
TIDE_API int tide_detect(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                         const tide_psf_model *psf, const tide_detect_params *p,
                         tide_table *sources);

/** tide_detect, also returning the S/N map and segmentation when @p maps is non-NULL
 *  (release them with tide_detect_maps_free). */
TIDE_API int tide_detect_ex(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                            const tide_psf_model *psf, const tide_detect_params *p,
                            tide_table *sources, tide_detect_maps *maps);

/** tide_detect with the matched-filter S/N map given instead of made: @p snr is the map
 *  tide_detect_ex would return for these arguments (width × height, row stride = width, where
 *  the context computes; read only). The filtering is skipped; footprints, deblending and
 *  measurements are tide_detect's. For the negated difference image, whose S/N is exactly
 *  minus the difference's (the filter is linear and IEEE negation is exact). */
TIDE_API int tide_detect_with_snr(tide_ctx *ctx, const tide_image *sub, const tide_image *rms,
                                  const tide_psf_model *psf, const tide_detect_params *p,
                                  const tide_image *snr, tide_table *sources);

#ifdef __cplusplus
}
#endif
#endif
