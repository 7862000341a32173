/* psf.h — the PSF model: a reference PSF plus K eigen-PSFs whose weights are low-order
 * polynomials of the position, and a Moffat summary (FWHM, beta, ellipticity, angle) at the
 * frame centre and corners.
 *
 * How a model is built (tide_psf_build):
 *  1. Candidates (from a first detection pass) are screened on the host list: inside the
 *     frame by a stamp, no other candidate within the isolation radius unless it is much
 *     fainter, flux in range; the brightest 4 × max_stars survive. After step 2, stars with
 *     S/N in range and a size near the median (no galaxies or blends) are kept, highest S/N
 *     first.
 *  2. Per candidate, batched (one GPU block per star; one OpenMP task per star on the CPU):
 *     windowed centroid (Source Extractor's XWIN iteration, Gaussian window of the FWHM
 *     guess), aperture flux and S/N from the noise map, rejection when any pixel of the stamp
 *     (plus the interpolation margin) carries an excluded mask bit, is not finite, or reaches
 *     the saturation level.
 *  3. Per selected star, batched: a stamp resampled with Lanczos-3 so the star's centroid
 *     falls exactly on the stamp's central pixel (never rounded to a pixel), divided by its
 *     sum.
 *  4. Reference PSF: per-pixel iteratively sigma-clipped mean of the stamps of the stars in
 *     the central part of the frame.
 *  5. PCA of the stamps' deviations from the reference, weighted by the stars' noise
 *     (leading eigenvectors by Lanczos iteration with full reorthogonalisation from a fixed
 *     start, the small tridiagonal problem by Householder + implicit QL: deterministic; each
 *     eigen-PSF has unit norm and its largest-magnitude pixel positive). The star
 *     coefficients of the first K eigen-PSFs are fitted with polynomials of the position
 *     (weighted least squares). Stars whose stamps the model misses badly (a neighbour, a
 *     cosmic ray) are dropped and steps 4-5 repeated (at most twice).
 *  6. A pixel-integrated elliptical Moffat is fitted (Levenberg–Marquardt) to the model at
 *     the centre (all of amplitude, x0, y0, the quadratic form of the axes and beta free) and
 *     at the four corners (beta held at the centre's value: the wings of a model evaluated
 *     at the edge of the star distribution are its least certain part, and a free beta
 *     trades against the FWHM).
 * With fewer than min_stars usable stars the model is a single circular Gaussian (the FWHM
 * measured on the few stars there are, else fwhm_guess), `gaussian_fallback` is 1 and a
 * warning is logged; tide_psf_to_header writes PSFMODEL = 'GAUSSIAN' so the catalog says so.
 * A model that fails its checks falls back the same way, the reason in `fallback_why` and
 * the log: with the summary on, a Moffat summary whose wings put more than 5% of the flux
 * outside the stamp (1 - F(<r) = (1 + r²/alpha²)^(1-beta) at r = stamp/2: a beta near 1 is
 * the fit of neighbours' light, not a PSF the stamp can hold) or that could not be fitted;
 * and a median residual RMS above 10% of the stars' peak.
 *
 * Coordinates are 0-based pixel centres. Everything is deterministic: the same inputs give a
 * bitwise identical model on one backend; CPU and CUDA stamps agree to ~1e-6. */
#ifndef TIDE_PSF_H
#define TIDE_PSF_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/header.h"
#include "tide/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest stamp side tide_psf_build makes (pixels). */
#define TIDE_PSF_MAX_STAMP 63
/** Largest polynomial degree of the coefficient fields. */
#define TIDE_PSF_MAX_DEGREE 4
/** Largest number of eigen-PSFs. */
#define TIDE_PSF_MAX_K 16

/** Why a candidate was not used (bits of tide_psf_model.reject counts; see below). */
enum {
    TIDE_PSF_REJ_EDGE = 1 << 0,      /**< stamp (+ interpolation margin) leaves the frame */
    TIDE_PSF_REJ_MASKED = 1 << 1,    /**< an excluded mask bit or a non-finite pixel */
    TIDE_PSF_REJ_SATURATED = 1 << 2, /**< a pixel at or above the saturation level */
    TIDE_PSF_REJ_CENTROID = 1 << 3,  /**< centroid diverged or moved > fwhm_guess */
    TIDE_PSF_REJ_SNR = 1 << 4,       /**< S/N or flux outside the accepted range */
    TIDE_PSF_REJ_CROWDED = 1 << 5,   /**< a comparable candidate inside the isolation radius */
    TIDE_PSF_REJ_OUTLIER = 1 << 6,   /**< the model misses the star's stamp badly */
    TIDE_PSF_REJ_SIZE = 1 << 7       /**< size far from the stars' median: galaxy, blend */
};

