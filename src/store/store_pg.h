/* store_pg.h — what the PostgreSQL store (store_pg.c) shares with refcat_pg.c. */
#ifndef TIDE_STORE_PG_H
#define TIDE_STORE_PG_H
#include <libpq-fe.h>
#include <stddef.h>

#include "tide/store.h"

/* Connect with @p opt's bounded retries; *conn on success, TIDE_E_DB naming @p target (written:
 * host, port, database, user; never the password) after the last attempt. */
int tide_store_pg_connect(const tide_store_options *opt, const char *conninfo, PGconn **conn,
                          char *target, size_t ntarget);

/* @p src as one line in @p buf (libpq's continuation lines joined). */
const char *tide_store_pg_oneline(const char *src, char *buf, size_t n);

/* A notice processor that drops notices: the library never prints. */
void tide_store_pg_quiet(void *arg, const char *m);

#endif
