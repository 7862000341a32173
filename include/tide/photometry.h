/* photometry.h — aperture, Kron (AUTO), PSF-fit and S/N-optimal photometry, batched.
 *
 * Every function measures n sources at once: the positions and other per-source inputs are
 * host arrays, the image (and the variance image) live where the context computes (host on a
 * CPU context; on a CUDA context a device image is the fast path, a host image is uploaded
 * for the call). On CUDA the per-source arrays are copied to the device in one batch, one
 * warp measures one source, and nothing loops over sources on the host. Results are host
 * arrays. Positions are 0-based pixel centres (pixel (i, j) covers [i-0.5, i+0.5] ×
 * [j-0.5, j+0.5]); the catalog writer converts to FITS 1-based.
 *
 * Geometry. Circular apertures use the exact area of intersection of the circle with each
 * pixel square (as sep's subpix=0 and photutils' method='exact'); a pixel value is weighted
 * by that area. Elliptical (Kron) apertures are sampled on a subpix × subpix grid in boundary
 * pixels (exact area for pixels wholly inside). The overlap math is one TIDE_HD function
 * shared by both backends (src/reduction/photometry/aperture_math.h).
 *
 * Masks. A pixel is *excluded* when its mask has any of p->mask_bits, or when its value or
 * variance is not finite. Excluded pixels never enter a sum; their overlap area is reported
 * and the source flagged TIDE_PHOT_MASKED. Optionally (mask_correct) an excluded pixel is
 * replaced by the image at its mirror point about the aperture centre (bilinear, else the
 * nearest pixel: Source Extractor's MASK_TYPE CORRECT), and where no mirror can be read the
 * flux is scaled up by area / used area (sep's correction) for the rest (aperture_pixel.h).
 * Pixels outside the frame are excluded too
 * and flag TIDE_PHOT_TRUNCATED (Source Extractor's flag 16, "aperture data incomplete").
 *
 * Variance (per aperture, ADU²), from the noise model:
 *     V = Σ w_i v_i                       sky variance image (background + read noise, from
 *                                         tide_noise_model; co-adds are already in it)
 *       + max(F, 0) / (gain · ncombine)   source Poisson: an average of ncombine frames has
 *                                         effective gain gain·ncombine (Source Extractor's
 *                                         convention); skipped when gain <= 0
 *       + A² σ_b²                         local annulus background error (A = aperture area,
 *                                         σ_b = error of the clipped median, see bkgann)
 *       + (F σ_C / C)²                    aperture-correction error, where one is applied
 *                                         (tide_optimal_photometry)
 *   w_i is the pixel's overlap area (like sep); with mask_correct, a mirrored pixel adds its
 * mirror's variance, and V is multiplied by k² where k = area / used area is the flux scale factor.
 *
 * Flags (int32, OR-ed over a source's apertures) are Source Extractor's where one exists and
 * tide's own bits above 2^11 (detection owns the low SE bits it sets). */
#ifndef TIDE_PHOTOMETRY_H
#define TIDE_PHOTOMETRY_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Photometry flags. */
enum {
    TIDE_PHOT_TRUNCATED = 16,         /**< aperture crosses the frame edge (SE flag 16) */
    TIDE_PHOT_MASKED = 1 << 12,       /**< excluded (masked/NaN) pixels inside the aperture */
    TIDE_PHOT_BKG_FAILED = 1 << 13,   /**< local annulus background: too few valid pixels */
    TIDE_PHOT_FIT_FAILED = 1 << 14,   /**< PSF fit / Kron moment / optimal radius undefined */
    TIDE_PHOT_APCORR_EXTRAP = 1 << 15 /**< optimal radius clipped to the law's valid range */
};

/** Largest number of annulus pixels one source may use for its local background (the CUDA
 *  path sorts them in shared memory); a bigger annulus is refused with TIDE_E_RANGE. */
#define TIDE_PHOT_ANNULUS_MAX 6144

