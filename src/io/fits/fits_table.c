/* fits_table.c — tide_table to and from FITS binary tables. */
#include <stdlib.h>
#include <string.h>

#include "fits_fast.h"
#include "fits_internal.h"
#include "tide/status.h"

/* The FITS TFORM letter and the cfitsio datatype of a tide column type. */
static int col_codes(tide_col_type type, char *letter, int *datatype) {
    static const struct {
        char letter;
        int datatype;
    } codes[] = {[TIDE_COL_F64] = {'D', TDOUBLE},   [TIDE_COL_F32] = {'E', TFLOAT},
                 [TIDE_COL_I64] = {'K', TLONGLONG}, [TIDE_COL_I32] = {'J', TINT},
                 [TIDE_COL_I16] = {'I', TSHORT},    [TIDE_COL_U8] = {'B', TBYTE},
                 [TIDE_COL_STR] = {'A', TSTRING}};
    if ((unsigned)type >= sizeof codes / sizeof *codes)
        return -1;
    *letter = codes[type].letter;
    *datatype = codes[type].datatype;
    return 0;
}

/* Rows per chunk when strings are converted (fixed-width fields to NUL-terminated ones). */
enum { STR_CHUNK = 4096 };

static int write_string_column(tide_fits_out *o, const tide_column *c, int colnum, int64_t nrows) {
    int64_t width = c->repeat;
    int64_t chunk = nrows < STR_CHUNK ? nrows : STR_CHUNK;
    char *buf = malloc((size_t)(chunk * (width + 1)));
    char **ptrs = malloc((size_t)chunk * sizeof *ptrs);
    int st = TIDE_OK;
    if (!buf || !ptrs)
        st = tide_error(TIDE_E_NOMEM, "%s: no memory for column %s", o->path, c->name);
    for (int64_t r0 = 0; !st && r0 < nrows; r0 += chunk) {
        int64_t n = nrows - r0 < chunk ? nrows - r0 : chunk;
        for (int64_t i = 0; i < n; i++) {
            ptrs[i] = buf + i * (width + 1);
            memcpy(ptrs[i], (const char *)c->data + (r0 + i) * width, (size_t)width);
            ptrs[i][width] = 0;
        }
        int cst = 0;
        if (fits_write_col_str(o->f, colnum, r0 + 1, 1, n, ptrs, &cst)) {
            char what[128];
            snprintf(what, sizeof what, "cannot write column %s", c->name);
            st = tide_fits_status(cst, o->path, 1, what);
        }
    }
    free(buf);
    free(ptrs);
    return st;
}

static int write_table_all(tide_fits_out *o, const tide_table *t, const tide_header *hdr,
                           const char *extname, int by_column) {
    int cst = 0;
    if (fits_create_img(o->f, BYTE_IMG, 0, NULL, &cst))
        return tide_fits_status(cst, o->path, 0, "cannot create the primary HDU");
    return tide_fits_table_hdu(o, t, hdr, extname, by_column, 1);
}

