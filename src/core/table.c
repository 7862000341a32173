/* table.c — tide_table: named, typed columns stored as a struct of arrays. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "tide/status.h"
#include "tide/table.h"

int64_t tide_col_type_size(tide_col_type type) {
    switch (type) {
    case TIDE_COL_F64: return 8;
    case TIDE_COL_F32: return 4;
    case TIDE_COL_I64: return 8;
    case TIDE_COL_I32: return 4;
    case TIDE_COL_I16: return 2;
    case TIDE_COL_U8: return 1;
    case TIDE_COL_STR: return 1;
    }
    return 1;
}

void tide_table_init(tide_table *t) {
    memset(t, 0, sizeof *t);
}

void tide_table_free(tide_table *t) {
    for (int i = 0; i < t->ncols; i++)
        free(t->cols[i].data);
    free(t->cols);
    memset(t, 0, sizeof *t);
}

/* Grow every column to @p cap rows, zeroing the new rows. */
static int reserve_rows(tide_table *t, int64_t cap) {
    if (cap <= t->capacity)
        return TIDE_OK;
    for (int i = 0; i < t->ncols; i++) {
        tide_column *c = &t->cols[i];
        size_t row = (size_t)(c->repeat * tide_col_type_size(c->type)), bytes;
        if (tide_size_block(cap, c->repeat, 1, tide_col_type_size(c->type), &bytes))
            return tide_error(TIDE_E_RANGE,
                              "table: %lld rows of column %s overflow the "
                              "address space",
                              (long long)cap, c->name);
        void *d = realloc(c->data, bytes ? bytes : 1);
        if (!d)
            return tide_error(TIDE_E_NOMEM, "table: cannot grow column %s to %lld rows", c->name,
                              (long long)cap);
        memset((char *)d + (size_t)t->capacity * row, 0, (size_t)(cap - t->capacity) * row);
        c->data = d;
    }
    t->capacity = cap;
    return TIDE_OK;
}

int tide_table_resize(tide_table *t, int64_t nrows) {
    if (nrows < 0)
        return tide_error(TIDE_E_INVAL, "table: negative row count %lld", (long long)nrows);
    if (nrows > t->capacity) {
        int64_t cap = t->capacity ? t->capacity : 16;
        while (cap < nrows)
            cap *= 2;
        int st = reserve_rows(t, cap);
        if (st)
            return st;
    } else if (nrows < t->nrows) {
        /* Zero the dropped rows so a later growth sees zeroed rows, as documented. */
        for (int i = 0; i < t->ncols; i++) {
            tide_column *c = &t->cols[i];
            size_t row = (size_t)(c->repeat * tide_col_type_size(c->type));
            memset((char *)c->data + (size_t)nrows * row, 0, (size_t)(t->nrows - nrows) * row);
        }
    }
    t->nrows = nrows;
    return TIDE_OK;
}

int tide_table_remove_column(tide_table *t, const char *name) {
    for (int i = 0; i < t->ncols; i++) {
        if (strcmp(t->cols[i].name, name))
            continue;
        free(t->cols[i].data);
        memmove(&t->cols[i], &t->cols[i + 1], (size_t)(t->ncols - i - 1) * sizeof *t->cols);
        t->ncols--;
        return 0;
    }
    return tide_error(TIDE_E_NOTFOUND, "table: no column %s", name ? name : "(null)");
}

int tide_table_add_column(tide_table *t, const char *name, tide_col_type type, int64_t repeat,
                          const char *unit, const char *comment, int *index) {
    if (!name || !name[0] || strlen(name) >= sizeof t->cols[0].name)
        return tide_error(TIDE_E_INVAL, "table: bad column name '%s'", name ? name : "(null)");
    if (repeat < 1)
        return tide_error(TIDE_E_INVAL, "table: column %s has repeat %lld", name,
                          (long long)repeat);
    if (tide_table_column(t, name))
        return tide_error(TIDE_E_INVAL, "table: column %s already exists", name);
    if (t->ncols == t->cap_cols) {
        int ncap = t->cap_cols ? 2 * t->cap_cols : 16;
        tide_column *n = realloc(t->cols, (size_t)ncap * sizeof *n);
        if (!n)
            return tide_error(TIDE_E_NOMEM, "table: cannot add column %s", name);
        t->cols = n;
        t->cap_cols = ncap;
    }
    tide_column *c = &t->cols[t->ncols];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    if (unit)
        snprintf(c->unit, sizeof c->unit, "%s", unit);
    if (comment)
        snprintf(c->comment, sizeof c->comment, "%s", comment);
    size_t bytes;
    if (tide_size_block(t->capacity, repeat, 1, tide_col_type_size(type), &bytes))
        return tide_error(TIDE_E_RANGE,
                          "table: column %s of repeat %lld overflows the address "
                          "space",
                          name, (long long)repeat);
    c->type = type;
    c->repeat = repeat;
    c->data = calloc(1, bytes ? bytes : 1);
    if (!c->data)
        return tide_error(TIDE_E_NOMEM, "table: cannot allocate column %s", name);
    if (index)
        *index = t->ncols;
    t->ncols++;
    return TIDE_OK;
}

tide_column *tide_table_column(const tide_table *t, const char *name) {
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->cols[i].name, name))
            return &t->cols[i];
    return NULL;
}

static void *typed(const tide_table *t, const char *name, tide_col_type type) {
    tide_column *c = tide_table_column(t, name);
    return c && c->type == type ? c->data : NULL;
}

double *tide_table_f64(const tide_table *t, const char *name) {
    return typed(t, name, TIDE_COL_F64);
}
float *tide_table_f32(const tide_table *t, const char *name) {
    return typed(t, name, TIDE_COL_F32);
}
int64_t *tide_table_i64(const tide_table *t, const char *name) {
    return typed(t, name, TIDE_COL_I64);
}
int32_t *tide_table_i32(const tide_table *t, const char *name) {
    return typed(t, name, TIDE_COL_I32);
}
