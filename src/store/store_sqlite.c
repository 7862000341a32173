/* store_sqlite.c — the embedded SQLite store (see store.h for the layout).
 *
 * sources carries SRC_ID = IMAGE_ID * 2^32 + SEQ as its INTEGER PRIMARY KEY (the rowid): a
 * frame's sources are one rowid range, so replacing a frame deletes a range of the table's own
 * B-tree with no extra index, and rowid order is the (IMAGE_ID, SEQ) order cone results use.
 * CELL (skycell.h) has the only secondary index. WAL journal, one IMMEDIATE transaction per
 * frame, one prepared INSERT reused for every row. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "skycell.h"
#include "store_internal.h"
#include "tide/status.h"
#include <time.h>
static double PROF_now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec*1e-6;}
static double PROF_b, PROF_s;

typedef struct sq {
    sqlite3 *db;
} sq;

static sqlite3 *DB(tide_store *s) {
    return ((sq *)s->impl)->db;
}

static int sq_fail(tide_store *s, const char *what) {
    return tide_error(TIDE_E_DB, "sqlite %s: %s: %s", s->target, what, sqlite3_errmsg(DB(s)));
}

static int sq_exec(tide_store *s, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(DB(s), sql, NULL, NULL, &msg) != SQLITE_OK) {
        int st = tide_error(TIDE_E_DB, "sqlite %s: %s: %s", s->target, sql,
                            msg ? msg : sqlite3_errmsg(DB(s)));
        sqlite3_free(msg);
        return st;
    }
    return TIDE_OK;
}

static int create_schema(tide_store *s) {
    char sql[4096];
    int k = snprintf(sql, sizeof sql, "CREATE TABLE IF NOT EXISTS images (id INTEGER PRIMARY KEY");
    for (int i = 0; i < TIDE_STORE_NIMG; i++) {
        char kd = tide_store_img_kinds[i];
        k += snprintf(sql + k, sizeof sql - (size_t)k, ", %s %s%s", tide_store_img_cols[i],
                      kd == 'T'   ? "TEXT"
                      : kd == 'R' ? "REAL"
                                  : "INTEGER",
                      i == 1 ? " NOT NULL UNIQUE" : "");
    }
    snprintf(sql + k, sizeof sql - (size_t)k, ");");
    int st = sq_exec(s, "BEGIN IMMEDIATE");
    if (!st)
        st = sq_exec(s, sql);
    if (!st)
        st = sq_exec(s, "CREATE INDEX IF NOT EXISTS images_file ON images(file);"
                        "CREATE TABLE IF NOT EXISTS sources (SRC_ID INTEGER PRIMARY KEY, "
                        "IMAGE_ID INTEGER NOT NULL, SEQ INTEGER NOT NULL, CELL INTEGER NOT NULL, "
                        "\"ALPHA_J2000\" REAL, \"DELTA_J2000\" REAL);"
                        "CREATE INDEX IF NOT EXISTS sources_cell ON sources(CELL);"
                        "CREATE TABLE IF NOT EXISTS tide_meta (key TEXT PRIMARY KEY, value TEXT);"
                        "INSERT OR IGNORE INTO tide_meta VALUES ('skycell', 'healpix-nested-11');");
    if (st) {
        sq_exec(s, "ROLLBACK");
        return st;
    }
    st = sq_exec(s, "COMMIT");
    if (st)
        return st;
    /* a store written with another cell scheme would answer cones wrongly: refuse it */
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s), "SELECT value FROM tide_meta WHERE key='skycell'", -1, &q,
                           NULL) != SQLITE_OK)
        return sq_fail(s, "reading tide_meta");
    if (sqlite3_step(q) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(q, 0);
        if (!v || strcmp(v, "healpix-nested-11"))
            st = tide_error(TIDE_E_UNSUPPORTED,
                            "sqlite %s: sky cells '%s', expected "
                            "healpix-nested-11",
                            s->target, v ? v : "");
    }
    sqlite3_finalize(q);
    return st;
}

/* Names and kinds of the sources table's columns (PRAGMA table_info). */
typedef struct colset {
    char (*name)[96];
    int *is_int;
    int n;
} colset;

