/* fits_mef.c — multi-extension FITS files written HDU after HDU (fits.h, tide_fits_mef): a
 * mosaic exposure (one image extension per CCD) or its catalog (one table per CCD), staged
 * like every output and renamed into place complete, so a mosaic never needs all its CCDs in
 * memory at once. */
#include <stdlib.h>

#include "fits_internal.h"
#include "tide/status.h"

struct tide_fits_mef {
    tide_fits_out out;
    int nhdu; /* HDUs written, the primary included */
};

int tide_fits_mef_begin(const char *path, struct tide_outfile *of, const tide_header *primary,
                        tide_fits_mef **out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "%s: no handle for the file", path ? path : "(null)");
    *out = NULL;
    if (!of && !path)
        return tide_error(TIDE_E_INVAL, "multi-extension FITS: no file name");
    tide_fits_mef *m = calloc(1, sizeof *m);
    if (!m)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory", of ? of->path : path);
    int st = of ? tide_fits_out_begin_staged(&m->out, of) : tide_fits_out_begin(&m->out, path);
    if (st) {
        free(m);
        return st;
    }
    int cst = 0;
    if (fits_create_img(m->out.f, BYTE_IMG, 0, NULL, &cst))
        st = tide_fits_status(cst, m->out.path, 0, "cannot create the primary HDU");
    if (!st)
        st = tide_fits_put_cards(m->out.f, primary, 1, m->out.path);
    if (st) {
        tide_fits_mef_abort(m);
        return st;
    }
    m->nhdu = 1;
    *out = m;
    return 0;
}

int tide_fits_mef_add_image(tide_fits_mef *m, const tide_image *im, const tide_header *hdr,
                            const char *extname) {
    if (!m)
        return tide_error(TIDE_E_INVAL, "multi-extension FITS: no file");
    if (!im || !im->pix || im->width <= 0 || im->height <= 0 || im->stride < im->width ||
        im->location != TIDE_HOST)
        return tide_error(TIDE_E_INVAL, "%s[HDU %d]: no host image to write", m->out.path, m->nhdu);
    int st = tide_fits_image_hdu(&m->out, im, hdr, extname, m->nhdu);
    m->nhdu += !st;
    return st;
}

int tide_fits_mef_add_table(tide_fits_mef *m, const tide_table *t, const tide_header *hdr,
                            const char *extname) {
    if (!m)
        return tide_error(TIDE_E_INVAL, "multi-extension FITS: no file");
    if (!t)
        return tide_error(TIDE_E_INVAL, "%s[HDU %d]: no table to write", m->out.path, m->nhdu);
    int st = tide_fits_table_hdu(&m->out, t, hdr, extname, 0, m->nhdu);
    m->nhdu += !st;
    return st;
}

int tide_fits_mef_commit(tide_fits_mef *m) {
    if (!m)
        return tide_error(TIDE_E_INVAL, "multi-extension FITS: no file");
    int st = tide_fits_out_commit(&m->out);
    free(m);
    return st;
}

void tide_fits_mef_abort(tide_fits_mef *m) {
    if (!m)
        return;
    tide_fits_out_abort(&m->out);
    free(m);
}
