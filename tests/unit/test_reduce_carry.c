/* test_reduce_carry.c — tide_pipe_carry_first (reduce_carry.c): a first-pass source with no
 * second-pass source within one FWHM is appended with its first-pass values, FLAGS bit
 * TIDE_DETECT_FLAG_FIRST_PASS and PARENT -1; one within the FWHM is not; tables whose
 * columns differ are refused. */
#include "pipeline/reduce_internal.h"
#include "tide/detect.h"
#include "tide_test.h"

static void make(tide_table *t, int64_t n, const double *x, const double *y, double snr0) {
    tide_table_init(t);
    CHECK_OK(tide_table_add_column(t, "X", TIDE_COL_F64, 1, "", "", NULL));
    CHECK_OK(tide_table_add_column(t, "Y", TIDE_COL_F64, 1, "", "", NULL));
    CHECK_OK(tide_table_add_column(t, "SNR", TIDE_COL_F64, 1, "", "", NULL));
    CHECK_OK(tide_table_add_column(t, "FLAGS", TIDE_COL_I32, 1, "", "", NULL));
    CHECK_OK(tide_table_add_column(t, "PARENT", TIDE_COL_I64, 1, "", "", NULL));
    CHECK_OK(tide_table_resize(t, n));
    for (int64_t i = 0; i < n; i++) {
        tide_table_f64(t, "X")[i] = x[i];
        tide_table_f64(t, "Y")[i] = y[i];
        tide_table_f64(t, "SNR")[i] = snr0 + (double)i;
        tide_table_i32(t, "FLAGS")[i] = 2;
        tide_table_i64(t, "PARENT")[i] = 7 + i;
    }
}

int main(void) {
    /* first pass: 4 sources; second: one on #0 (0.9 px off), one on #2 (1.7 px off), one new */
    const double x1[4] = {10, 50, 90, 130}, y1[4] = {10, 50, 90, 130};
    const double x2[3] = {10.9, 91.2, 300}, y2[3] = {10, 91.2, 300};
    tide_table first, det, empty;
    make(&first, 4, x1, y1, 100.0);
    make(&det, 3, x2, y2, 0.0);
    int64_t nc = -1;
    CHECK_OK(tide_pipe_carry_first(&first, &det, 1.8, &nc));
    CHECK(nc == 2 && det.nrows == 5);
    if (det.nrows == 5) {
        const double *X = tide_table_f64(&det, "X"), *S = tide_table_f64(&det, "SNR");
        const int32_t *F = tide_table_i32(&det, "FLAGS");
        const int64_t *P = tide_table_i64(&det, "PARENT");
        CHECK(X[3] == 50 && X[4] == 130 && S[3] == 101 && S[4] == 103);
        CHECK(F[3] == (2 | TIDE_DETECT_FLAG_FIRST_PASS) && F[4] == F[3] && F[0] == 2);
        CHECK(P[3] == -1 && P[4] == -1 && P[0] == 7);
    }
    /* a FWHM under 1 px counts as 1 px: #0 (0.9 px off) is found, the rest carried */
    tide_table_free(&det);
    make(&det, 3, x2, y2, 0.0);
    CHECK_OK(tide_pipe_carry_first(&first, &det, 0.5, &nc));
    CHECK(nc == 3);
    /* an empty second pass keeps all; an empty first pass adds nothing */
    make(&empty, 0, NULL, NULL, 0.0);
    CHECK_OK(tide_pipe_carry_first(&first, &empty, 2.0, &nc));
    CHECK(nc == 4 && empty.nrows == 4);
    tide_table_free(&empty);
    make(&empty, 0, NULL, NULL, 0.0);
    CHECK_OK(tide_pipe_carry_first(&empty, &first, 2.0, &nc));
    CHECK(nc == 0 && first.nrows == 4);
    /* different columns: refused */
    CHECK_OK(tide_table_remove_column(&empty, "SNR"));
    CHECK(tide_pipe_carry_first(&first, &empty, 2.0, &nc) == TIDE_E_INTERNAL);
    tide_table_free(&first);
    tide_table_free(&det);
    tide_table_free(&empty);
    return TIDE_TEST_RESULT();
}
