/* store_sqlite_ro.c — what makes an SQLite file a tide store, and opening one for queries
 * without changing it (store.h, tide_store_options.read_only).
 *
 * A read-only open must leave any file as it found it: no PRAGMA journal_mode (which switches
 * a file to WAL for good), no CREATE. A file with no -wal beside it is first looked at through
 * an immutable connection (SQLite then takes no lock and creates no -wal/-shm/-journal file),
 * so a database that is not a tide store is refused without a trace. The queries then run on a
 * mode=ro connection, which sees a writer's WAL; where SQLite cannot create the WAL index (a
 * WAL store on a read-only directory or mount: "attempt to write a readonly database") the
 * file is read as immutable, as nobody can be writing it there. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_sqlite_internal.h"
#include "tide/status.h"

/* The sky-cell scheme the cone searches assume (skycell.h: HEALPix NESTED, order 11). */
#define SQ_SKYCELL "healpix-nested-11"

/* A status for SQLite's failure @p rc on @p db: 1 in *ro when SQLite could not open or set up
 * the file for reading with locks (read-only directory or mount). */
static int check_fail(tide_store *s, sqlite3 *db, const char *what, int *ro) {
    const int rc = sqlite3_errcode(db) & 0xff;
    if (rc == SQLITE_NOTADB)
        return tide_error(TIDE_E_FORMAT, "sqlite %s: not a tide store (not an SQLite database)",
                          s->target);
    if (ro && (rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN))
        *ro = 1;
    return tide_error(TIDE_E_DB, "sqlite %s: %s: %s", s->target, what, sqlite3_errmsg(db));
}

int tide_sq_check_store(tide_store *s, sqlite3 *db, int strict, int *ro) {
    /* a store written with another cell scheme would answer cones wrongly: refuse it */
    sqlite3_stmt *q = NULL;
    int st = TIDE_OK;
    if (sqlite3_prepare_v2(db, "SELECT value FROM tide_meta WHERE key='skycell'", -1, &q, NULL) !=
        SQLITE_OK) {
        const int rc = sqlite3_errcode(db) & 0xff;
        if (rc == SQLITE_ERROR && strstr(sqlite3_errmsg(db), "no such table"))
            return tide_error(TIDE_E_FORMAT, "sqlite %s: not a tide store (no tide_meta table)",
                              s->target);
        return check_fail(s, db, "reading tide_meta", ro);
    }
    const int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(q, 0);
        if (!v || strcmp(v, SQ_SKYCELL))
            st = tide_error(TIDE_E_UNSUPPORTED,
                            "sqlite %s: unsupported sky-cell scheme '%.100s' (this tide reads "
                            "stores of " SQ_SKYCELL ")",
                            s->target, v ? v : "");
    } else if (rc == SQLITE_DONE) {
        if (strict)
            st = tide_error(TIDE_E_FORMAT,
                            "sqlite %s: not a tide store (tide_meta records no sky-cell scheme)",
                            s->target);
    } else {
        st = check_fail(s, db, "reading tide_meta", ro);
    }
    sqlite3_finalize(q);
    if (st)
        return st;
    /* a store of the earlier one-column-per-value layout has no DATA column */
    q = NULL;
    if (sqlite3_prepare_v2(db, "SELECT DATA FROM sources LIMIT 0", -1, &q, NULL) != SQLITE_OK)
        st = tide_error(TIDE_E_UNSUPPORTED,
                        "sqlite %s: sources has no packed DATA column (a store of an "
                        "earlier tide: re-create it)",
                        s->target);
    sqlite3_finalize(q);
    return st;
}

/* "file:" URI of @p path with @p query, percent-encoded; malloc'd (NULL: out of memory). */
static char *file_uri(const char *path, const char *query) {
    const size_t n = 3 * strlen(path) + strlen(query) + 16;
    char *u = malloc(n);
    if (!u)
        return NULL;
    /* "file:///abs" for an absolute path (so "//x" is no authority), "file:rel" otherwise */
    size_t k = (size_t)snprintf(u, n, "file:%s", path[0] == '/' ? "//" : "");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/._-~", *p))
            u[k++] = (char)*p;
        else
            k += (size_t)snprintf(u + k, n - k, "%%%02X", *p);
    }
    snprintf(u + k, n - k, "?%s", query);
    return u;
}

/* Open @p path through a "file:" URI with @p query, read-only, and check that it is a store.
 * On failure *db is closed and NULL. */
static int open_checked(tide_store *s, const char *path, const char *query, sqlite3 **db, int *ro) {
    *db = NULL;
    char *uri = file_uri(path, query);
    if (!uri)
        return tide_error(TIDE_E_NOMEM, "sqlite %s: out of memory", s->target);
    const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
    int st = TIDE_OK;
    if (sqlite3_open_v2(uri, db, flags, NULL) != SQLITE_OK)
        st = check_fail(s, *db, "cannot open", ro);
    free(uri);
    if (!st) {
        sqlite3_busy_timeout(*db, s->opt.sqlite_busy_ms);
        st = tide_sq_check_store(s, *db, 1, ro);
    }
    if (st) {
        sqlite3_close(*db);
        *db = NULL;
    }
    return st;
}

int tide_sq_open_read_only(tide_store *s, const char *path, sqlite3 **db) {
    *db = NULL;
    if (access(path, F_OK))
        return tide_error(TIDE_E_NOTFOUND, "sqlite %s: no such store", s->target);
    size_t n = strlen(path) + 8;
    char *wal = malloc(n);
    if (!wal)
        return tide_error(TIDE_E_NOMEM, "sqlite %s: out of memory", s->target);
    snprintf(wal, n, "%s-wal", path);
    const int has_wal = access(wal, F_OK) == 0;
    free(wal);
    int st = TIDE_OK, ro = 0;
    if (!has_wal) { /* first a look that leaves no trace */
        st = open_checked(s, path, "immutable=1", db, NULL);
        sqlite3_close(*db);
        *db = NULL;
        if (st)
            return st;
    }
    st = open_checked(s, path, "mode=ro", db, &ro);
    if (st && ro && !has_wal) {
        tide_error_clear();
        st = open_checked(s, path, "immutable=1", db, NULL);
    }
    if (!st) /* per-connection settings only: nothing is written */
        sqlite3_exec(*db, "PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY;", NULL, NULL, NULL);
    return st;
}
