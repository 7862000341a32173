/* store_cand_read.c — the read side of the candidate tables (store_cand.h): candidates by
 * cone, difference or object (SQLite by the cell cover of the cone, PostgreSQL by
 * q3c_radial_query; then the exact distance on both), a diffs row, objects, cutouts, counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "skycell.h"
#include "store_cand_cols.h"
#include "tide/status.h"

void tide_store_cand_query_init(tide_store_cand_query *q) {
    q->ra = q->dec = 0;
    q->radius_deg = -1;
    q->diff_id = -1;
    q->object_id = -1;
    q->cand_id = -1;
}

/* Rows gathered from one or more runs of a statement, as int64 or double per column. */
typedef struct rows {
    int nc;
    char (*name)[72];
    int *is_int;
    int64_t **iv;
    double **fv;
    int64_t n, cap;
} rows;

static void rows_free(rows *R) {
    for (int j = 0; j < R->nc; j++) {
        if (R->iv)
            free(R->iv[j]);
        if (R->fv)
            free(R->fv[j]);
    }
    free(R->iv);
    free(R->fv);
    free(R->name);
    free(R->is_int);
    memset(R, 0, sizeof *R);
}

static const char *out_name(const char *n) {
    static const char *const db[] = {"id", "diff_id", "seq", "object_id", "cell", "mjd", "score"};
    static const char *const out[] = {"CAND_ID", "DIFF_ID", "SEQ",  "OBJECT_ID",
                                      "CELL",    "MJD",     "SCORE"};
    for (int i = 0; i < 7; i++)
        if (!strcmp(n, db[i]))
            return out[i];
    return n;
}

static int rows_begin(rows *R, tide_ssql *q) {
    memset(R, 0, sizeof *R);
    R->nc = tide_ssql_ncols(q);
    R->name = calloc((size_t)R->nc + 1, sizeof *R->name);
    R->is_int = calloc((size_t)R->nc + 1, sizeof *R->is_int);
    R->iv = calloc((size_t)R->nc + 1, sizeof *R->iv);
    R->fv = calloc((size_t)R->nc + 1, sizeof *R->fv);
    if (!R->name || !R->is_int || !R->iv || !R->fv)
        return tide_error(TIDE_E_NOMEM, "store: candidate rows");
    for (int j = 0; j < R->nc; j++) {
        snprintf(R->name[j], sizeof R->name[j], "%s", out_name(tide_ssql_col_name(q, j)));
        R->is_int[j] = tide_ssql_col_is_int(q, j);
    }
    return TIDE_OK;
}

static int rows_add(rows *R, tide_ssql *q) {
    if (R->n == R->cap) {
        const int64_t cap = R->cap ? 2 * R->cap : 256;
        for (int j = 0; j < R->nc; j++) {
            void *m = R->is_int[j] ? realloc(R->iv[j], (size_t)cap * sizeof(int64_t))
                                   : realloc(R->fv[j], (size_t)cap * sizeof(double));
            if (!m)
                return tide_error(TIDE_E_NOMEM, "store: %lld candidate rows", (long long)cap);
            if (R->is_int[j])
                R->iv[j] = m;
            else
                R->fv[j] = m;
        }
        R->cap = cap;
    }
    for (int j = 0; j < R->nc; j++) {
        if (R->is_int[j])
            R->iv[j][R->n] = tide_ssql_col_null(q, j) ? (!strcmp(R->name[j], "OBJECT_ID") ? -1 : 0)
                                                      : tide_ssql_col_i64(q, j);
        else
            R->fv[j][R->n] = tide_ssql_col_f64(q, j);
    }
    R->n++;
    return TIDE_OK;
}

/* A row's id and its place among the gathered rows, sorted by id. */
typedef struct keyed {
    int64_t key, row;
} keyed;

static int by_key(const void *a, const void *b) {
    const int64_t x = ((const keyed *)a)->key, y = ((const keyed *)b)->key;
    return x < y ? -1 : x > y;
}