static void colset_free(colset *c) {
    free(c->name);
    free(c->is_int);
    memset(c, 0, sizeof *c);
}

static int table_columns(tide_store *s, colset *c) {
    memset(c, 0, sizeof *c);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s), "PRAGMA table_info(sources)", -1, &q, NULL) != SQLITE_OK)
        return sq_fail(s, "reading the sources columns");
    int cap = 0, st = TIDE_OK, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (c->n == cap) {
            cap = cap ? 2 * cap : 64;
            void *a = realloc(c->name, (size_t)cap * sizeof *c->name);
            if (a)
                c->name = a;
            void *b = realloc(c->is_int, (size_t)cap * sizeof *c->is_int);
            if (b)
                c->is_int = b;
            if (!a || !b) {
                st = tide_error(TIDE_E_NOMEM, "store: column list");
                break;
            }
        }
        const char *nm = (const char *)sqlite3_column_text(q, 1);
        const char *ty = (const char *)sqlite3_column_text(q, 2);
        snprintf(c->name[c->n], sizeof c->name[0], "%s", nm ? nm : "");
        c->is_int[c->n] = ty && !strncasecmp(ty, "INT", 3);
        c->n++;
    }
    if (!st && rc != SQLITE_DONE)
        st = sq_fail(s, "reading the sources columns");
    sqlite3_finalize(q);
    if (st)
        colset_free(c);
    return st;
}

static int colset_find(const colset *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (!strcasecmp(c->name[i], name))
            return i;
    return -1;
}

/* Add the catalog's columns the table does not have yet (inside the frame's transaction). */
static int add_columns(tide_store *s, const store_schema *sc) {
    colset have;
    int st = table_columns(s, &have);
    for (int i = 0; i < sc->n && !st; i++) {
        if (colset_find(&have, sc->cols[i].name) >= 0)
            continue;
        char sql[256];
        snprintf(sql, sizeof sql, "ALTER TABLE sources ADD COLUMN \"%s\" %s", sc->cols[i].name,
                 sc->cols[i].is_int ? "INTEGER" : "REAL");
        st = sq_exec(s, sql);
    }
    colset_free(&have);
    return st;
}

static int bind_image(tide_store *s, sqlite3_stmt *q, const tide_store_frame *f) {
    const char *txt[TIDE_STORE_NIMG];
    double num[TIDE_STORE_NIMG];
    tide_store_frame_values(f, txt, num);
    int rc = SQLITE_OK;
    for (int i = 0; i < TIDE_STORE_NIMG && rc == SQLITE_OK; i++) {
        char kd = tide_store_img_kinds[i];
        if (kd == 'T')
            rc = txt[i] ? sqlite3_bind_text(q, i + 1, txt[i], -1, SQLITE_STATIC)
                        : sqlite3_bind_null(q, i + 1);
        else if (!isfinite(num[i]))
            rc = sqlite3_bind_null(q, i + 1);
        else if (kd == 'I')
            rc = sqlite3_bind_int64(q, i + 1, (sqlite3_int64)num[i]);
        else
            rc = sqlite3_bind_double(q, i + 1, num[i]);
    }
    return rc == SQLITE_OK ? TIDE_OK : sq_fail(s, "binding the image row");
}