/** Parameters of tide_psf_build. tide_psf_params_default gives the values in brackets. */
typedef struct tide_psf_params {
    double fwhm_guess;     /**< expected FWHM, pixels: centroid window, stamp size, S/N
                                aperture, Gaussian fallback [3.0] */
    int stamp;             /**< stamp side, odd pixels; 0 = 6 × fwhm_guess rounded up to odd,
                                clamped to [15, 63] [0] */
    double isolation;      /**< no candidate within this radius (pixels) unless it is
                                iso_flux_ratio times fainter; 0 = stamp side / 2 + 2 [0] */
    double iso_flux_ratio; /**< a neighbour fainter than flux / this is tolerated [20] */
    double snr_min;        /**< least aperture S/N (radius 1.5 × fwhm_guess) of a PSF star [30] */
    double snr_max;        /**< largest S/N; 0 = no limit [0] */
    double flux_min;       /**< least candidate flux (data units); 0 = no limit [0] */
    double flux_max;       /**< largest candidate flux; 0 = no limit [0] */
    double saturation;     /**< pixels at or above this value (background-subtracted units)
                                reject a star; 0 = rely on the mask plane only [0] */
    uint16_t mask_bits;    /**< mask bits that reject a star when found in its stamp [all bits
                                except TIDE_MASK_INTERP] */
    int max_stars;         /**< most PSF stars used (highest S/N first) [500] */
    int min_stars;         /**< fewer usable stars: Gaussian fallback [10] */
    int k;                 /**< eigen-PSFs (limited by the number of stars) [5] */
    int degree;            /**< polynomial degree of the coefficient fields (lowered when
                                there are too few stars: at least 2 stars per term) [2] */
    double central_fraction; /**< reference PSF from stars with |u|, |v| <= this, u and v the
                              position scaled to [-1, 1] (at least 5 stars are taken,
                              nearest the centre first) [0.5] */
    double clip_sigma;       /**< sigma-clipping threshold of the reference stack [3] */
    int clip_iters;          /**< most clipping iterations [10] */
    double outlier_sigma;    /**< stars whose model residual is above the median by this many
                                 robust sigmas are dropped [5] */
    double size_tolerance;   /**< candidates whose size (windowed second moment, as a
                                Gaussian FWHM) differs from the median of the well-measured
                                candidates by more than this fraction are dropped: galaxies and
                                blends (PSFEx's SAMPLE_VARIABILITY in spirit) [0.25] */
    int summary;             /**< 1: fit the Moffat summary (fwhm, beta, ellipticity, theta and
                                  the corner FWHMs of tide_psf_model); 0: leave them 0, for a
                                  caller that only needs the model (the fits take a few ms) [1] */
} tide_psf_params;

/** Fill @p p with the defaults in brackets above. */
TIDE_API void tide_psf_params_default(tide_psf_params *p);