/** Options of aperture photometry. */
typedef struct tide_aper_params {
    uint16_t mask_bits;  /**< mask bits that exclude a pixel [0xFFFF: any bit] */
    int mask_correct;    /**< 1: replace excluded pixels by their mirror about the centre,
                              else scale by area / used area; 0: only exclude and report [0] */
    double gain;         /**< e-/ADU for the source Poisson term; <= 0: no Poisson term [0] */
    int ncombine;        /**< frames averaged into the image (effective gain ×ncombine) [1] */
    double bkgann_in;    /**< local background annulus inner radius, px; 0 = none [0] */
    double bkgann_out;   /**< annulus outer radius, px (> bkgann_in) [0] */
    double bkgann_sigma; /**< clip at median ± sigma·std [3.0] */
    int bkgann_maxiters; /**< clipping iterations [5] */
    int bkgann_minpix;   /**< fewer valid annulus pixels: no subtraction, flag [10] */
} tide_aper_params;

/** Fill @p p with the defaults in brackets above. */
TIDE_API void tide_aper_params_default(tide_aper_params *p);

/** Optional extra outputs of tide_aperture_photometry_ex; every pointer may be NULL. */
typedef struct tide_aper_extra {
    double *area;        /**< n*nr: total overlap area of the aperture inside the frame, px² */
    double *masked_area; /**< n*nr: overlap area of excluded pixels, px² */
    int32_t *aper_flags; /**< n*nr: flags of each aperture separately */
    double *bkg;         /**< n: local background per pixel subtracted (0 without annulus) */
    double *bkg_err;     /**< n: its error (of the clipped median), ADU */
} tide_aper_extra;

/** Circular aperture photometry with exact pixel overlap at @p nr radii (px, > 0) around n
 *  positions. @p sub: background-subtracted image with optional mask plane; @p var: sky
 *  variance image (ADU²) — NULL means sub->var if present, else no sky variance term.
 *  @p p NULL means defaults. Outputs: @p flux and @p fluxerr (n*nr, source-major: element
 *  i*nr + k is source i, radius k; ADU) and @p flags (n; may be NULL). A source whose
 *  aperture has no valid pixel gets flux 0 (not NaN) and its flags say why. */
TIDE_API int tide_aperture_photometry(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                                      int64_t n, const double *x, const double *y, int nr,
                                      const double *radii, const tide_aper_params *p, double *flux,
                                      double *fluxerr, int32_t *flags);

/** As tide_aperture_photometry, with the extra outputs of @p ex (may be NULL). */
TIDE_API int tide_aperture_photometry_ex(tide_ctx *ctx, const tide_image *sub,
                                         const tide_image *var, int64_t n, const double *x,
                                         const double *y, int nr, const double *radii,
                                         const tide_aper_params *p, double *flux, double *fluxerr,
                                         int32_t *flags, tide_aper_extra *ex);

/** One circular aperture per source with its own radius @p r[i] (px). Outputs have n
 *  elements. Used for S/N-optimal photometry; same conventions as above. */
TIDE_API int tide_aperture_photometry_r(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                                        int64_t n, const double *x, const double *y,
                                        const double *r, const tide_aper_params *p, double *flux,
                                        double *fluxerr, int32_t *flags);

/* ---- Kron (AUTO) photometry ------------------------------------------------------------ */

/** Options of Kron photometry (Source Extractor's PHOT_AUTOPARAMS and analysis range). */
typedef struct tide_kron_params {
    double kron_fact;      /**< Kron factor k [2.5] */
    double min_radius;     /**< smallest k·r1 in units of A, B (SE PHOT_AUTOPARAMS[1]) [3.5] */
    double moment_nsig;    /**< first moment measured within this many A, B (SE KRON_NSIG) [6] */
    int subpix;            /**< sub-samples per side in boundary pixels of the AUTO ellipse; 1 =
                                pixel centre in/out as Source Extractor; 0 = 5 [5] */
    tide_aper_params aper; /**< masks, gain, ncombine (annulus options ignored) */
} tide_kron_params;

/** Fill @p p with the defaults in brackets above. */
TIDE_API void tide_kron_params_default(tide_kron_params *p);

/** FLUX_AUTO: for each source, the first moment r1 = Σ r I / Σ I over the pixels whose
 *  centres lie within the ellipse of scale moment_nsig (r measured in units of the ellipse:
 *  r² = cxx dx² + cyy dy² + cxy dx dy with semi-axes A, B), then the Kron radius
 *  K = max(kron_fact · r1, min_radius) (SE's KRON_RADIUS, units of A and B) and the flux in
 *  the ellipse of semi-axes K·A, K·B. @p a, @p b (px, > 0) and @p theta (degrees,
 *  counter-clockwise from +x, SE's THETA_IMAGE) per source. Outputs (n each; any may be NULL
 *  except flux): @p kron_radius, @p flux, @p fluxerr, @p flags (TIDE_PHOT_FIT_FAILED when
 *  Σ I <= 0 or r1 <= 0: then K = min_radius, or kron_fact·1 if min_radius is 0). */
