/* refcat_pg.c — reference stars from a PostgreSQL table with a Q3C index (store.h,
 * tide_store_refcat_cone): the table's own column names, matched without regard to case,
 * q3c_radial_query with a hair of margin, then the exact distance every store uses. */
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store/store_pg.h"
#include "tide/refcat.h"
#include "tide/status.h"
#include "tide/store.h"

/* Append @p name as a quoted identifier, each dot-separated part quoted on its own. */
static int quote_ident(PGconn *c, const char *name, char *out, size_t n) {
    out[0] = 0;
    size_t k = 0;
    const char *p = name;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        char *q = PQescapeIdentifier(c, p, len);
        if (!q)
            return -1;
        k += (size_t)snprintf(out + k, n - k, "%s%s", k ? "." : "", q);
        PQfreemem(q);
        if (k >= n)
            return -1;
        p += len + (dot ? 1 : 0);
    }
    return k ? 0 : -1;
}

int tide_store_refcat_cone(const char *uri, const char *table, const tide_refcat_columns *cols,
                           double ra, double dec, double radius_deg, tide_table *out) {
    if (!uri || !table || !*table)
        return tide_error(TIDE_E_INVAL, "refcat: needs a PostgreSQL URI and a table");
    if (!isfinite(ra) || !(dec >= -90 && dec <= 90) || !(radius_deg >= 0) || radius_deg > 60)
        return tide_error(TIDE_E_INVAL, "refcat: bad cone RA %g Dec %g radius %g deg", ra, dec,
                          radius_deg);
    if (!tide_store_uri_is_pg(uri))
        return tide_error(TIDE_E_INVAL, "refcat: '%s' is not a PostgreSQL URI", uri);
    const char *ci = strncmp(uri, "pg:", 3) ? uri : uri + 3;
    tide_store_options opt;
    tide_store_options_init(&opt);
    PGconn *conn = NULL;
    char target[512], m[1024];
    int st = tide_store_pg_connect(&opt, ci, &conn, target, sizeof target);
    if (st)
        return st;
    PQsetNoticeProcessor(conn, tide_store_pg_quiet, NULL);
    char qt[600], sql[2048];
    if (quote_ident(conn, table, qt, sizeof qt)) {
        PQfinish(conn);
        return tide_error(TIDE_E_INVAL, "refcat: bad table name '%s'", table);
    }
    /* the table's column names, to match the wanted ones without regard to case */
    snprintf(sql, sizeof sql, "SELECT * FROM %s LIMIT 0", qt);
    PGresult *r = PQexec(conn, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        st = tide_error(TIDE_E_DB, "%s: reference catalog %s: %s", target, table,
                        tide_store_pg_oneline(PQresultErrorMessage(r), m, sizeof m));
        PQclear(r);
        PQfinish(conn);
        return st;
    }
    static const char *defaults[5] = {"RA", "DEC", "MAG", "MAGERR", "COLOR"};
    const char *given[5] = {NULL, NULL, NULL, NULL, NULL};
    if (cols) {
        const char *g[5] = {cols->ra, cols->dec, cols->mag, cols->magerr, cols->color};
        for (int k = 0; k < 5; k++)
            given[k] = g[k][0] ? g[k] : NULL;
    }
    char expr[5][160];
    for (int k = 0; k < 5 && !st; k++) {
        const char *want = given[k] ? given[k] : defaults[k];
        int found = -1;
        for (int j = 0; j < PQnfields(r) && found < 0; j++)
            if (!strcasecmp(PQfname(r, j), want))
                found = j;
        if (found < 0 && (given[k] || k < 3))
            st = tide_error(TIDE_E_NOTFOUND, "%s: no column '%s' in the reference catalog %s",
                            target, want, table);
        else if (found < 0)
            snprintf(expr[k], sizeof expr[k], "NULL::float8");
        else if (quote_ident(conn, PQfname(r, found), expr[k], sizeof expr[k] - 8) == 0)
            strcat(expr[k], "::float8");
        else
            st = tide_error(TIDE_E_INVAL, "refcat: bad column name '%s'", want);
    }
    PQclear(r);
    if (st) {
        PQfinish(conn);
        return st;
    }
    char qra[160], qdec[160]; /* the bare quoted names, for the index */
    snprintf(qra, sizeof qra, "%.*s", (int)(strlen(expr[0]) - 8), expr[0]);
    snprintf(qdec, sizeof qdec, "%.*s", (int)(strlen(expr[1]) - 8), expr[1]);
    snprintf(sql, sizeof sql,
             "SELECT %s, %s, %s, %s, %s FROM %s "
             "WHERE q3c_radial_query(%s, %s, $1::float8, $2::float8, $3::float8) "
             "ORDER BY 3, 1, 2",
             expr[0], expr[1], expr[2], expr[3], expr[4], qt, qra, qdec);
    char a[3][40];
    snprintf(a[0], sizeof a[0], "%.17g", ra);
    snprintf(a[1], sizeof a[1], "%.17g", dec);
    snprintf(a[2], sizeof a[2], "%.17g", radius_deg * (1 + 1e-9) + 1e-9);
    const char *v[3] = {a[0], a[1], a[2]};
    r = PQexecParams(conn, sql, 3, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        st = tide_error(TIDE_E_DB, "%s: reference catalog %s: %s", target, table,
                        tide_store_pg_oneline(PQresultErrorMessage(r), m, sizeof m));
    if (!st)
        st = tide_refcat_table_init(out, PQntuples(r));
    if (!st) {
        double *col[5];
        for (int j = 0; j < 5; j++)
            col[j] = (double *)out->cols[j].data;
        int64_t n = 0;
        for (int i = 0; i < PQntuples(r); i++) {
            double v5[5];
            for (int j = 0; j < 5; j++)
                v5[j] = PQgetisnull(r, i, j) ? NAN : strtod(PQgetvalue(r, i, j), NULL);
            if (!(tide_store_separation(ra, dec, v5[0], v5[1]) <= radius_deg))
                continue;
            for (int j = 0; j < 5; j++)
                col[j][n] = v5[j];
            n++;
        }
        st = tide_table_resize(out, n);
    }
    PQclear(r);
    PQfinish(conn);
    return st;
}
