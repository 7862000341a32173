/* store_sqlite_internal.h — what the SQLite store's files share: store_sqlite.c (schema,
 * inserts, deletes, the handle), store_sqlite_read.c (cone searches, image rows, counts) and
 * store_sqlite_ro.c (what a store is; opening one read-only). */
#ifndef TIDE_STORE_SQLITE_INTERNAL_H
#define TIDE_STORE_SQLITE_INTERNAL_H
#include <sqlite3.h>
#include <stdint.h>

#include "store_internal.h"

/* The handle's database connection (DB(s) at the SQL call sites). */
sqlite3 *tide_sq_db(tide_store *s);
#define DB(s) tide_sq_db(s)
/* TIDE_E_DB naming the store, @p what and SQLite's message. */
int tide_sq_fail(tide_store *s, const char *what);

/* store_sqlite_ro.c: TIDE_E_FORMAT unless @p db is a tide store (tide_meta; with @p strict its
 * sky-cell row is required), TIDE_E_UNSUPPORTED for another sky-cell scheme or the earlier
 * row layout; *ro (may be NULL) set to 1 when SQLite could not read the file with locks
 * (read-only directory or mount). */
int tide_sq_check_store(tide_store *s, sqlite3 *db, int strict, int *ro);
/* Open an existing store at @p path for queries without changing the file (store.h). */
int tide_sq_open_read_only(tide_store *s, const char *path, sqlite3 **db);

/* Names and kinds of the stored source columns (source_columns, in first-seen order). */
typedef struct tide_sq_colset {
    char (*name)[96];
    int *is_int;
    int n;
} tide_sq_colset;

/* The stored source columns (source_columns), in their order; release with
 * tide_sq_colset_free. */
int tide_sq_columns(tide_store *s, tide_sq_colset *c);
void tide_sq_colset_free(tide_sq_colset *c);

/* The store operations of store_sqlite_read.c (store_internal.h's store_ops). */
int tide_sq_cone(tide_store *s, double ra, double dec, double radius, int64_t limit,
                 tide_table *out);
int tide_sq_image(tide_store *s, const char *key, const char *checksum, tide_store_frame *out);
int tide_sq_count(tide_store *s, int64_t *nimg, int64_t *nsrc);

#endif
