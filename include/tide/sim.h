/* sim.h — the simulator: realistic frames with known truth, deterministic for a seed.
 *
 * A simulation has two parts. The *sky* (tide_sim_sky) is a list of objects on the celestial
 * sphere: stars drawn from a power-law luminosity function dN/dm ∝ 10^(alpha m), Sérsic
 * galaxies, and for the second epoch a moving object, new transients and variable stars. An
 * *epoch* (tide_sim_epoch) renders that sky through one pointing (TAN projection with
 * rotation and SIP distortion), one seeing (a Moffat PSF whose FWHM, ellipticity and angle
 * vary smoothly over the field), one sky background (with a gradient) and one detector (bias,
 * gain, Poisson and read noise, full well with bleed trails along columns, cosmic rays, hot
 * pixels, bad columns). Epoch 1 is the nominal pointing; epoch 2 is the same sky with a
 * pointing offset and rotation, other seeing and transparency, later in time.
 *
 * Units. Object fluxes are rendered in electrons; the frame is in ADU:
 *     ADU = bias + (electrons + noise) / gain, clamped at SATURATE = bias + fullwell / gain
 * and rounded to integers when noise is on. The zero point `zeropoint` is the magnitude of a
 * source giving 1 e-/s: electrons = exptime * 10^(-0.4 (mag - zeropoint)) * transparency.
 * The truth catalog's FLUX is in ADU above sky and bias (electrons / gain), the quantity a
 * photometry stage measures; FLUX_E is the same in electrons. Each star's truncated PSF is
 * renormalised so that the sum of its pixels equals FLUX exactly (the truncation radius keeps
 * at least 99.5 % of a Moffat's light, so the profile changes by < 0.5 %).
 *
 * Determinism. Every random number comes from a counter-based generator (splitmix64 mixing
 * of seed, stream and index): a pixel's noise depends only on (seed, epoch, pixel index), a
 * star's properties only on (seed, star index). Stars are rendered into horizontal bands of
 * rows, each band summing its stars in ID order, so the frame is bitwise identical for any
 * number of threads.
 *
 * Pixel coordinates inside are 0-based; the truth catalog and the header are FITS 1-based. */
#ifndef TIDE_SIM_H
#define TIDE_SIM_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/header.h"
#include "tide/image.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Everything a simulation is made from. tide_sim_params_default gives the values in
 *  brackets: a 2048×2048 frame of ~2000 stars at 1.46"/pixel, 60 s, r band. */