static int insert_sources(tide_store *s, const store_schema *sc, const tide_table *t, int64_t id) {
    /* INSERT INTO sources (SRC_ID, IMAGE_ID, SEQ, CELL, "c"...) VALUES (?, ...) */
    size_t cap = 256 + (size_t)sc->n * 104;
    char *sql = malloc(cap);
    if (!sql)
        return tide_error(TIDE_E_NOMEM, "store: insert statement");
    size_t k = (size_t)snprintf(sql, cap, "INSERT INTO sources (SRC_ID, IMAGE_ID, SEQ, CELL");
    for (int i = 0; i < sc->n; i++)
        k += (size_t)snprintf(sql + k, cap - k, ", \"%s\"", sc->cols[i].name);
    k += (size_t)snprintf(sql + k, cap - k, ") VALUES (?, ?, ?, ?");
    for (int i = 0; i < sc->n; i++)
        k += (size_t)snprintf(sql + k, cap - k, ", ?");
    snprintf(sql + k, cap - k, ")");
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(DB(s), sql, -1, &q, NULL);
    free(sql);
    if (rc != SQLITE_OK)
        return sq_fail(s, "preparing the sources insert");
    const store_col *cra = &sc->cols[sc->ira], *cdec = &sc->cols[sc->idec];
    int st = TIDE_OK;
    for (int64_t r = 0; r < t->nrows && !st; r++) {
        double ra = tide_store_value_f(t, cra, r), dec = tide_store_value_f(t, cdec, r);
        double PT0 = PROF_now();
        sqlite3_bind_int64(q, 1, (sqlite3_int64)((id << 32) + r + 1));
        sqlite3_bind_int64(q, 2, id);
        sqlite3_bind_int64(q, 3, r + 1);
        sqlite3_bind_int64(q, 4, tide_skycell_index(TIDE_SKYCELL_ORDER, ra, dec));
        for (int i = 0; i < sc->n; i++) {
            const store_col *c = &sc->cols[i];
            if (c->is_int) {
                sqlite3_bind_int64(q, 5 + i, tide_store_value_i(t, c, r));
            } else {
                double v = tide_store_value_f(t, c, r);
                if (isnan(v))
                    sqlite3_bind_null(q, 5 + i);
                else
                    sqlite3_bind_double(q, 5 + i, v);
            }
        }
        double PT1 = PROF_now();
        if (sqlite3_step(q) != SQLITE_DONE)
            st = sq_fail(s, "inserting sources");
        sqlite3_reset(q);
        PROF_b += PT1 - PT0; PROF_s += PROF_now() - PT1;
    }
    sqlite3_finalize(q);
    return st;
}

static int sq_put(tide_store *s, const tide_store_frame *f, const store_schema *sc,
                  const tide_table *t, int64_t *id_out) {
    int st = sq_exec(s, "BEGIN IMMEDIATE");
    if (st)
        return st;
    st = add_columns(s, sc);
    sqlite3_stmt *q = NULL;
    /* the old frame of the same checksum: its sources are one rowid range */
    if (!st && sqlite3_prepare_v2(DB(s), "SELECT id FROM images WHERE checksum = ?1", -1, &q,
                                  NULL) != SQLITE_OK)
        st = sq_fail(s, "looking up the checksum");
    int64_t old = -1;
    if (!st) {
        sqlite3_bind_text(q, 1, f->checksum, -1, SQLITE_STATIC);
        int rc = sqlite3_step(q);
        if (rc == SQLITE_ROW)
            old = sqlite3_column_int64(q, 0);
        else if (rc != SQLITE_DONE)
            st = sq_fail(s, "looking up the checksum");
        sqlite3_finalize(q);
        q = NULL;
    }
    if (!st && old >= 0) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "DELETE FROM sources WHERE SRC_ID BETWEEN %lld AND %lld;"
                 "DELETE FROM images WHERE id = %lld;",
                 (long long)(old << 32), (long long)((old << 32) + 0xffffffffLL), (long long)old);
        st = sq_exec(s, sql);
    }
    if (!st) {
        char sql[1024];
        int k = snprintf(sql, sizeof sql, "INSERT INTO images (");
        for (int i = 0; i < TIDE_STORE_NIMG; i++)
            k += snprintf(sql + k, sizeof sql - (size_t)k, "%s%s", i ? ", " : "",
                          tide_store_img_cols[i]);
        k += snprintf(sql + k, sizeof sql - (size_t)k, ") VALUES (");
        for (int i = 0; i < TIDE_STORE_NIMG; i++)
            k += snprintf(sql + k, sizeof sql - (size_t)k, "%s?", i ? ", " : "");
        snprintf(sql + k, sizeof sql - (size_t)k, ")");
        if (sqlite3_prepare_v2(DB(s), sql, -1, &q, NULL) != SQLITE_OK)
            st = sq_fail(s, "preparing the image insert");
        if (!st)
            st = bind_image(s, q, f);
        if (!st && sqlite3_step(q) != SQLITE_DONE)
            st = sq_fail(s, "inserting the image row");
        sqlite3_finalize(q);
    }
    int64_t id = sqlite3_last_insert_rowid(DB(s));
    if (!st && id >= ((int64_t)1 << 31))
        st = tide_error(TIDE_E_RANGE, "sqlite %s: image id %lld past 2^31", s->target,
                        (long long)id);
    double PA = PROF_now(); PROF_b = PROF_s = 0;
    if (!st)
        st = insert_sources(s, sc, t, id);
    double PB = PROF_now();
    if (!st)
        st = sq_exec(s, "COMMIT");
    fprintf(stderr, "PROF ins %.1f (bind %.1f step %.1f) commit %.1f\n", PB-PA, PROF_b, PROF_s, PROF_now()-PB);
    if (st) {
        char keep[1024];
        snprintf(keep, sizeof keep, "%s", tide_error_detail());
        if (!sqlite3_get_autocommit(DB(s)))
            sqlite3_exec(DB(s), "ROLLBACK", NULL, NULL, NULL);
        return tide_error(st, "%s (frame %s rolled back)", keep, f->file);
    }
    *id_out = id;
    return TIDE_OK;
}

