/* store_sql.h — one small statement interface over both back ends, for the tables whose rows
 * are few enough to go one statement at a time (diffs, candidates, cutouts, objects, labels):
 * the SQL is written once, with $1..$n placeholders (PostgreSQL's; SQLite reads "$1" as a
 * named parameter, mapped here by name), and runs on either store. The frames' bulk paths
 * (store_sqlite.c, store_pg.c) stay back-end specific. */
#ifndef TIDE_STORE_SQL_H
#define TIDE_STORE_SQL_H
#include <stddef.h>
#include <stdint.h>

#include "store_internal.h"

/* Most parameters of one statement. */
#define TIDE_SSQL_MAXP 96

typedef struct tide_ssql tide_ssql;

/* Prepare @p sql on store @p s. */
int tide_ssql_prepare(tide_store *s, const char *sql, tide_ssql **out);
/* Bind parameter $k (1-based). A non-finite double binds NULL (NaN) or +-Infinity. */
void tide_ssql_bind_i64(tide_ssql *q, int k, int64_t v);
void tide_ssql_bind_f64(tide_ssql *q, int k, double v);
void tide_ssql_bind_text(tide_ssql *q, int k, const char *v); /* NULL binds NULL */
void tide_ssql_bind_blob(tide_ssql *q, int k, const void *v, int n);
void tide_ssql_bind_null(tide_ssql *q, int k);
/* Run (on the first call) and move to the next row: 1 a row, 0 done, negative an error. */
int tide_ssql_step(tide_ssql *q);
/* Ready the statement to run again with new bindings (kept bindings are replaced as bound). */
void tide_ssql_reset(tide_ssql *q);
void tide_ssql_finalize(tide_ssql *q);
/* Columns of the current result (after a step; or, for SQLite, after prepare). */
int tide_ssql_ncols(tide_ssql *q);
const char *tide_ssql_col_name(tide_ssql *q, int j);
int tide_ssql_col_is_int(tide_ssql *q, int j);
int tide_ssql_col_null(tide_ssql *q, int j);
int64_t tide_ssql_col_i64(tide_ssql *q, int j);
double tide_ssql_col_f64(tide_ssql *q, int j);       /* NULL reads NaN */
const char *tide_ssql_col_text(tide_ssql *q, int j); /* NULL reads NULL */
/* The bytes of a BLOB / bytea column (valid until the next step); NULL and 0 for NULL. */
const void *tide_ssql_col_blob(tide_ssql *q, int j, int *n);

/* Run @p sql once with @p n int64 parameters (no rows wanted). */
int tide_ssql_run_i64(tide_store *s, const char *sql, int n, const int64_t *v);
/* The first column of the first row of @p sql with one int64 parameter (@p n 0 or 1), or
 * @p dflt when there is no row. */
int tide_ssql_one_i64(tide_store *s, const char *sql, int n, int64_t p1, int64_t dflt,
                      int64_t *out);
/* Statements without parameters or rows (several, separated by ';'). */
int tide_ssql_exec(tide_store *s, const char *sql);
/* Begin / commit / roll back the write transaction of one call (SQLite: BEGIN IMMEDIATE). */
int tide_ssql_begin(tide_store *s);
int tide_ssql_commit(tide_store *s);
/* Roll back after failure @p st (the message kept, @p what appended); returns @p st. */
int tide_ssql_rollback(tide_store *s, int st, const char *what);

#endif
