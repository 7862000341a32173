/* catalog_ldac.c — FITS-LDAC catalogs, the layout of Source Extractor's CATALOG_TYPE
 * FITS_LDAC that SCAMP and PSFEx read: the frame's header as a table of 80-character cards
 * (LDAC_IMHEAD) followed by the objects table (LDAC_OBJECTS). The LDAC convention is
 * described in the SCAMP and PSFEx manuals ("input catalogs"); the card column's name and
 * TDIM are Source Extractor's. */
#include <stdlib.h>
#include <string.h>

#include "io/fits/fits_fast.h"
#include "io/fits/fits_internal.h"
#include "tide/catalog.h"
#include "tide/status.h"

static int col_codes(tide_col_type type, char *letter, int *datatype) {
    switch (type) {
    case TIDE_COL_F64:
        *letter = 'D';
        *datatype = TDOUBLE;
        return 0;
    case TIDE_COL_F32:
        *letter = 'E';
        *datatype = TFLOAT;
        return 0;
    case TIDE_COL_I64:
        *letter = 'K';
        *datatype = TLONGLONG;
        return 0;
    case TIDE_COL_I32:
        *letter = 'J';
        *datatype = TINT;
        return 0;
    case TIDE_COL_I16:
        *letter = 'I';
        *datatype = TSHORT;
        return 0;
    case TIDE_COL_U8:
        *letter = 'B';
        *datatype = TBYTE;
        return 0;
    case TIDE_COL_STR:
        *letter = 'A';
        *datatype = TSTRING;
        return 0;
    }
    return -1;
}

/* The frame header as LDAC wants it: every card but END, NAXIS1/NAXIS2 present, then END. */
static int image_cards(const tide_header *frame, const tide_header *hdr, tide_header *out) {
    tide_header_init(out);
    int st = frame ? tide_header_copy(out, frame) : 0;
    if (st)
        return st;
    tide_header_remove(out, "END");
    if (tide_header_find(out, "SIMPLE") < 0 && tide_header_find(out, "XTENSION") < 0) {
        /* A header from scratch: the structural cards of an image come first. */
        tide_header h;
        tide_header_init(&h);
        st = tide_header_set_bool(&h, "SIMPLE", 1, "conforms to FITS");
        if (!st)
            st = tide_header_set_int(&h, "BITPIX", -32, "bits per pixel");
        if (!st)
            st = tide_header_set_int(&h, "NAXIS", 2, "number of axes");
        for (int i = 0; !st && i < out->ncards; i++)
            st = tide_header_append_card(&h, out->cards[i]);
        tide_header_free(out);
        *out = h;
        if (st)
            return st;
    }
    int64_t v = 0;
    if (!st && tide_header_find(out, "NAXIS1") < 0 && hdr &&
        !tide_header_get_int(hdr, "IMAGEW", &v))
        st = tide_header_set_int(out, "NAXIS1", v, "frame width");
    if (!st && tide_header_find(out, "NAXIS2") < 0 && hdr &&
        !tide_header_get_int(hdr, "IMAGEH", &v))
        st = tide_header_set_int(out, "NAXIS2", v, "frame height");
    tide_error_clear();
    if (!st)
        st = tide_header_append_card(out, "END");
    return st;
}

static int write_imhead(tide_fits_out *o, const tide_header *cards) {
    int cst = 0;
    const int64_t nchar = 80 * (int64_t)cards->ncards;
    char form[32], tdim[48];
    snprintf(form, sizeof form, "%lldA", (long long)nchar);
    snprintf(tdim, sizeof tdim, "(80, %d)", cards->ncards);
    char *ttype[] = {"Field Header Card"}, *tform[] = {form}, *tunit[] = {""};
    if (fits_create_tbl(o->f, BINARY_TBL, 1, 1, ttype, tform, tunit, "LDAC_IMHEAD", &cst))
        return tide_fits_status(cst, o->path, 1, "cannot create LDAC_IMHEAD");
    fits_write_key_str(o->f, "TDIM1", tdim, "80 characters per card", &cst);
    /* With TDIM1 = (80, n), cfitsio reads the column as n strings of 80 characters: write
     * it as such, one NUL-terminated card per element. */
    char *buf = malloc((size_t)cards->ncards * 81);
    char **rows = malloc(sizeof(char *) * (size_t)cards->ncards);
    if (!buf || !rows) {
        free(buf), free(rows);
        return tide_error(TIDE_E_NOMEM, "%s: LDAC_IMHEAD", o->path);
    }
    for (int i = 0; i < cards->ncards; i++) {
        char *c = buf + 81 * i;
        memset(c, ' ', 80);
        c[80] = 0;
        const size_t l = strnlen(cards->cards[i], 80);
        memcpy(c, cards->cards[i], l);
        for (int k = 0; k < 80; k++)
            if ((unsigned char)c[k] < 32 || (unsigned char)c[k] > 126)
                c[k] = ' ';
        rows[i] = c;
    }
    if (!cst)
        fits_write_col_str(o->f, 1, 1, 1, cards->ncards, rows, &cst);
    free(buf);
    free(rows);
    return cst ? tide_fits_status(cst, o->path, 1, "cannot write LDAC_IMHEAD") : 0;
}