/** A PSF model. All arrays are host memory owned by the model (tide_psf_free). */
typedef struct tide_psf_model {
    int64_t width, height; /**< frame the model covers */
    int stamp;             /**< odd stamp side, pixels; the PSF centre is pixel
                                (stamp/2, stamp/2) of a stamp */
    int nbasis;            /**< 1 + K: basis[0] = reference PSF, then K eigen-PSFs */
    int degree, ncoef;     /**< polynomial degree, terms per basis coefficient */
    float *basis;          /**< nbasis * stamp * stamp, row-major, x fastest */
    double *coef;          /**< nbasis * ncoef; coefficient of basis b at (x, y) is
                                sum_t coef[b*ncoef+t] * term_t(u, v), u = (2x - (W-1))/(W-1),
                                v likewise with H, terms ordered 1, u, v, u^2, uv, v^2,
                                u^3, u^2v, ... (tide_psf_terms); coef of basis 0 is 1, 0... */
    double fwhm, beta, ellipticity, theta; /**< Moffat fit at the frame centre: FWHM
                                     (pixels, geometric mean of the axes, 2 alpha
                                     sqrt(2^(1/beta) - 1)), beta, 1 - b/a, major-axis angle
                                     (degrees from +x towards +y, (-90, 90]). Gaussian
                                     fallback: beta = 0 */
    double fwhm_corner[4];                 /**< FWHM at (0,0), (W-1,0), (0,H-1), (W-1,H-1) */
    double ellip_corner[4];                /**< ellipticity at the same corners */
    int nstars;                            /**< stars used in the final model */
    int nref;                              /**< of which in the reference stack */
    int ncandidates;                       /**< candidates given */
    int nreject[8];          /**< candidates rejected per reason: nreject[i] counts bit
                                  1 << i of TIDE_PSF_REJ_* (the first reason found) */
    double size_median;      /**< median Gaussian-equivalent FWHM of the candidates */
    int gaussian_fallback;   /**< 1: a Gaussian (see header comment) */
    char fallback_why[16];   /**< why the fallback: "NSTARS" (too few stars), "WINGS" (the
                                  Moffat summary puts more than 5% of the flux outside the
                                  stamp: beta too small for the stamp, or no Moffat fits),
                                  "RESID" (median residual above 10% of the peak),
                                  "CORNERS" (a corner's FWHM beyond a factor 2 of the
                                  centre's, also after a refit constant over the
                                  frame, degree 0, which comes first); "" */
    double resid_rms;        /**< median over stars of the RMS of (stamp - model) divided
                                  by the stamp's peak; 0 for the fallback */
    double *star_x, *star_y; /**< nstars positions (recentred) of the stars used */
} tide_psf_model;

/** Build a PSF model from a background-subtracted frame.
 *  @p sub: the frame (host image on a CPU context; device or host image on a CUDA context),
 *  with a mask plane when one exists. @p rms: per-pixel noise (same size and location as
 *  @p sub), or NULL: the S/N then uses the RMS of each stamp's border pixels.
 *  @p x, @p y: n candidate positions (0-based, host arrays); @p flux: their fluxes (host,
 *  any consistent unit; NULL = judge by S/N only). @p p: NULL = defaults.
 *  On success @p out holds a model (free with tide_psf_free), possibly the Gaussian fallback.
 *  Errors: TIDE_E_INVAL (bad arguments), TIDE_E_NOMEM, TIDE_E_CUDA. */
TIDE_API int tide_psf_build(tide_ctx *ctx, const tide_image *sub, const tide_image *rms, int64_t n,
                            const double *x, const double *y, const double *flux,
                            const tide_psf_params *p, tide_psf_model *out);

/** The PSF at 0-based position (x, y), centred on the stamp's central pixel, as
 *  m->stamp × m->stamp floats summing to 1. Positions outside the frame are clamped to its
 *  edge (the polynomials are not extrapolated). */
TIDE_API int tide_psf_eval(const tide_psf_model *m, double x, double y, float *stamp_out);

/** The PSF of a star at (x, y) as it falls on the pixel grid: the stamp's central pixel is
 *  the pixel (round(x), round(y)) and the star sits at its sub-pixel offset (Lanczos-3 shift
 *  of tide_psf_eval's stamp, then normalised to sum 1). For PSF photometry and subtraction. */
TIDE_API int tide_psf_eval_pixel(const tide_psf_model *m, double x, double y, float *stamp_out);

/** Values of the polynomial terms 1, u, v, u², uv, v², u³, u²v, uv², v³, ... up to
 *  @p degree at (u, v); returns the number of terms, (degree+1)(degree+2)/2. */
TIDE_API int tide_psf_terms(int degree, double u, double v, double *terms);

/** Write the model summary into a header: FWHM, PSFBETA, PSFELLIP, PSFTHETA, FWHMLL (0,0),
 *  FWHMLR (W-1,0), FWHMUL (0,H-1), FWHMUR (W-1,H-1) (pixels), PSFNSTAR, PSFNBAS, PSFDEG,
 *  PSFSTAMP, PSFRESID and PSFMODEL ('PCA' or 'GAUSSIAN' for the fallback), and for a
 *  fallback PSFFBWHY (its fallback_why). */
TIDE_API int tide_psf_to_header(const tide_psf_model *m, tide_header *h);

/** Release the model's arrays and zero it. NULL is a no-op. */
TIDE_API void tide_psf_free(tide_psf_model *m);

#ifdef __cplusplus
}
#endif
#endif
