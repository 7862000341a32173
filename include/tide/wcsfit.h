/* wcsfit.h — fitting a TAN-SIP WCS to matched pixel ↔ sky pairs, and astrometric refinement:
 * crossmatch the sources of a frame with a reference catalog through a first WCS, fit, reject
 * outliers, rematch with a shrinking radius, until the matched set is stable (issue 4).
 *
 * The model (Calabretta & Greisen 2002, A&A 395, 1077; SIP: Shupe et al. 2005, ASP Conf. 347,
 * 491). With u = x − CRPIX1, v = y − CRPIX2 (FITS 1-based CRPIX, so u, v are offsets from the
 * reference pixel),
 *     (ξ, η) = CD · (u + A(u, v), v + B(u, v))
 * where A, B are polynomials of total degree 2..order (their constant and linear terms would be
 * degenerate with CRVAL and CD and are left out), and (ξ, η) are the gnomonic (TAN) standard
 * coordinates of the sky position about CRVAL (LONPOLE 180). The fit is linear: ξ and η are
 * each a full polynomial of degree `order` in (u, v); its constant term says how far CRVAL is
 * from the sky position of CRPIX, so CRVAL is moved there and the fit repeated until the
 * constant is negligible; its linear terms are CD; CD⁻¹ times the higher terms are A and B.
 * The inverse polynomials AP, BP (used by wcslib and tide_wcs_tansip_sky2pix as the first
 * guess of their iterative inversion) are fitted afterwards on a dense grid over the frame.
 *
 * Coordinates: pixels are tide's 0-based pixel centres; sky positions are degrees (RA, Dec) in
 * the frame of the reference catalog. */
#ifndef TIDE_WCSFIT_H
#define TIDE_WCSFIT_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/wcs.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Highest forward SIP order tide_wcsfit_tansip fits. */
#define TIDE_WCSFIT_MAX_ORDER 5

/** Options of tide_wcsfit_tansip. tide_wcsfit_defaults gives the values in brackets. */
typedef struct tide_wcsfit_params {
    int sip_order;     /**< forward SIP order: 0 = pure TAN, or 2..TIDE_WCSFIT_MAX_ORDER [3] */
    double crpix[2];   /**< reference pixel, 0-based; NaN = the frame centre [NaN, NaN] */
    double crval[2];   /**< first guess of CRVAL (deg); NaN = the mean of the sky positions;
                            the fit moves it to the sky position of CRPIX [NaN, NaN] */
    int auto_order;    /**< 1: when the stars are too few for sip_order (fewer than
                            min_per_coef per coefficient of one axis), cover too little of
                            the frame (pairs in fewer than min(16, coefficients) cells of a
                            4×4 grid over it), or the fit is singular
                            or folds the frame over, use the highest order that works and say
                            so in the info; 0: fail instead [1] */
    int min_per_coef;  /**< stars per polynomial coefficient that auto_order asks for [5] */
    double inv_tol_px; /**< the inverse AP/BP is fitted with increasing order (from
                            sip_order + 1, at most 9) until its largest error on the grid is
                            below this, pixels [1e-4] */
    char radesys[16];  /**< RADESYS of the result [""]: "" = ICRS */
} tide_wcsfit_params;

/** What a fit gave. */
typedef struct tide_wcsfit_info {
    int64_t n;             /**< pairs used (finite, positive weight) */
    int sip_order_used;    /**< forward order actually fitted (may be lower than asked) */
    int inv_order;         /**< order of AP/BP (0 when sip_order_used is 0) */
    int order_lowered;     /**< 1 when auto_order lowered the order */
    int crval_iter;        /**< fits made while moving CRVAL */
    double rms_px;         /**< unweighted RMS of the 2-D residuals, pixels */
    double wrms_px;        /**< weighted RMS of the 2-D residuals, pixels */
    double rms_ra_arcsec;  /**< RMS of (fit − reference) in RA·cos(Dec), arcsec */
    double rms_dec_arcsec; /**< RMS of (fit − reference) in Dec, arcsec */
    double inv_maxerr_px;  /**< largest error of AP/BP alone on the frame grid, pixels */
    double scale_arcsec;   /**< sqrt|det CD|, arcsec per pixel */
    double sip_max_px;     /**< largest |(A, B)| over the frame, pixels */
} tide_wcsfit_info;

