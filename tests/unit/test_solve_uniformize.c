/* test_solve_uniformize.c — the order in which the solver sees sources (solve_uniformize.c):
 * solve-field's cells and rounds, and the cases that must leave the order alone. */
#include "astrometry/solve_internal.h"
#include "tide_test.h"

/* Four corners fix the box (2 x 2 cells for ncell 4); the brightest six crowd one cell. */
static void test_rounds(void) {
    const double x[10] = {0, 10, 12, 14, 16, 18, 100, 0, 100, 20};
    const double y[10] = {0, 10, 12, 14, 16, 18, 0, 100, 100, 20};
    int64_t order[10];
    for (int k = 0; k < 10; k++)
        order[k] = k; /* brightest first */
    CHECK_OK(tide_solve_uniformize(order, 10, x, y, 4));
    /* round 0: the brightest of each cell; then the crowded cell's others in turn */
    const int64_t want[10] = {0, 6, 7, 8, 1, 2, 3, 4, 5, 9};
    for (int k = 0; k < 10; k++)
        CHECK(order[k] == want[k]);
}

/* solve-field's cell counts: 800 x 526 into 4 x 2 for n = 10 (its log says so on the
 * gauntlet's apod1; C's round would give 4 x 3). One source per cell is a single round. */
static void test_cells_match_solve_field(void) {
    double x[10], y[10];
    int64_t order[10];
    int m = 0;
    x[m] = 0, y[m] = 0, order[m] = m, m++; /* the box's corners */
    x[m] = 800, y[m] = 526, order[m] = m, m++;
    for (int iy = 0; iy < 2; iy++)
        for (int ix = 0; ix < 4; ix++)
            if (!((ix == 0 && iy == 0) || (ix == 3 && iy == 1)))
                x[m] = 100 + 200 * ix, y[m] = 131.5 + 263 * iy, order[m] = m, m++;
    CHECK(m == 8);
    CHECK_OK(tide_solve_uniformize(order, m, x, y, 10));
    for (int k = 0; k < m; k++)
        CHECK(order[k] == k); /* 8 cells, one source each: a single round, order kept */
    /* (100, 200) shares the corner's cell only in 4 x 2 cells (263 px high); in C-rounded
     * 4 x 3 cells (175 px) it would have its own and the order would stay 0, 2, 1 */
    double x2[3] = {0, 800, 100}, y2[3] = {0, 526, 200};
    int64_t o2[3] = {0, 2, 1}; /* (100, 200) is brighter than the far corner */
    CHECK_OK(tide_solve_uniformize(o2, 3, x2, y2, 10));
    /* round 0: the corner, then the far corner's cell; round 1: (100, 200) */
    CHECK(o2[0] == 0 && o2[1] == 1 && o2[2] == 2);
}

static void test_left_alone(void) {
    const double x[4] = {0, 1, 2, 3}, y[4] = {5, 5, 5, 5}; /* one line: no box */
    int64_t order[4] = {3, 1, 0, 2};
    CHECK_OK(tide_solve_uniformize(order, 4, x, y, 10));
    CHECK(order[0] == 3 && order[1] == 1 && order[2] == 0 && order[3] == 2);
    const double y2[4] = {0, 9, 3, 7};
    CHECK_OK(tide_solve_uniformize(order, 4, x, y2, 0)); /* off */
    CHECK(order[0] == 3 && order[1] == 1 && order[2] == 0 && order[3] == 2);
    CHECK_OK(tide_solve_uniformize(order, 4, x, y2, 1));
    CHECK(order[0] == 3 && order[1] == 1 && order[2] == 0 && order[3] == 2);
}

int main(void) {
    test_rounds();
    test_cells_match_solve_field();
    test_left_alone();
    return TIDE_TEST_RESULT();
}
