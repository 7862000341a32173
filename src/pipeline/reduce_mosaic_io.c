/* reduce_mosaic_io.c — what a mosaic exposure's reduction reads and writes around its CCDs
 * (reduce_mosaic.h): per-CCD side-output names, the store key of a CCD, and a CCD's catalog HDU
 * header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_mosaic.h"
#include "tide/status.h"

int tide_reduce_ccd_path(const char *path, const tide_fits_mosaic_ccd *c, char *out, size_t n) {
    if (!path || !c || !out || n == 0)
        return tide_error(TIDE_E_INVAL, "per-CCD name: no path or CCD");
    char tag[80];
    if (c->extname[0])
        snprintf(tag, sizeof tag, ".%s", c->extname);
    else
        snprintf(tag, sizeof tag, ".hdu%d", c->hdu);
    const char *base = strrchr(path, '/');
    const char *dot = strrchr(base ? base + 1 : path, '.');
    const size_t stem =
        dot && dot != (base ? base + 1 : path) ? (size_t)(dot - path) : strlen(path);
    const int k =
        snprintf(out, n, "%.*s%s%s", (int)stem, path, tag, stem < strlen(path) ? path + stem : "");
    return k < 0 || (size_t)k >= n ? tide_error(TIDE_E_RANGE, "%s: per-CCD name too long", path)
                                   : 0;
}

int tide_reduce_frame_key(const char *spec, char hex[72]) {
    tide_fits_mosaic_plan plan;
    char file[1024];
    snprintf(file, sizeof file, "%s", spec);
    char *b = strrchr(file, '/');
    b = strchr(b ? b : file, '[');
    if (!b) /* the whole file: its checksum */
        return 0;
    *b = '\0';
    int hdu = -1;
    int st = tide_fits_read_image_header(spec, NULL, &hdu, NULL, NULL);
    if (!st)
        st = tide_fits_mosaic_plan_make(file, &plan);
    if (st)
        return st;
    const int mosaic = plan.nccd > 0;
    tide_fits_mosaic_plan_free(&plan);
    if (mosaic)
        return tide_reduce_ccd_key(hex, hdu);
    return 0;
}

int tide_reduce_ccd_key(char hex[72], int hdu) {
    char key[72];
    const int k = snprintf(key, sizeof key, "%.64s[%d]", hex, hdu);
    if (k < 0 || k >= (int)sizeof key)
        return tide_error(TIDE_E_RANGE, "store key of HDU %d too long", hdu);
    memcpy(hex, key, (size_t)k + 1);
    return 0;
}

/* The keywords that say which CCD a catalog HDU is and where it sits (DECam's and LSSTCam's
 * names), copied from the CCD's header when present. */
static const char *const ccd_keys[] = {"CCDNUM", "DETPOS",  "CCDNAME", "DETECTOR", "DETSIZE",
                                       "DETSEC", "DATASEC", "TRIMSEC", "CCDSEC",   "EXTVER"};

int tide_reduce_ccd_header(const tide_header *ccd_hdr, const tide_reduce_ccd *c,
                           const tide_header *cat_hdr, tide_header *out) {
    tide_header_init(out);
    int st = 0;
    for (size_t i = 0; ccd_hdr && !st && i < sizeof ccd_keys / sizeof ccd_keys[0]; i++) {
        const int k = tide_header_find(ccd_hdr, ccd_keys[i]);
        if (k >= 0)
            st = tide_header_append_card(out, ccd_hdr->cards[k]);
    }
    if (!st)
        st = tide_header_set_int(out, "CCDHDU", c->where.hdu, "HDU of the CCD in the exposure");
    if (!st)
        st = tide_header_set_str(out, "CCDSTAT", c->failed ? "FAILED" : "OK",
                                 "FAILED: the CCD could not be reduced (CCDMSG)");
    if (!st && c->failed) {
        char msg[69];
        snprintf(msg, sizeof msg, "%s", c->error);
        st = tide_header_set_str(out, "CCDMSG", msg, "why the CCD was not reduced");
        if (!st)
            st = tide_header_add_text(out, "COMMENT", c->error);
    }
    for (int i = 0; cat_hdr && !st && i < cat_hdr->ncards; i++)
        st = tide_header_append_card(out, cat_hdr->cards[i]);
    if (st)
        tide_header_free(out);
    return st;
}
