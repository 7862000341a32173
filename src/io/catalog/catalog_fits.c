/* catalog_fits.c — the FITS binary-table catalog: the FITS layer's atomic table writer with
 * the catalog's extension name. */
#include "tide/catalog.h"
#include "tide/fits.h"
#include "tide/status.h"

int tide_catalog_write_fits(const char *path, const tide_table *t, const tide_header *hdr) {
    if (!t)
        return tide_error(TIDE_E_INVAL, "%s: no catalog to write", path ? path : "(null)");
    return tide_fits_write_table(path, t, hdr, "OBJECTS");
}

int tide_catalog_write_fits_to(struct tide_outfile *of, const tide_table *t,
                               const tide_header *hdr) {
    return tide_fits_write_table_to(of, t, hdr, "OBJECTS");
}