TIDE_API int tide_kron_photometry(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                                  int64_t n, const double *x, const double *y, const double *a,
                                  const double *b, const double *theta, const tide_kron_params *p,
                                  double *kron_radius, double *flux, double *fluxerr,
                                  int32_t *flags);

/* ---- PSF-fit photometry ---------------------------------------------------------------- */

struct tide_psf_model;

/** Options of PSF-fit photometry. */
typedef struct tide_psffit_params {
    uint16_t mask_bits; /**< excluded mask bits [0xFFFF] */
    double gain;        /**< e-/ADU: the weights include the model's Poisson variance
                             F·P_i/(gain·ncombine) (one re-weighted iteration); <= 0: sky
                             variance only [0] */
    int ncombine;       /**< co-added frames [1] */
    double fit_radius;  /**< use pixels within this radius of the position, px; 0 = the whole
                             stamp [0] */
    int fit_background; /**< 1: fit a constant background with the flux [0] */
} tide_psffit_params;

/** Fill @p p with the defaults in brackets above. */
TIDE_API void tide_psffit_params_default(tide_psffit_params *p);

/** PSF-fit flux at fixed positions from per-source PSF stamps. @p stamps holds n stamps of
 *  @p side × @p side (odd) floats, row-major, each the PSF *as sampled on the image pixels*
 *  around source i: stamp pixel (u, v) is image pixel (round(x_i) - side/2 + u,
 *  round(y_i) - side/2 + v) and the stamp already contains the sub-pixel offset of the source
 *  and sums to 1 (normalised to total flux). Weighted linear least squares with weights
 *  1/var_i: F = Σ w d P / Σ w P², fluxerr = sqrt(1 / Σ w P²) (the conditional error at the
 *  final weights), chi2 = Σ w (d - F P)² / (npix - nparam) (reduced). Excluded and
 *  out-of-frame pixels are left out (TIDE_PHOT_MASKED / TIDE_PHOT_TRUNCATED); a fit without
 *  freedom or with a singular system gives NaN flux, error and chi2 and TIDE_PHOT_FIT_FAILED.
 *  Requires a variance (var, or sub->var). @p chi2 and @p flags may be NULL. */
TIDE_API int tide_psf_photometry_stamps(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                                        int64_t n, const double *x, const double *y, int side,
                                        const float *stamps, const tide_psffit_params *p,
                                        double *flux, double *fluxerr, double *chi2,
                                        int32_t *flags);

/** PSF-fit flux at fixed positions with the local PSF of @p psf: every source's stamp is the
 *  one tide_psf_eval_pixel (psf.h) gives, evaluated where the context computes from the model
 *  itself (basis images and coefficients, copied once) and fitted there as
 *  tide_psf_photometry_stamps does, with default parameters; on CUDA one block per source
 *  does both, nothing per source runs on the host. An invalid model is TIDE_E_INVAL. */
TIDE_API int tide_psf_photometry(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                                 const struct tide_psf_model *psf, int64_t n, const double *x,
                                 const double *y, double *flux, double *fluxerr, double *chi2);

/** As tide_psf_photometry with explicit parameters and flags (@p p NULL: defaults). */
TIDE_API int tide_psf_photometry_ex(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                                    const struct tide_psf_model *psf, int64_t n, const double *x,
                                    const double *y, const tide_psffit_params *p, double *flux,
                                    double *fluxerr, double *chi2, int32_t *flags);

/* ---- aperture corrections and S/N-optimal radius ---------------------------------------- */

