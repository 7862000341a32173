/* solve_internal.h — what the plate-solving files share. */
#ifndef TIDE_SOLVE_INTERNAL_H
#define TIDE_SOLVE_INTERNAL_H
#include <astrometry/index.h>

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

/** Silence astrometry.net's process-wide logger (idempotent). */
void tide_solve_quiet_astrometry(void);

#endif
