/* table.h — tide_table: a catalog as a struct of arrays.
 *
 * One column per quantity, each with a name (Source Extractor's where one exists), a unit, a
 * type and a repeat count (FLUX_APER has one element per radius), so a table maps directly onto
 * a FITS binary table, device arrays and SQL rows. Element i of a column with repeat r is at
 * data[i * r .. i * r + r - 1]. Tables always live on the host. */
#ifndef TIDE_TABLE_H
#define TIDE_TABLE_H
#include "tide/export.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Column element types. TIDE_COL_STR columns hold fixed-width char fields of `repeat`
 *  bytes each (not necessarily NUL-terminated when full). */
typedef enum {
    TIDE_COL_F64 = 0,
    TIDE_COL_F32,
    TIDE_COL_I64,
    TIDE_COL_I32,
    TIDE_COL_I16,
    TIDE_COL_U8,
    TIDE_COL_STR
} tide_col_type;

/** One named, typed column. */
typedef struct tide_column {
    char name[72];    /**< TTYPE, e.g. "FLUX_APER" */
    char unit[32];    /**< TUNIT, e.g. "count", "pixel", "deg" ("" = none) */
    char disp[16];    /**< TDISP, e.g. "F10.4" ("" = none) */
    char comment[72]; /**< what the column means, written as the TTYPE comment */
    tide_col_type type;
    int64_t repeat; /**< elements per row (string width for TIDE_COL_STR) */
    void *data;     /**< nrows * repeat elements */
} tide_column;

/** A table: nrows rows of ncols columns. */
typedef struct tide_table {
    int64_t nrows;
    int64_t capacity; /**< rows allocated in every column */
    int ncols;
    int cap_cols;
    tide_column *cols;
} tide_table;

/** Make an empty table. */
TIDE_API void tide_table_init(tide_table *t);

/** Release every column. */
TIDE_API void tide_table_free(tide_table *t);

/** Add a column (zeroed for existing rows). Names must be unique (TIDE_E_INVAL otherwise).
 *  @p unit and @p comment may be NULL. Returns the new column's index in *index if non-NULL. */
TIDE_API int tide_table_add_column(tide_table *t, const char *name, tide_col_type type,
                                   int64_t repeat, const char *unit, const char *comment,
                                   int *index);

/** Remove the column called @p name, keeping the order of the others. TIDE_E_NOTFOUND when
 *  there is none. */
TIDE_API int tide_table_remove_column(tide_table *t, const char *name);

/** Set the number of rows, growing storage as needed (new rows are zeroed). */
TIDE_API int tide_table_resize(tide_table *t, int64_t nrows);

/** The column called @p name (case-sensitive) or NULL. */
TIDE_API tide_column *tide_table_column(const tide_table *t, const char *name);

/** Typed access to a column's data; NULL if the column is missing or has another type. */
TIDE_API double *tide_table_f64(const tide_table *t, const char *name);
TIDE_API float *tide_table_f32(const tide_table *t, const char *name);
TIDE_API int64_t *tide_table_i64(const tide_table *t, const char *name);
TIDE_API int32_t *tide_table_i32(const tide_table *t, const char *name);

/** Bytes of one element of a column type (1 for TIDE_COL_STR). */
TIDE_API int64_t tide_col_type_size(tide_col_type type);

#ifdef __cplusplus
}
#endif
#endif
