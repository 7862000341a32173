/* dipole.h — difference-image candidates and batched dipole / point-source fits (issue 5).
 *
 * Candidates. tide_diff_candidates runs the detection stage (detect.h) twice on the
 * difference image, once on diff and once on -diff, with the noise map rms = sqrt(var), and
 * merges a positive and a negative detection closer than p->merge_radius into one dipole
 * candidate (greedy, closest pairs first).
 *
 * Fits. tide_dipole_fit_stamps fits n stamps (side × side pixels, row-major, x fastest) with
 * a weighted (w = 1/var) Levenberg–Marquardt least-squares fit (Press et al., Numerical
 * Recipes §15.5: solve (H + λ diag H) δ = J^T W r with H = J^T W J; ×10 on a rejected step;
 * on an accepted one λ /3 when the gain ratio ρ (actual over predicted χ² decrease) exceeds
 * 3/4 and λ = max(4λ, 1e-3) when ρ < 1/4, Madsen, Nielsen & Tingleff 2004 §3.2, which stops
 * the Gauss–Newton oscillation of a model that does not fit), one stamp per CUDA warp (converged
 * fits drop out on their own), and on the CPU with the same arithmetic in the same order (the 32
 * lanes are emulated: pixel t of the stamp is summed in lane t mod 32 and the lanes are merged in
 * the warp's shuffle tree). Two models, each fitted together with its single-source counterpart for
 * the dipole-vs-point test Δχ² = chi2_ps - chi2_dip:
 *
 *  TIDE_DIPOLE_GAUSS  m = A [G(x - xpos, y - ypos) - G(x - xneg, y - yneg)], G a unit-sum
 *                     elliptical Gaussian with widths exp(ls1), exp(ls2) along axes rotated
 *                     by theta, evaluated at pixel centres: 8 parameters (A, ls1, ls2, theta,
 *                     xpos, ypos, xneg, yneg), analytic Jacobian. Point source: A G(x - x0,
 *                     y - y0), 6 parameters.
 *  TIDE_DIPOLE_PSF    m = F [P(x - xpos, y - ypos) - P(x - xneg, y - yneg)], P the given PSF
 *                     stamp (psf_side², centred on its central pixel, sum 1 expected) shifted
 *                     by Keys' cubic convolution (a = -1/2; Keys 1981, IEEE ASSP 29, 1153),
 *                     which has a continuous gradient: 5 parameters (F, xpos, ypos, xneg,
 *                     yneg). Point source: F P(x - x0, y - y0), 3 parameters.
 *
 * The Gaussian dipole is fitted in (ln A, ln s1, ln s2, theta, lobe midpoint, ln half-separation,
 * angle), which straightens the flux-separation valley of overlapping lobes (dipole_math.h).
 * Start: the positive lobe at the stamp pixel of largest 3×3 matched S/N, the negative lobe
 * at the smallest, amplitude by linear least squares; the point source at the pixel of
 * largest |S/N|. A negative fitted dipole amplitude is turned positive by swapping the lobes.
 * Pixels with a mask bit in p->mask_bits, a non-finite value or variance, or variance <= 0
 * are ignored. Errors are the square roots of the diagonal of the covariance (J^T W J)^-1 at
 * the solution; a parameter the data do not constrain (theta of a round Gaussian) is held
 * fixed in the inversion and gets error NaN, without affecting the others. */
#ifndef TIDE_DIPOLE_H
#define TIDE_DIPOLE_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/detect.h"
#include "tide/image.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Fit models. */
typedef enum { TIDE_DIPOLE_GAUSS = 0, TIDE_DIPOLE_PSF = 1 } tide_dipole_model;

/** FIT_STATUS values (tide_dipole_fit.status and ps_status). Codes 4-6 say why a dipole fit
 *  that ran is not a measured dipole; they take precedence over 0-2 and are set for the
 *  dipole fit only (the point-source fit ends with 0-3). */
enum {
    TIDE_DIPOLE_CONVERGED = 0,  /**< an accepted step lowered χ² by less than p->tol · max(χ²,
                                     1); or by less than 1e-3 (× the reduced χ² when above 1)
                                     with the next step predicting less again (within ~0.03σ
                                     of the minimum); or no step could lower χ² (λ > 1e10) */
    TIDE_DIPOLE_MAXITER = 1,    /**< iteration limit: p->max_iter iterations without
                                     convergence */
    TIDE_DIPOLE_SINGULAR = 2,   /**< the normal matrix of the flux or positions is singular */
    TIDE_DIPOLE_BADINPUT = 3,   /**< fewer valid pixels than 2 × parameters, non-finite start */
    TIDE_DIPOLE_UNRESOLVED = 4, /**< unresolved (GAUSS model): the fitted lobe separation is
                                     smaller than its own error, or the lobes merged (< 0.02
                                     px): the data show a dipole moment, not two lobes */
    TIDE_DIPOLE_SINGLESIGN = 5, /**< single-signed: a fitted lobe centre lies outside the
                                     stamp, the data hold one sign only (a lone positive or
                                     negative source) */
    TIDE_DIPOLE_NOSIGNAL = 6    /**< no signal: the fitted dipole's S/N, sqrt(Σ w m²), is below
                                     8 (noise) */
};

