/* store_sqlite.c — the embedded SQLite store (see store.h for the layout).
 *
 * A frame's sources are inserted sorted by sky cell (CELL, the HEALPix cell of skycell.h), with
 * SRC_ID = IMAGE_ID * 2^32 + rank in that order as the INTEGER PRIMARY KEY (the rowid). So a
 * frame is one rowid range (replacing it deletes a range of the table's own B-tree), its rows
 * are appended to the table, and the rows of one frame in a range of cells are one contiguous
 * rowid range. The sky index is per frame and per cell, not per source: source_cells holds,
 * for each (cell, frame), the first and last rank of the frame's rows in that cell (~1,300
 * rows for a 130,000-source frame, where an index on CELL took 130,000 random B-tree inserts,
 * as long as the table's own inserts). A cone takes the cover's cell ranges, finds for each
 * range the frames and their rank span there (one GROUP BY over source_cells), and reads each
 * span as one rowid range. Besides SRC_ID, IMAGE_ID, SEQ, CELL, ALPHA_J2000 and DELTA_J2000 a
 * row holds its other values packed in one BLOB, DATA, laid out as its frame's source_layouts
 * row says (store_sqlite_rows.c: ~10x fewer values to bind and encode per row); source_columns
 * lists every column name seen, in first-seen order. WAL journal, one IMMEDIATE transaction
 * per frame, one prepared INSERT of 64 rows reused for every batch (~7% faster than one row
 * per statement on 130,000 rows); checkpoints on a background thread (sqlite_ckpt.c) after
 * each frame. */
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "skycell.h"
#include "sqlite_ckpt.h"
#include "store_sqlite_internal.h"
#include "tide/status.h"

typedef struct sq {
    sqlite3 *db;
    sq_ckpt *ckpt; /* background checkpointer, started by the first put (NULL: SQLite's own) */
    int ckpt_tried;
    unsigned char *rows; /* packed rows of the last frame, kept for the next (insert_sources) */
    size_t rows_cap;
} sq;

/* Checkpointing: a WAL larger than this at the start of a frame's transaction waits for the
 * background checkpoint to finish, so the WAL restarts (~6 frames of 130,000 sources); SQLite's
 * own automatic checkpoint stays on as a backstop at 16384 pages (1 GiB of 64 KiB pages). */
#define SQ_WAL_BOUND ((int64_t)256 << 20)
#define SQ_AUTOCKPT_BACKSTOP "PRAGMA wal_autocheckpoint=16384"

sqlite3 *tide_sq_db(tide_store *s) {
    return ((sq *)s->impl)->db;
}

int tide_sq_fail(tide_store *s, const char *what) {
    return tide_error(TIDE_E_DB, "sqlite %s: %s: %s", s->target, what, sqlite3_errmsg(DB(s)));
}

/* Rows per INSERT of a frame's sources. */
#define SQ_ROWS 64

/* INSERT INTO sources of @p m rows (7 values each: SRC_ID, IMAGE_ID, SEQ, CELL, ALPHA_J2000,
 * DELTA_J2000, DATA). */
static int prepare_sources_insert(tide_store *s, int m, sqlite3_stmt **q) {
    const char *head = "INSERT INTO sources (SRC_ID, IMAGE_ID, SEQ, CELL, \"ALPHA_J2000\", "
                       "\"DELTA_J2000\", DATA) VALUES ";
    const char *one = "(?,?,?,?,?,?,?)";
    const size_t len = strlen(head) + (size_t)m * (strlen(one) + 1) + 1;
    char *sql = malloc(len);
    if (!sql)
        return tide_error(TIDE_E_NOMEM, "sqlite %s: out of memory", s->target);
    char *e = sql + sprintf(sql, "%s", head);
    for (int k = 0; k < m; k++)
        e += sprintf(e, "%s%s", k ? "," : "", one);
    const int rc = sqlite3_prepare_v2(DB(s), sql, -1, q, NULL);
    free(sql);
    return rc == SQLITE_OK ? 0 : tide_sq_fail(s, "preparing the sources insert");
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
                        "\"ALPHA_J2000\" REAL, \"DELTA_J2000\" REAL, DATA BLOB);"
                        "CREATE TABLE IF NOT EXISTS source_cells (cell INTEGER NOT NULL, "
                        "image_id INTEGER NOT NULL, first INTEGER NOT NULL, last INTEGER NOT "
                        "NULL, PRIMARY KEY (cell, image_id)) WITHOUT ROWID;"
                        "CREATE INDEX IF NOT EXISTS source_cells_image ON "
                        "source_cells(image_id);"
                        "CREATE TABLE IF NOT EXISTS source_columns (name TEXT PRIMARY KEY "
                        "COLLATE NOCASE, is_int INTEGER NOT NULL, ord INTEGER NOT NULL);"
                        "CREATE TABLE IF NOT EXISTS source_layouts (image_id INTEGER PRIMARY "
                        "KEY, layout TEXT NOT NULL);"
                        "CREATE TABLE IF NOT EXISTS tide_meta (key TEXT PRIMARY KEY, value TEXT);"
                        "INSERT OR IGNORE INTO tide_meta VALUES ('skycell', 'healpix-nested-11');");
    if (st) {
        sq_exec(s, "ROLLBACK");
        return st;
    }
    st = sq_exec(s, "COMMIT");
    return st ? st : tide_sq_check_store(s, DB(s), 0, NULL);
}

