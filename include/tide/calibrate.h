/* calibrate.h — Reduction II: from an instrumental catalog to a calibrated one (issue 4).
 *
 * tide_calibrate_run follows tide_pipeline_run on the same frame. In order:
 *
 *   1. reference stars   around the field (refcat.h: a FITS/CSV file, a user command, or a
 *                        PostgreSQL table with a Q3C index, store.h), through the per-field
 *                        cache when one is configured. The field is the header WCS's, else the
 *                        pointing and scale hints (solve.h), else, after a blind solve, the
 *                        solution's.
 *   2. astrometry        a header WCS that puts the sources on their reference stars
 *                        (tide_astrom_verify) is refined; otherwise the field is plate-solved
 *                        in process: on the reference stars themselves (tide_solve_refcat,
 *                        hinted by the header), then on the index files (astrometry.net,
 *                        hinted, then blind), all within solve_timeout_s, then refined:
 *                        crossmatch + TAN-SIP fit with outlier rejection (wcsfit.h). Without a
 *                        reference catalog a header WCS is used as it is, unless solve is
 *                        set: the field is then solved and refined on the stars of the index
 *                        that solved it (the header WCS is kept, unverified, when none does).
 *   3. sky positions     ALPHA_J2000, DELTA_J2000 of every source from XWIN/YWIN.
 *   4. crossmatch        of the sources with the reference stars (crossmatch.h): REFMAG,
 *                        REFMAGERR, REFCOLOR, REFSEP columns; a source without a counterpart
 *                        gets bit TIDE_CAL_NOREF in FLAGS_TIDE (a transient candidate).
 *   5. zero point        photcal.h, on FLUX_OPT (aperture-corrected to total) or FLUX_AUTO
 *                        when there are no aperture corrections; MAG_x / MAGERR_x for every
 *                        flux column; limiting magnitudes at S/N 5 and 3.
 *   6. conditions        airmass, altitude, azimuth, Sun and Moon (obsinfo.h) when the site
 *                        and DATE-OBS are known.
 *
 * A field that cannot be solved is not an error: the catalog keeps its instrumental columns,
 * loses ALPHA_J2000/DELTA_J2000, and the header says why (ASTRSTAT = 'FAILED', ASTRMSG).
 * The zero point then cannot be measured either (PHOTSTAT = 'FAILED').
 * A reference catalog that is missing or empty around the field is an error: the caller asked
 * for a calibration that cannot be made.
 *
 * Header cards added to the catalog header: the WCS (tide_wcs_to_header: CTYPE, CRVAL, CRPIX,
 * CD/PC, A_p_q...), ASTRSTAT ('REFINED', 'SOLVED', 'HEADER', 'FAILED', 'NONE'), ASTRMSG,
 * ASTSOLVE ('HINTED', 'BLIND', 'VERIFIED'), ASTINDEX, ASTRRMSA / ASTRRMSD (RMS in RA·cos Dec and
 * Dec, arcsec), ASTRRMSP (pixels), ASTNSTAR, ASTSIPOR, CENTRA, CENTDEC, PIXSCALE, ROTANGLE,
 * FOVX, FOVY; REFCAT, REFBAND, REFNSTAR, photcal.h's ZP, EZP, ZPSCAT, CATNSTAR, ZPNCAND,
 * ZPSLOPE, ZPSLOPOK, COLTERM, MAGLIM5, MAGLIM3, ZPFLUX, PHOTSTAT; obsinfo.h's MJD-MID,
 * ALT_OBJ, AZ_OBJ, HA_OBJ, TAIRMASS, SUNALT, MOONALT, MOONPHAS, MOONDIST; PROCDATE (UTC, or
 * the time of $SOURCE_DATE_EPOCH when set, for reproducible outputs). */
#ifndef TIDE_CALIBRATE_H
#define TIDE_CALIBRATE_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/config.h"
#include "tide/ctx.h"
#include "tide/header.h"
#include "tide/instrument.h"
#include "tide/photcal.h"
#include "tide/reduce.h"
#include "tide/refcat.h"
#include "tide/solve.h"
#include "tide/wcsfit.h"