typedef struct tide_sim_params {
    uint64_t seed;     /**< random seed [1] */
    int64_t width;     /**< NAXIS1, pixels [2048] */
    int64_t height;    /**< NAXIS2, pixels [2048] */
    int64_t nstars;    /**< stars with centres inside the epoch-1 frame [2000]; a margin of
                            stars around it (same density) feeds the edges and epoch 2 */
    int64_t ngalaxies; /**< Sérsic galaxies inside the frame [100] */
    double mag_bright; /**< brightest star magnitude [10] */
    double mag_faint;  /**< faintest star magnitude [21] */
    double lf_alpha;   /**< luminosity function slope: dN/dm ∝ 10^(alpha m) [0.3] */
    double zeropoint;  /**< magnitude giving 1 e-/s [22.5] */
    double exptime;    /**< exposure time, s [60] */
    double gain;       /**< e-/ADU [1.2] */
    double rdnoise;    /**< read noise, e- rms [5] */
    double bias;       /**< bias level, ADU [1000] */
    double fullwell;   /**< full-well capacity, e-; SATURATE = bias + fullwell/gain [50000] */
    double sky;        /**< sky at the frame centre, ADU/pixel [800] */
    double sky_grad;   /**< linear sky gradient: fractional change centre→edge [0.05] */
    double sky_quad;   /**< quadratic (vignetting-like) term: fractional change at corners
                            [-0.03] */
    double fwhm;       /**< PSF FWHM at the frame centre, pixels [3.0] */
    double fwhm_var;   /**< fractional FWHM increase at the corners [0.15] */
    double beta;       /**< Moffat beta (> 1) [3.0] */
    double ellip;      /**< PSF ellipticity 1 - b/a at the centre [0.05] */
    double ellip_var;  /**< added ellipticity at the corners (radial pattern) [0.08] */
    double psf_theta;  /**< PSF major-axis angle at the centre, degrees from +x [30] */
    double ra;         /**< pointing (CRVAL1), degrees [150.0] */
    double dec;        /**< pointing (CRVAL2), degrees [2.2] */
    double rotation;   /**< position angle of the frame, degrees [12] */
    double focal_mm;   /**< focal length, mm [530] */
    double pixsize_um; /**< pixel size, microns [3.76] */
    int sip_order;     /**< SIP distortion order, 0 (pure TAN) or 2..3 [3] */
    double sip_amp;    /**< SIP distortion at the frame corners, pixels [2.5] */
    double cr_rate;    /**< cosmic rays per cm² of detector per minute [20] */
    int64_t nhot;      /**< hot pixels [0: width*height/40000] */
    int64_t nbadcols;  /**< bad columns [2] */
    double color_term; /**< reference catalog colour term c: MAG = REF_MAG + c*COLOR [0.05] */
    double ref_maglim; /**< faintest reference-catalog star [19] */
    char filter[16];   /**< FILTER keyword ["r"] */
    char date_obs[32]; /**< DATE-OBS of epoch 1, ISO 8601 UTC ["2024-03-15T03:12:45.000"] */
    int noise;         /**< 1: Poisson + read noise and integer ADU; 0: expected values [1] */
    int defects;       /**< 1: cosmic rays, hot pixels and bad columns [1] */
    int with_mask;     /**< 1: keep the truth mask plane in the frame (written as "MASK") [0] */
    /* epoch 2 */
    double e2_dra;          /**< pointing offset in RA·cos(Dec), arcsec [40] */
    double e2_ddec;         /**< pointing offset in Dec, arcsec [-25] */
    double e2_rotation;     /**< added rotation, degrees [0.7] */
    double e2_fwhm_scale;   /**< seeing ratio epoch 2 / epoch 1 [1.3] */
    double e2_transparency; /**< transmitted fraction relative to epoch 1 [0.85] */
    double e2_dt_hours;     /**< time from epoch 1 to epoch 2, hours [1.0] */
    int64_t e2_nmoving;     /**< moving objects (in both epochs) [1] */
    int64_t e2_ntransient;  /**< new transients (epoch 2 only) [1] */
    int64_t e2_nvariable;   /**< variable stars (brightness changes) [1] */
    double moving_rate;     /**< moving-object speed, arcsec/hour [30] */
    int64_t e2_nsatellite;  /**< satellite trails across epoch 2 (bogus changes; a truth row
                                 each, TYPE satellite) [0] */
} tide_sim_params;

/** Fill @p p with the defaults documented in brackets above. */
TIDE_API void tide_sim_params_default(tide_sim_params *p);

/** Check parameters: positive sizes (each ≤ 1,000,000, product ≤ 2^31), mag_bright <
 *  mag_faint, gain > 0, beta > 1, 0 ≤ ellipticities < 0.9, sip_order 0/2/3...
 *  TIDE_E_INVAL with a detail naming the parameter. */
TIDE_API int tide_sim_params_check(const tide_sim_params *p);

/** Object types in the truth catalog (TYPE column as text, TYPE_ID as this number). */
typedef enum {
    TIDE_SIM_STAR = 0,
    TIDE_SIM_GALAXY = 1,
    TIDE_SIM_MOVING = 2,    /**< a solar-system object: another position each epoch */
    TIDE_SIM_TRANSIENT = 3, /**< absent in epoch 1, present in epoch 2 */
    TIDE_SIM_VARIABLE = 4,  /**< a star whose magnitude differs between epochs */
    TIDE_SIM_SATELLITE = 5  /**< a satellite trail of epoch 2 (truth row: a point on the trail,
                                 THETA its angle, RE its length in the frame, FLUX its total) */
} tide_sim_type;

/* Which changes are real: transients, variables and moving objects are; satellite trails,
 * cosmic rays, hot pixels, bleed trails and mis-subtracted stars are bogus. */

/** Name of an object type ("star", "galaxy", "moving", "transient", "variable",
 *  "satellite"). */
TIDE_API const char *tide_sim_type_name(int type);

/** The simulated sky (opaque): objects with RA, Dec and magnitudes, plus the detector's
 *  fixed defects (hot pixels, bad columns) and each epoch's geometry. */
