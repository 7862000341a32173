/* store_result.c — cone results shared by the back ends: a table with IMAGE_ID, FILE, SEQ and
 * the stored source columns, filled row by row, then sorted by (IMAGE_ID, SEQ), cut to the
 * limit and given each image's file name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "store_internal.h"
#include "tide/status.h"

static void result_refresh(store_result *r) {
    for (int j = 0; j < r->ndb; j++) {
        r->icol[j] = NULL;
        r->fcol[j] = NULL;
        if (r->map[j] < 0)
            continue;
        tide_column *c = &r->t->cols[r->map[j]];
        if (c->type == TIDE_COL_I64)
            r->icol[j] = c->data;
        else
            r->fcol[j] = c->data;
    }
}

int tide_store_result_begin(store_result *r, tide_table *out, int ndb, const char *const *names,
                            const int *is_int, const char *const *skip, int nskip) {
    memset(r, 0, sizeof *r);
    tide_table_free(out);
    tide_table_init(out);
    r->t = out;
    r->ndb = ndb;
    r->map = calloc((size_t)ndb + 1, sizeof *r->map);
    r->is_int = calloc((size_t)ndb + 1, sizeof *r->is_int);
    r->icol = calloc((size_t)ndb + 1, sizeof *r->icol);
    r->fcol = calloc((size_t)ndb + 1, sizeof *r->fcol);
    if (!r->map || !r->is_int || !r->icol || !r->fcol) {
        tide_store_result_free(r);
        return tide_error(TIDE_E_NOMEM, "store: result columns");
    }
    int st = tide_table_add_column(out, "IMAGE_ID", TIDE_COL_I64, 1, "", "images.id", NULL);
    if (!st)
        st = tide_table_add_column(out, "FILE", TIDE_COL_STR, 1, "", "the frame's file", NULL);
    if (!st)
        st = tide_table_add_column(out, "SEQ", TIDE_COL_I64, 1, "",
                                   "row in the frame's catalog (1-based)", NULL);
    int have_id = 0, have_seq = 0;
    for (int j = 0; j < ndb && !st; j++) {
        r->is_int[j] = is_int[j];
        r->map[j] = -1;
        int dropped = 0;
        for (int k = 0; k < nskip; k++)
            dropped |= !strcasecmp(names[j], skip[k]);
        if (dropped)
            continue;
        if (!strcasecmp(names[j], "IMAGE_ID")) {
            r->map[j] = 0;
            have_id = 1;
        } else if (!strcasecmp(names[j], "SEQ")) {
            r->map[j] = 2;
            have_seq = 1;
        } else {
            st = tide_table_add_column(out, names[j], is_int[j] ? TIDE_COL_I64 : TIDE_COL_F64, 1,
                                       NULL, NULL, &r->map[j]);
        }
    }
    if (!st && (!have_id || !have_seq))
        st = tide_error(TIDE_E_DB, "store: the sources table lacks IMAGE_ID or SEQ");
    if (st) {
        tide_store_result_free(r);
        tide_table_free(out);
        return st;
    }
    result_refresh(r);
    return TIDE_OK;
}

int64_t tide_store_result_row(store_result *r) {
    int64_t row = r->t->nrows;
    int64_t cap = r->t->capacity;
    int st = tide_table_resize(r->t, row + 1);
    if (st)
        return st;
    if (r->t->capacity != cap)
        result_refresh(r);
    return row;
}

void tide_store_result_set_i(store_result *r, int64_t row, int j, int64_t v) {
    if (r->icol[j])
        r->icol[j][row] = v;
    else if (r->fcol[j])
        r->fcol[j][row] = (double)v;
}

void tide_store_result_set_f(store_result *r, int64_t row, int j, double v) {
    if (r->fcol[j])
        r->fcol[j][row] = v;
    else if (r->icol[j])
        /* a value from a damaged store may not fit: out of the int64 range is undefined to
         * convert, so it reads as 0 like a non-finite one */
        r->icol[j][row] = isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0;
}

