/* photcal.h — photometric calibration: zero point, colour term, magnitudes, limiting
 * magnitude.
 *
 * Convention. tide's magnitudes are Source Extractor's with MAG_ZEROPOINT:
 *     MAG = ZP - 2.5 log10(FLUX)      FLUX in ADU (counts) of the frame, not per second
 * so ZP is the magnitude of a source giving 1 ADU in this exposure; it absorbs exposure time,
 * gain, transparency and airmass (ZP_per_second = ZP - 2.5 log10(EXPTIME)). A frame of
 * `tide sim` has ZP = zeropoint + 2.5 log10(exptime · transparency / gain) (its SIMZPADU)
 * for a total-flux measure.
 *
 * Model. With a reference catalog in a band close to the frame's,
 *     MAG_frame = MAG_ref + c · COLOR          (c = colour term; the simulator's relation)
 *     ZP        = MAG_ref + c · COLOR + 2.5 log10(FLUX)
 * and the zero point is the sigma-clipped weighted mean of the right-hand side over the
 * matched stars that pass the cuts (S/N range, colour range, distance from the edges,
 * flags), each weighted by 1/σ², σ² = (1.0857 FLUXERR/FLUX)² + MAGERR_ref² + floor². The
 * colour term is given (default 0) or fitted jointly with ZP by weighted least squares.
 *
 * Slope check. The model has unit slope between MAG_ref (+ c·COLOR) and the instrumental
 * magnitude; a non-linear detector, a wrong background or a mismatched band shows as another
 * slope. The Theil–Sen estimator (the median of pairwise slopes; Sen 1968, J. Am. Stat.
 * Assoc. 63, 1379; robust to 29 % outliers) of MAG_ref + c·COLOR against −2.5 log10(FLUX)
 * over the stars kept is reported, and flagged when it is more than slope_tol from 1.
 *
 * Errors of magnitudes. MAGERR_x = 1.0857 FLUXERR_x / FLUX_x is the measurement error only,
 * as Source Extractor writes it; the zero point's error EZP is common to every source of a
 * frame and goes in the header, not into MAGERR (add it in quadrature for absolute
 * magnitudes, leave it out when comparing sources of one frame).
 *
 * Limiting magnitude. Sources with S/N in [lim_snr_lo, lim_snr_hi] (the faint end, where the
 * sky dominates and log10 S/N is linear in magnitude with slope about −0.4) give a Theil–Sen
 * line log10(S/N) = a + b·MAG; the 5σ and 3σ limits solve it for S/N = 5 and 3. */
#ifndef TIDE_PHOTCAL_H
#define TIDE_PHOTCAL_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/header.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How the colour term is used. */
typedef enum {
    TIDE_PHOTCAL_COLOR_GIVEN = 0, /**< use params.color_term (0 = no colour term) */
    TIDE_PHOTCAL_COLOR_FIT = 1    /**< fit it with the zero point */
} tide_photcal_color_mode;

/** Options of the zero-point fit (defaults in brackets, from tide_photcal_defaults). */
typedef struct tide_photcal_params {
    double snr_min;       /**< least S/N (FLUX/FLUXERR) of a calibration star [20] */
    double snr_max;       /**< largest S/N: brighter stars are near saturation [1000] */
    double color_min;     /**< colour range of calibration stars, mag [-INFINITY] */
    double color_max;     /**< [INFINITY]; with a colour term (given non-zero or fitted) or a
                               finite range, stars without a colour are left out */
    double edge_margin;   /**< least distance of a star from the frame edges, pixels [20];
                               needs the positions and the frame size */
    int32_t flags_reject; /**< a star with any of these bits in its flags is left out
                               [all bits but 1 and 2 (neighbours, deblended)] */
    double clip_sigma;    /**< clipping threshold in units of the scatter [3] */
    int clip_iter;        /**< most clipping iterations [10] */
    double err_floor;     /**< error floor added in quadrature to each star's σ, mag
                               [0.005] */
    int weighted;         /**< 1: weights 1/σ²; 0: plain mean [1] */
    tide_photcal_color_mode color_mode; /**< [GIVEN] */
    double color_term;                  /**< c of MAG_frame = MAG_ref + c·COLOR when GIVEN [0] */
    double slope_tol;                   /**< slope flagged when |slope − 1| exceeds this [0.03] */
    int min_stars;                      /**< fewer stars after the cuts is TIDE_E_EMPTY [5] */
} tide_photcal_params;

/** The defaults documented in brackets above. */
TIDE_API tide_photcal_params tide_photcal_defaults(void);

/** Calibration stars, one entry per detected source (struct of arrays, host memory). */
typedef struct tide_photcal_input {
    int64_t n;
    const double *flux;       /**< instrumental flux, ADU (one measure: FLUX_OPT, ...) */
    const double *fluxerr;    /**< its error */
    const double *ref_mag;    /**< matched reference MAG; NaN = no match */
    const double *ref_magerr; /**< may be NULL or NaN (0 is used) */
    const double *ref_color;  /**< may be NULL or NaN (then no colour) */
    const double *x, *y;      /**< FITS 1-based position; may be NULL (no edge cut) */
    const int32_t *flags;     /**< may be NULL */
    int64_t width, height;    /**< frame size for the edge cut (0 = no edge cut) */
} tide_photcal_input;

