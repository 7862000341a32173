/* store_internal.h — what store.c shares with the back ends (store_sqlite.c, store_pg.c):
 * the vtable, the mapping of a catalog onto stored columns, and the cone-result builder. */
#ifndef TIDE_STORE_INTERNAL_H
#define TIDE_STORE_INTERNAL_H
#include <stdint.h>

#include "tide/store.h"

/* One stored source column: element @p elem of catalog column @p src. */
typedef struct store_col {
    char name[96]; /* SQL name (NAME or NAME_k for arrays), quoted in SQL */
    int src;       /* index in the catalog's columns */
    int64_t elem;  /* element within the row */
    int is_int;    /* 1: stored as a 64-bit integer, 0: as a 64-bit real */
} store_col;

/* The catalog's numeric columns in catalog order (IMAGE_ID, SEQ and CELL are added by the
 * back ends). ira / idec: indices of ALPHA_J2000 / DELTA_J2000 in cols. */
typedef struct store_schema {
    store_col *cols;
    int n, ira, idec;
} store_schema;

int tide_store_schema_make(const tide_table *t, store_schema *s);
void tide_store_schema_free(store_schema *s);

/* Value of stored column @p c at @p row, as a double (integers converted) or an integer. */
double tide_store_value_f(const tide_table *t, const store_col *c, int64_t row);
int64_t tide_store_value_i(const tide_table *t, const store_col *c, int64_t row);

/* SQL for the images table's columns after id, shared by both back ends; the kinds say how to
 * bind them ('T' text, 'R' real, 'I' integer). */
#define TIDE_STORE_NIMG 26
extern const char *const tide_store_img_cols[TIDE_STORE_NIMG];
extern const char tide_store_img_kinds[TIDE_STORE_NIMG + 1];
/* Field values of a frame in that order: text into txt[i] (or NULL), numbers into num[i]. */
void tide_store_frame_values(const tide_store_frame *f, const char *txt[TIDE_STORE_NIMG],
                             double num[TIDE_STORE_NIMG]);
/* The look-up of one frame's images row, for both back ends: id and the image columns of the
 * newest row whose checksum is the first parameter, or whose checksum or file is the second
 * (an exact checksum first). @p p1, @p p2: the back end's placeholders ("$1", "?1"). */
void tide_store_image_query(char *sql, size_t cap, const char *p1, const char *p2);
/* Set field i of @p f from a text value (may be NULL = unknown) — used when reading back. */
int tide_store_frame_set(tide_store_frame *f, int i, const char *text);

/* Cone results: a table with IMAGE_ID, FILE, SEQ then the stored source columns. */
typedef struct store_result {
    tide_table *t;
    int ndb;     /* columns in the back end's source rows */
    int *map;    /* db column -> output column, -1 = not returned */
    int *is_int; /* db column kind */
    int64_t **icol;
    double **fcol; /* cached column pointers, refreshed after growth */
} store_result;

/* Begin: @p names / @p is_int describe the back end's source columns in the order it will
 * deliver them; IMAGE_ID and SEQ must be among them; names in @p skip are dropped. */
int tide_store_result_begin(store_result *r, tide_table *out, int ndb, const char *const *names,
                            const int *is_int, const char *const *skip, int nskip);
/* Append one row; returns its index or a negative status. */
int64_t tide_store_result_row(store_result *r);
void tide_store_result_set_i(store_result *r, int64_t row, int dbcol, int64_t v);
void tide_store_result_set_f(store_result *r, int64_t row, int dbcol, double v);
/* Sort by (IMAGE_ID, SEQ), apply @p limit (> 0), fill FILE with @p file_of(ctx, id). */
typedef int (*store_file_fn)(void *ctx, int64_t image_id, char *file, int n);
int tide_store_result_finish(store_result *r, int64_t limit, store_file_fn file_of, void *ctx);
void tide_store_result_free(store_result *r);

/* The back-end interface. */
typedef struct store_ops {
    int (*put)(tide_store *s, const tide_store_frame *f, const store_schema *sc,
               const tide_table *t, int64_t *id);
    /* radius < 0: every source */
    int (*cone)(tide_store *s, double ra, double dec, double radius, int64_t limit,
                tide_table *out);
    int (*image)(tide_store *s, const char *key, const char *checksum, tide_store_frame *out);
    int (*count)(tide_store *s, int64_t *nimg, int64_t *nsrc);
    int (*exec)(tide_store *s, const char *sql);
    void (*close)(tide_store *s);
} store_ops;

struct tide_store {
    tide_store_kind kind;
    tide_store_options opt;
    const store_ops *ops;
    void *impl;
    char target[512]; /* for messages: the file or host/port/db/user, never a password */
};

int tide_store_sqlite_open(tide_store *s, const char *path);
/* Delete image @p id's sources, row layout and images row (inside the caller's transaction). */
int tide_store_sqlite_delete_rows(tide_store *s, int64_t id);
/* Delete image @p id's rows as above in a transaction of its own (rolled back on error). */
int tide_store_sqlite_delete_frame(tide_store *s, int64_t id);
int tide_store_pg_open(tide_store *s, const char *conninfo);

/* Current UTC time as ISO 8601 ("2026-11-30T01:02:03Z"). */
void tide_store_now_iso(char *out, int n);

/* ---- the SQLite store's packed rows (store_sqlite_rows.c) ---- */
/* Row indices sorted by cell, equal cells in row order (a stable radix sort); malloc'd, NULL
 * when out of memory. */
int64_t *tide_store_cell_order(const int64_t *cells, int64_t n);
/* The frame's layout text (one "TYPE NAME\n" per stored element but ALPHA/DELTA_J2000) and
 * its packed row width in bytes. *text is malloc'd. */
int tide_sq_layout_make(const tide_table *t, const store_schema *sc, char **text,
                        int64_t *rowbytes);
/* Pack every row into out (nrows * rowbytes bytes) and each row's sky cell into cells. */
int tide_sq_pack(const tide_table *t, const store_schema *sc, int64_t rowbytes, unsigned char *out,
                 int64_t *cells);
/* A parsed layout: element k goes to result column col[k] (an index into the names given to
 * the parser), type type[k] (tide_col_type), at byte off[k]; present[j]: column j is in it. */
typedef struct sq_layout {
    int64_t image_id;
    int n;
    int *col;
    unsigned char *type;
    int *off;
    int64_t rowbytes;
    unsigned char *present;
} sq_layout;
int tide_sq_layout_parse(const char *text, const char *const *names, int nnames, sq_layout *L);
void tide_sq_layout_free(sq_layout *L);
/* Set result columns [first, nnames) of @p row from a packed row (NaN where L lacks one). */
void tide_sq_unpack(const sq_layout *L, const unsigned char *data, store_result *res, int64_t row,
                    int first, int nnames);

#endif
