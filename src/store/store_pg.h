/* store_pg.h — what the PostgreSQL store (store_pg.c: connection, schema, inserts;
 * store_pg_read.c: queries) shares between its files and with refcat_pg.c. */
#ifndef TIDE_STORE_PG_H
#define TIDE_STORE_PG_H
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "tide/store.h"

/* Connect with @p opt's bounded retries; *conn on success, TIDE_E_DB naming @p target (written:
 * host, port, database, user; never the password) after the last attempt. */
int tide_store_pg_connect(const tide_store_options *opt, const char *conninfo, PGconn **conn,
                          char *target, size_t ntarget);

/* @p src as one line in @p buf (libpq's continuation lines joined). */
const char *tide_store_pg_oneline(const char *src, char *buf, size_t n);

/* A notice processor that drops notices: the library never prints. */
void tide_store_pg_quiet(void *arg, const char *m);

/* The session of a PostgreSQL store handle (store_pg.c). */
PGconn *tide_store_pg_conn(tide_store *s);
/* Reconnect when the server dropped the connection (bounded retries). */
int tide_store_pg_ensure(tide_store *s);
/* TIDE_E_DB naming the store's target, @p what and the server's message (from @p r if any). */
int tide_store_pg_fail(tide_store *s, const char *what, PGresult *r);
/* Run SQL whose rows are ignored; TIDE_E_DB on failure. */
int tide_store_pg_run(tide_store *s, const char *sql);
/* A parameterised statement, once more after a reconnection when the connection had died;
 * NULL when it cannot reconnect (the error detail says why). */
PGresult *tide_store_pg_query(tide_store *s, const char *sql, int nparams, const char *const *vals);

/* The store operations of store_pg_read.c (store_internal.h's store_ops). */
int tide_store_pg_cone(tide_store *s, double ra, double dec, double radius, int64_t limit,
                       tide_table *out);
int tide_store_pg_image(tide_store *s, const char *key, const char *checksum,
                        tide_store_frame *out);
int tide_store_pg_count(tide_store *s, int64_t *nimg, int64_t *nsrc);

#endif