typedef struct tide_sim_sky tide_sim_sky;

/** Draw the sky for @p p (deterministic in p->seed). Free with tide_sim_sky_free. */
TIDE_API int tide_sim_sky_make(tide_ctx *ctx, const tide_sim_params *p, tide_sim_sky **out);

/** Release a sky. NULL is a no-op. */
TIDE_API void tide_sim_sky_free(tide_sim_sky *sky);

/** Number of objects in the sky (stars in the margin included). */
TIDE_API int64_t tide_sim_sky_count(const tide_sim_sky *sky);

/** The parameters the sky was made with. */
TIDE_API const tide_sim_params *tide_sim_sky_params(const tide_sim_sky *sky);

/** One rendered epoch. */
typedef struct tide_sim_frame {
    tide_image image;   /**< host float32 ADU; mask plane of truth defects when with_mask */
    tide_header header; /**< full header: WCS (TAN-SIP), GAIN, RDNOISE, SATURATE, ... */
    tide_table truth;   /**< objects with centres inside the frame (see tide_sim_epoch) */
    int64_t nsaturated; /**< truth objects flagged SATURATED */
    int64_t ncosmics;   /**< cosmic-ray tracks */
    double ms_total;    /**< wall time of tide_sim_epoch, milliseconds */
    double ms_render;   /**< of which object rendering */
    double ms_noise;    /**< of which noise, bleeding and readout */
} tide_sim_frame;

/** Render epoch @p epoch (1 or 2) of @p sky into @p out (allocated here; free with
 *  tide_sim_frame_free). Uses up to ctx->threads CPU threads (0 = all); the result does not
 *  depend on the thread count.
 *
 *  The truth table has one row per object whose centre lies inside the frame:
 *  ID (int64, shared between epochs), X_TRUE, Y_TRUE (FITS 1-based pixels), RA, DEC (deg),
 *  MAG (this epoch, in the frame's filter), FLUX (ADU above sky and bias, total of the
 *  rendered object), FLUX_E (electrons), FWHM (local PSF, pixels), ELLIP (1 - b/a of the PSF,
 *  or of the galaxy), THETA (degrees from +x towards +y), SERSIC_N and RE (pixels; 0 for
 *  point sources), TYPE (text), TYPE_ID (tide_sim_type), SATURATED (1 if any pixel within
 *  1.5 px of the centre is at SATURATE), PEAK (expected brightest-pixel value above sky, ADU). */
TIDE_API int tide_sim_epoch(tide_ctx *ctx, const tide_sim_sky *sky, int epoch, tide_sim_frame *out);

/** Release a frame's image, header and truth table. */
TIDE_API void tide_sim_frame_free(tide_ctx *ctx, tide_sim_frame *f);

/** Make epoch 1 of a fresh sky in one call: tide_sim_sky_make + tide_sim_epoch(1) (+ the
 *  reference catalog when @p refcat is non-NULL). */
TIDE_API int tide_sim_run(tide_ctx *ctx, const tide_sim_params *p, tide_sim_frame *out,
                          tide_table *refcat);

/** The reference catalog of the sky's stars (not galaxies, moving objects or transients)
 *  brighter than ref_maglim, over the frame and its margin: RA, DEC (deg), MAG (reference
 *  band), MAGERR, COLOR, ID. The reference band relates to the frame's filter through
 *      MAG_frame = MAG + color_term * COLOR
 *  and MAG carries a Gaussian error of MAGERR = 0.003 + 0.02·10^(0.4 (MAG_frame - ref_maglim)). */
TIDE_API int tide_sim_refcat(const tide_sim_sky *sky, tide_table *out);

/** The truth pixel→sky mapping of an epoch (TAN + rotation + SIP, exactly what the header
 *  says): 0-based pixel (x, y) to (ra, dec) in degrees, for @p n points. */
TIDE_API int tide_sim_pix2sky(const tide_sim_sky *sky, int epoch, int64_t n, const double *x,
                              const double *y, double *ra, double *dec);

/** The inverse of tide_sim_pix2sky (Newton iteration on the forward SIP, to 1e-9 pixel). */
TIDE_API int tide_sim_sky2pix(const tide_sim_sky *sky, int epoch, int64_t n, const double *ra,
                              const double *dec, double *x, double *y);