/* The gathered rows into @p out, ordered by column 0 (an id). */
static int rows_finish(rows *R, tide_table *out) {
    tide_table_free(out);
    tide_table_init(out);
    int st = TIDE_OK;
    for (int j = 0; j < R->nc && !st; j++)
        st = tide_table_add_column(out, R->name[j], R->is_int[j] ? TIDE_COL_I64 : TIDE_COL_F64, 1,
                                   NULL, NULL, NULL);
    if (!st)
        st = tide_table_resize(out, R->n);
    keyed *ord = malloc((size_t)(R->n + 1) * sizeof *ord);
    if (!st && !ord)
        st = tide_error(TIDE_E_NOMEM, "store: candidate order");
    if (st) {
        free(ord);
        return st;
    }
    for (int64_t i = 0; i < R->n; i++)
        ord[i] = (keyed){R->nc > 0 && R->is_int[0] ? R->iv[0][i] : i, i};
    qsort(ord, (size_t)R->n, sizeof *ord, by_key);
    for (int j = 0; j < R->nc; j++)
        for (int64_t i = 0; i < R->n; i++) {
            if (R->is_int[j])
                ((int64_t *)out->cols[j].data)[i] = R->iv[j][ord[i].row];
            else
                ((double *)out->cols[j].data)[i] = R->fv[j][ord[i].row];
        }
    free(ord);
    return TIDE_OK;
}

int tide_store_candidates(tide_store *s, const tide_store_cand_query *cq, tide_table *out) {
    tide_store_cand_query all;
    tide_store_cand_query_init(&all);
    if (!cq)
        cq = &all;
    const int cone = cq->radius_deg >= 0;
    if (cone &&
        (!isfinite(cq->ra) || !(cq->dec >= -90 && cq->dec <= 90) || !isfinite(cq->radius_deg)))
        return tide_error(TIDE_E_INVAL, "store: bad cone RA %g Dec %g radius %g deg", cq->ra,
                          cq->dec, cq->radius_deg);
    const int pg = s->kind == TIDE_STORE_PG;
    /* only the filters asked for, numbered as they come, so each can use its index */
    char sql[512];
    int k = snprintf(sql, sizeof sql, "SELECT * FROM candidates WHERE TRUE"), np = 0;
    const int pdiff = cq->diff_id >= 0 ? ++np : 0, pobj = cq->object_id >= 0 ? ++np : 0;
    const int pcand = cq->cand_id >= 0 ? ++np : 0;
    const int pcone = cone ? np + 1 : 0;
    if (pdiff)
        k += snprintf(sql + k, sizeof sql - (size_t)k, " AND diff_id = $%d", pdiff);
    if (pobj)
        k += snprintf(sql + k, sizeof sql - (size_t)k, " AND object_id = $%d", pobj);
    if (pcand)
        k += snprintf(sql + k, sizeof sql - (size_t)k, " AND id = $%d", pcand);
    if (cone && pg)
        /* q3c selects with a hair of margin; the exact test below decides (as for sources) */
        snprintf(sql + k, sizeof sql - (size_t)k,
                 " AND q3c_radial_query(\"ALPHA_J2000\", \"DELTA_J2000\", $%d::float8, "
                 "$%d::float8, $%d::float8)",
                 pcone, pcone + 1, pcone + 2);
    else if (cone)
        snprintf(sql + k, sizeof sql - (size_t)k, " AND cell BETWEEN $%d AND $%d", pcone,
                 pcone + 1);
    int64_t *rg = NULL, nrg = 1;
    int st = TIDE_OK;
    if (cone && !pg)
        st = tide_skycell_cover(TIDE_SKYCELL_ORDER, cq->ra, cq->dec, cq->radius_deg, &rg, &nrg);
    tide_ssql *q = NULL;
    if (!st)
        st = tide_ssql_prepare(s, sql, &q);
    rows R;
    memset(&R, 0, sizeof R);
    int begun = 0, jra = -1, jdec = -1;
    for (int64_t g = 0; g < nrg && !st; g++) {
        tide_ssql_reset(q);
        if (pdiff)
            tide_ssql_bind_i64(q, pdiff, cq->diff_id);
        if (pobj)
            tide_ssql_bind_i64(q, pobj, cq->object_id);
        if (pcand)
            tide_ssql_bind_i64(q, pcand, cq->cand_id);
        if (cone && pg) {
            tide_ssql_bind_f64(q, pcone, cq->ra);
            tide_ssql_bind_f64(q, pcone + 1, cq->dec);
            tide_ssql_bind_f64(q, pcone + 2, cq->radius_deg * (1 + 1e-9) + 1e-9);
        } else if (cone) {
            tide_ssql_bind_i64(q, pcone, rg[2 * g]);
            tide_ssql_bind_i64(q, pcone + 1, rg[2 * g + 1]);
        }
        int rc;
        while ((rc = tide_ssql_step(q)) == 1) {
            if (!begun) {
                st = rows_begin(&R, q);
                begun = 1;
                for (int j = 0; j < R.nc; j++) {
                    jra = strcmp(R.name[j], "ALPHA_J2000") ? jra : j;
                    jdec = strcmp(R.name[j], "DELTA_J2000") ? jdec : j;
                }
                if (!st && (jra < 0 || jdec < 0 || R.is_int[jra] || R.is_int[jdec]))
                    st = tide_error(TIDE_E_DB, "store %s: candidates has no position columns",
                                    s->target);
                if (st)
                    break;
            }
            if (cone && !(tide_store_separation(cq->ra, cq->dec, tide_ssql_col_f64(q, jra),
                                                tide_ssql_col_f64(q, jdec)) <= cq->radius_deg))
                continue;
            if ((st = rows_add(&R, q)))
                break;
        }
        if (!st && rc < 0)
            st = rc;
    }
    if (!st && !begun) { /* no row: the columns still, from a statement that finds none */
        tide_ssql_finalize(q);
        q = NULL;
        st = tide_ssql_prepare(s, "SELECT * FROM candidates WHERE id < 0", &q);
        if (!st && pg)
            st = tide_ssql_step(q) < 0 ? TIDE_E_DB : TIDE_OK;
        if (!st)
            st = rows_begin(&R, q);
    }
    tide_ssql_finalize(q);
    free(rg);
    if (!st)
        st = rows_finish(&R, out);
    rows_free(&R);
    return st;
}

