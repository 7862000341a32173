/* fits_atomic.c — FITS outputs through cfitsio, staged as every output is (outfile.h): cfitsio
 * creates the file by name inside the writer's private directory, where nobody else can plant
 * anything, and the file is renamed over the target only when complete (DESIGN §6). */
#include <string.h>
#include <unistd.h>

#include "fits_internal.h"
#include "tide/status.h"

/* Open cfitsio on the (not yet existing) temporary of @p of. */
static int open_tmp(tide_fits_out *o, tide_outfile *of) {
    o->of = of;
    o->path = of->path;
    int cst = 0;
    /* fits_create_diskfile takes the name literally (no extended-syntax parsing) and refuses
     * an existing file. */
    if (fits_create_diskfile(&o->f, of->tmp, &cst)) {
        o->f = NULL;
        return tide_fits_status(cst, of->path, -1, "cannot create the temporary output file");
    }
    return TIDE_OK;
}

int tide_fits_out_begin(tide_fits_out *o, const char *path) {
    memset(o, 0, sizeof *o);
    o->path = path ? path : "";
    int st = tide_outfile_begin(&o->own, path);
    if (st)
        return st;
    st = open_tmp(o, &o->own);
    if (st)
        tide_outfile_abort(&o->own);
    return st;
}

int tide_fits_out_begin_staged(tide_fits_out *o, tide_outfile *of) {
    memset(o, 0, sizeof *o);
    o->staged = 1;
    return open_tmp(o, of);
}

void tide_fits_out_abort(tide_fits_out *o) {
    if (o->f) {
        int cst = 0;
        fits_close_file(o->f, &cst);
        o->f = NULL;
    }
    if (o->staged) /* the set decides; the half-written temporary goes now */
        unlink(o->of->tmp);
    else
        tide_outfile_abort(&o->own);
    fits_clear_errmsg();
}

int tide_fits_out_commit(tide_fits_out *o) {
    int cst = 0;
    fits_close_file(o->f, &cst);
    o->f = NULL;
    if (cst) {
        int st = tide_fits_status(cst, o->path, -1, "cannot finish writing");
        tide_fits_out_abort(o);
        return st;
    }
    int st = o->staged ? tide_outfile_sync(o->of) : tide_outfile_commit(&o->own);
    if (st && o->staged)
        unlink(o->of->tmp);
    return st;
}
