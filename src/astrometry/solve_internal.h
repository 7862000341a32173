/* solve_internal.h — what the plate-solving files share. */
#ifndef TIDE_SOLVE_INTERNAL_H
#define TIDE_SOLVE_INTERNAL_H
#include <astrometry/index.h>

#include <stdint.h>

#include "tide/solve.h"

/** One loaded index file. */
typedef struct tide_solver_index {
    index_t *index;
    char name[256]; /* file name without the directory */
} tide_solver_index;

struct tide_solver {
    char dir[4096];
    tide_solver_index *idx;
    int nidx;
};

/** Reorder @p order (@p m indices into @p x, @p y, brightest first) as solve-field's
 *  uniformize does: the sources' bounding box is cut into about @p ncell near-square cells,
 *  and round r lists the r-th brightest source of every cell, brightest first within the
 *  round. Fewer than 2 cells, or sources all on one line, leave the order as it is.
 *  @return 0; TIDE_E_NOMEM. */
int tide_solve_uniformize(int64_t *order, int64_t m, const double *x, const double *y, int ncell);

/** Silence astrometry.net's process-wide logger (idempotent). */
void tide_solve_quiet_astrometry(void);

#endif
