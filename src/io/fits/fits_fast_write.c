/* fits_fast_write.c — a binary table's rows built in memory and written in one call.
 *
 * fits_write_col walks the whole row-major table once per column through cfitsio's small
 * buffers, which for a 90-column catalog costs ~90 passes over the file. Here the rows are laid
 * out as FITS stores them (FITS standard 4.0, sec. 7.3: fields in column order, each value
 * big-endian, no padding between fields), in parallel over blocks of rows, and handed to
 * fits_write_tblbytes, which writes large spans directly.
 *
 * The bytes are those fits_write_col / fits_write_col_str write for tide's column types
 * (no TSCAL/TZERO): numbers byte-swapped unchanged (NaN payloads included), strings up to
 * their first NUL then padded with blanks to the field width (cfitsio's padding). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fits_fast.h"
#include "tide/status.h"

/* Bytes of rows built per fits_write_tblbytes call: bounds the extra memory for huge tables. */
enum { ROWS_SPAN_BYTES = 64 << 20 };

static int64_t elem_size(tide_col_type type) {
    switch (type) {
    case TIDE_COL_F64:
    case TIDE_COL_I64: return 8;
    case TIDE_COL_F32:
    case TIDE_COL_I32: return 4;
    case TIDE_COL_I16: return 2;
    case TIDE_COL_U8:
    case TIDE_COL_STR: return 1;
    }
    return 0;
}

/* Lay out rows [r0, r0 + nr) of @p t at @p out (@p row_bytes each; @p offs = field offsets). */
static void build_rows(const tide_table *t, const int64_t *offs, int64_t row_bytes, int64_t r0,
                       int64_t nr, unsigned char *out) {
    for (int c = 0; c < t->ncols; c++) {
        const tide_column *col = &t->cols[c];
        const int64_t rep = col->repeat, size = elem_size(col->type), field = rep * size;
        const unsigned char *src = (const unsigned char *)col->data + r0 * field;
        unsigned char *dst = out + offs[c];
        if (col->type == TIDE_COL_STR) {
            for (int64_t r = 0; r < nr; r++, src += field, dst += row_bytes) {
                size_t len = strnlen((const char *)src, (size_t)field);
                memcpy(dst, src, len);
                memset(dst + len, ' ', (size_t)field - len);
            }
        } else if (size == 1) {
            for (int64_t r = 0; r < nr; r++, src += field, dst += row_bytes)
                memcpy(dst, src, (size_t)field);
        } else if (size == 8) {
            for (int64_t r = 0; r < nr; r++, src += field, dst += row_bytes)
                tide_fits_put_be8(dst, src, rep);
        } else if (size == 4) {
            for (int64_t r = 0; r < nr; r++, src += field, dst += row_bytes)
                tide_fits_put_be4(dst, src, rep);
        } else {
            for (int64_t r = 0; r < nr; r++, src += field, dst += row_bytes)
                tide_fits_put_be2(dst, src, rep);
        }
    }
}

int tide_fits_fast_write_rows(fitsfile *f, const tide_table *t, const char *path) {
    if (t->nrows <= 0 || t->ncols <= 0)
        return TIDE_OK;
    int64_t *offs = malloc((size_t)t->ncols * sizeof *offs);
    if (!offs)
        return tide_error(TIDE_E_NOMEM, "%s: no memory for the table layout", path);
    int64_t row_bytes = 0;
    for (int c = 0; c < t->ncols; c++) {
        offs[c] = row_bytes;
        row_bytes += t->cols[c].repeat * elem_size(t->cols[c].type);
    }
    int64_t span = ROWS_SPAN_BYTES / (row_bytes > 0 ? row_bytes : 1);
    if (span < 1)
        span = 1;
    if (span > t->nrows)
        span = t->nrows;
    unsigned char *buf = malloc((size_t)(span * row_bytes));
    if (!buf) {
        free(offs);
        return tide_error(TIDE_E_NOMEM, "%s: no memory for %lld table rows", path, (long long)span);
    }
    /* Blocks of rows small enough that a block's slice of every column stays in cache. */
    const int64_t block = row_bytes > 65536 ? 1 : 65536 / row_bytes + 1;
    int st = TIDE_OK;
    for (int64_t s0 = 0; !st && s0 < t->nrows; s0 += span) {
        const int64_t ns = t->nrows - s0 < span ? t->nrows - s0 : span;
        const int64_t nblocks = (ns + block - 1) / block;
#pragma omp parallel for schedule(static) if (nblocks > 1)
        for (int64_t b = 0; b < nblocks; b++) {
            int64_t r0 = b * block, nr = ns - r0 < block ? ns - r0 : block;
            build_rows(t, offs, row_bytes, s0 + r0, nr, buf + r0 * row_bytes);
        }
        int cst = 0;
        if (fits_write_tblbytes(f, (LONGLONG)s0 + 1, 1, (LONGLONG)(ns * row_bytes), buf, &cst))
            st = tide_fits_status(cst, path, 1, "cannot write the table rows");
    }
    free(buf);
    free(offs);
    return st;
}