/** What the fit found. */
typedef struct tide_photcal_result {
    double zp;               /**< zero point, mag (MAG = zp − 2.5 log10 FLUX) */
    double ezp;              /**< its standard error: sqrt(1/Σw), times sqrt(χ²/ν) when > 1 */
    double scatter;          /**< RMS of the residuals of the stars kept, mag */
    double chi2nu;           /**< χ²/ν of the stars kept */
    int64_t nmatched;        /**< sources with a reference magnitude */
    int64_t ncand;           /**< of which passing the cuts */
    int64_t nstars;          /**< of which kept after clipping (CATNSTAR) */
    double color_term;       /**< used or fitted */
    double ecolor_term;      /**< its error when fitted, else 0 */
    int color_fitted;        /**< 1 when fitted */
    double slope;            /**< Theil–Sen slope of MAG_ref + c·COLOR vs instrumental mag */
    int slope_bad;           /**< 1: |slope − 1| > slope_tol (or too few stars to tell) */
    double mag_min, mag_max; /**< range of MAG_ref of the stars kept */
} tide_photcal_result;

/** Fit the zero point (and colour term when asked). @p used (n entries, may be NULL)
 *  receives 1 for each star kept after clipping, 0 otherwise. @p p NULL = defaults.
 *  Errors: TIDE_E_INVAL (NULL flux, fluxerr or ref_mag with n > 0; bad params),
 *  TIDE_E_EMPTY (fewer than min_stars after the cuts or clipping: the detail gives the
 *  counts), TIDE_E_NOMEM. */
TIDE_API int tide_photcal_fit(const tide_photcal_input *in, const tide_photcal_params *p,
                              tide_photcal_result *out, uint8_t *used);

/** tide_photcal_fit on a pipeline catalog: the flux of column FLUX_@p flux (e.g. "OPT",
 *  "AUTO", "PSF", "APER") element @p element (0-based; for vector columns such as
 *  FLUX_APER) and FLUXERR_@p flux, positions XWIN_IMAGE/YWIN_IMAGE (else X_IMAGE/Y_IMAGE),
 *  flags FLAGS_TIDE (else FLAGS), and for source i the reference star @p match[i] of @p ref
 *  (the refcat.h layout; -1 = none). Frame size @p width × @p height for the edge cut.
 *  TIDE_E_NOTFOUND naming a missing column. */
TIDE_API int tide_photcal_fit_catalog(const tide_table *cat, const char *flux, int element,
                                      const tide_table *ref, const int64_t *match, int64_t width,
                                      int64_t height, const tide_photcal_params *p,
                                      tide_photcal_result *out, uint8_t *used);

/** Magnitudes for every flux column. For each column FLUX_x that has a FLUXERR_x of the same
 *  length (so FLUX_MAX, a peak value, is left alone), set MAG_x = zp − 2.5 log10(FLUX_x) and
 *  MAGERR_x = 1.0857 FLUXERR_x / FLUX_x (both 99 when FLUX_x <= 0 or is not finite, Source
 *  Extractor's convention); vector columns give vector magnitudes (FLUX_APER[n] →
 *  MAG_APER[n]). Existing MAG_x / MAGERR_x columns (MAG_AUTO of the pipeline) are
 *  overwritten in place, keeping their type; new ones are float32 like Source Extractor's.
 *  EZP is not added to MAGERR (see above). */
TIDE_API int tide_photcal_apply(tide_table *cat, double zp);

/** Limiting magnitudes from the S/N–magnitude relation. */
typedef struct tide_photcal_limits {
    double mag5;   /**< magnitude at S/N = 5 */
    double mag3;   /**< magnitude at S/N = 3 */
    double slope;  /**< d log10(S/N) / d MAG (−0.4 in the sky-limited regime) */
    double icept;  /**< log10(S/N) at MAG = 0 */
    int64_t nused; /**< sources in the fit */
} tide_photcal_limits;

/** Fit log10(S/N) = a + b·MAG (Theil–Sen) over the sources with finite MAG and S/N in
 *  [@p snr_lo, @p snr_hi] [3, 30] and solve for S/N = 5 and 3. TIDE_E_EMPTY with fewer than
 *  10 sources in range or a slope >= 0 (S/N that does not fall with magnitude). */
TIDE_API int tide_photcal_limits_fit(const double *mag, const double *snr, int64_t n, double snr_lo,
                                     double snr_hi, tide_photcal_limits *out);

/** tide_photcal_limits_fit on a catalog: MAG = zp − 2.5 log10 FLUX_@p flux[@p element],
 *  S/N = FLUX / FLUXERR of that column. */
TIDE_API int tide_photcal_limits_catalog(const tide_table *cat, const char *flux, int element,
                                         double zp, double snr_lo, double snr_hi,
                                         tide_photcal_limits *out);

/** Header cards of a calibration: ZP, EZP, ZPSCAT (scatter), CATNSTAR, ZPNCAND, ZPSLOPE,
 *  ZPSLOPOK (F when flagged), COLTERM, ECOLTERM, MAGLIM5, MAGLIM3 (when @p lim is non-NULL),
 *  REFCAT and REFBAND (when non-NULL and non-empty). */
TIDE_API int tide_photcal_to_header(const tide_photcal_result *r, const tide_photcal_limits *lim,
                                    const char *refcat, const char *band, tide_header *h);

#ifdef __cplusplus
}
#endif
#endif