int tide_store_objects(tide_store *s, tide_table *out) {
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s,
                               "SELECT id AS \"OBJECT_ID\", ndet AS \"NDET\", ra AS \"RA\", dec "
                               "AS \"DEC\", first_mjd AS \"FIRST_MJD\", last_mjd AS "
                               "\"LAST_MJD\" FROM objects ORDER BY id",
                               &q);
    rows R;
    memset(&R, 0, sizeof R);
    int rc = 0, begun = 0;
    while (!st && (rc = tide_ssql_step(q)) == 1) {
        if (!begun++)
            st = rows_begin(&R, q);
        if (!st)
            st = rows_add(&R, q);
    }
    if (!st && rc < 0)
        st = rc;
    tide_ssql_finalize(q);
    if (!st && !begun) {
        static const char *const n[] = {"OBJECT_ID", "NDET", "RA", "DEC", "FIRST_MJD", "LAST_MJD"};
        tide_table_free(out);
        tide_table_init(out);
        for (int j = 0; j < 6 && !st; j++)
            st = tide_table_add_column(out, n[j], j < 2 ? TIDE_COL_I64 : TIDE_COL_F64, 1, NULL,
                                       NULL, NULL);
    } else if (!st) {
        R.is_int[0] = R.is_int[1] = 1; /* SQLite gives an alias no declared type */
        st = rows_finish(&R, out);
    }
    rows_free(&R);
    return st;
}

int tide_store_get_object(tide_store *s, int64_t id, tide_store_object *o) {
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(
        s, "SELECT id, ndet, ra, dec, first_mjd, last_mjd FROM objects WHERE id = $1", &q);
    if (!st) {
        tide_ssql_bind_i64(q, 1, id);
        st = tide_ssql_step(q);
        if (st == 1) {
            o->id = tide_ssql_col_i64(q, 0);
            o->ndet = tide_ssql_col_i64(q, 1);
            o->ra = tide_ssql_col_f64(q, 2);
            o->dec = tide_ssql_col_f64(q, 3);
            o->first_mjd = tide_ssql_col_f64(q, 4);
            o->last_mjd = tide_ssql_col_f64(q, 5);
            st = TIDE_OK;
        } else if (st == 0) {
            st = tide_error(TIDE_E_NOTFOUND, "store %s: no object %lld", s->target, (long long)id);
        }
    }
    tide_ssql_finalize(q);
    return st;
}