static int write_objects(tide_fits_out *o, const tide_table *t, const tide_header *hdr) {
    const int nc = t->ncols;
    char **ttype = calloc((size_t)(nc + 1), sizeof *ttype);
    char **tform = calloc((size_t)(nc + 1), sizeof *tform);
    char **tunit = calloc((size_t)(nc + 1), sizeof *tunit);
    char(*forms)[32] = calloc((size_t)(nc + 1), sizeof *forms);
    int st = 0, cst = 0;
    if (!ttype || !tform || !tunit || !forms)
        st = tide_error(TIDE_E_NOMEM, "%s: LDAC_OBJECTS header", o->path);
    for (int i = 0; !st && i < nc; i++) {
        const tide_column *c = &t->cols[i];
        char letter = 0;
        int dt = 0;
        if (col_codes(c->type, &letter, &dt) || c->repeat < 1 || (!c->data && t->nrows > 0))
            st = tide_error(TIDE_E_INVAL, "%s: column %s cannot be written", o->path, c->name);
        snprintf(forms[i], sizeof forms[i], "%lld%c", (long long)c->repeat, letter);
        ttype[i] = (char *)c->name;
        tform[i] = forms[i];
        tunit[i] = (char *)c->unit;
    }
    if (!st && fits_create_tbl(o->f, BINARY_TBL, (LONGLONG)t->nrows, nc, ttype, tform, tunit,
                               "LDAC_OBJECTS", &cst))
        st = tide_fits_status(cst, o->path, 2, "cannot create LDAC_OBJECTS");
    for (int i = 0; !st && i < nc; i++) {
        char key[16];
        snprintf(key, sizeof key, "TTYPE%d", i + 1);
        if (t->cols[i].comment[0])
            fits_modify_comment(o->f, key, t->cols[i].comment, &cst);
        if (cst)
            st = tide_fits_status(cst, o->path, 2, "cannot write the column keywords");
    }
    free(ttype), free(tform), free(tunit), free(forms);
    if (!st)
        st = tide_fits_put_cards(o->f, hdr, 1, o->path);
    /* All rows in one block: the bytes fits_write_col would write, column by column. */
    if (!st && t->nrows > 0)
        st = tide_fits_fast_write_rows(o->f, t, o->path);
    return st;
}

/* Either writer: @p of staged by the caller, else staged here for @p path. */
static int write_ldac(const char *path, struct tide_outfile *of, const tide_table *t,
                      const tide_header *frame_hdr, const tide_header *hdr) {
    if (!t)
        return tide_error(TIDE_E_INVAL, "%s: no catalog to write", path ? path : "(null)");
    tide_header cards;
    int st = image_cards(frame_hdr, hdr, &cards);
    if (st) {
        tide_header_free(&cards);
        return st;
    }
    tide_fits_out o;
    st = of ? tide_fits_out_begin_staged(&o, of) : tide_fits_out_begin(&o, path);
    if (st) {
        tide_header_free(&cards);
        return st;
    }
    int cst = 0;
    if (fits_create_img(o.f, BYTE_IMG, 0, NULL, &cst))
        st = tide_fits_status(cst, path, 0, "cannot create the primary HDU");
    if (!st)
        st = write_imhead(&o, &cards);
    if (!st)
        st = write_objects(&o, t, hdr);
    tide_header_free(&cards);
    if (st) {
        tide_fits_out_abort(&o);
        return st;
    }
    return tide_fits_out_commit(&o);
}

int tide_catalog_write_ldac(const char *path, const tide_table *t, const tide_header *frame_hdr,
                            const tide_header *hdr) {
    return write_ldac(path, NULL, t, frame_hdr, hdr);
}

int tide_catalog_write_ldac_to(struct tide_outfile *of, const tide_table *t,
                               const tide_header *frame_hdr, const tide_header *hdr) {
    return write_ldac(of->path, of, t, frame_hdr, hdr);
}