/** Options of the aperture-correction model. */
typedef struct tide_apcorr_params {
    double fwhm;           /**< PSF FWHM, px (required, > 0) */
    double r_ref;          /**< reference ("total") radius, px; 0 = 4·FWHM [0] */
    double r_min;          /**< smallest optimal radius, px; 0 = 0.5·FWHM [0] */
    double r_max;          /**< largest optimal radius, px; 0 = 3·FWHM (≤ r_ref) [0] */
    double dr;             /**< radius grid step of the growth curves, px [0.1] */
    int degree;            /**< polynomial degree of the correction over the field [2]; lowered
                                automatically when there are few stars */
    double snr_min_corr;   /**< growth-curve (correction) stars: S/N_det at least [100] */
    double snr_min_law;    /**< optimal-radius law stars: S/N_det at least [10] */
    double isolation;      /**< no other source within this distance, px; 0 = r_ref + 2·FWHM [0] */
    int max_stars;         /**< use at most this many calibration stars (highest S/N) [500] */
    tide_aper_params aper; /**< masks, gain, ncombine for all sums (annulus options ignored) */
} tide_apcorr_params;

/** Fill @p p with defaults (fwhm must then be set). */
TIDE_API void tide_apcorr_params_default(tide_apcorr_params *p);

/** A fitted aperture-correction model: C(r; x, y) = F(r) / F(r_ref) on a radius grid, each
 *  grid radius a polynomial in u = (2x - (W-1))/(W-1), v likewise (terms 1, u, v, u², uv,
 *  v², ... as tide_psf_model), and the S/N-optimal radius law
 *  log10 r_opt = law_a · log10 S/N_det + law_b. */
typedef struct tide_apcorr_model {
    int64_t width, height; /**< frame the model covers */
    double r_ref, r_min, r_max, dr;
    int nrad; /**< grid radii r_k = r_min + k·dr, k < nrad, covering r_min..r_max */
    int degree, ncoef;
    double *coef;        /**< nrad * ncoef, host */
    double *err;         /**< nrad: error of C (clipped residual rms / sqrt(n)) */
    double law_a, law_b; /**< optimal-radius law */
    double law_rms;      /**< rms of log10 r_opt about the law (dex) */
    int nstars_corr;     /**< stars in the correction fit */
    int nstars_law;      /**< stars in the law fit */
    int law_fallback;    /**< 1: fewer than 5 law stars or S/N range < 0.3 dex: a constant
                              radius (the stars' median optimum, else 0.68·FWHM) */
} tide_apcorr_model;

/** Build the model from detected sources: selects isolated, unflagged stars (flags[i] == 0,
 *  no other source within p->isolation, aperture inside the frame), measures their growth
 *  curves on the fine grid with exact-overlap sums (batched on the device on CUDA), fits the
 *  correction over the field with 3σ clipping, finds each law star's S/N-optimal radius from
 *  a smooth (quadratic in r) fit of its measured S/N(r) around the maximum, and fits the law
 *  with clipping. @p snr: detection S/N per source; @p flags may be NULL. TIDE_E_EMPTY when
 *  fewer than 3 correction stars qualify. Free with tide_apcorr_free. */
TIDE_API int tide_apcorr_build(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                               int64_t n, const double *x, const double *y, const double *snr,
                               const int32_t *flags, const tide_apcorr_params *p,
                               tide_apcorr_model *out);

/** Release the model's arrays. */
TIDE_API void tide_apcorr_free(tide_apcorr_model *m);

/** The aperture correction C and its error at radius @p r, position (x, y). */
TIDE_API int tide_apcorr_eval(const tide_apcorr_model *m, double r, double x, double y, double *c,
                              double *c_err);

/** The optimal radius for a detection S/N: clip(10^(a log10 snr + b), r_min, r_max). */
TIDE_API double tide_apcorr_radius(const tide_apcorr_model *m, double snr);

/** FLUX_OPT, FLUXERR_OPT, RAD_OPT: for each source the aperture flux at its S/N-optimal
 *  radius divided by the local aperture correction (flux within r_ref), with the error of
 *  the correction added (header formula). Batched on the device on CUDA (radius law, sums and
 *  correction all in kernels). @p rad_opt and @p flags may be NULL. */
TIDE_API int tide_optimal_photometry(tide_ctx *ctx, const tide_image *sub, const tide_image *var,
                                     const tide_apcorr_model *m, int64_t n, const double *x,
                                     const double *y, const double *snr, const tide_aper_params *p,
                                     double *flux_opt, double *fluxerr_opt, double *rad_opt,
                                     int32_t *flags);

#ifdef __cplusplus
}
#endif
#endif