/** Fit parameters; tide_dipole_params_default gives the values in brackets. */
typedef struct tide_dipole_params {
    tide_dipole_model model; /**< [TIDE_DIPOLE_GAUSS] */
    int max_iter;            /**< Levenberg–Marquardt iterations per fit [100] */
    double tol;              /**< converged when an accepted step lowers χ² by less than
                                  tol · max(χ², 1) [1e-10] */
    double lambda0;          /**< starting damping [1e-3] */
    double sigma_guess;      /**< starting Gaussian width, pixels [1.5] */
    uint16_t mask_bits;      /**< pixels with these mask bits are ignored [0xFFFF] */
    int fit_ps;              /**< also fit the single point source [1] */
    /** PSF for TIDE_DIPOLE_PSF: psf_side × psf_side floats (odd side), centred on the central
     *  pixel; psf_per_stamp = 0: one stamp for every fit, 1: n stamps, one per fit [NULL, 0,
     *  0]. Host memory for tide_dipole_fit_stamps, device memory for _device. */
    const float *psf;
    int psf_side;
    int psf_per_stamp;
} tide_dipole_params;

/** Fill @p p with the defaults documented in brackets. */
TIDE_API void tide_dipole_params_default(tide_dipole_params *p);

/** One fit. Positions are 0-based image pixel coordinates (stamp coordinates plus the stamp
 *  origin, see tide_dipole_fit_stamps); fluxes in the stamp's units × pixels (A or F: the
 *  flux of each lobe); NaN where not fitted. */
typedef struct tide_dipole_fit {
    double xpos, ypos, xneg, yneg, flux; /**< dipole: lobe centres, lobe flux */
    double xpos_err, ypos_err, xneg_err, yneg_err, flux_err;
    double sigma1, sigma2, theta; /**< GAUSS: widths [pixel], angle [rad] */
    double sigma1_err, sigma2_err, theta_err;
    double chi2_dip;            /**< Σ w (d - m)² of the dipole fit */
    double ps_x, ps_y, ps_flux; /**< point-source fit */
    double ps_x_err, ps_y_err, ps_flux_err;
    double chi2_ps;              /**< Σ w (d - m)² of the point source */
    int64_t npix;                /**< pixels used */
    int32_t status, niter;       /**< dipole TIDE_DIPOLE_*, iterations */
    int32_t ps_status, ps_niter; /**< point source */
} tide_dipole_fit;

/** Fit @p n stamps of @p stamp × @p stamp pixels (host arrays, stamp after stamp, row-major:
 *  pix[(i * stamp + v) * stamp + u]); @p var is required, @p mask may be NULL. Stamp pixel
 *  (u, v) is at image position (x0[i] - (stamp-1)/2 + u, y0[i] - (stamp-1)/2 + v): x0, y0 are
 *  the 0-based image coordinates of each stamp's central pixel (NULL: 0-based stamp
 *  coordinates are reported). @p p NULL: defaults. @p out receives n fits. Runs on the
 *  context's backend (GPU: one warp per stamp). Errors: TIDE_E_INVAL (bad arguments, stamp
 *  < 3, even psf_side), TIDE_E_NOMEM, TIDE_E_CUDA. A stamp that cannot be fitted is not an
 *  error: its status says why. */
TIDE_API int tide_dipole_fit_stamps(tide_ctx *ctx, int64_t n, int stamp, const float *pix,
                                    const float *var, const uint16_t *mask, const double *x0,
                                    const double *y0, const tide_dipole_params *p,
                                    tide_dipole_fit *out);

/** tide_dipole_fit_stamps with every array (and p->psf) in the CUDA context's device memory
 *  and @p out a device array; no transfers, no synchronisation (stream-ordered). For a
 *  pipeline that cuts stamps on the GPU. TIDE_E_NODEVICE on a CPU context. */
TIDE_API int tide_dipole_fit_device(tide_ctx *ctx, int64_t n, int stamp, const float *pix,
                                    const float *var, const uint16_t *mask, const double *x0,
                                    const double *y0, const tide_dipole_params *p,
                                    tide_dipole_fit *out);