/* ---- mosaics: a multi-CCD exposure ------------------------------------------------------ */

/** Most CCDs of a simulated mosaic (LSSTCam has 189 science CCDs). */
#define TIDE_SIM_MAX_CCDS 999

/** One CCD of a simulated mosaic: its name and where it sits in the focal plane. */
typedef struct tide_sim_ccd {
    int ccdnum;       /**< CCDNUM, 1-based, row after row from the bottom of the plane */
    char extname[16]; /**< EXTNAME and DETPOS: "CCD01" ... ("CCD001" ... past 99 CCDs) */
    int64_t x0, y0;   /**< 0-based focal-plane position of the CCD's pixel (0, 0) */
} tide_sim_ccd;

/** The layout of @p nccd CCDs of @p p->width × @p p->height pixels on a grid, @p gap pixels
 *  apart: columns so the plane is about as wide as high, rows filled from the bottom, a short
 *  last row centred. Fills @p ccds (room for nccd) and the plane's size. TIDE_E_INVAL for
 *  nccd outside 1..TIDE_SIM_MAX_CCDS or a gap outside 0..100000. */
TIDE_API int tide_sim_mosaic_layout(const tide_sim_params *p, int nccd, int64_t gap,
                                    tide_sim_ccd *ccds, int64_t *plane_w, int64_t *plane_h);

/** A simulated multi-CCD exposure (opaque): one sky over the focal plane, its CCDs. */
typedef struct tide_sim_mosaic tide_sim_mosaic;

/** Make a mosaic of @p nccd CCDs, each of @p p's size, @p gap pixels apart
 *  (tide_sim_mosaic_layout), from one sky drawn over the whole focal plane, so a star near a
 *  gap has one position and magnitude whichever CCD sees it. @p p->nstars and ngalaxies are
 *  per CCD (the plane gets the same density); the pointing, PSF field (FWHM growing towards
 *  the plane's corners), sky gradient and SIP distortion are the plane's; hot pixels, bad
 *  columns, cosmic rays and noise are each CCD's own. Free with tide_sim_mosaic_free. */
TIDE_API int tide_sim_mosaic_make(tide_ctx *ctx, const tide_sim_params *p, int nccd, int64_t gap,
                                  tide_sim_mosaic **out);

/** Release a mosaic. NULL is a no-op. */
TIDE_API void tide_sim_mosaic_free(tide_sim_mosaic *m);

/** Number of CCDs (0 for NULL). */
TIDE_API int tide_sim_mosaic_count(const tide_sim_mosaic *m);

/** CCD @p k (0-based), or NULL when out of range. */
TIDE_API const tide_sim_ccd *tide_sim_mosaic_ccd(const tide_sim_mosaic *m, int k);

/** The focal plane's sky (for tide_sim_refcat: the reference stars of the whole exposure). */
TIDE_API const tide_sim_sky *tide_sim_mosaic_sky(const tide_sim_mosaic *m);

/** The exposure's primary header for epoch @p epoch: what a camera writes once per exposure
 *  (DATE-OBS, MJD-OBS, EXPTIME, FILTER, pointing, SIM*), NEXTEND, NCCDS and DETSIZE; no WCS
 *  and no detector values (those are each CCD's). @p h is overwritten. */
TIDE_API int tide_sim_mosaic_primary(const tide_sim_mosaic *m, int epoch, tide_header *h);

/** Render CCD @p k (0-based) of epoch @p epoch into @p out, as tide_sim_epoch renders a
 *  frame (free with tide_sim_frame_free). Its header holds its own WCS (the plane's, CRPIX
 *  moved to the CCD's origin), GAIN, RDNOISE, SATURATE, EXTNAME, DETPOS, CCDNUM, DETSIZE,
 *  DETSEC (the CCD in the focal plane, 1-based, gaps counted, as DECam writes it), DATASEC
 *  and TRIMSEC (the whole array: no overscan); its truth table holds the objects whose
 *  centres fall on it, with the IDs of the plane's sky. */
TIDE_API int tide_sim_mosaic_epoch(tide_ctx *ctx, const tide_sim_mosaic *m, int epoch, int k,
                                   tide_sim_frame *out);

#ifdef __cplusplus
}
#endif
#endif