/** Defaults (values in brackets above). */
TIDE_API void tide_wcsfit_defaults(tide_wcsfit_params *p);

/** Weighted least-squares fit of a TAN (+SIP) WCS to @p n pairs: 0-based pixel positions
 *  @p x, @p y and sky positions @p ra, @p dec (degrees). @p weight (may be NULL = all 1) is the
 *  weight of each pair, typically 1/σ² of its centroid (pixels⁻²); pairs with a non-finite
 *  value or a weight <= 0 are ignored. @p width, @p height give the frame (the default CRPIX,
 *  the grid of the inverse fit and the fold-over check). @p p NULL = defaults. The polynomial
 *  is solved in coordinates scaled by half the frame size, by Cholesky on the column-scaled
 *  normal equations (double precision).
 *  On success *@p out is a new WCS (built through header cards and tide_wcs_from_header, so
 *  wcslib sees a standard "RA---TAN-SIP" WCS) and @p info (may be NULL) is filled; @p dx,
 *  @p dy (n each, may be NULL) receive the residual of each pair, (position predicted from
 *  the sky position − measured position) in pixels — also for pairs of weight 0, which the
 *  fit ignores (so a caller can readmit them); NaN for pairs with a non-finite coordinate.
 *  The RMS values of @p info are over the pairs used.
 *  Errors: TIDE_E_INVAL (bad arguments, sip_order out of range), TIDE_E_NOSOLVE (fewer than 3
 *  usable pairs, all pairs collinear or coincident, or — without auto_order — too few pairs
 *  for the order / a singular or folding fit), TIDE_E_WCS, TIDE_E_NOMEM. */
TIDE_API int tide_wcsfit_tansip(const double *x, const double *y, const double *ra,
                                const double *dec, const double *weight, int64_t n, int64_t width,
                                int64_t height, const tide_wcsfit_params *p, tide_wcs **out,
                                tide_wcsfit_info *info, double *dx, double *dy);

/* ---- refinement: iterate crossmatch + fit + rejection ----------------------------------- */

/** Options of tide_astrom_refine. tide_refine_defaults gives the values in brackets. */
typedef struct tide_refine_params {
    int sip_order;              /**< SIP order of the result, 0 or 2..5 [3] */
    double match_radius_arcsec; /**< first match radius; NaN = automatic: the radius within
                                     which a source has a 15 % chance of a random reference
                                     star, between 3 and 30 pixels [NaN] */
    double min_radius_arcsec;   /**< the radius shrinks to match_sigma × the fit's RMS but
                                     never below this; NaN = 2 pixels [NaN] */
    double match_sigma;         /**< rematch radius in units of the RMS residual [5] */
    double clip_sigma;          /**< reject pairs whose normalised residual exceeds this many
                                     (MAD-based) σ [3] */
    double sigma_floor_px;      /**< added in quadrature to each centroid error, pixels [0.02] */
    int max_iter;               /**< match + fit rounds at most [8] */
    int mutual;                 /**< 1: one-to-one matches (mutual nearest neighbours) [1] */
    int min_per_coef;           /**< matched stars per coefficient of one axis needed for an
                                     order; fewer: the order is lowered [5] */
    int min_stars;              /**< fewer matched stars than this: TIDE_E_NOSOLVE [6] */
    int64_t subsample;          /**< the first two rounds use every k-th source, k chosen so
                                     that at most this many are matched (speed on large
                                     catalogs); 0 = all [10000] */
} tide_refine_params;

/** What a refinement gave. */
typedef struct tide_refine_info {
    double rms_ra_arcsec;  /**< RMS of the used stars in RA·cos(Dec), arcsec */
    double rms_dec_arcsec; /**< RMS in Dec, arcsec */
    double rms_px;         /**< RMS of the 2-D residuals of the used stars, pixels */
    double initial_rms_px; /**< weighted RMS of the initial WCS on the same stars, pixels
                                (-1 when it cannot be evaluated) */
    double radius_arcsec;  /**< match radius of the last round, arcsec */
    int64_t nstars;        /**< stars used in the final fit */
    int64_t nmatched;      /**< sources matched in the last round */
    int64_t nrejected;     /**< matched but rejected as outliers in the last round */
    int iterations;        /**< match + fit rounds made */
    int sip_order_used;    /**< order of the result (lower than asked when stars are few) */
    int converged;         /**< 1: the matched set stopped changing before max_iter */
    double ms;             /**< wall time, milliseconds */
} tide_refine_info;

