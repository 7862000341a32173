/* fits_write_rice.c — tide_fits_write_image_as(TIDE_FITS_RICE): a tide_image written as
 * RICE_1 tile-compressed HDUs (tile_encode.h), laid out as fpack lays out a compressed file:
 * an empty primary, the pixels in HDU 1 standing for the primary (ZSIMPLE), then MASK and
 * VAR. TIDEMASK / TIDEVAR count HDUs from the image's, so that they hold both here and in
 * the file funpack makes of this one. */
#include <string.h>

#include "fits_internal.h"
#include "tide/config.h"
#include "tide/status.h"
#include "tile_encode.h"

int tide_fits_compress_parse(const char *name, tide_fits_compress *how) {
    if (name && !strcmp(name, "none")) {
        *how = TIDE_FITS_PLAIN;
        return TIDE_OK;
    }
    if (name && !strcmp(name, "rice")) {
        *how = TIDE_FITS_RICE;
        return TIDE_OK;
    }
    return tide_error(TIDE_E_INVAL, "unknown output compression '%s' (expected none or rice)",
                      name ? name : "(null)");
}

int tide_fits_compress_config(const struct tide_config *cfg, tide_fits_compress *how) {
    const char *v = NULL;
    *how = TIDE_FITS_PLAIN;
    if (!cfg || !tide_config_is_set(cfg, "output.compress") ||
        tide_config_get_str(cfg, "output.compress", &v) || !v)
        return TIDE_OK;
    int st = tide_fits_compress_parse(v, how);
    return st ? tide_error_prefix(st, "configuration output.compress: ") : TIDE_OK;
}

/* One plane coded on every core and appended as a compressed HDU. */
static int write_plane(tide_fits_out *o, int kind, const void *plane, const tide_image *im,
                       const tide_header *hdr, const tide_header *own, const char *extname,
                       int primary, int seed) {
    tide_tile_enc_plan p;
    tide_tile_encoded e;
    int st = tide_tile_enc_plan_init(&p, kind, im->width, im->height, im->stride, 0, 0, seed);
    if (st)
        return tide_error_prefix(st, "%s: ", o->path);
    st = tide_tile_encoded_alloc(&e, &p);
    if (!st)
        st = tide_tile_encode_cpu(&e, plane, 0);
    if (!st)
        st = tide_tile_write_hdu(o->f, &e, plane, hdr, own, extname, primary, o->path);
    tide_tile_encoded_free(&e);
    return st;
}

int tide_fits_write_rice(tide_fits_out *o, const tide_image *im, const tide_header *hdr) {
    int cst = 0;
    if (fits_create_img(o->f, BYTE_IMG, 0, NULL, &cst))
        return tide_fits_status(cst, o->path, 0, "cannot create the empty primary");
    tide_header own;
    tide_header_init(&own);
    int st = 0;
    if (im->mask)
        st = tide_header_set_int(&own, "TIDEMASK", 1, "HDUs after this one to the mask bits");
    if (!st && im->var)
        st = tide_header_set_int(&own, "TIDEVAR", im->mask ? 2 : 1,
                                 "HDUs after this one to the variance");
    if (!st)
        st = write_plane(o, TIDE_ENC_F32, im->pix, im, hdr, &own, NULL, 1,
                         tide_tile_enc_seed(im->pix, im->width));
    tide_header_free(&own);
    tide_header_init(&own);
    if (!st && im->mask)
        st = tide_fits_mask_bit_cards(&own);
    if (!st && im->mask)
        st = write_plane(o, TIDE_ENC_U16, im->mask, im, NULL, &own, "MASK", 0, 1);
    tide_header_free(&own);
    if (!st && im->var)
        st = write_plane(o, TIDE_ENC_F32, im->var, im, NULL, NULL, "VAR", 0,
                         tide_tile_enc_seed(im->var, im->width));
    return st;
}
