/* store_sql.c — the statement interface of store_sql.h on SQLite (a prepared statement whose
 * "$k" parameters are found by name) and on PostgreSQL (parameters kept as text, BLOBs in
 * binary, sent with PQexecParams on the first step; the result read in text, bytea unescaped).
 * Doubles go to PostgreSQL as %.17g, which reads back the same double. */
#include <libpq-fe.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg.h"
#include "store_sql.h"
#include "store_sqlite_internal.h"
#include "tide/status.h"

struct tide_ssql {
    tide_store *s;
    int pg;
    /* SQLite */
    sqlite3_stmt *q;
    int idx[TIDE_SSQL_MAXP + 1]; /* $k -> SQLite's parameter index (0: not in the SQL) */
    int sq_started;
    /* PostgreSQL */
    char *sql;
    int np;
    char *val[TIDE_SSQL_MAXP];
    int len[TIDE_SSQL_MAXP], fmt[TIDE_SSQL_MAXP];
    PGresult *r;
    int row, nrows;
    unsigned char *blob;
    int runs;      /* executions so far: the second one prepares the statement */
    char name[32]; /* its server-side name once prepared ("" before) */
};

/* Names of server-side statements: unique in the process (a statement whose DEALLOCATE
 * failed in an aborted transaction must not collide with a later one). */
static unsigned long pg_stmt_serial;

static int pg_count_params(const char *sql) {
    int n = 0;
    for (const char *p = sql; *p; p++)
        if (*p == '$' && p[1] >= '1' && p[1] <= '9') {
            int k = atoi(p + 1);
            if (k > n)
                n = k;
        }
    return n;
}

int tide_ssql_prepare(tide_store *s, const char *sql, tide_ssql **out) {
    *out = NULL;
    tide_ssql *q = calloc(1, sizeof *q);
    if (!q)
        return tide_error(TIDE_E_NOMEM, "store %s: statement", s->target);
    q->s = s;
    q->pg = s->kind == TIDE_STORE_PG;
    if (q->pg) {
        int st = tide_store_pg_ensure(s);
        q->np = pg_count_params(sql);
        q->sql = strdup(sql);
        if (!st && (!q->sql || q->np > TIDE_SSQL_MAXP))
            st = tide_error(TIDE_E_NOMEM, "store %s: statement of %d parameters", s->target, q->np);
        if (st) {
            tide_ssql_finalize(q);
            return st;
        }
    } else {
        if (sqlite3_prepare_v2(DB(s), sql, -1, &q->q, NULL) != SQLITE_OK) {
            int st = tide_sq_fail(s, sql);
            tide_ssql_finalize(q);
            return st;
        }
        for (int k = 1; k <= TIDE_SSQL_MAXP; k++) {
            char nm[16];
            snprintf(nm, sizeof nm, "$%d", k);
            q->idx[k] = sqlite3_bind_parameter_index(q->q, nm);
        }
    }
    *out = q;
    return TIDE_OK;
}

static void pg_set(tide_ssql *q, int k, const void *v, int n, int fmt) {
    if (k < 1 || k > q->np)
        return;
    free(q->val[k - 1]);
    q->val[k - 1] = NULL;
    q->len[k - 1] = 0;
    q->fmt[k - 1] = fmt;
    if (!v)
        return;
    q->val[k - 1] = malloc((size_t)n + 1);
    if (q->val[k - 1]) {
        memcpy(q->val[k - 1], v, (size_t)n);
        q->val[k - 1][n] = 0;
        q->len[k - 1] = n;
    }
}

void tide_ssql_bind_i64(tide_ssql *q, int k, int64_t v) {
    if (!q->pg) {
        if (k <= TIDE_SSQL_MAXP && q->idx[k])
            sqlite3_bind_int64(q->q, q->idx[k], v);
        return;
    }
    char b[32];
    pg_set(q, k, b, snprintf(b, sizeof b, "%lld", (long long)v), 0);
}

void tide_ssql_bind_f64(tide_ssql *q, int k, double v) {
    if (isnan(v)) {
        tide_ssql_bind_null(q, k);
        return;
    }
    if (!q->pg) {
        if (k <= TIDE_SSQL_MAXP && q->idx[k])
            sqlite3_bind_double(q->q, q->idx[k], v);
        return;
    }
    char b[40];
    const int n = isinf(v) ? snprintf(b, sizeof b, "%s", v > 0 ? "Infinity" : "-Infinity")
                           : snprintf(b, sizeof b, "%.17g", v);
    pg_set(q, k, b, n, 0);
}