static int file_of(void *ctx, int64_t id, char *file, int n) {
    tide_store *s = ctx;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s), "SELECT file FROM images WHERE id = ?1", -1, &q, NULL) !=
        SQLITE_OK)
        return sq_fail(s, "reading image files");
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(file, (size_t)n, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return TIDE_OK;
}

static int sq_cone(tide_store *s, double ra, double dec, double radius, int64_t limit,
                   tide_table *out) {
    int64_t *rg = NULL, nrg = 1;
    int st = TIDE_OK;
    if (radius >= 0)
        st = tide_skycell_cover(TIDE_SKYCELL_ORDER, ra, dec, radius, &rg, &nrg);
    if (st)
        return st;
    sqlite3_stmt *q = NULL;
    const char *sql = radius >= 0 ? "SELECT * FROM sources WHERE CELL BETWEEN ?1 AND ?2"
                                  : "SELECT * FROM sources";
    if (sqlite3_prepare_v2(DB(s), sql, -1, &q, NULL) != SQLITE_OK) {
        free(rg);
        return sq_fail(s, "preparing the cone search");
    }
    int nc = sqlite3_column_count(q);
    const char **names = calloc((size_t)nc + 1, sizeof *names);
    int *is_int = calloc((size_t)nc + 1, sizeof *is_int);
    int jra = -1, jdec = -1;
    if (!names || !is_int)
        st = tide_error(TIDE_E_NOMEM, "store: cone columns");
    for (int j = 0; j < nc && !st; j++) {
        names[j] = sqlite3_column_name(q, j);
        const char *ty = sqlite3_column_decltype(q, j);
        is_int[j] = ty && !strncasecmp(ty, "INT", 3);
        if (!strcmp(names[j], "ALPHA_J2000"))
            jra = j;
        if (!strcmp(names[j], "DELTA_J2000"))
            jdec = j;
    }
    static const char *const skip[] = {"SRC_ID", "CELL"};
    store_result res;
    memset(&res, 0, sizeof res);
    if (!st)
        st = tide_store_result_begin(&res, out, nc, names, is_int, skip, 2);
    for (int64_t g = 0; g < nrg && !st; g++) {
        if (radius >= 0) {
            sqlite3_bind_int64(q, 1, rg[2 * g]);
            sqlite3_bind_int64(q, 2, rg[2 * g + 1]);
        }
        int rc;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            if (radius >= 0) {
                double r = sqlite3_column_double(q, jra), d = sqlite3_column_double(q, jdec);
                if (!(tide_store_separation(ra, dec, r, d) <= radius))
                    continue;
            }
            int64_t row = tide_store_result_row(&res);
            if (row < 0) {
                st = (int)row;
                break;
            }
            for (int j = 0; j < nc; j++) {
                if (sqlite3_column_type(q, j) == SQLITE_NULL)
                    tide_store_result_set_f(&res, row, j, NAN);
                else if (is_int[j])
                    tide_store_result_set_i(&res, row, j, sqlite3_column_int64(q, j));
                else
                    tide_store_result_set_f(&res, row, j, sqlite3_column_double(q, j));
            }
        }
        if (!st && rc != SQLITE_DONE)
            st = sq_fail(s, "cone search");
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    free(rg);
    if (!st)
        st = tide_store_result_finish(&res, limit, file_of, s);
    tide_store_result_free(&res);
    free(names);
    free(is_int);
    return st;
}