/** Defaults (values in brackets above). */
TIDE_API void tide_refine_defaults(tide_refine_params *p);

/** Refine @p initial (any celestial WCS, e.g. a plate solution or the header's) on a
 *  @p width × @p height frame: @p n sources at 0-based pixels @p x, @p y with centroid errors
 *  @p sigma_px (1σ per axis, pixels; may be NULL = all equal; NaN or <= 0 = the floor only;
 *  from a pipeline catalog sqrt((ERRX2WIN_IMAGE + ERRY2WIN_IMAGE) / 2)), @p nref reference
 *  stars @p ref_ra, @p ref_dec (degrees). Pass clean point sources (no flags, decent S/N).
 *
 *  Each round maps the sources to the sky with the current WCS, crossmatches them with the
 *  references (tide_crossmatch_host on @p ctx), fits a TAN-SIP (as tide_wcsfit_tansip,
 *  weights 1/(σ² + floor²)), rejects pairs whose normalised residual exceeds clip_sigma and
 *  refits until the rejected set repeats, then shrinks the radius to match_sigma × the RMS of
 *  the used residuals for the next round. The first round fits a pure TAN with equal weights
 *  (the initial errors are largest there; the full order when @p initial has a SIP or TPV
 *  distortion already), later ones the full order. The first two rounds use a subsample of
 *  large catalogs (subsample). It stops when two rounds on the full catalog give the same
 *  matches, rejections and order, or after max_iter rounds.
 *
 *  On success *@p out is the new WCS and @p info (may be NULL) is filled. A fit that ends
 *  worse than the initial WCS on the same stars (weighted RMS above 1.05 × the initial's
 *  + 0.001 px) is not returned: TIDE_E_NOSOLVE "diverged" (keep the initial WCS then).
 *  Errors: TIDE_E_INVAL, TIDE_E_NOSOLVE (too few matches, divergence), TIDE_E_WCS,
 *  TIDE_E_NOMEM, and those of the crossmatch. */
TIDE_API int tide_astrom_refine(tide_ctx *ctx, const tide_wcs *initial, int64_t width,
                                int64_t height, const double *x, const double *y,
                                const double *sigma_px, int64_t n, const double *ref_ra,
                                const double *ref_dec, int64_t nref, const tide_refine_params *p,
                                tide_wcs **out, tide_refine_info *info);

/** Options of tide_astrom_verify. */
typedef struct tide_verify_params {
    double radius_arcsec; /**< match radius; NaN = 2 pixels [NaN] */
    int64_t min_matches;  /**< at least this many matches for "good" [20] */
    double min_fraction;  /**< and at least this fraction of min(sources, references inside
                               the frame) matched [0.2] */
    double min_excess;    /**< and at least this many times the matches expected by chance
                               [5] */
} tide_verify_params;

/** What a verification found. */
typedef struct tide_verify_info {
    int good;                 /**< 1: the WCS is good enough to refine instead of solving */
    int64_t nmatched;         /**< sources matched within the radius */
    int64_t nref_inside;      /**< reference stars falling inside the frame */
    double expected_random;   /**< matches expected by chance (source count × reference density
                                   × π r²) */
    double fraction;          /**< nmatched / min(n, nref_inside) */
    double median_sep_arcsec; /**< median separation of the matches */
    double rms_sep_arcsec;    /**< RMS separation of the matches */
} tide_verify_info;

/** Defaults (values in brackets above). */
TIDE_API void tide_verify_defaults(tide_verify_params *p);

/** Check whether @p wcs (e.g. a header's WCS) puts the @p n sources on their reference stars:
 *  map the sources to the sky, crossmatch within the radius (mutual), and call it good when
 *  the three criteria of tide_verify_params hold. A bad WCS is not an error (good = 0).
 *  Errors: TIDE_E_INVAL, TIDE_E_NOMEM, TIDE_E_WCS, and those of the crossmatch. */
TIDE_API int tide_astrom_verify(tide_ctx *ctx, const tide_wcs *wcs, int64_t width, int64_t height,
                                const double *x, const double *y, int64_t n, const double *ref_ra,
                                const double *ref_dec, int64_t nref, const tide_verify_params *p,
                                tide_verify_info *info);

#ifdef __cplusplus
}
#endif
#endif