void tide_sq_colset_free(tide_sq_colset *c) {
    free(c->name);
    free(c->is_int);
    memset(c, 0, sizeof *c);
}

int tide_sq_columns(tide_store *s, tide_sq_colset *c) {
    memset(c, 0, sizeof *c);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s), "SELECT name, is_int FROM source_columns ORDER BY ord", -1, &q,
                           NULL) != SQLITE_OK)
        return tide_sq_fail(s, "reading the source columns");
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
        const char *nm = (const char *)sqlite3_column_text(q, 0);
        snprintf(c->name[c->n], sizeof c->name[0], "%s", nm ? nm : "");
        c->is_int[c->n] = sqlite3_column_int(q, 1) != 0;
        c->n++;
    }
    if (!st && rc != SQLITE_DONE)
        st = tide_sq_fail(s, "reading the source columns");
    sqlite3_finalize(q);
    if (st)
        tide_sq_colset_free(c);
    return st;
}

static int colset_find(const tide_sq_colset *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (!strcasecmp(c->name[i], name))
            return i;
    return -1;
}

/* Add the catalog's columns source_columns does not list yet (inside the frame's
 * transaction). */
static int add_columns(tide_store *s, const store_schema *sc) {
    tide_sq_colset have;
    int st = tide_sq_columns(s, &have);
    for (int i = 0; i < sc->n && !st; i++) {
        if (i == sc->ira || i == sc->idec || colset_find(&have, sc->cols[i].name) >= 0)
            continue;
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(DB(s),
                               "INSERT INTO source_columns VALUES (?1, ?2, (SELECT "
                               "coalesce(max(ord), 0) + 1 FROM source_columns))",
                               -1, &q, NULL) != SQLITE_OK) {
            st = tide_sq_fail(s, "adding a source column");
            break;
        }
        sqlite3_bind_text(q, 1, sc->cols[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_int(q, 2, sc->cols[i].is_int);
        if (sqlite3_step(q) != SQLITE_DONE)
            st = tide_sq_fail(s, "adding a source column");
        sqlite3_finalize(q);
    }
    tide_sq_colset_free(&have);
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
    return rc == SQLITE_OK ? TIDE_OK : tide_sq_fail(s, "binding the image row");
}

static int insert_sources(tide_store *s, const store_schema *sc, const tide_table *t, int64_t id) {
    char *layout = NULL;
    int64_t rowbytes = 0;
    int st = tide_sq_layout_make(t, sc, &layout, &rowbytes);
    if (st)
        return st;
    const int64_t n = t->nrows;
    /* kept between frames: a new 40 MB buffer per 130,000-row frame cost ~10k page faults */
    sq *p = s->impl;
    const size_t need = (size_t)(n * rowbytes + 1);
    if (p->rows_cap < need) {
        free(p->rows);
        p->rows_cap = (p->rows = malloc(need)) != NULL ? need : 0;
    }
    unsigned char *rows = p->rows;
    int64_t *cells = malloc((size_t)(n + 1) * sizeof *cells), *order = NULL;
    if (rows && cells) {
        tide_sq_pack(t, sc, rowbytes, rows, cells);
        order = tide_store_cell_order(cells, n);
    }
    if (!rows || !cells || !order) {
        free(layout);
        free(cells);
        free(order);
        return tide_error(TIDE_E_NOMEM, "store: packing %lld rows", (long long)n);
    }
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s), "INSERT INTO source_layouts VALUES (?1, ?2)", -1, &q, NULL) !=
        SQLITE_OK)
        st = tide_sq_fail(s, "preparing the layout insert");
    if (!st) {
        sqlite3_bind_int64(q, 1, id);
        sqlite3_bind_text(q, 2, layout, -1, SQLITE_STATIC);
        if (sqlite3_step(q) != SQLITE_DONE)
            st = tide_sq_fail(s, "inserting the row layout");
    }
    sqlite3_finalize(q);
    q = NULL;
    /* the frame's cells and the rank span of each */
    if (!st && sqlite3_prepare_v2(DB(s), "INSERT INTO source_cells VALUES (?1, ?2, ?3, ?4)", -1, &q,
                                  NULL) != SQLITE_OK)
        st = tide_sq_fail(s, "preparing the cell insert");
    if (!st)
        sqlite3_bind_int64(q, 2, id);
    for (int64_t k = 0, k1; k < n && !st; k = k1) {
        const int64_t c = cells[order[k]];
        for (k1 = k + 1; k1 < n && cells[order[k1]] == c; k1++)
            ;
        sqlite3_bind_int64(q, 1, c);
        sqlite3_bind_int64(q, 3, k + 1);
        sqlite3_bind_int64(q, 4, k1);
        if (sqlite3_step(q) != SQLITE_DONE)
            st = tide_sq_fail(s, "inserting the frame's cells");
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    q = NULL;
    /* SQ_ROWS rows per statement (and one statement for the rest): one VDBE run and one
     * reset per batch instead of per row */
    const double *ra = t->cols[sc->cols[sc->ira].src].data;
    const double *dec = t->cols[sc->cols[sc->idec].src].data;
    sqlite3_stmt *q1 = NULL;
    const int64_t nfull = n / SQ_ROWS * SQ_ROWS;
    if (!st && nfull > 0)
        st = prepare_sources_insert(s, SQ_ROWS, &q);
    if (!st && n > nfull)
        st = prepare_sources_insert(s, (int)(n - nfull), &q1);
    for (int64_t k0 = 0; k0 < n && !st; k0 += SQ_ROWS) {
        sqlite3_stmt *qq = k0 < nfull ? q : q1;
        const int64_t k1 = k0 + SQ_ROWS < n ? k0 + SQ_ROWS : n;
        for (int64_t k = k0; k < k1; k++) {
            const int64_t r = order[k];
            const int b = 7 * (int)(k - k0);
            sqlite3_bind_int64(qq, b + 1, (sqlite3_int64)((id << 32) + k + 1));
            sqlite3_bind_int64(qq, b + 2, id);
            sqlite3_bind_int64(qq, b + 3, r + 1);
            sqlite3_bind_int64(qq, b + 4, cells[r]);
            if (isnan(ra[r]))
                sqlite3_bind_null(qq, b + 5);
            else
                sqlite3_bind_double(qq, b + 5, ra[r]);
            if (isnan(dec[r]))
                sqlite3_bind_null(qq, b + 6);
            else
                sqlite3_bind_double(qq, b + 6, dec[r]);
            sqlite3_bind_blob(qq, b + 7, rows + r * rowbytes, (int)rowbytes, SQLITE_STATIC);
        }
        if (sqlite3_step(qq) != SQLITE_DONE)
            st = tide_sq_fail(s, "inserting sources");
        sqlite3_reset(qq);
    }
    sqlite3_finalize(q1);
    sqlite3_finalize(q);
    free(layout);
    free(cells);
    free(order);
    return st;
}

