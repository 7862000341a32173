/* refcat_internal.h — what the reference-catalog readers share (refcat.c, refcat_csv.c). */
#ifndef TIDE_REFCAT_INTERNAL_H
#define TIDE_REFCAT_INTERNAL_H
#include "tide/refcat.h"

/** The five columns of the layout, in table order. */
enum { TIDE_RC_RA = 0, TIDE_RC_DEC, TIDE_RC_MAG, TIDE_RC_MAGERR, TIDE_RC_COLOR, TIDE_RC_N };

/** The source column name wanted for layout column @p k (the mapping's or the default);
 *  *required is 1 when a missing column is an error (RA, DEC, MAG, and any name given
 *  explicitly). */
const char *tide_refcat_wanted(const tide_refcat_columns *cols, int k, int *required);

/** The CSV reader behind tide_refcat_read (same contract). */
int tide_refcat_read_csv(const char *path, const tide_refcat_columns *cols, tide_table *out);

#endif