typedef struct key2 {
    int64_t a, b, row;
} key2;

static int cmp_key2(const void *x, const void *y) {
    const key2 *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return (p->row > q->row) - (p->row < q->row);
}

int tide_store_result_finish(store_result *r, int64_t limit, store_file_fn file_of, void *ctx) {
    tide_table *t = r->t;
    int64_t n = t->nrows;
    const int64_t *id = tide_table_i64(t, "IMAGE_ID"), *seq = tide_table_i64(t, "SEQ");
    key2 *k = malloc((size_t)(n ? n : 1) * sizeof *k);
    if (!k)
        return tide_error(TIDE_E_NOMEM, "store: sorting %lld rows", (long long)n);
    int sorted = 1;
    for (int64_t i = 0; i < n; i++) {
        k[i] = (key2){id[i], seq[i], i};
        if (i && cmp_key2(&k[i - 1], &k[i]) > 0)
            sorted = 0;
    }
    if (!sorted)
        qsort(k, (size_t)n, sizeof *k, cmp_key2);
    int64_t m = limit > 0 && limit < n ? limit : n;
    /* permute every numeric column; FILE is filled afterwards */
    void *tmp = malloc((size_t)(m ? m : 1) * 8);
    if (!tmp) {
        free(k);
        return tide_error(TIDE_E_NOMEM, "store: sorting %lld rows", (long long)n);
    }
    for (int c = 0; c < t->ncols && !sorted; c++) {
        tide_column *col = &t->cols[c];
        if (col->type == TIDE_COL_STR)
            continue;
        int64_t *src = col->data, *dst = tmp; /* I64 and F64: both 8 bytes, moved as bits */
        for (int64_t i = 0; i < m; i++)
            dst[i] = src[k[i].row];
        memcpy(src, dst, (size_t)m * 8);
    }
    free(tmp);
    free(k);
    int st = tide_table_resize(t, m);
    if (st)
        return st;
    /* FILE: one look-up per distinct image (rows are grouped by IMAGE_ID now) */
    char(*files)[1024] = NULL;
    int64_t *ids = NULL, nid = 0;
    int64_t width = 1;
    id = tide_table_i64(t, "IMAGE_ID");
    for (int64_t i = 0; i < m; i++) {
        if (i && id[i] == id[i - 1])
            continue;
        if (!(nid & (nid - 1))) { /* grow at powers of two */
            int64_t nc = nid ? 2 * nid : 1;
            void *a = realloc(files, (size_t)nc * sizeof *files);
            if (a)
                files = a;
            void *b = realloc(ids, (size_t)nc * sizeof *ids);
            if (b)
                ids = b;
            if (!a || !b) {
                free(files);
                free(ids);
                return tide_error(TIDE_E_NOMEM, "store: file names");
            }
        }
        ids[nid] = id[i];
        files[nid][0] = 0;
        if (file_of && (st = file_of(ctx, id[i], files[nid], sizeof files[nid])) != 0)
            break;
        int64_t len = (int64_t)strlen(files[nid]);
        if (len > width)
            width = len;
        nid++;
    }
    if (!st) {
        /* rebuild FILE with the needed width */
        tide_column *fc = tide_table_column(t, "FILE");
        char *d = calloc((size_t)(t->capacity ? t->capacity : 1), (size_t)width);
        if (!d) {
            st = tide_error(TIDE_E_NOMEM, "store: file column");
        } else {
            free(fc->data);
            fc->data = d;
            fc->repeat = width;
            for (int64_t i = 0, g = -1; i < m; i++) {
                if (!i || id[i] != id[i - 1])
                    g++;
                memcpy(d + i * width, files[g], strnlen(files[g], (size_t)width));
            }
        }
    }
    free(files);
    free(ids);
    return st;
}

void tide_store_result_free(store_result *r) {
    free(r->map);
    free(r->is_int);
    free(r->icol);
    free(r->fcol);
    memset(r, 0, sizeof *r);
}