/** Cut @p n stamps of @p stamp × @p stamp pixels centred on the pixels nearest (x[i], y[i])
 *  (0-based) from @p im (pix, var, mask; var and mask may be absent). Pixels outside the
 *  frame get value NaN, variance NaN and mask TIDE_MASK_NODATA; a missing var plane gives
 *  variance 1, a missing mask 0. @p im and the outputs live where the context computes (host
 *  on a CPU context, device on a CUDA one; the GPU cuts with one thread per stamp pixel).
 *  @p cx, @p cy (may be NULL) receive the central pixels used, as doubles, ready for x0/y0 of
 *  the fit. */
TIDE_API int tide_diff_cut_stamps(tide_ctx *ctx, const tide_image *im, int64_t n, const double *x,
                                  const double *y, int stamp, float *pix, float *var,
                                  uint16_t *mask, double *cx, double *cy);

/** Candidate parameters; tide_candidate_params_default gives the values in brackets. */
typedef struct tide_candidate_params {
    tide_detect_params det;    /**< detection on diff and -diff [detect defaults] */
    const tide_psf_model *psf; /**< matched-filter PSF (psf.h); NULL: Gaussian of
                                    det.fwhm_guess [NULL] */
    double merge_radius;       /**< pair a positive and a negative detection closer than
                                    this into one dipole, pixels; 0: 2 × det.fwhm_guess
                                    [0] */
} tide_candidate_params;

/** Fill @p p with the defaults documented in brackets. */
TIDE_API void tide_candidate_params_default(tide_candidate_params *p);

/** Candidate KIND values. */
enum { TIDE_CAND_NEGATIVE = -1, TIDE_CAND_POSITIVE = 1, TIDE_CAND_DIPOLE = 2 };

/** Positive and negative detections on the difference S/N map merged into candidates.
 *  @p diff needs pix and var (mask optional); host on a CPU context, host or device on a CUDA
 *  one. @p cands: an initialised empty host table receiving one row per candidate, sorted by
 *  SNR (descending; ties by Y then X), with columns (0-based pixels unless said):
 *   X, Y            centre: the detection's windowed centroid, for a dipole the midpoint of
 *                   its lobes [pixel]
 *   X_IMAGE, Y_IMAGE  X + 1, Y + 1 (FITS 1-based) [pixel]
 *   KIND            TIDE_CAND_* (int32)
 *   SNR             largest matched-filter S/N of its detections (positive)
 *   SNR_POS, SNR_NEG  S/N of the positive / negative detection (NaN if none)
 *   FLUX            FLUX_ISO of the positive part minus that of the negative part (so a
 *                   negative source has negative FLUX) [diff units]
 *   XPOS, YPOS, XNEG, YNEG  the lobes' windowed centroids (NaN if none) [pixel]
 *   FLAGS           OR of the detections' FLAGS (int32)
 *  Errors: TIDE_E_INVAL, TIDE_E_NOMEM, and those of tide_detect. */
TIDE_API int tide_diff_candidates(tide_ctx *ctx, const tide_image *diff,
                                  const tide_candidate_params *p, tide_table *cands);

/** Add the fit columns to @p t (host table with 0 rows or @p n rows; resized to n) and fill
 *  them from @p fit, positions FITS 1-based (value + 1) like X_IMAGE:
 *   DIP_XPOS, DIP_YPOS, DIP_XNEG, DIP_YNEG [pixel], DIP_FLUX, their *_ERR,
 *   DIP_SIGMA1, DIP_SIGMA2 [pixel], DIP_THETA [deg] (NaN unless @p gauss), DIP_CHI2,
 *   PS_X, PS_Y [pixel], PS_FLUX, their *_ERR, PS_CHI2, DELTA_CHI2 (= PS_CHI2 - DIP_CHI2),
 *   NPIX, NITER, FIT_STATUS, PS_STATUS (int32; TIDE_DIPOLE_* codes).
 *  Existing columns of those names are overwritten (they must have the types above). */
TIDE_API int tide_dipole_fits_to_table(const tide_dipole_fit *fit, int64_t n, int gauss,
                                       tide_table *t);

/** Fit every row of a candidate table (tide_diff_candidates; columns X, Y 0-based) on the
 *  difference image: stamps of @p stamp pixels (odd) centred on the candidates are cut where
 *  the context computes (on the GPU for a CUDA context, the image uploaded once if it is on
 *  the host), fitted there (@p p NULL: defaults), and the fit columns of
 *  tide_dipole_fits_to_table are added to @p cands. For TIDE_DIPOLE_PSF the PSF is, with
 *  @p psf non-NULL, the model's local PSF at each candidate (tide_psf_eval, one stamp per
 *  candidate), else p->psf (host memory). */
TIDE_API int tide_diff_fit_candidates(tide_ctx *ctx, const tide_image *diff, int stamp,
                                      const tide_psf_model *psf, const tide_dipole_params *p,
                                      tide_table *cands);

#ifdef __cplusplus
}
#endif
#endif
