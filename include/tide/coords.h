/* coords.h — the one place where 0-based internal pixel centres meet FITS 1-based ones.
 * Internally the first pixel's centre is (0, 0); in catalogs, headers, WCS calls and user
 * messages it is (1, 1), as in Source Extractor and wcslib. */
#ifndef TIDE_COORDS_H
#define TIDE_COORDS_H

/** Internal 0-based pixel coordinate to FITS 1-based. */
static inline double tide_pix_to_fits(double x0) {
    return x0 + 1.0;
}
/** FITS 1-based pixel coordinate to internal 0-based. */
static inline double tide_pix_from_fits(double x1) {
    return x1 - 1.0;
}

#endif
