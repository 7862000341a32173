/* fuzz_fits_table.c — libFuzzer harness: FITS tables: tide_fits_read_table (binary and ASCII
 * tables, every column type) and the reference-catalog reader on the same file
 * (tide_refcat_read: RA/DEC as degrees or sexagesimal text, magnitudes), as `tide reduce
 * --refcat FILE.fits` reads it. */
#include "fuzz_common.h"
#include "tide/fits.h"
#include "tide/refcat.h"
#include "tide/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path("table", ".fits");
    if (fuzz_write(path, data, size))
        return 0;
    tide_table t;
    tide_table_init(&t);
    tide_header hdr;
    tide_header_init(&hdr);
    tide_fits_read_table(path, &t, &hdr);
    tide_table_free(&t); /* whatever the outcome */
    tide_header_free(&hdr);
    tide_table r;
    if (tide_refcat_read(path, NULL, &r) == 0)
        tide_table_free(&r);
    tide_error_clear();
    return 0;
}