int tide_fits_table_hdu(tide_fits_out *o, const tide_table *t, const tide_header *hdr,
                        const char *extname, int by_column, int hdu) {
    int cst = 0;
    const char *p = o->path;
    int nc = t->ncols;
    char **ttype = calloc((size_t)(nc ? nc : 1), sizeof *ttype);
    char **tform = calloc((size_t)(nc ? nc : 1), sizeof *tform);
    char **tunit = calloc((size_t)(nc ? nc : 1), sizeof *tunit);
    char(*forms)[32] = calloc((size_t)(nc ? nc : 1), sizeof *forms);
    int st = TIDE_OK;
    if (!ttype || !tform || !tunit || !forms)
        st = tide_error(TIDE_E_NOMEM, "%s: no memory for the table header", p);
    for (int i = 0; !st && i < nc; i++) {
        const tide_column *c = &t->cols[i];
        char letter = '?';
        int dt = 0;
        if (col_codes(c->type, &letter, &dt))
            st = tide_error(TIDE_E_INVAL, "%s: column %s has an unknown type %d", p, c->name,
                            (int)c->type);
        else if (c->repeat < 1)
            st = tide_error(TIDE_E_INVAL, "%s: column %s has repeat %lld (must be >= 1)", p,
                            c->name, (long long)c->repeat);
        else if (!c->data && t->nrows > 0)
            st = tide_error(TIDE_E_INVAL, "%s: column %s has no data", p, c->name);
        snprintf(forms[i], sizeof forms[i], "%lld%c", (long long)c->repeat, letter);
        ttype[i] = (char *)c->name;
        tform[i] = forms[i];
        tunit[i] = (char *)c->unit;
    }
    if (!st && fits_create_tbl(o->f, BINARY_TBL, (LONGLONG)t->nrows, nc, ttype, tform, tunit,
                               extname && *extname ? extname : NULL, &cst))
        st = tide_fits_status(cst, p, hdu, "cannot create the binary table");
    for (int i = 0; !st && i < nc; i++) {
        const tide_column *c = &t->cols[i];
        char key[16];
        if (c->comment[0]) {
            snprintf(key, sizeof key, "TTYPE%d", i + 1);
            fits_modify_comment(o->f, key, c->comment, &cst);
        }
        if (c->disp[0]) {
            snprintf(key, sizeof key, "TDISP%d", i + 1);
            fits_write_key_str(o->f, key, c->disp, "display format", &cst);
        }
        if (cst)
            st = tide_fits_status(cst, p, hdu, "cannot write the column keywords");
    }
    free(ttype);
    free(tform);
    free(tunit);
    free(forms);
    if (!st)
        st = tide_fits_put_cards(o->f, hdr, 1, p);
    if (!by_column) /* the same bytes in one write (fits_fast_write.c) */
        return st ? st : tide_fits_fast_write_rows(o->f, t, p);
    for (int i = 0; !st && i < nc && t->nrows > 0; i++) {
        const tide_column *c = &t->cols[i];
        char letter = '?';
        int dt = 0;
        col_codes(c->type, &letter, &dt);
        if (dt == TSTRING) {
            st = write_string_column(o, c, i + 1, t->nrows);
            continue;
        }
        /* Vector columns: cfitsio fills row after row when nelements exceeds the repeat. */
        if (fits_write_col(o->f, dt, i + 1, 1, 1, (LONGLONG)(t->nrows * c->repeat), c->data,
                           &cst)) {
            char what[128];
            snprintf(what, sizeof what, "cannot write column %s", c->name);
            st = tide_fits_status(cst, p, hdu, what);
        }
    }
    return st;
}

int tide_fits_write_table_by(const char *path, const tide_table *t, const tide_header *hdr,
                             const char *extname, int by_column) {
    if (!t)
        return tide_error(TIDE_E_INVAL, "%s: no table to write", path ? path : "(null)");
    tide_fits_out o;
    int st = tide_fits_out_begin(&o, path);
    if (st)
        return st;
    st = write_table_all(&o, t, hdr, extname, by_column);
    if (st) {
        tide_fits_out_abort(&o);
        return st;
    }
    return tide_fits_out_commit(&o);
}

int tide_fits_write_table_to(struct tide_outfile *of, const tide_table *t, const tide_header *hdr,
                             const char *extname) {
    if (!t)
        return tide_error(TIDE_E_INVAL, "%s: no table to write", of->path);
    tide_fits_out o;
    int st = tide_fits_out_begin_staged(&o, of);
    if (st)
        return st;
    st = write_table_all(&o, t, hdr, extname, 0);
    if (st) {
        tide_fits_out_abort(&o);
        return st;
    }
    return tide_fits_out_commit(&o);
}