#ifdef __cplusplus
extern "C" {
#endif

/** FLAGS_TIDE bit: no reference-catalog star within the match radius. */
#define TIDE_CAL_NOREF (1 << 16)

/** Parameters of the calibration. tide_calib_params_default gives the values in brackets;
 *  tide_calib_params_from_config takes them from the configuration's site, astrometry,
 *  refcat, photcal and processing sections. */
typedef struct tide_calib_params {
    int astrometry;         /**< 1: solve / refine the WCS [1] */
    char index_dir[1024];   /**< astrometry.net index files ["": tide_solve_index_dir] */
    double solve_timeout_s; /**< bound of the whole unattended solve: every attempt
                                 (reference catalogue, hinted, blind) shares it [10;
                                 $TIDE_SOLVE_TIMEOUT overrides] */
    int solve;              /**< 1: plate-solve even without a reference catalogue, the
                                 header's WCS (if any) giving the hints, not the answer
                                 [0; tide reduce --solve or --index-dir] */
    int64_t nbright;        /**< sources given to the solver [500] */
    double scale_tolerance; /**< hinted scale range, fraction [0.1] */
    double hint_radius_deg; /**< uncertainty of the header pointing, degrees: the hinted
                                 search radius is this plus the field's half-diagonal [2] */
    int blind;              /**< blind solve when the hinted one fails [1] */
    double pixsize_um;      /**< binned pixel size for the scale hint [NaN] */
    double focal_mm;        /**< focal length for the scale hint [NaN] */
    int sip_order;          /**< SIP order of the refined WCS [3] */
    /* reference catalog: at most one of path / command */
    char refcat[1024];           /**< file, or pg:/postgresql:// URI of a Q3C table [""] */
    char refcat_table[128];      /**< the table when refcat is a PostgreSQL URI [""] */
    char refcat_command[1024];   /**< command template (refcat.h) [""] */
    tide_refcat_columns cols;    /**< column names ["" = RA, DEC, MAG, MAGERR, COLOR] */
    char band[32];               /**< reference band, for REFBAND [""] */
    char cache_dir[1024];        /**< per-field cache ["": $TIDE_REFCAT_CACHE or none] */
    double match_radius_arcsec;  /**< source ↔ reference match radius [2] */
    tide_photcal_params photcal; /**< zero-point options */
    /* site */
    double site_lon_deg, site_lat_deg, site_height_m; /**< [NaN, NaN, 0]; the header's
                                    SITELONG/SITELAT... are used when these are NaN */
    char source[256];                                 /**< the frame's name for messages [""] */
} tide_calib_params;

/** Fill @p p with the defaults in brackets. */
TIDE_API void tide_calib_params_default(tide_calib_params *p);

/** Take the parameters from @p cfg and (when non-NULL) the frame's resolved instrument values
 *  (pixel size, focal length). Returns TIDE_E_CONFIG for a value that does not fit. */
TIDE_API int tide_calib_params_from_config(tide_calib_params *p, const tide_config *cfg,
                                           const tide_instrument *inst);

/** 1 when @p p asks for a reference catalog (a file, a table or a command). */
TIDE_API int tide_calib_has_refcat(const tide_calib_params *p);

/** What the calibration did. */
typedef struct tide_calib_result {
    int wcs_ok;              /**< 1: the catalog has sky positions */
    char astrstat[16];       /**< ASTRSTAT: REFINED, SOLVED, HEADER, FAILED or NONE */
    char astrmsg[160];       /**< why it failed, when it did */
    tide_solve_info solve;   /**< the solve (when one was run) */
    int solved;              /**< 1: a solve was run and succeeded */
    tide_refine_info refine; /**< the refinement (when run) */
    int refined;             /**< 1: the WCS was refined */
    tide_verify_info verify; /**< the header WCS's verification (when run) */
    int64_t nref;            /**< reference stars around the field */
    int64_t nref_matched;    /**< sources with a reference counterpart */
    int zp_ok;               /**< 1: a zero point was measured */
    char zpmsg[160];         /**< why not, when not */
    tide_photcal_result zp;  /**< the zero point */
    tide_photcal_limits lim; /**< limiting magnitudes (lim.nused 0 = none) */
    int obs_ok;              /**< 1: observing conditions computed */
    double ms_refcat, ms_solve, ms_refine, ms_match, ms_photcal, ms_total; /**< wall times */
} tide_calib_result;

/** Calibrate @p res (the output of tide_pipeline_run on a @p width × @p height frame whose
 *  header is @p frame_hdr, may be NULL) in place: its catalog gets sky positions, reference
 *  matches and magnitudes, its header the cards listed above, and res->wcs the final WCS
 *  (NULL when the field is not placed on the sky). The header's WCS is res->wcs as
 *  tide_pipeline_run parsed it; @p frame_hdr is parsed only when res->wcs is NULL. @p out (may be
 * NULL) says what was done. Errors: TIDE_E_INVAL, TIDE_E_IO / TIDE_E_NOTFOUND / TIDE_E_FORMAT
 * (reference catalog unreadable, a column missing), TIDE_E_EMPTY (no reference star around the
 * field), TIDE_E_DB (reference table unreachable), TIDE_E_NOMEM. An unsolved field is not an error
 *  (see above). */
TIDE_API int tide_calibrate_run(tide_ctx *ctx, const tide_header *frame_hdr, int64_t width,
                                int64_t height, const tide_calib_params *p,
                                tide_pipeline_result *res, tide_calib_result *out);

#ifdef __cplusplus
}
#endif
#endif
