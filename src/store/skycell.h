/* skycell.h — the SQLite store's sky index: HEALPix cells in the NESTED scheme (Górski et al.
 * 2005, ApJ 622, 759) and a conservative cover of a disc by ranges of cell indices.
 *
 * Why HEALPix NESTED: equal-area cells (the density of candidates per cell does not depend on
 * declination), no singularity at RA 0/360, and in NESTED order every cell of a coarser level
 * is one contiguous range of the finest indices, so a disc becomes a short list of BETWEEN
 * ranges over one integer column. Order 11 (nside 2048, 50,331,648 cells of 1.72 arcmin) keeps
 * the candidates of an arcsecond cone to a few cells while a several-degree cone needs only
 * a few thousand ranges (interior cells are taken whole at coarser levels). */
#ifndef TIDE_STORE_SKYCELL_H
#define TIDE_STORE_SKYCELL_H
#include <stdint.h>

/** Order (log2 nside) of the stored cells. */
#define TIDE_SKYCELL_ORDER 11

/** NESTED index at @p order of the direction (ra, dec) in degrees; -1 if not finite. */
int64_t tide_skycell_index(int order, double ra_deg, double dec_deg);

/** Centre of NESTED cell @p pix at @p order, degrees. */
void tide_skycell_center(int order, int64_t pix, double *ra_deg, double *dec_deg);

/** Ranges [lo, hi] (inclusive) of order-@p order cells that together contain every point
 *  within @p radius_deg of (ra, dec): a superset of the disc (never misses a point), sorted
 *  and merged. *ranges is malloc'd (2 values per range; caller frees), *nranges their count. */
int tide_skycell_cover(int order, double ra_deg, double dec_deg, double radius_deg,
                       int64_t **ranges, int64_t *nranges);

#endif