static int sq_image(tide_store *s, const char *key, const char *checksum, tide_store_frame *out) {
    char sql[1024];
    int k = snprintf(sql, sizeof sql, "SELECT id");
    for (int i = 0; i < TIDE_STORE_NIMG; i++)
        k += snprintf(sql + k, sizeof sql - (size_t)k, ", %s", tide_store_img_cols[i]);
    snprintf(sql + k, sizeof sql - (size_t)k,
             " FROM images WHERE checksum = ?1 OR checksum = ?2 OR file = ?2 "
             "ORDER BY checksum = ?1 DESC, checksum = ?2 DESC, id DESC LIMIT 1");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s), sql, -1, &q, NULL) != SQLITE_OK)
        return sq_fail(s, "preparing the image look-up");
    sqlite3_bind_text(q, 1, checksum ? checksum : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q), st = TIDE_OK;
    if (rc == SQLITE_ROW) {
        out->id = sqlite3_column_int64(q, 0);
        for (int i = 0; i < TIDE_STORE_NIMG && !st; i++)
            st = tide_store_frame_set(out, i, (const char *)sqlite3_column_text(q, i + 1));
    } else if (rc == SQLITE_DONE) {
        st = tide_error(TIDE_E_NOTFOUND, "sqlite %s: no image with file or checksum %s", s->target,
                        key);
    } else {
        st = sq_fail(s, "image look-up");
    }
    sqlite3_finalize(q);
    return st;
}

static int count_of(tide_store *s, const char *sql, int64_t *n) {
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s), sql, -1, &q, NULL) != SQLITE_OK)
        return sq_fail(s, sql);
    int st = sqlite3_step(q) == SQLITE_ROW ? TIDE_OK : sq_fail(s, sql);
    if (!st)
        *n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return st;
}

static int sq_count(tide_store *s, int64_t *nimg, int64_t *nsrc) {
    int st = count_of(s, "SELECT count(*) FROM images", nimg);
    return st ? st : count_of(s, "SELECT count(*) FROM sources", nsrc);
}

static void sq_close(tide_store *s) {
    sq *p = s->impl;
    if (p) {
        sqlite3_close(p->db);
        free(p);
    }
    s->impl = NULL;
}

static const store_ops sqlite_ops = {sq_put, sq_cone, sq_image, sq_count, sq_exec, sq_close};

int tide_store_sqlite_open(tide_store *s, const char *path) {
    if (!*path)
        return tide_error(TIDE_E_INVAL, "store: sqlite: empty path");
    sq *p = calloc(1, sizeof *p);
    if (!p)
        return tide_error(TIDE_E_NOMEM, "store: sqlite %s", path);
    s->impl = p;
    s->ops = &sqlite_ops;
    snprintf(s->target, sizeof s->target, "%s", path);
    if (sqlite3_open_v2(path, &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        int st = tide_error(TIDE_E_DB, "sqlite %s: cannot open: %s", path,
                            p->db ? sqlite3_errmsg(p->db) : "out of memory");
        sq_close(s);
        return st;
    }
    sqlite3_busy_timeout(p->db, s->opt.sqlite_busy_ms);
    char prag[256];
    snprintf(prag, sizeof prag,
             "PRAGMA page_size=65536; PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA "
             "cache_size=-65536; "
             "PRAGMA temp_store=MEMORY;",
             s->opt.sqlite_synchronous >= 2 ? "FULL" : "NORMAL");
    int st = sq_exec(s, prag);
    if (!st)
        st = create_schema(s);
    if (st)
        sq_close(s);
    return st;
}