int tide_store_get_diff(tide_store *s, int64_t id, tide_store_diff *d) {
    tide_store_diff_init(d);
    char sql[2048];
    int k = snprintf(sql, sizeof sql, "SELECT id");
    for (int i = 0; i < tide_scand_ndiff_cols; i++)
        k += snprintf(sql + k, sizeof sql - (size_t)k, ", %s", tide_scand_diff_cols[i].name);
    snprintf(sql + k, sizeof sql - (size_t)k, ", grid_header FROM diffs WHERE id = $1");
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s, sql, &q);
    if (!st) {
        tide_ssql_bind_i64(q, 1, id);
        st = tide_ssql_step(q);
        if (st == 0)
            st = tide_error(TIDE_E_NOTFOUND, "store %s: no difference %lld", s->target,
                            (long long)id);
    }
    if (st == 1) {
        st = TIDE_OK;
        d->id = tide_ssql_col_i64(q, 0);
        for (int i = 0; i < tide_scand_ndiff_cols; i++) {
            const tide_scand_col *c = &tide_scand_diff_cols[i];
            char *f = (char *)d + c->off;
            if (c->kind == 'T') {
                const char *v = tide_ssql_col_text(q, i + 1);
                snprintf(f, c->size, "%s", v ? v : "");
            } else if (c->kind == 'R') {
                *(double *)f = tide_ssql_col_f64(q, i + 1);
            } else {
                *(int64_t *)f = tide_ssql_col_null(q, i + 1) ? -1 : tide_ssql_col_i64(q, i + 1);
            }
        }
        const char *h = tide_ssql_col_text(q, tide_scand_ndiff_cols + 1);
        if (h && !(d->grid_header = strdup(h)))
            st = tide_error(TIDE_E_NOMEM, "store: grid header");
    }
    tide_ssql_finalize(q);
    return st;
}

int tide_store_get_cutout(tide_store *s, int64_t cand_id, int kind, float **pix, int *w, int *h) {
    *pix = NULL;
    *w = *h = 0;
    const char *kn = tide_cutout_kind_name(kind);
    if (!kn)
        return tide_error(TIDE_E_INVAL, "store: cutout kind %d", kind);
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(
        s, "SELECT w, h, zero, scale, data FROM cutouts WHERE candidate_id = $1 AND kind = $2", &q);
    if (!st) {
        tide_ssql_bind_i64(q, 1, cand_id);
        tide_ssql_bind_text(q, 2, kn);
        st = tide_ssql_step(q);
        if (st == 0)
            st = tide_error(TIDE_E_NOTFOUND, "store %s: candidate %lld has no %s cutout", s->target,
                            (long long)cand_id, kn);
    }
    if (st == 1) {
        const int64_t cw = tide_ssql_col_i64(q, 0), ch = tide_ssql_col_i64(q, 1);
        int nb = 0;
        const void *data = tide_ssql_col_blob(q, 4, &nb);
        if (cw < 1 || ch < 1 || cw * ch > 4096 * 4096 || (int64_t)nb != 2 * cw * ch || !data) {
            st = tide_error(TIDE_E_DB, "store %s: cutout of candidate %lld is damaged", s->target,
                            (long long)cand_id);
        } else if (!(*pix = malloc((size_t)(cw * ch) * sizeof **pix))) {
            st = tide_error(TIDE_E_NOMEM, "store: cutout");
        } else {
            int16_t *tmp = malloc((size_t)nb);
            if (!tmp) {
                free(*pix);
                *pix = NULL;
                st = tide_error(TIDE_E_NOMEM, "store: cutout");
            } else {
                memcpy(tmp, data, (size_t)nb); /* the blob need not be aligned */
                tide_cutout_decode(tmp, cw * ch, tide_ssql_col_f64(q, 2), tide_ssql_col_f64(q, 3),
                                   *pix);
                free(tmp);
                *w = (int)cw;
                *h = (int)ch;
                st = TIDE_OK;
            }
        }
    }
    tide_ssql_finalize(q);
    return st;
}

int tide_store_count_diffs(tide_store *s, int64_t *nd, int64_t *nc, int64_t *ncut, int64_t *no) {
    static const char *const sql[] = {
        "SELECT count(*) FROM diffs", "SELECT count(*) FROM candidates",
        "SELECT count(*) FROM cutouts", "SELECT count(*) FROM objects"};
    int64_t *out[4] = {nd, nc, ncut, no};
    for (int i = 0; i < 4; i++) {
        if (!out[i])
            continue;
        const int st = tide_ssql_one_i64(s, sql[i], 0, 0, 0, out[i]);
        if (st)
            return st;
    }
    return TIDE_OK;
}
