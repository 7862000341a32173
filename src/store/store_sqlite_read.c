/* store_sqlite_read.c — the read side of the SQLite store (store.h): cone searches over the
 * HEALPix cell ranges of each frame (packed rows unpacked with each frame's layout, parsed
 * once per frame), a frame's image row, counts. Schema, inserts and the handle are
 * store_sqlite.c's. */
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "skycell.h"
#include "store_sqlite_internal.h"
#include "tide/status.h"

static int file_of(void *ctx, int64_t id, char *file, int n) {
    tide_store *s = ctx;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s), "SELECT file FROM images WHERE id = ?1", -1, &q, NULL) !=
        SQLITE_OK)
        return tide_sq_fail(s, "reading image files");
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(file, (size_t)n, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return TIDE_OK;
}

/* The row layouts of the images a cone meets, sorted by image id (parsed once each). */
typedef struct layout_cache {
    sq_layout *l;
    int n, cap;
    sqlite3_stmt *q;
} layout_cache;

static void layout_cache_free(layout_cache *c) {
    for (int i = 0; i < c->n; i++)
        tide_sq_layout_free(&c->l[i]);
    free(c->l);
    sqlite3_finalize(c->q);
    memset(c, 0, sizeof *c);
}

static int layout_get(tide_store *s, layout_cache *c, int64_t id, const char *const *names,
                      int nnames, const sq_layout **out) {
    int lo = 0, hi = c->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (c->l[mid].image_id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < c->n && c->l[lo].image_id == id) {
        *out = &c->l[lo];
        return TIDE_OK;
    }
    if (!c->q && sqlite3_prepare_v2(DB(s), "SELECT layout FROM source_layouts WHERE image_id = ?1",
                                    -1, &c->q, NULL) != SQLITE_OK)
        return tide_sq_fail(s, "preparing the layout look-up");
    sqlite3_bind_int64(c->q, 1, id);
    int rc = sqlite3_step(c->q), st = TIDE_OK;
    sq_layout L;
    if (rc == SQLITE_ROW && sqlite3_column_text(c->q, 0))
        st = tide_sq_layout_parse((const char *)sqlite3_column_text(c->q, 0), names, nnames, &L);
    else
        st = rc == SQLITE_DONE || rc == SQLITE_ROW
                 ? tide_error(TIDE_E_DB, "sqlite %s: image %lld has no row layout", s->target,
                              (long long)id)
                 : tide_sq_fail(s, "layout look-up");
    sqlite3_reset(c->q);
    if (st)
        return st;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        sq_layout *m = realloc(c->l, (size_t)cap * sizeof *m);
        if (!m) {
            tide_sq_layout_free(&L);
            return tide_error(TIDE_E_NOMEM, "store: row layouts");
        }
        c->l = m;
        c->cap = cap;
    }
    memmove(c->l + lo + 1, c->l + lo, (size_t)(c->n - lo) * sizeof *c->l);
    L.image_id = id;
    c->l[lo] = L;
    c->n++;
    *out = &c->l[lo];
    return TIDE_OK;
}

enum { NCORE = 4 }; /* IMAGE_ID, SEQ, ALPHA_J2000, DELTA_J2000 precede the packed columns */

/* The rowid spans holding every source whose cell lies in the cover @p rg (nrg ranges): for
 * each range, each frame's rank span there (source_cells). *spans: malloc'd pairs. */
static int cover_spans(tide_store *s, const int64_t *rg, int64_t nrg, int64_t **spans,
                       int64_t *nspan) {
    *spans = NULL;
    *nspan = 0;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s),
                           "SELECT image_id, min(first), max(last) FROM source_cells WHERE cell "
                           "BETWEEN ?1 AND ?2 GROUP BY image_id",
                           -1, &q, NULL) != SQLITE_OK)
        return tide_sq_fail(s, "preparing the cell look-up");
    int64_t cap = 0;
    int st = TIDE_OK;
    for (int64_t g = 0; g < nrg && !st; g++) {
        sqlite3_bind_int64(q, 1, rg[2 * g]);
        sqlite3_bind_int64(q, 2, rg[2 * g + 1]);
        int rc;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            if (*nspan == cap) {
                cap = cap ? 2 * cap : 256;
                int64_t *m = realloc(*spans, (size_t)cap * 2 * sizeof *m);
                if (!m) {
                    st = tide_error(TIDE_E_NOMEM, "store: cone spans");
                    break;
                }
                *spans = m;
            }
            /* a store's values are not trusted: a negative or huge image id from a damaged
             * file must not shift into undefined behaviour (the span is then simply empty) */
            const uint64_t id = (uint64_t)sqlite3_column_int64(q, 0) << 32;
            (*spans)[2 * *nspan] = (int64_t)(id + (uint64_t)sqlite3_column_int64(q, 1));
            (*spans)[2 * *nspan + 1] = (int64_t)(id + (uint64_t)sqlite3_column_int64(q, 2));
            (*nspan)++;
        }
        if (!st && rc != SQLITE_DONE)
            st = tide_sq_fail(s, "cell look-up");
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    if (st) {
        free(*spans);
        *spans = NULL;
        *nspan = 0;
    }
    return st;
}