void tide_ssql_bind_text(tide_ssql *q, int k, const char *v) {
    if (!v) {
        tide_ssql_bind_null(q, k);
    } else if (!q->pg) {
        if (k <= TIDE_SSQL_MAXP && q->idx[k])
            sqlite3_bind_text(q->q, q->idx[k], v, -1, SQLITE_TRANSIENT);
    } else {
        pg_set(q, k, v, (int)strlen(v), 0);
    }
}

void tide_ssql_bind_blob(tide_ssql *q, int k, const void *v, int n) {
    if (!q->pg) {
        if (k <= TIDE_SSQL_MAXP && q->idx[k])
            sqlite3_bind_blob(q->q, q->idx[k], v, n, SQLITE_TRANSIENT);
    } else {
        pg_set(q, k, v ? v : "", v ? n : 0, 1);
    }
}

void tide_ssql_bind_null(tide_ssql *q, int k) {
    if (!q->pg) {
        if (k <= TIDE_SSQL_MAXP && q->idx[k])
            sqlite3_bind_null(q->q, q->idx[k]);
    } else {
        pg_set(q, k, NULL, 0, 0);
    }
}

int tide_ssql_step(tide_ssql *q) {
    if (!q->pg) {
        const int rc = sqlite3_step(q->q);
        if (rc == SQLITE_ROW)
            return 1;
        if (rc == SQLITE_DONE)
            return 0;
        return tide_sq_fail(q->s, sqlite3_sql(q->q));
    }
    if (!q->r) {
        /* a statement run again (one per candidate, per cutout) is prepared once on the
         * server: parsing and planning it each time cost as much as the round trip */
        PGconn *c = tide_store_pg_conn(q->s);
        if (q->runs == 1 && !q->name[0]) {
            char nm[32];
            snprintf(nm, sizeof nm, "tide_s%lu", ++pg_stmt_serial);
            PGresult *pr = PQprepare(c, nm, q->sql, q->np, NULL);
            if (PQresultStatus(pr) == PGRES_COMMAND_OK)
                snprintf(q->name, sizeof q->name, "%s", nm);
            PQclear(pr); /* not prepared: it simply runs unprepared, with its error if any */
        }
        q->runs++;
        q->r = q->name[0] ? PQexecPrepared(c, q->name, q->np, (const char *const *)q->val, q->len,
                                           q->fmt, 0)
                          : PQexecParams(c, q->sql, q->np, NULL, (const char *const *)q->val,
                                         q->len, q->fmt, 0);
        const ExecStatusType t = PQresultStatus(q->r);
        if (t != PGRES_TUPLES_OK && t != PGRES_COMMAND_OK) {
            int st = tide_store_pg_fail(q->s, q->sql, q->r);
            PQclear(q->r);
            q->r = NULL;
            return st;
        }
        q->nrows = PQntuples(q->r);
        q->row = -1;
    }
    if (q->row + 1 < q->nrows) {
        q->row++;
        return 1;
    }
    return 0;
}

void tide_ssql_reset(tide_ssql *q) {
    if (!q->pg) {
        sqlite3_reset(q->q);
        return;
    }
    PQclear(q->r);
    q->r = NULL;
    PQfreemem(q->blob);
    q->blob = NULL;
}

void tide_ssql_finalize(tide_ssql *q) {
    if (!q)
        return;
    if (q->name[0]) { /* the server's copy goes too (a long-lived worker prepares many) */
        char sql[64];
        snprintf(sql, sizeof sql, "DEALLOCATE %s", q->name);
        PQclear(PQexec(tide_store_pg_conn(q->s), sql));
    }
    sqlite3_finalize(q->q);
    PQclear(q->r);
    PQfreemem(q->blob);
    for (int k = 0; k < TIDE_SSQL_MAXP; k++)
        free(q->val[k]);
    free(q->sql);
    free(q);
}

int tide_ssql_ncols(tide_ssql *q) {
    return q->pg ? (q->r ? PQnfields(q->r) : 0) : sqlite3_column_count(q->q);
}

const char *tide_ssql_col_name(tide_ssql *q, int j) {
    return q->pg ? PQfname(q->r, j) : sqlite3_column_name(q->q, j);
}

int tide_ssql_col_is_int(tide_ssql *q, int j) {
    if (q->pg) {
        const Oid t = PQftype(q->r, j);
        return t == 20 || t == 21 || t == 23; /* int8, int2, int4 */
    }
    const char *d = sqlite3_column_decltype(q->q, j);
    return d && !strcmp(d, "INTEGER");
}

