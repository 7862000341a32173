/* obsinfo.h — observing conditions of a frame: airmass, altitude and azimuth of the field,
 * Sun and Moon (IAU SOFA routines through ERFA).
 *
 * Time. Everything is computed at mid-exposure: DATE-OBS (UTC, the start) + EXPTIME / 2,
 * added on the TAI scale so a leap second inside the exposure is counted right.
 *
 * Positions. The observer's place comes from eraApco13 (site longitude, geodetic latitude
 * and height on the WGS84 ellipsoid; ΔUT1 [0] and polar motion [0], since no IERS table is
 * read offline). The field (ICRS RA/Dec, no proper motion) goes through eraAtciq and
 * eraAtioq: topocentric, with annual and diurnal aberration, light deflection and, when the
 * pressure is not 0, refraction. The Sun is the direction opposite the observer's
 * heliocentric position (eraEpv00), the Moon eraMoon98's geocentric position plus the
 * Earth's barycentric position at the light-emission time, minus the observer's barycentric
 * position (topocentric parallax, up to 1°, included); both get the observer's aberration
 * and go through eraAtioq like the field. This is what astropy's AltAz frame does with its
 * built-in ephemeris: with astropy's ΔUT1 given, tide agrees to 0.5″ (polar motion) for the
 * field, the Sun and the Moon, and to 5e-5 in the illuminated fraction
 * (tests/peer/test_obsinfo.py).
 *
 * Accuracy. ΔUT1 = 0 rotates the Earth by up to 0.9 s of time: up to 13.5″ in azimuth and
 * altitude (|ΔUT1| < 0.9 s by definition of UTC; 8.5″ = 0.0024° measured on 40 random
 * cases). Polar motion is < 0.5″.
 * eraMoon98 is good to about 10″ in longitude and 4″ in latitude (Meeus 1998) over 1800-2100,
 * so the Moon is well within 0.01° before ΔUT1. Refraction uses ERFA's model (eraRefco,
 * good to ~0.1″ at 45°, a few arcmin near the horizon, as any model there).
 *
 * Airmass. Pickering (2002, DIO 12, 3): X = 1 / sin(h + 244 / (165 + 47 h^1.1)), h the
 * apparent (refracted) altitude in degrees, fitted to the observed air mass down to the
 * horizon (X = 38 at h = 0), unlike sec z which diverges there. NaN below the horizon.
 *
 * Moon phase: the illuminated fraction k = (1 + cos i) / 2, i the Sun–Moon–Earth angle
 * (geocentric vectors). */
#ifndef TIDE_OBSINFO_H
#define TIDE_OBSINFO_H
#include "tide/export.h"
#include "tide/header.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the computation needs (defaults in brackets from tide_obsinfo_in_default). */
typedef struct tide_obsinfo_in {
    char date_obs[32];    /**< DATE-OBS: start of the exposure, ISO 8601 UTC
                               "YYYY-MM-DDThh:mm:ss[.sss]" [""] */
    double exptime;       /**< exposure time, s [0] */
    double lon_deg;       /**< site longitude, degrees east of Greenwich [NaN: required] */
    double lat_deg;       /**< site geodetic latitude, degrees [NaN: required] */
    double height_m;      /**< site height above the WGS84 ellipsoid, m [0] */
    double ra_deg;        /**< field centre, ICRS, degrees [NaN: required] */
    double dec_deg;       /**< [NaN: required] */
    double pressure_hpa;  /**< pressure at the site; 0 = no refraction; NaN = the standard
                               atmosphere at the site's height, 1013.25 exp(−h / (29.3 T))
                               (ERFA's eraRefco notes) [NaN] */
    double temperature_c; /**< air temperature, °C [10] */
    double humidity;      /**< relative humidity 0..1 [0.5] */
    double wavelength_um; /**< effective wavelength, µm [0.55] */
    double dut1;          /**< UT1 − UTC, s [0] */
} tide_obsinfo_in;

/** Observing conditions at mid-exposure. Angles in degrees. */
typedef struct tide_obsinfo {
    double mjd_mid;     /**< MJD (UTC) of mid-exposure */
    double alt_deg;     /**< apparent altitude of the field (refracted unless pressure 0) */
    double az_deg;      /**< azimuth of the field, N = 0, E = 90 */
    double ha_deg;      /**< hour angle of the field, −180..180 (west positive) */
    double airmass;     /**< Pickering (2002); NaN below the horizon */
    double sun_alt_deg; /**< apparent altitude of the Sun's centre */
    double sun_az_deg;
    double moon_alt_deg; /**< apparent topocentric altitude of the Moon's centre */
    double moon_az_deg;
    double moon_illum;    /**< illuminated fraction of the Moon's disc, 0..1 */
    double moon_dist_deg; /**< topocentric Moon–field angular distance */
} tide_obsinfo;

/** Fill @p in with the defaults in brackets above. */
TIDE_API void tide_obsinfo_in_default(tide_obsinfo_in *in);

/** Take what a frame header offers: DATE-OBS (a date alone is completed by TIME-OBS or UT),
 *  EXPTIME (else EXPOSURE), the site from SITELONG/SITELAT/SITEELEV or LONG-OBS/LAT-OBS/
 *  ALT-OBS (numbers in degrees and metres, or sexagesimal strings), and the field centre
 *  from CRVAL1/CRVAL2 when the frame has a celestial WCS (a first guess: the caller sets the
 *  WCS centre of the frame when it has one). Only keys present change @p in.
 *  TIDE_E_NOTFOUND when DATE-OBS is missing. */
TIDE_API int tide_obsinfo_in_from_header(const tide_header *h, tide_obsinfo_in *in);

/** Compute the observing conditions. Errors: TIDE_E_INVAL (site, field or time missing or
 *  out of range: |lat| <= 90, |dec| <= 90, exptime >= 0, a DATE-OBS that does not parse or is
 *  not a valid date; the detail names the field), TIDE_E_RANGE (ERFA refused the date). A
 *  date outside ERFA's leap-second table (before 1960 or far in the future) is computed with
 *  a warning-free extrapolation of ΔAT, as ERFA does. */
TIDE_API int tide_obsinfo_compute(const tide_obsinfo_in *in, tide_obsinfo *out);

/** Header cards: MJD-MID, ALT_OBJ, AZ_OBJ, HA_OBJ, TAIRMASS (tide's airmass, always),
 *  AIRMASS (only when the header has none: an observatory's own value is kept), SUNALT,
 *  MOONALT, MOONPHAS (illuminated fraction), MOONDIST. Non-finite values (airmass below the
 *  horizon) are not written. */
TIDE_API int tide_obsinfo_to_header(const tide_obsinfo *o, tide_header *h);

#ifdef __cplusplus
}
#endif
#endif
