/* store_pg_read.c — the read side of the PostgreSQL + Q3C store (store.h): cone searches
 * (q3c_radial_query on the q3c_ang2ipix index), a frame's image row, counts. The session
 * helpers (connection, retried queries, errors) are store_pg.c's. */
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycell.h"
#include "store_internal.h"
#include "store_pg.h"
#include "tide/status.h"

static int is_int_oid(Oid t) {
    return t == 20 || t == 21 || t == 23;
} /* int8, int2, int4 */

/* real (float4): its text is the shortest that reads back as the same float, so it is parsed
 * as a float (strtod would give the nearest double to the decimal, not the float's value) */
static int is_f4_oid(Oid t) {
    return t == 700;
}

static int file_of(void *ctx, int64_t id, char *file, int n) {
    tide_store *s = ctx;
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", (long long)id);
    const char *v[1] = {ids};
    PGresult *r = PQexecParams(tide_store_pg_conn(s), "SELECT file FROM images WHERE id = $1", 1,
                               NULL, v, NULL, NULL, 0);
    int st = TIDE_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        st = tide_store_pg_fail(s, "reading image files", r);
    else if (PQntuples(r) == 1)
        snprintf(file, (size_t)n, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return st;
}

int tide_store_pg_cone(tide_store *s, double ra, double dec, double radius, int64_t limit,
                       tide_table *out) {
    int st = tide_store_pg_ensure(s);
    if (st)
        return st;
    char a[3][40];
    /* q3c selects with a hair of margin; the exact test below decides (same as SQLite) */
    snprintf(a[0], sizeof a[0], "%.17g", ra);
    snprintf(a[1], sizeof a[1], "%.17g", dec);
    snprintf(a[2], sizeof a[2], "%.17g", radius * (1 + 1e-9) + 1e-9);
    const char *v[3] = {a[0], a[1], a[2]};
    PGresult *r;
    if (radius < 0 || radius > 60) /* wide cones: a scan is as fast as the index */
        r = tide_store_pg_query(s, "SELECT * FROM sources", 0, NULL);
    else
        r = tide_store_pg_query(s,
                                "SELECT * FROM sources WHERE q3c_radial_query(\"ALPHA_J2000\", "
                                "\"DELTA_J2000\", $1::float8, $2::float8, $3::float8)",
                                3, v);
    if (!r)
        return TIDE_E_DB;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        st = tide_store_pg_fail(s, "cone search", r);
        PQclear(r);
        return st;
    }
    int nc = PQnfields(r);
    const char **names = calloc((size_t)nc + 1, sizeof *names);
    int *is_int = calloc((size_t)nc + 1, sizeof *is_int);
    int jra = -1, jdec = -1;
    if (!names || !is_int)
        st = tide_error(TIDE_E_NOMEM, "store: cone columns");
    for (int j = 0; j < nc && !st; j++) {
        names[j] = PQfname(r, j);
        is_int[j] = is_int_oid(PQftype(r, j));
        if (!strcmp(names[j], "ALPHA_J2000"))
            jra = j;
        if (!strcmp(names[j], "DELTA_J2000"))
            jdec = j;
    }
    if (!st && (jra < 0 || jdec < 0))
        st = tide_error(TIDE_E_DB, "%s: sources has no ALPHA_J2000 / DELTA_J2000", s->target);
    store_result res;
    memset(&res, 0, sizeof res);
    if (!st)
        st = tide_store_result_begin(&res, out, nc, names, is_int, NULL, 0);
    int64_t nt = PQntuples(r);
    for (int64_t i = 0; i < nt && !st; i++) {
        if (radius >= 0) {
            if (PQgetisnull(r, (int)i, jra) || PQgetisnull(r, (int)i, jdec))
                continue;
            double sra = strtod(PQgetvalue(r, (int)i, jra), NULL);
            double sdec = strtod(PQgetvalue(r, (int)i, jdec), NULL);
            if (!(tide_store_separation(ra, dec, sra, sdec) <= radius))
                continue;
        }
        int64_t row = tide_store_result_row(&res);
        if (row < 0) {
            st = (int)row;
            break;
        }
        for (int j = 0; j < nc; j++) {
            const char *txt = PQgetvalue(r, (int)i, j);
            if (PQgetisnull(r, (int)i, j))
                tide_store_result_set_f(&res, row, j, NAN);
            else if (is_int[j])
                tide_store_result_set_i(&res, row, j, strtoll(txt, NULL, 10));
            else if (is_f4_oid(PQftype(r, j)))
                tide_store_result_set_f(&res, row, j, strtof(txt, NULL));
            else
                tide_store_result_set_f(&res, row, j, strtod(txt, NULL));
        }
    }
    PQclear(r);
    if (!st)
        st = tide_store_result_finish(&res, limit, file_of, s);
    tide_store_result_free(&res);
    free(names);
    free(is_int);
    return st;
}

int tide_store_pg_image(tide_store *s, const char *key, const char *checksum,
                        tide_store_frame *out) {
    int st = tide_store_pg_ensure(s);
    if (st)
        return st;
    char sql[1024];
    tide_store_image_query(sql, sizeof sql, "$1", "$2");
    const char *v[2] = {checksum ? checksum : "", key};
    PGresult *r = tide_store_pg_query(s, sql, 2, v);
    if (!r)
        return TIDE_E_DB;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        st = tide_store_pg_fail(s, "image look-up", r);
    else if (PQntuples(r) == 0)
        st = tide_error(TIDE_E_NOTFOUND, "%s: no image with file or checksum %s", s->target, key);
    else {
        out->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        for (int i = 0; i < TIDE_STORE_NIMG && !st; i++)
            st = tide_store_frame_set(out, i,
                                      PQgetisnull(r, 0, i + 1) ? NULL : PQgetvalue(r, 0, i + 1));
    }
    PQclear(r);
    return st;
}

int tide_store_pg_count(tide_store *s, int64_t *nimg, int64_t *nsrc) {
    int st = tide_store_pg_ensure(s);
    if (st)
        return st;
    PGresult *r = tide_store_pg_query(s,
                                      "SELECT (SELECT count(*) FROM images), "
                                      "(SELECT count(*) FROM sources)",
                                      0, NULL);
    if (!r)
        return TIDE_E_DB;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        st = tide_store_pg_fail(s, "counting rows", r);
    else {
        *nimg = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        *nsrc = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    }
    PQclear(r);
    return st;
}