int tide_ssql_col_null(tide_ssql *q, int j) {
    return q->pg ? PQgetisnull(q->r, q->row, j) : sqlite3_column_type(q->q, j) == SQLITE_NULL;
}

int64_t tide_ssql_col_i64(tide_ssql *q, int j) {
    if (!q->pg)
        return sqlite3_column_int64(q->q, j);
    return PQgetisnull(q->r, q->row, j) ? 0 : strtoll(PQgetvalue(q->r, q->row, j), NULL, 10);
}

double tide_ssql_col_f64(tide_ssql *q, int j) {
    if (tide_ssql_col_null(q, j))
        return NAN;
    if (!q->pg)
        return sqlite3_column_double(q->q, j);
    return strtod(PQgetvalue(q->r, q->row, j), NULL);
}

const char *tide_ssql_col_text(tide_ssql *q, int j) {
    if (tide_ssql_col_null(q, j))
        return NULL;
    return q->pg ? PQgetvalue(q->r, q->row, j) : (const char *)sqlite3_column_text(q->q, j);
}

const void *tide_ssql_col_blob(tide_ssql *q, int j, int *n) {
    *n = 0;
    if (tide_ssql_col_null(q, j))
        return NULL;
    if (!q->pg) {
        *n = sqlite3_column_bytes(q->q, j);
        return sqlite3_column_blob(q->q, j);
    }
    PQfreemem(q->blob);
    size_t len = 0;
    q->blob = PQunescapeBytea((const unsigned char *)PQgetvalue(q->r, q->row, j), &len);
    *n = q->blob ? (int)len : 0;
    return q->blob;
}

int tide_ssql_run_i64(tide_store *s, const char *sql, int n, const int64_t *v) {
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s, sql, &q);
    for (int k = 0; !st && k < n; k++)
        tide_ssql_bind_i64(q, k + 1, v[k]);
    while (!st && (st = tide_ssql_step(q)) == 1)
        st = 0;
    tide_ssql_finalize(q);
    return st < 0 ? st : TIDE_OK;
}

int tide_ssql_one_i64(tide_store *s, const char *sql, int n, int64_t p1, int64_t dflt,
                      int64_t *out) {
    tide_ssql *q = NULL;
    *out = dflt;
    int st = tide_ssql_prepare(s, sql, &q);
    if (!st && n > 0)
        tide_ssql_bind_i64(q, 1, p1);
    if (!st) {
        st = tide_ssql_step(q);
        if (st == 1 && !tide_ssql_col_null(q, 0))
            *out = tide_ssql_col_i64(q, 0);
    }
    tide_ssql_finalize(q);
    return st < 0 ? st : TIDE_OK;
}

int tide_ssql_exec(tide_store *s, const char *sql) {
    if (s->kind == TIDE_STORE_PG) {
        int st = tide_store_pg_ensure(s);
        return st ? st : tide_store_pg_run(s, sql);
    }
    char *msg = NULL;
    if (sqlite3_exec(DB(s), sql, NULL, NULL, &msg) != SQLITE_OK) {
        int st = tide_error(TIDE_E_DB, "sqlite %s: %.200s: %s", s->target, sql,
                            msg ? msg : sqlite3_errmsg(DB(s)));
        sqlite3_free(msg);
        return st;
    }
    return TIDE_OK;
}

int tide_ssql_begin(tide_store *s) {
    if (s->kind != TIDE_STORE_PG)
        return tide_ssql_exec(s, "BEGIN IMMEDIATE");
    int st = tide_store_pg_ensure(s);
    if (st)
        return st;
    PGresult *r = tide_store_pg_query(s, "BEGIN", 0, NULL);
    if (!r)
        return TIDE_E_DB;
    st = PQresultStatus(r) == PGRES_COMMAND_OK ? TIDE_OK : tide_store_pg_fail(s, "BEGIN", r);
    PQclear(r);
    return st;
}

int tide_ssql_commit(tide_store *s) {
    return tide_ssql_exec(s, "COMMIT");
}

int tide_ssql_rollback(tide_store *s, int st, const char *what) {
    char keep[1200];
    snprintf(keep, sizeof keep, "%s", tide_error_detail());
    if (s->kind == TIDE_STORE_PG) {
        PGconn *c = tide_store_pg_conn(s);
        if (c && PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE)
            PQclear(PQexec(c, "ROLLBACK"));
    } else if (!sqlite3_get_autocommit(DB(s))) {
        sqlite3_exec(DB(s), "ROLLBACK", NULL, NULL, NULL);
    }
    return tide_error(st, "%s%s", keep, what ? what : "");
}
