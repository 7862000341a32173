/* store_sqlite_rows.c — the SQLite store's packed source rows (see store_sqlite.c).
 *
 * Binding ~60 values per row one by one costs SQLite ~30 ns each plus the record encoding of
 * every column (~5 us per 60-column row: 650 ms for 130,000 sources), so a row holds its
 * key and position as columns (CELL, IMAGE_ID, SEQ, ALPHA_J2000, DELTA_J2000) and every
 * other stored value in one BLOB, DATA: the catalog's elements in stored-column order, each in
 * the catalog's own type and width (float64, float32, int64, int32, int16, uint8;
 * little-endian), so the values read back are exactly the catalog's. The frame's layout (one
 * line "TYPE NAME" per element, TYPE f8 f4 i8 i4 i2 u1) is in source_layouts; the union of the
 * names of all frames, with their kinds, in source_columns. The rows of a frame are packed on
 * all cores before the insert loop, and inserted in sky-cell order (tide_store_cell_order). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "skycell.h"
#include "store_internal.h"
#include "tide/status.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the SQLite store packs rows in little-endian order: port the packing first"
#endif

static const char *const type_code[] = {"f8", "f4", "i8", "i4", "i2", "u1"};
static const int type_width[] = {8, 4, 8, 4, 2, 1};

static int col_type(const tide_table *t, const store_col *c) {
    return (int)t->cols[c->src].type;
}

int tide_sq_layout_make(const tide_table *t, const store_schema *sc, char **text,
                        int64_t *rowbytes) {
    size_t cap = 16 + (size_t)sc->n * 104, k = 0;
    char *s = malloc(cap);
    if (!s)
        return tide_error(TIDE_E_NOMEM, "store: row layout");
    int64_t w = 0;
    s[0] = 0;
    for (int i = 0; i < sc->n; i++) {
        if (i == sc->ira || i == sc->idec)
            continue;
        int ty = col_type(t, &sc->cols[i]);
        if (ty < TIDE_COL_F64 || ty > TIDE_COL_U8) {
            free(s);
            return tide_error(TIDE_E_UNSUPPORTED, "store: column %s has no packed type",
                              sc->cols[i].name);
        }
        k += (size_t)snprintf(s + k, cap - k, "%s %s\n", type_code[ty], sc->cols[i].name);
        w += type_width[ty];
    }
    *text = s;
    *rowbytes = w;
    return TIDE_OK;
}

int tide_sq_pack(const tide_table *t, const store_schema *sc, int64_t rowbytes, unsigned char *out,
                 int64_t *cells) {
    const int64_t n = t->nrows;
    const double *ra = t->cols[sc->cols[sc->ira].src].data;
    const double *dec = t->cols[sc->cols[sc->idec].src].data;
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (int64_t r = 0; r < n; r++)
            cells[r] = tide_skycell_index(TIDE_SKYCELL_ORDER, ra[r], dec[r]);
            /* column by column over blocks of rows: each element is one fixed-size copy; 256
             * rows (~80 KB of packed rows) stay in the core's L2 while their columns fill */
#pragma omp for schedule(static)
        for (int64_t r0 = 0; r0 < n; r0 += 256) {
            int64_t r1 = r0 + 256 < n ? r0 + 256 : n, off = 0;
            for (int i = 0; i < sc->n; i++) {
                if (i == sc->ira || i == sc->idec)
                    continue;
                const store_col *c = &sc->cols[i];
                const tide_column *col = &t->cols[c->src];
                const int w = type_width[col->type];
                const unsigned char *src = (const unsigned char *)col->data;
                const int64_t stride = col->repeat * w;
                src += c->elem * w;
                unsigned char *dst = out + off;
                switch (w) {
                case 8:
                    for (int64_t r = r0; r < r1; r++)
                        memcpy(dst + r * rowbytes, src + r * stride, 8);
                    break;
                case 4:
                    for (int64_t r = r0; r < r1; r++)
                        memcpy(dst + r * rowbytes, src + r * stride, 4);
                    break;
                case 2:
                    for (int64_t r = r0; r < r1; r++)
                        memcpy(dst + r * rowbytes, src + r * stride, 2);
                    break;
                default:
                    for (int64_t r = r0; r < r1; r++)
                        dst[r * rowbytes] = src[r * stride];
                    break;
                }
                off += w;
            }
        }
    }
    return TIDE_OK;
}

