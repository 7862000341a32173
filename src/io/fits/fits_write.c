/* fits_write.c — writing a tide_image: float32 primary, uint16 MASK and float32 VAR
 * extensions, atomically (fits_atomic.c). */
#include <string.h>

#include "fits_fast.h"
#include "tide/status.h"

/* Names of the mask bits, written as BITn cards so a reader of the file knows them
 * (the meanings are those of include/tide/image.h). */
static const char *const mask_bit_names[] = {"NODATA", "SATURATED", "BAD",  "HOT",    "COLD",
                                             "COSMIC", "BLEED",     "EDGE", "INTERP", "USER"};

/* Write one plane (rows of @p w elements, @p stride apart) to the current HDU, whose header
 * is complete: a contiguous float or uint16 plane by the parallel converter
 * (fits_fast_planes.c), anything else through cfitsio. */
static int write_plane(tide_fits_out *o, int datatype, const void *data, size_t elem, int64_t w,
                       int64_t h, int64_t stride, const char *what) {
    int cst = 0;
    if (stride == w && (datatype == TFLOAT || datatype == TUSHORT))
        return tide_fits_fast_write_plane(o->f, o->path, data, w * h, datatype == TUSHORT);
    if (stride == w) {
        LONGLONG fp[2] = {1, 1};
        fits_write_pixll(o->f, datatype, fp, (LONGLONG)w * h, (void *)data, &cst);
    } else {
        for (int64_t y = 0; y < h && !cst; y++) {
            LONGLONG fp[2] = {1, (LONGLONG)y + 1};
            fits_write_pixll(o->f, datatype, fp, (LONGLONG)w,
                             (char *)data + (size_t)(y * stride) * elem, &cst);
        }
    }
    if (cst)
        return tide_fits_status(cst, o->path, tide_fits_cur_hdu(o->f), what);
    return TIDE_OK;
}

int tide_fits_mask_bit_cards(tide_header *h) {
    int st = 0;
    for (int b = 0; !st && b < (int)(sizeof mask_bit_names / sizeof *mask_bit_names); b++) {
        char key[16];
        snprintf(key, sizeof key, "BIT%d", b);
        st = tide_header_set_str(h, key, mask_bit_names[b], "mask bit (value 2^n)");
    }
    return st;
}

static int write_all(tide_fits_out *o, const tide_image *im, const tide_header *hdr) {
    int cst = 0;
    LONGLONG naxes[2] = {im->width, im->height};
    const char *p = o->path;
    if (fits_create_imgll(o->f, FLOAT_IMG, 2, naxes, &cst))
        return tide_fits_status(cst, p, 0, "cannot create the primary image");
    int st = tide_fits_put_cards(o->f, hdr, 0, p);
    if (st)
        return st;
    int mask_hdu = im->mask ? 1 : 0;
    int var_hdu = im->var ? mask_hdu + 1 : 0;
    if (mask_hdu)
        fits_update_key(o->f, TINT, "TIDEMASK", &mask_hdu, "HDU of the tide mask bits", &cst);
    if (var_hdu)
        fits_update_key(o->f, TINT, "TIDEVAR", &var_hdu, "HDU of the variance", &cst);
    if (cst)
        return tide_fits_status(cst, p, 0, "cannot write the header");
    st = write_plane(o, TFLOAT, im->pix, sizeof(float), im->width, im->height, im->stride,
                     "cannot write the pixels");
    if (st)
        return st;
    if (im->mask) {
        if (fits_create_imgll(o->f, USHORT_IMG, 2, naxes, &cst) ||
            fits_write_key_str(o->f, "EXTNAME", "MASK", "tide mask bits", &cst))
            return tide_fits_status(cst, p, mask_hdu, "cannot create the MASK extension");
        tide_header bits;
        tide_header_init(&bits);
        st = tide_fits_mask_bit_cards(&bits);
        if (!st)
            st = tide_fits_put_cards(o->f, &bits, 0, p);
        tide_header_free(&bits);
        if (st)
            return st;
        if (cst)
            return tide_fits_status(cst, p, mask_hdu, "cannot write the MASK header");
        st = write_plane(o, TUSHORT, im->mask, sizeof(uint16_t), im->width, im->height, im->stride,
                         "cannot write the mask");
        if (st)
            return st;
    }
    if (im->var) {
        if (fits_create_imgll(o->f, FLOAT_IMG, 2, naxes, &cst) ||
            fits_write_key_str(o->f, "EXTNAME", "VAR", "variance of the pixels", &cst))
            return tide_fits_status(cst, p, var_hdu, "cannot create the VAR extension");
        st = write_plane(o, TFLOAT, im->var, sizeof(float), im->width, im->height, im->stride,
                         "cannot write the variance");
        if (st)
            return st;
    }
    return TIDE_OK;
}

int tide_fits_image_hdu(tide_fits_out *o, const tide_image *im, const tide_header *hdr,
                        const char *extname, int hdu) {
    int cst = 0;
    LONGLONG naxes[2] = {im->width, im->height};
    if (fits_create_imgll(o->f, FLOAT_IMG, 2, naxes, &cst))
        return tide_fits_status(cst, o->path, hdu, "cannot create the image extension");
    if (extname && *extname && fits_write_key_str(o->f, "EXTNAME", extname, "extension name", &cst))
        return tide_fits_status(cst, o->path, hdu, "cannot write EXTNAME");
    int st = tide_fits_put_cards(o->f, hdr, extname && *extname, o->path);
    return st ? st
              : write_plane(o, TFLOAT, im->pix, sizeof(float), im->width, im->height, im->stride,
                            "cannot write the pixels");
}

static int check_image(const char *path, const tide_image *im) {
    if (!im || !im->pix || im->width <= 0 || im->height <= 0 || im->stride < im->width)
        return tide_error(TIDE_E_INVAL, "%s: no image to write", path ? path : "(null)");
    if (im->location != TIDE_HOST)
        return tide_error(TIDE_E_INVAL, "%s: the image is on the device; copy it to the host first",
                          path);
    return 0;
}

/* Write the image into the begun output @p o and commit it, or abort it on failure. */
static int write_and_commit(tide_fits_out *o, const tide_image *im, const tide_header *hdr,
                            tide_fits_compress how) {
    int st = how == TIDE_FITS_RICE ? tide_fits_write_rice(o, im, hdr) : write_all(o, im, hdr);
    if (st) {
        tide_fits_out_abort(o);
        return st;
    }
    return tide_fits_out_commit(o);
}

int tide_fits_write_image_to_as(struct tide_outfile *of, const tide_image *im,
                                const tide_header *hdr, tide_fits_compress how) {
    int st = check_image(of->path, im);
    tide_fits_out o;
    if (!st)
        st = tide_fits_out_begin_staged(&o, of);
    return st ? st : write_and_commit(&o, im, hdr, how);
}

int tide_fits_write_image_to(struct tide_outfile *of, const tide_image *im,
                             const tide_header *hdr) {
    return tide_fits_write_image_to_as(of, im, hdr, TIDE_FITS_PLAIN);
}

int tide_fits_write_image_as(const char *path, const tide_image *im, const tide_header *hdr,
                             tide_fits_compress how) {
    int st = check_image(path, im);
    tide_fits_out o;
    if (!st)
        st = tide_fits_out_begin(&o, path);
    return st ? st : write_and_commit(&o, im, hdr, how);
}

int tide_fits_write_image(const char *path, const tide_image *im, const tide_header *hdr) {
    return tide_fits_write_image_as(path, im, hdr, TIDE_FITS_PLAIN);
}
