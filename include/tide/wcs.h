/* wcs.h — world coordinates: a FITS celestial WCS (through wcslib) and a device-side TAN/SIP
 * evaluator.
 *
 * A tide_wcs is built once from a header and is immutable afterwards. It accepts every
 * projection wcslib supports, SIP distortion (CTYPE "...-SIP" with A_p_q/B_p_q/AP_p_q/BP_p_q)
 * and TPV (PVi_m on "...-TPV"). TNX and ZPX (IRAF WAT polynomials) are refused with
 * TIDE_E_UNSUPPORTED naming the convention and the source.
 *
 * Coordinates: pixel positions are tide's internal 0-based pixel centres (the first pixel's
 * centre is (0, 0); coords.h); sky positions are degrees, longitude then latitude, in the
 * reference frame the header declares. No frame conversion is done: a header with
 * RADESYS = 'FK4' / EQUINOX = 1950 gives FK4 B1950 coordinates, a GLON/GLAT header gives
 * galactic ones. tide_wcs_summarize reports the frame (radesys, equinox).
 *
 * Thread safety: wcslib's wcsprm is not safe for concurrent evaluation (wcsp2s/wcss2p write
 * scratch buffers and error records inside the struct). A tide_wcs therefore keeps a small
 * pool of private wcsprm copies, each behind its own mutex, made lazily: concurrent readers
 * each take a free copy and run in parallel; only when more threads than copies (16) call at
 * once does a caller wait. Every copy gives bit-identical results. A batch of more than
 * 16384 points is itself split over OpenMP threads (one copy each; serial inside an enclosing
 * parallel region), with results independent of the thread count. */
#ifndef TIDE_WCS_H
#define TIDE_WCS_H
#include "tide/export.h"
#include <stdint.h>
#include "tide/header.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tide_ctx;

/** An immutable celestial WCS. */
typedef struct tide_wcs tide_wcs;

/** Build the primary celestial WCS of a header (wcspih with every informal extension admitted,
 *  wcsfix, wcsset). Headers with more than two axes keep their two celestial axes (wcssub).
 *  @p source names the header in error details ("FILE[HDU]"; may be NULL).
 *  Returns TIDE_E_NOTFOUND when the header holds no celestial WCS, TIDE_E_UNSUPPORTED for
 *  TNX, ZPX or a projection code wcslib does not know (the detail names the CTYPE and the
 *  source), TIDE_E_WCS when wcslib rejects the keywords, TIDE_E_NOMEM. */
TIDE_API int tide_wcs_from_header(const tide_header *h, const char *source, tide_wcs **out);

/** Release a WCS. NULL is a no-op. */
TIDE_API void tide_wcs_free(tide_wcs *w);

/** Pixel to sky for @p n points. @p x, @p y are 0-based pixel coordinates; @p ra, @p dec
 *  receive degrees (longitude in [0, 360)) in the header's frame. A point that cannot be
 *  converted (outside a projection's domain) gets NaN in both outputs; that is not an error.
 *  Safe to call from several threads at once. */
TIDE_API int tide_wcs_pix2sky(const tide_wcs *w, int64_t n, const double *x, const double *y,
                              double *ra, double *dec);

/** Sky (degrees, header's frame) to 0-based pixel coordinates for @p n points; SIP and TPV
 *  are inverted iteratively by wcslib. Unconvertible points get NaN. Thread-safe. */
TIDE_API int tide_wcs_sky2pix(const tide_wcs *w, int64_t n, const double *ra, const double *dec,
                              double *x, double *y);

/** Write the WCS into @p h (wcshdo, 17 significant digits so every double survives the text):
 *  the primary WCS keywords already in @p h (CTYPEi, CRPIXi, CDi_j, PCi_j, CROTAi, PVi_m,
 *  A_p_q...) are removed, so nothing stale survives, and the new ones are appended. SIP is
 *  written as A_p_q/B_p_q/AP_p_q/BP_p_q with "-SIP" CTYPEs, TPV as PVi_m with "-TPV" CTYPEs,
 *  the linear part as PCi_j + CDELTi. Alternate WCSs (CTYPE1A...) and date keywords are left
 *  as they are. Reading the result back gives the same pix2sky to the last bit. */
TIDE_API int tide_wcs_to_header(const tide_wcs *w, tide_header *h);

/** Remove every keyword of the header's primary celestial WCS and its distortion (CTYPEi,
 *  CRPIXi, CRVALi, CDi_j, PCi_j, CDELTi, CUNITi, PVi_m, A_p_q/B_p_q/AP_p_q/BP_p_q and their
 *  orders, WCSAXES, LONPOLE, RADESYS, EQUINOX...): what tide_wcs_to_header does before it
 *  writes, and what makes a frame "unsolved" for tests and benchmarks. Alternate WCSs
 *  (CTYPE1A...) and the pointing keywords (RA, DEC, OBJCTRA...) stay. */