int tide_store_sqlite_delete_rows(tide_store *s, int64_t id) {
    /* the frame's sources are the rowid range id * 2^32 + [1, 2^32) */
    char sql[400];
    snprintf(sql, sizeof sql,
             "DELETE FROM sources WHERE SRC_ID BETWEEN %lld AND %lld;"
             "DELETE FROM source_layouts WHERE image_id = %lld;"
             "DELETE FROM source_cells WHERE image_id = %lld;"
             "DELETE FROM images WHERE id = %lld;",
             (long long)(id << 32), (long long)((id << 32) + 0xffffffffLL), (long long)id,
             (long long)id, (long long)id);
    return sq_exec(s, sql);
}

/* The background checkpointer, on the first write to a WAL-mode file database. */
static void ckpt_start(tide_store *s) {
    sq *p = s->impl;
    p->ckpt_tried = 1;
    sqlite3_stmt *q = NULL;
    int wal = 0;
    if (sqlite3_prepare_v2(p->db, "PRAGMA journal_mode", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        wal = !strcasecmp((const char *)sqlite3_column_text(q, 0), "wal");
    sqlite3_finalize(q);
    const char *file = sqlite3_db_filename(p->db, "main");
    if (wal && file && *file)
        p->ckpt = tide_sq_ckpt_start(file, s->opt.sqlite_synchronous);
    if (p->ckpt)
        sqlite3_exec(p->db, SQ_AUTOCKPT_BACKSTOP, NULL, NULL, NULL);
}

/* Roll back the open transaction after failure @p st, keeping its message (+ @p what). */
static int rollback(tide_store *s, int st, const char *what) {
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", tide_error_detail());
    if (!sqlite3_get_autocommit(DB(s)))
        sqlite3_exec(DB(s), "ROLLBACK", NULL, NULL, NULL);
    return tide_error(st, "%s%s", keep, what);
}

int tide_store_sqlite_delete_frame(tide_store *s, int64_t id) {
    sq *p = s->impl;
    if (!p->ckpt_tried)
        ckpt_start(s);
    tide_sq_ckpt_bound(p->ckpt, SQ_WAL_BOUND); /* a frame's delete rewrites all its pages */
    int st = sq_exec(s, "BEGIN IMMEDIATE");
    if (!st)
        st = tide_store_sqlite_delete_rows(s, id);
    if (!st)
        st = sq_exec(s, "COMMIT");
    if (st)
        return rollback(s, st, "");
    tide_sq_ckpt_kick(p->ckpt);
    return TIDE_OK;
}

static int sq_put(tide_store *s, const tide_store_frame *f, const store_schema *sc,
                  const tide_table *t, int64_t *id_out) {
    sq *p = s->impl;
    if (!p->ckpt_tried)
        ckpt_start(s);
    tide_sq_ckpt_bound(p->ckpt, SQ_WAL_BOUND);
    int st = sq_exec(s, "BEGIN IMMEDIATE");
    if (st)
        return st;
    st = add_columns(s, sc);
    sqlite3_stmt *q = NULL;
    /* the old frame of the same checksum: its sources are one rowid range */
    if (!st && sqlite3_prepare_v2(DB(s), "SELECT id FROM images WHERE checksum = ?1", -1, &q,
                                  NULL) != SQLITE_OK)
        st = tide_sq_fail(s, "looking up the checksum");
    int64_t old = -1;
    if (!st) {
        sqlite3_bind_text(q, 1, f->checksum, -1, SQLITE_STATIC);
        int rc = sqlite3_step(q);
        if (rc == SQLITE_ROW)
            old = sqlite3_column_int64(q, 0);
        else if (rc != SQLITE_DONE)
            st = tide_sq_fail(s, "looking up the checksum");
        sqlite3_finalize(q);
        q = NULL;
    }
    if (!st && old >= 0)
        st = tide_store_sqlite_delete_rows(s, old);
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
            st = tide_sq_fail(s, "preparing the image insert");
        if (!st)
            st = bind_image(s, q, f);
        if (!st && sqlite3_step(q) != SQLITE_DONE)
            st = tide_sq_fail(s, "inserting the image row");
        sqlite3_finalize(q);
    }
    int64_t id = sqlite3_last_insert_rowid(DB(s));
    if (!st && id >= ((int64_t)1 << 31))
        st = tide_error(TIDE_E_RANGE, "sqlite %s: image id %lld past 2^31", s->target,
                        (long long)id);
    if (!st)
        st = insert_sources(s, sc, t, id);
    if (!st)
        st = sq_exec(s, "COMMIT");
    if (st) {
        char why[1100];
        snprintf(why, sizeof why, " (frame %s rolled back)", f->file);
        return rollback(s, st, why);
    }
    tide_sq_ckpt_kick(p->ckpt); /* copy the frame into the file while the caller goes on */
    *id_out = id;
    return TIDE_OK;
}

static void sq_close(tide_store *s) {
    sq *p = s->impl;
    if (p) {
        tide_sq_ckpt_stop(p->ckpt); /* its connection first: the last close checkpoints */
        sqlite3_close(p->db);
        free(p->rows);
        free(p);
    }
    s->impl = NULL;
}

static const store_ops sqlite_ops = {sq_put,        tide_sq_cone, tide_sq_image,
                                     tide_sq_count, sq_exec,      sq_close};

int tide_store_sqlite_open(tide_store *s, const char *path) {
    if (!*path)
        return tide_error(TIDE_E_INVAL, "store: sqlite: empty path");
    sq *p = calloc(1, sizeof *p);
    if (!p)
        return tide_error(TIDE_E_NOMEM, "store: sqlite %s", path);
    s->impl = p;
    s->ops = &sqlite_ops;
    snprintf(s->target, sizeof s->target, "%s", path);
    /* NOMUTEX: a store handle is used by one thread at a time (store.h), so SQLite's
     * per-call mutex (two per bound value) buys nothing */
    if (s->opt.read_only) { /* queries: nothing created, nothing changed */
        int st = tide_sq_open_read_only(s, path, &p->db);
        if (st)
            sq_close(s);
        return st;
    }
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &p->db, flags, NULL) != SQLITE_OK) {
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
