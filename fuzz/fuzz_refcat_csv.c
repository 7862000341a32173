/* fuzz_refcat_csv.c — libFuzzer harness: the CSV reference-catalog reader
 * (src/refcat/refcat_csv.c: quotes, header names, degrees or sexagesimal angles), with the default
 * column names and with "ra", "dec", "mag" named explicitly, as tide_refcat_read calls it. */
#include "fuzz_common.h"
#include "refcat/refcat_internal.h"
#include "tide/refcat.h"
#include "tide/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path("csv", ".csv");
    if (fuzz_write(path, data, size))
        return 0;
    tide_table t;
    if (tide_refcat_read_csv(path, NULL, &t) == 0)
        tide_table_free(&t);
    /* columns named explicitly (a missing one is then an error, not NaN) */
    tide_refcat_columns cols;
    memset(&cols, 0, sizeof cols);
    snprintf(cols.ra, sizeof cols.ra, "ra");
    snprintf(cols.dec, sizeof cols.dec, "dec");
    snprintf(cols.mag, sizeof cols.mag, "mag");
    if (tide_refcat_read_csv(path, &cols, &t) == 0)
        tide_table_free(&t);
    tide_error_clear();
    return 0;
}