int tide_sq_cone(tide_store *s, double ra, double dec, double radius, int64_t limit,
                 tide_table *out) {
    int64_t *rg = NULL, nrg = 1;
    int st = TIDE_OK;
    if (radius >= 0) {
        int64_t *cover = NULL, ncover = 0;
        st = tide_skycell_cover(TIDE_SKYCELL_ORDER, ra, dec, radius, &cover, &ncover);
        if (!st)
            st = cover_spans(s, cover, ncover, &rg, &nrg);
        free(cover);
    } else if (!(rg = malloc(2 * sizeof *rg))) {
        st = tide_error(TIDE_E_NOMEM, "store: cone spans");
    } else { /* every source */
        rg[0] = INT64_MIN;
        rg[1] = INT64_MAX;
    }
    if (st)
        return st;
    tide_sq_colset cols;
    st = tide_sq_columns(s, &cols);
    if (st) {
        free(rg);
        return st;
    }
    sqlite3_stmt *q = NULL;
    const char *sql = "SELECT IMAGE_ID, SEQ, \"ALPHA_J2000\", \"DELTA_J2000\", DATA FROM "
                      "sources WHERE SRC_ID BETWEEN ?1 AND ?2";
    if (sqlite3_prepare_v2(DB(s), sql, -1, &q, NULL) != SQLITE_OK) {
        free(rg);
        tide_sq_colset_free(&cols);
        return tide_sq_fail(s, "preparing the cone search");
    }
    const int nn = NCORE + cols.n;
    const char **names = calloc((size_t)nn, sizeof *names);
    int *is_int = calloc((size_t)nn, sizeof *is_int);
    if (!names || !is_int)
        st = tide_error(TIDE_E_NOMEM, "store: cone columns");
    if (!st) {
        static const char *const core[NCORE] = {"IMAGE_ID", "SEQ", "ALPHA_J2000", "DELTA_J2000"};
        for (int j = 0; j < NCORE; j++) {
            names[j] = core[j];
            is_int[j] = j < 2;
        }
        for (int j = 0; j < cols.n; j++) {
            names[NCORE + j] = cols.name[j];
            is_int[NCORE + j] = cols.is_int[j];
        }
    }
    store_result res;
    memset(&res, 0, sizeof res);
    layout_cache lc;
    memset(&lc, 0, sizeof lc);
    if (!st)
        st = tide_store_result_begin(&res, out, nn, names, is_int, NULL, 0);
    for (int64_t g = 0; g < nrg && !st; g++) {
        sqlite3_bind_int64(q, 1, rg[2 * g]);
        sqlite3_bind_int64(q, 2, rg[2 * g + 1]);
        int rc;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            double r = sqlite3_column_type(q, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(q, 2);
            double d = sqlite3_column_type(q, 3) == SQLITE_NULL ? NAN : sqlite3_column_double(q, 3);
            if (radius >= 0 && !(tide_store_separation(ra, dec, r, d) <= radius))
                continue;
            int64_t id = sqlite3_column_int64(q, 0);
            const sq_layout *L = NULL;
            st = layout_get(s, &lc, id, names, nn, &L);
            if (st)
                break;
            const unsigned char *data = sqlite3_column_blob(q, 4);
            if (sqlite3_column_bytes(q, 4) != L->rowbytes || (L->rowbytes && !data)) {
                st = tide_error(TIDE_E_DB,
                                "sqlite %s: a source of image %lld has %d packed "
                                "bytes, its layout %lld",
                                s->target, (long long)id, sqlite3_column_bytes(q, 4),
                                (long long)L->rowbytes);
                break;
            }
            int64_t row = tide_store_result_row(&res);
            if (row < 0) {
                st = (int)row;
                break;
            }
            tide_store_result_set_i(&res, row, 0, id);
            tide_store_result_set_i(&res, row, 1, sqlite3_column_int64(q, 1));
            tide_store_result_set_f(&res, row, 2, r);
            tide_store_result_set_f(&res, row, 3, d);
            tide_sq_unpack(L, data, &res, row, NCORE, nn);
        }
        if (!st && rc != SQLITE_DONE && rc != SQLITE_ROW)
            st = tide_sq_fail(s, "cone search");
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    free(rg);
    layout_cache_free(&lc);
    if (!st)
        st = tide_store_result_finish(&res, limit, file_of, s);
    tide_store_result_free(&res);
    free(names);
    free(is_int);
    tide_sq_colset_free(&cols);
    return st;
}

int tide_sq_image(tide_store *s, const char *key, const char *checksum, tide_store_frame *out) {
    char sql[1024];
    tide_store_image_query(sql, sizeof sql, "?1", "?2");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s), sql, -1, &q, NULL) != SQLITE_OK)
        return tide_sq_fail(s, "preparing the image look-up");
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
        st = tide_sq_fail(s, "image look-up");
    }
    sqlite3_finalize(q);
    return st;
}

static int count_of(tide_store *s, const char *sql, int64_t *n) {
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(DB(s), sql, -1, &q, NULL) != SQLITE_OK)
        return tide_sq_fail(s, sql);
    int st = sqlite3_step(q) == SQLITE_ROW ? TIDE_OK : tide_sq_fail(s, sql);
    if (!st)
        *n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return st;
}

int tide_sq_count(tide_store *s, int64_t *nimg, int64_t *nsrc) {
    int st = count_of(s, "SELECT count(*) FROM images", nimg);
    return st ? st : count_of(s, "SELECT count(*) FROM sources", nsrc);
}
