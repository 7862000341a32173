/* sim_write.c — writing the simulator's products (sim_write.h): a truth table's header and a
 * mosaic exposure written CCD by CCD. */
#include <string.h>

#include "sim_write.h"

int tide_cli_sim_table_header(const tide_header *frame, tide_header *h) {
    int st = 0;
    if (frame) {
        const char *keys[] = {"SIMSEED", "SIMEPOCH", "DATE-OBS", "MJD-OBS", "FILTER",
                              "EXPTIME", "GAIN",     "SIMZPADU", "SIMZP",   "SIMCOLT"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0] && !st; i++) {
            int k = tide_header_find(frame, keys[i]);
            if (k >= 0)
                st = tide_header_append_card(h, frame->cards[k]);
        }
    }
    if (!st)
        st = tide_header_set_str(h, "FLUXUNIT", "adu", "FLUX is ADU above sky and bias");
    return st;
}

/* CCD @p k's image into @p img and its truth into @p tru (when open). */
static int write_ccd(tide_ctx *ctx, const tide_sim_mosaic *m, int epoch, int k, tide_fits_mef *img,
                     tide_fits_mef *tru, tide_cli_sim_mosaic_summary *sum) {
    const tide_sim_ccd *c = tide_sim_mosaic_ccd(m, k);
    tide_sim_frame f;
    int st = tide_sim_mosaic_epoch(ctx, m, epoch, k, &f);
    if (st)
        return st;
    st = tide_fits_mef_add_image(img, &f.image, &f.header, c->extname);
    if (!st && tru) {
        tide_header h;
        tide_header_init(&h);
        st = tide_cli_sim_table_header(&f.header, &h);
        if (!st)
            st = tide_header_set_int(&h, "CCDNUM", c->ccdnum, "CCD number");
        if (!st)
            st = tide_fits_mef_add_table(tru, &f.truth, &h, c->extname);
        tide_header_free(&h);
    }
    sum->rows += (long long)f.truth.nrows;
    sum->saturated += (long long)f.nsaturated;
    sum->cosmics += (long long)f.ncosmics;
    tide_sim_frame_free(ctx, &f);
    return st;
}

int tide_cli_sim_mosaic_write(tide_ctx *ctx, const tide_sim_mosaic *m, int epoch, const char *path,
                              const char *truth, tide_cli_sim_mosaic_summary *sum) {
    memset(sum, 0, sizeof *sum);
    const double t0 = tide_now();
    tide_header prim;
    int st = tide_sim_mosaic_primary(m, epoch, &prim);
    if (st)
        return st;
    tide_fits_mef *img = NULL, *tru = NULL;
    st = tide_fits_mef_begin(path, NULL, &prim, &img);
    if (!st && truth)
        st = tide_fits_mef_begin(truth, NULL, &prim, &tru);
    tide_header_free(&prim);
    for (int k = 0; !st && k < tide_sim_mosaic_count(m); k++)
        st = write_ccd(ctx, m, epoch, k, img, tru, sum);
    if (st) {
        tide_fits_mef_abort(img);
        tide_fits_mef_abort(tru);
        return st;
    }
    st = tide_fits_mef_commit(img);
    if (tru) {
        if (st)
            tide_fits_mef_abort(tru);
        else
            st = tide_fits_mef_commit(tru);
    }
    sum->seconds = tide_now() - t0;
    return st;
}