int tide_fits_write_table(const char *path, const tide_table *t, const tide_header *hdr,
                          const char *extname) {
    return tide_fits_write_table_by(path, t, hdr, extname, 0);
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Move to the table the spec means: the one it names, else the first table HDU that is not a
 * compressed image. */
static int locate_table(tide_fits_src *src, int *hdu) {
    int type = 0, cst = 0;
    *hdu = tide_fits_cur_hdu(src->f);
    if (src->explicit_hdu) {
        fits_get_hdu_type(src->f, &type, &cst);
        if (cst)
            return tide_fits_status(cst, src->root, *hdu, "cannot read the HDU type");
        if (type == IMAGE_HDU)
            return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: is an image, not a table", src->root,
                              *hdu);
        return tide_fits_check_extent(src, *hdu, NULL);
    }
    for (int i = 1;; i++) {
        if (fits_movabs_hdu(src->f, i, &type, &cst)) {
            if (cst == END_OF_FILE) {
                fits_clear_errmsg();
                return tide_error(TIDE_E_NOTFOUND, "%s: no HDU holds a table", src->root);
            }
            return tide_fits_status(cst, src->root, i - 1, "cannot read the HDU");
        }
        *hdu = i - 1;
        int st = tide_fits_check_extent(src, *hdu, NULL);
        if (st)
            return st;
        if (type != IMAGE_HDU) /* compressed images report IMAGE_HDU */
            return TIDE_OK;
    }
}

/* tide type and cfitsio read datatype of a column from its equivalent type (TZERO/TSCAL
 * applied), or -1 for types tide does not hold. */
static int map_eqtype(int eq, tide_col_type *type, int *dt) {
    switch (eq) {
    case TBYTE:
        *type = TIDE_COL_U8;
        *dt = TBYTE;
        return 0;
    case TLOGICAL:
        *type = TIDE_COL_U8;
        *dt = TLOGICAL;
        return 0;
    case TSBYTE:
    case TSHORT:
        *type = TIDE_COL_I16;
        *dt = TSHORT;
        return 0;
    case TUSHORT:
    case TINT:
    case TLONG:
        *type = TIDE_COL_I32;
        *dt = TINT;
        return 0;
    case TUINT:
    case TULONG:
    case TLONGLONG:
        *type = TIDE_COL_I64;
        *dt = TLONGLONG;
        return 0;
    case TFLOAT:
        *type = TIDE_COL_F32;
        *dt = TFLOAT;
        return 0;
    case TDOUBLE:
    case TULONGLONG:
        *type = TIDE_COL_F64;
        *dt = TDOUBLE;
        return 0;
    case TSTRING:
        *type = TIDE_COL_STR;
        *dt = TSTRING;
        return 0;
    }
    return -1;
}

static int read_string_column(tide_fits_src *src, int hdu, tide_column *c, int colnum,
                              int64_t nrows) {
    int64_t width = c->repeat;
    int64_t chunk = nrows < STR_CHUNK ? nrows : STR_CHUNK;
    char *buf = malloc((size_t)(chunk * (width + 1)));
    char **ptrs = malloc((size_t)chunk * sizeof *ptrs);
    int st = TIDE_OK;
    if (!buf || !ptrs)
        st = tide_error(TIDE_E_NOMEM, "%s[HDU %d]: no memory for column %s", src->root, hdu,
                        c->name);
    for (int64_t r0 = 0; !st && r0 < nrows; r0 += chunk) {
        int64_t n = nrows - r0 < chunk ? nrows - r0 : chunk;
        for (int64_t i = 0; i < n; i++)
            ptrs[i] = buf + i * (width + 1);
        int cst = 0, any = 0;
        if (fits_read_col_str(src->f, colnum, r0 + 1, 1, n, "", ptrs, &any, &cst)) {
            char what[128];
            snprintf(what, sizeof what, "cannot read column %s", c->name);
            st = tide_fits_status(cst, src->root, hdu, what);
            break;
        }
        for (int64_t i = 0; i < n; i++) {
            char *dst = (char *)c->data + (r0 + i) * width;
            size_t len = strnlen(ptrs[i], (size_t)width);
            memset(dst, 0, (size_t)width);
            memcpy(dst, ptrs[i], len);
        }
    }
    free(buf);
    free(ptrs);
    return st;
}

