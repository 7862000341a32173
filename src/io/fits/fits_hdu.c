/* fits_hdu.c — the HDU inventory `tide info` prints. */
#include <stdlib.h>
#include <string.h>

#include "fits_internal.h"
#include "tide/status.h"

const char *tide_hdu_kind_name(tide_hdu_kind kind) {
    switch (kind) {
    case TIDE_HDU_EMPTY: return "empty";
    case TIDE_HDU_IMAGE: return "image";
    case TIDE_HDU_COMPRESSED: return "compressed image";
    case TIDE_HDU_BINTABLE: return "bintable";
    case TIDE_HDU_ASCIITABLE: return "table";
    }
    return "unknown";
}

/* Fill @p d from the current HDU. */
static int describe(tide_fits_src *src, int index, int type, tide_fits_hdu *d) {
    fitsfile *f = src->f;
    memset(d, 0, sizeof *d);
    d->index = index;
    d->extver = 1;
    d->bscale = 1.0;
    int cst = 0;
    char s[FLEN_VALUE];
    if (!fits_read_key_str(f, "EXTNAME", s, NULL, &cst))
        snprintf(d->extname, sizeof d->extname, "%.71s", s);
    cst = 0;
    fits_read_key(f, TINT, "EXTVER", &d->extver, NULL, &cst);
    cst = 0;
    fits_clear_errmsg();
    int st = tide_fits_check_extent(src, index, &d->data_bytes);
    if (st)
        return st;
    if (type != IMAGE_HDU) {
        d->kind = type == ASCII_TBL ? TIDE_HDU_ASCIITABLE : TIDE_HDU_BINTABLE;
        d->bitpix = 8;
        LONGLONG rows = 0;
        if (fits_get_num_rowsll(f, &rows, &cst) || fits_get_num_cols(f, &d->ncols, &cst))
            return tide_fits_status(cst, src->root, index, "cannot read the table size");
        d->nrows = (int64_t)rows;
        return TIDE_OK;
    }
    LONGLONG naxes[9] = {0};
    if (fits_get_img_paramll(f, 9, &d->bitpix, &d->naxis, naxes, &cst))
        return tide_fits_status(cst, src->root, index, "cannot read the image size");
    for (int i = 0; i < 9; i++)
        d->naxes[i] = (int64_t)naxes[i];
    int compressed = fits_is_compressed_image(f, &cst);
    d->kind = compressed ? TIDE_HDU_COMPRESSED : d->naxis == 0 ? TIDE_HDU_EMPTY : TIDE_HDU_IMAGE;
    cst = 0;
    fits_read_key(f, TDOUBLE, "BSCALE", &d->bscale, NULL, &cst);
    cst = 0;
    fits_read_key(f, TDOUBLE, "BZERO", &d->bzero, NULL, &cst);
    cst = 0;
    d->has_blank = fits_read_key_str(f, compressed ? "ZBLANK" : "BLANK", s, NULL, &cst) == 0;
    cst = 0;
    if (compressed) {
        /* Tiles with ZBLANK as a column ("ZBLANK" TTYPE) also carry blanks. */
        int col = 0;
        if (!d->has_blank && !fits_get_colnum(f, CASESEN, "ZBLANK", &col, &cst))
            d->has_blank = 1;
        cst = 0;
        if (!fits_read_key_str(f, "ZCMPTYPE", s, NULL, &cst))
            snprintf(d->compression, sizeof d->compression, "%.23s", s);
        cst = 0;
        for (int i = 0; i < d->naxis && i < 9; i++) {
            char key[16];
            LONGLONG t = 0;
            snprintf(key, sizeof key, "ZTILE%d", i + 1);
            /* default tiling (no ZTILEn) is row by row: ZTILE1 = NAXIS1, others 1 */
            d->tile[i] = fits_read_key_lnglng(f, key, &t, NULL, &cst) ? (i ? 1 : d->naxes[0]) : t;
            cst = 0;
        }
        if (!fits_read_key_str(f, "ZQUANTIZ", s, NULL, &cst))
            snprintf(d->quantize, sizeof d->quantize, "%.23s", s);
        else if (d->bitpix < 0)
            snprintf(d->quantize, sizeof d->quantize, "NO_DITHER");
        cst = 0;
    }
    fits_clear_errmsg();
    return TIDE_OK;
}

int tide_fits_inventory(const char *spec, tide_fits_hdu **hdus, int *nhdu) {
    *hdus = NULL;
    *nhdu = 0;
    /* Reopen the bare file: selectors and sections do not change what the file holds. */
    tide_fits_src src;
    char root[FLEN_FILENAME];
    int cst = 0;
    if (!spec || fits_parse_rootname((char *)spec, root, &cst)) {
        fits_clear_errmsg();
        return tide_error(TIDE_E_INVAL, "%s: cannot parse the file name", spec ? spec : "(null)");
    }
    int st = tide_fits_open(root, &src);
    if (st)
        return st;
    int cap = 8, n = 0;
    tide_fits_hdu *list = malloc((size_t)cap * sizeof *list);
    if (!list)
        st = tide_error(TIDE_E_NOMEM, "%s: no memory", root);
    for (int i = 1; !st; i++) {
        int type = 0;
        if (fits_movabs_hdu(src.f, i, &type, &cst)) {
            /* a header cut short reads as a read error: tide_fits_check_file says so below */
            if (cst != END_OF_FILE && !(cst == READ_ERROR && src.file_size >= 0))
                st = tide_fits_status(cst, src.root, i - 1, "cannot read the HDU header");
            fits_clear_errmsg();
            if (!st && cst == READ_ERROR) {
                st = tide_fits_check_file(&src);
                if (!st)
                    st = tide_error(TIDE_E_FORMAT, "%s[HDU %d]: cannot read the HDU header",
                                    src.root, i - 1);
            }
            break;
        }
        if (n == cap) {
            tide_fits_hdu *more = realloc(list, (size_t)(cap *= 2) * sizeof *list);
            if (!more) {
                st = tide_error(TIDE_E_NOMEM, "%s: no memory", root);
                break;
            }
            list = more;
        }
        st = describe(&src, i - 1, type, &list[n]);
        if (!st)
            n++;
    }
    if (!st)
        st = tide_fits_check_file(&src);
    tide_fits_close(&src);
    if (st) {
        free(list);
        return st;
    }
    *hdus = list;
    *nhdu = n;
    return TIDE_OK;
}

int tide_fits_read_hdu_header(const char *spec, int hdu, tide_header *hdr) {
    tide_header_init(hdr);
    char root[FLEN_FILENAME];
    int cst = 0;
    if (!spec || fits_parse_rootname((char *)spec, root, &cst)) {
        fits_clear_errmsg();
        return tide_error(TIDE_E_INVAL, "%s: cannot parse the file name", spec ? spec : "(null)");
    }
    tide_fits_src src;
    int st = tide_fits_open(root, &src);
    if (st)
        return st;
    int type = 0;
    if (hdu < 0 || fits_movabs_hdu(src.f, hdu + 1, &type, &cst)) {
        fits_clear_errmsg();
        st = tide_error(TIDE_E_NOTFOUND, "%s: no HDU %d", root, hdu);
    }
    if (!st)
        st = tide_fits_get_header(src.f, root, hdu, hdr);
    tide_fits_close(&src);
    return st;
}