int64_t *tide_store_cell_order(const int64_t *cells, int64_t n) {
    int64_t *a = malloc((size_t)(n + 1) * sizeof *a), *b = malloc((size_t)(n + 1) * sizeof *b);
    int64_t *cnt = malloc(((size_t)1 << 13) * sizeof *cnt);
    if (!a || !b || !cnt) {
        free(a);
        free(b);
        free(cnt);
        return NULL;
    }
    for (int64_t r = 0; r < n; r++)
        a[r] = r;
    /* key = cell + 1 (cell -1: no position) in 13-bit digits, least significant first;
     * stable, so equal cells keep their row order */
    for (int shift = 0; shift < 39; shift += 13) {
        memset(cnt, 0, ((size_t)1 << 13) * sizeof *cnt);
        for (int64_t r = 0; r < n; r++)
            cnt[((uint64_t)(cells[r] + 1) >> shift) & 8191]++;
        int64_t sum = 0;
        for (int k = 0; k < 8192; k++) {
            int64_t c = cnt[k];
            cnt[k] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t r = a[i];
            b[cnt[((uint64_t)(cells[r] + 1) >> shift) & 8191]++] = r;
        }
        int64_t *t = a;
        a = b;
        b = t;
    }
    free(b);
    free(cnt);
    return a;
}

void tide_sq_layout_free(sq_layout *L) {
    free(L->col);
    free(L->type);
    free(L->off);
    free(L->present);
    memset(L, 0, sizeof *L);
}

int tide_sq_layout_parse(const char *text, const char *const *names, int nnames, sq_layout *L) {
    memset(L, 0, sizeof *L);
    int cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == '\n';
    L->col = malloc((size_t)cap * sizeof *L->col);
    L->type = malloc((size_t)cap);
    L->off = malloc((size_t)cap * sizeof *L->off);
    L->present = calloc((size_t)nnames + 1, 1);
    if (!L->col || !L->type || !L->off || !L->present) {
        tide_sq_layout_free(L);
        return tide_error(TIDE_E_NOMEM, "store: row layout");
    }
    const char *p = text;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int ty = -1;
        for (int k = 0; k < 6 && len > 3; k++)
            if (!strncmp(p, type_code[k], 2) && p[2] == ' ')
                ty = k;
        int j = -1;
        if (ty >= 0)
            for (int k = 0; k < nnames && j < 0; k++)
                if (strlen(names[k]) == len - 3 && !strncasecmp(names[k], p + 3, len - 3))
                    j = k;
        if (j < 0) {
            tide_sq_layout_free(L);
            return tide_error(TIDE_E_DB, "store: bad row layout line '%.*s'", (int)len, p);
        }
        L->col[L->n] = j;
        L->type[L->n] = (unsigned char)ty;
        L->off[L->n] = (int)L->rowbytes;
        L->present[j] = 1;
        L->rowbytes += type_width[ty];
        L->n++;
        p += len + (e ? 1 : 0);
    }
    return TIDE_OK;
}

void tide_sq_unpack(const sq_layout *L, const unsigned char *data, store_result *res, int64_t row,
                    int first, int nnames) {
    for (int j = first; j < nnames; j++)
        if (!L->present[j])
            tide_store_result_set_f(res, row, j, NAN); /* not in this frame */
    for (int k = 0; k < L->n; k++) {
        const unsigned char *p = data + L->off[k];
        const int j = L->col[k];
        switch (L->type[k]) {
        case TIDE_COL_F64: {
            double v;
            memcpy(&v, p, 8);
            tide_store_result_set_f(res, row, j, v);
            break;
        }
        case TIDE_COL_F32: {
            float v;
            memcpy(&v, p, 4);
            tide_store_result_set_f(res, row, j, v);
            break;
        }
        case TIDE_COL_I64: {
            int64_t v;
            memcpy(&v, p, 8);
            tide_store_result_set_i(res, row, j, v);
            break;
        }
        case TIDE_COL_I32: {
            int32_t v;
            memcpy(&v, p, 4);
            tide_store_result_set_i(res, row, j, v);
            break;
        }
        case TIDE_COL_I16: {
            int16_t v;
            memcpy(&v, p, 2);
            tide_store_result_set_i(res, row, j, v);
            break;
        }
        default: tide_store_result_set_i(res, row, j, p[0]); break;
        }
    }
}