/* The value and comment of an indexed column keyword ("" when absent). */
static void col_key(fitsfile *f, const char *stem, int col, char *val, size_t vn, char *com) {
    char key[16], v[FLEN_VALUE] = "", c[FLEN_COMMENT] = "";
    int cst = 0;
    snprintf(key, sizeof key, "%s%d", stem, col);
    if (fits_read_key_str(f, key, v, c, &cst))
        v[0] = c[0] = 0;
    fits_clear_errmsg();
    snprintf(val, vn, "%.*s", (int)vn - 1, v);
    /* cfitsio's default TTYPE comment ("label for field   3") says nothing */
    if (com)
        snprintf(com, 72, "%.71s", strncmp(c, "label for field", 15) ? c : "");
}

static int read_columns(tide_fits_src *src, int hdu, tide_table *t) {
    fitsfile *f = src->f;
    int cst = 0, ncols = 0;
    LONGLONG nrows = 0;
    if (fits_get_num_rowsll(f, &nrows, &cst) || fits_get_num_cols(f, &ncols, &cst))
        return tide_fits_status(cst, src->root, hdu, "cannot read the table size");
    for (int i = 1; i <= ncols; i++) {
        char name[72], unit[32], disp[16], comment[72];
        col_key(f, "TTYPE", i, name, sizeof name, comment);
        col_key(f, "TUNIT", i, unit, sizeof unit, NULL);
        col_key(f, "TDISP", i, disp, sizeof disp, NULL);
        if (!name[0])
            snprintf(name, sizeof name, "COL%d", i);
        int eq = 0;
        LONGLONG repeat = 0, width = 0;
        if (fits_get_eqcoltypell(f, i, &eq, &repeat, &width, &cst))
            return tide_fits_status(cst, src->root, hdu, "cannot read a column type");
        tide_col_type type = TIDE_COL_F64;
        int dt = 0;
        if (eq < 0 || map_eqtype(eq, &type, &dt))
            return tide_error(TIDE_E_UNSUPPORTED,
                              "%s[HDU %d]: column %d (%s) has a %s type tide does not read",
                              src->root, hdu, i, name,
                              eq < 0       ? "variable-length"
                              : eq == TBIT ? "bit (X)"
                                           : "complex");
        int64_t rep = (int64_t)repeat;
        if (type == TIDE_COL_STR) /* repeat is the total characters; width one string's */
            rep = (int64_t)(width > 0 ? width : repeat);
        if (rep < 1)
            rep = 1;
        int idx = 0;
        int st = tide_table_add_column(t, name, type, rep, unit, comment, &idx);
        if (!st && t->nrows != nrows)
            st = tide_table_resize(t, (int64_t)nrows);
        if (st)
            return tide_error_prefix(st, "%s[HDU %d]: column %d: ", src->root, hdu, i);
        tide_column *c = &t->cols[idx];
        snprintf(c->disp, sizeof c->disp, "%s", disp);
        if (nrows == 0)
            continue;
        if (type == TIDE_COL_STR) {
            st = read_string_column(src, hdu, c, i, (int64_t)nrows);
            if (st)
                return st;
            continue;
        }
        int any = 0;
        if (fits_read_col(f, dt, i, 1, 1, nrows * (LONGLONG)rep, NULL, c->data, &any, &cst)) {
            char what[128];
            snprintf(what, sizeof what, "cannot read column %s", name);
            return tide_fits_status(cst, src->root, hdu, what);
        }
    }
    return TIDE_OK;
}

int tide_fits_read_table(const char *spec, tide_table *t, tide_header *hdr) {
    tide_table_init(t);
    if (hdr)
        tide_header_init(hdr);
    tide_fits_src src;
    int st = tide_fits_open(spec, &src);
    int hdu = -1;
    if (!st)
        st = locate_table(&src, &hdu);
    if (!st)
        st = tide_fits_check_file(&src);
    if (!st)
        st = read_columns(&src, hdu, t);
    if (!st && hdr)
        st = tide_fits_get_header(src.f, src.root, hdu, hdr);
    tide_fits_close(&src);
    if (st) {
        tide_table_free(t);
        if (hdr)
            tide_header_free(hdr);
    }
    return st;
}
