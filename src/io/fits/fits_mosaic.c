/* fits_mosaic.c — which HDUs of a file are the CCDs of a mosaic exposure (fits.h,
 * tide_fits_mosaic_plan): an empty primary followed by two or more 2-D image HDUs, as DECam
 * and LSSTCam write an exposure. Tables, cubes, empty HDUs and the MASK / VAR planes of a
 * tide image are not CCDs; each is listed with the reason it was left out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/fits.h"
#include "tide/status.h"

/* A selector after the file name ("FILE[3]", "FILE[CCD01]"): the caller named one HDU. */
static int names_one_hdu(const char *spec) {
    const char *base = strrchr(spec, '/');
    return strchr(base ? base : spec, '[') != NULL;
}

/* 2-D: two axes of data (more axes only of length 1, as tide_fits_read_image allows). */
static int is_2d_image(const tide_fits_hdu *h) {
    if (h->kind != TIDE_HDU_IMAGE && h->kind != TIDE_HDU_COMPRESSED)
        return 0;
    if (h->naxis < 2 || h->naxes[0] < 1 || h->naxes[1] < 1)
        return 0;
    for (int a = 2; a < h->naxis && a < 9; a++)
        if (h->naxes[a] != 1)
            return 0;
    return 1;
}

static int skip(tide_fits_mosaic_plan *p, const tide_fits_hdu *h, const char *why) {
    tide_fits_mosaic_skip *s = &p->skipped[p->nskipped++];
    s->hdu = h->index;
    snprintf(s->what, sizeof s->what, "%s%s%s%s", tide_hdu_kind_name(h->kind),
             h->extname[0] ? " '" : "", h->extname, h->extname[0] ? "'" : "");
    snprintf(s->why, sizeof s->why, "%s", why);
    return 0;
}

/* The CCD's CCDNUM, and the HDUs its TIDEMASK / TIDEVAR name (planes, not CCDs). */
static int ccd_header(const char *spec, tide_fits_mosaic_ccd *c, int planes[2]) {
    tide_header h;
    int st = tide_fits_read_hdu_header(spec, c->hdu, &h);
    if (st)
        return st;
    c->ccdnum = -1;
    if (tide_header_get_int(&h, "CCDNUM", &c->ccdnum))
        c->ccdnum = -1;
    const char *keys[2] = {"TIDEMASK", "TIDEVAR"};
    for (int k = 0; k < 2; k++) {
        int64_t v = -1;
        planes[k] = tide_header_get_int(&h, keys[k], &v) ? -1 : (int)(c->hdu + v);
    }
    tide_error_clear();
    tide_header_free(&h);
    return 0;
}

int tide_fits_mosaic_plan_make(const char *spec, tide_fits_mosaic_plan *out) {
    memset(out, 0, sizeof *out);
    if (!spec)
        return tide_error(TIDE_E_INVAL, "mosaic: no file");
    if (names_one_hdu(spec))
        return 0;
    tide_fits_hdu *hdus = NULL;
    int n = 0;
    int st = tide_fits_inventory(spec, &hdus, &n);
    if (st)
        return st;
    if (n < 3 || hdus[0].kind != TIDE_HDU_EMPTY) { /* a frame in the primary: not a mosaic */
        free(hdus);
        return 0;
    }
    out->ccd = calloc((size_t)n, sizeof *out->ccd);
    out->skipped = calloc((size_t)n, sizeof *out->skipped);
    int *plane = calloc((size_t)n, sizeof *plane);
    if (!out->ccd || !out->skipped || !plane)
        st = tide_error(TIDE_E_NOMEM, "%s: out of memory for %d HDUs", spec, n);
    /* Every image's header first: a TIDEMASK / TIDEVAR of one names the planes of another. */
    for (int i = 1; !st && i < n; i++) {
        if (!is_2d_image(&hdus[i]))
            continue;
        tide_fits_mosaic_ccd *c = &out->ccd[out->nccd++];
        c->hdu = hdus[i].index;
        snprintf(c->extname, sizeof c->extname, "%s", hdus[i].extname);
        c->width = hdus[i].naxes[0], c->height = hdus[i].naxes[1];
        int pl[2];
        st = ccd_header(spec, c, pl);
        for (int k = 0; !st && k < 2; k++)
            if (pl[k] > 0 && pl[k] < n)
                plane[pl[k]] = 1;
    }
    /* Then the list: the CCDs that are not planes, and every other HDU with its reason. */
    int kept = 0;
    for (int i = 0, c = 0; !st && i < n; i++) {
        const tide_fits_hdu *h = &hdus[i];
        if (i > 0 && is_2d_image(h)) {
            if (plane[i])
                skip(out, h, "the mask or variance plane of another image");
            else
                out->ccd[kept++] = out->ccd[c];
            c++;
        } else {
            skip(out, h,
                 i == 0 ? "the empty primary"
                 : h->kind == TIDE_HDU_BINTABLE || h->kind == TIDE_HDU_ASCIITABLE ? "a table"
                 : h->kind == TIDE_HDU_EMPTY                                      ? "no data"
                                             : "not a 2-D image");
        }
    }
    out->nccd = kept;
    free(plane);
    free(hdus);
    if (st || out->nccd < 2) /* one image after an empty primary is a single frame */
        tide_fits_mosaic_plan_free(out);
    return st;
}

void tide_fits_mosaic_plan_free(tide_fits_mosaic_plan *p) {
    if (!p)
        return;
    free(p->ccd);
    free(p->skipped);
    memset(p, 0, sizeof *p);
}

int tide_fits_mosaic_find(const tide_fits_mosaic_plan *p, const char *extname, int64_t ccdnum) {
    for (int k = 0; p && k < p->nccd; k++)
        if (extname && extname[0] ? !strcmp(p->ccd[k].extname, extname)
                                  : ccdnum >= 0 && p->ccd[k].ccdnum == ccdnum)
            return k;
    return -1;
}