TIDE_API void tide_wcs_strip_header(tide_header *h);

/** What a person wants to know about a WCS over a frame. */
typedef struct tide_wcs_summary {
    char ctype1[72], ctype2[72]; /**< CTYPEs as the header gives them ("RA---TAN-SIP") */
    char radesys[16]; /**< reference frame ("ICRS", "FK5", "FK4"...; "" for galactic etc.) */
    double equinox;   /**< equinox in years (1950.0 for FK4 B1950); NaN when not applicable */
    double ra_center, dec_center; /**< sky position of the frame's centre pixel, degrees */
    double scale_arcsec; /**< sqrt(|det J|) of the local Jacobian at the centre, arcsec/px */
    /** Position angle of the image's +y axis at the centre, degrees east of north in
     *  (-180, 180]: 0 when +y points north, 90 when +y points east (the convention of the
     *  Spitzer/HST PA keywords). */
    double rotation_deg;
    /** Angular extent along x and y: great-circle distance between the outer edges of the
     *  frame (pixel -0.5 and width-0.5) through its centre row / column, degrees. */
    double fov_x_deg, fov_y_deg;
    int has_sip, has_tpv; /**< distortion present */
} tide_wcs_summary;

/** Summarise @p w over a @p width × @p height frame. TIDE_E_WCS if the centre pixel cannot be
 *  converted, TIDE_E_INVAL for non-positive sizes. */
TIDE_API int tide_wcs_summarize(const tide_wcs *w, int64_t width, int64_t height,
                                tide_wcs_summary *s);

/** wcslib's projection code of @p w ("TAN", "ZEA"...); TPV reads "TAN" (a TAN with a
 *  sequent distortion). */
TIDE_API const char *tide_wcs_projection(const tide_wcs *w);

/* ---- device-side TAN / TAN-SIP evaluator ---------------------------------------------- */

#define TIDE_WCS_SIP_MAX_ORDER 9
/** Coefficients of a full 2-D polynomial of order 9: u^p v^q with p + q <= 9. */
#define TIDE_WCS_SIP_NCOEF 55

/** A compact, plain-data TAN or TAN-SIP WCS (Calabretta & Greisen 2002, A&A 395, 1077;
 *  Shupe et al. 2005, ASP Conf. 347, 491) that kernels take by value. Coefficient of
 *  u^p v^q lives at index (p+q)(p+q+1)/2 + q. */
typedef struct tide_wcs_tansip {
    double crpix[2];       /**< reference pixel, FITS 1-based */
    double cd[2][2];       /**< deg/px; rows give (xi, eta), LONPOLE rotation folded in */
    double cdinv[2][2];    /**< inverse of cd */
    double crval[2];       /**< reference point (longitude, latitude), degrees */
    double sin_d0, cos_d0; /**< of crval[1] */
    int order[4];          /**< polynomial orders of A, B, AP, BP; 0 = absent */
    double sip[4][TIDE_WCS_SIP_NCOEF]; /**< A, B (forward), AP, BP (inverse) */
} tide_wcs_tansip;

/** Extract the evaluator from a TAN or TAN-SIP WCS. TIDE_E_UNSUPPORTED for any other
 *  projection or distortion (TPV...), an offset fiducial point, or SIP order > 9. */
TIDE_API int tide_wcs_tansip_from_wcs(const tide_wcs *w, tide_wcs_tansip *t);

/** Pixel (0-based) to sky (degrees, longitude in [0, 360)) for @p n points on @p ctx's
 *  backend: host arrays on a CPU context, device arrays on a CUDA context (the work is queued
 *  on the context's stream; tide_sync waits for it). Double precision throughout. */
TIDE_API int tide_wcs_tansip_pix2sky(struct tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n,
                                     const double *x, const double *y, double *ra, double *dec);

/** Sky (degrees) to pixel (0-based) on @p ctx's backend. SIP is inverted by Newton iteration
 *  on A/B started from AP/BP (from the TAN solution when AP/BP are absent) until the step
 *  is below 1e-12 px [at most 20 iterations]. Points on the far hemisphere, and points where
 *  the iteration does not converge (a distortion that folds over, far outside the frame it
 *  was fitted on), get NaN. */
TIDE_API int tide_wcs_tansip_sky2pix(struct tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n,
                                     const double *ra, const double *dec, double *x, double *y);

#ifdef __cplusplus
}
#endif
#endif
