/* instrument.h — the instrument values of one frame (gain, read noise, exposure time, ...),
 * resolved from its FITS header through a configuration (config.h).
 *
 * For each quantity the configuration's `keywords` section names the header keyword and its
 * `camera` section gives the default. The value is taken, in order of precedence, from:
 *
 *   1. a command-line override of the camera value (--set camera.gain=2.5): the user asked for
 *      that value, so it wins over the header            -> TIDE_INST_OVERRIDE
 *   2. the header keyword, when it is named and present   -> TIDE_INST_HEADER
 *   3. the camera default, when it is set                 -> TIDE_INST_CAMERA
 *   4. otherwise the value is missing                     -> TIDE_INST_MISSING
 *
 * and the pixel scale is derived from the pixel size and focal length (TIDE_INST_DERIVED).
 * A missing saturation level of an 8- or 16-bit integer image (BITPIX 8 or 16, BSCALE 1) is
 * derived as the type's ceiling plus BZERO (255; 32767 + BZERO, so 65535 for unsigned data):
 * a pixel there was clipped by the ADC or by the conversion that wrote the file, as an 8-bit
 * JPEG's stars are, and must not be taken for a cosmic ray or measured as a star's true peak.
 *
 * Conventions: the pixel size is that of a *binned* pixel, as MaxIm DL and NINA write XPIXSZ;
 * from the camera default (an unbinned pixel) it is multiplied by the x binning. A numeric RA is
 * in degrees, a sexagesimal RA ("03:32:28.99" or "03 32 28.99") in hours; DEC in degrees either
 * way. A number written as a quoted string ('1.5') is accepted. A header value of the wrong
 * type or out of the camera key's range (GAIN = 0, XBINNING = 'x') is an error naming the file,
 * the keyword and the config key to change, not a silent fallback. */
#ifndef TIDE_INSTRUMENT_H
#define TIDE_INSTRUMENT_H
#include "tide/export.h"
#include <stdint.h>
#include <stdio.h>

#include "tide/config.h"
#include "tide/header.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The resolved quantities, in the order tide_instrument_write_json lists them. */
typedef enum {
    TIDE_INST_EXPTIME = 0, /**< s */
    TIDE_INST_GAIN,        /**< e-/ADU */
    TIDE_INST_RDNOISE,     /**< e- */
    TIDE_INST_SATURATE,    /**< ADU */
    TIDE_INST_PIXSIZE,     /**< um, binned pixel */
    TIDE_INST_FOCALLEN,    /**< mm */
    TIDE_INST_PIXSCALE, /**< arcsec/pixel, derived: 206264.806 * pixsize_um / focallen_mm / 1000 */
    TIDE_INST_FILTER,
    TIDE_INST_RA,  /**< degrees */
    TIDE_INST_DEC, /**< degrees */
    TIDE_INST_NCOMBINE,
    TIDE_INST_XBINNING,
    TIDE_INST_YBINNING,
    TIDE_INST_DATEOBS,
    TIDE_INST_MJDOBS, /**< days */
    TIDE_INST_AIRMASS,
    TIDE_INST_OBJECT,
    TIDE_INST_COUNT
} tide_inst_id;

/** Where a resolved value came from. */
typedef enum {
    TIDE_INST_MISSING = 0,
    TIDE_INST_HEADER = 1,
    TIDE_INST_CAMERA = 2,
    TIDE_INST_OVERRIDE = 3,
    TIDE_INST_DERIVED = 4
} tide_inst_source;

/** One frame's instrument values. Missing numbers are NaN, missing integers 0, missing strings
 *  "". The per-quantity arrays are indexed by tide_inst_id. */
typedef struct tide_instrument {
    char name[72]; /**< instrument.name of the configuration */
    double exptime, gain, rdnoise, saturate, pixsize_um, focallen_mm, pixscale_arcsec;
    double ra_deg, dec_deg, mjdobs, airmass;
    int64_t ncombine, xbinning, ybinning;
    char filter[72], dateobs[72], object[72];
    tide_inst_source source[TIDE_INST_COUNT]; /**< where each value came from */
    char keyword[TIDE_INST_COUNT][9];         /**< the header keyword consulted ("" if none) */
} tide_instrument;

/** Short name of a quantity ("gain") — also its key in the keywords section. */
TIDE_API const char *tide_instrument_quantity_name(tide_inst_id id);

/** Name of a source: "missing", "header", "camera", "override", "derived". */
TIDE_API const char *tide_instrument_source_name(tide_inst_source s);

/** Resolve every quantity of a frame from its header @p hdr (NULL: no header, camera values
 *  only) through @p cfg. @p source names the frame in messages ("FRAME.fits[1]").
 *  TIDE_E_FORMAT / TIDE_E_RANGE for an unusable header value (detail names source, keyword and
 *  value). Missing values are not an error: callers that need one check source[]. */
TIDE_API int tide_instrument_resolve(const tide_config *cfg, const tide_header *hdr,
                                     const char *source, tide_instrument *out);

/** Write the resolved values as a JSON object: quantity -> {"value", "source", "keyword"}
 *  (missing values are null), indented by @p indent spaces at the outer level, no trailing
 *  newline. */
TIDE_API int tide_instrument_write_json(const tide_instrument *inst, FILE *f, int indent);

/** Parse a sexagesimal angle "[+-]D:M:S", "D M S", "D:M" or a plain number into its value in
 *  the same unit as D (hours or degrees). TIDE_E_FORMAT if it is neither. */
TIDE_API int tide_parse_sexagesimal(const char *s, double *out);

/** Parse an angle to degrees: a plain number is degrees; sexagesimal text ("10:30:05.2",
 *  "10 30 05.2", "10h30m05.2s", "-05:20:10", "-5d20m10s", "+02:12") is in hours when @p hours
 *  is 1 (right ascension) and in degrees otherwise. A leading sign applies to the whole angle;
 *  minutes and seconds lie in [0, 60) and only the last part may have a fraction.
 *  TIDE_E_FORMAT (detail: the text) if @p s is not an angle. */
TIDE_API int tide_parse_angle(const char *s, int hours, double *deg);

#ifdef __cplusplus
}
#endif
#endif
