/* store_cand.c — difference images, candidates, cutouts and objects (store_cand.h): the
 * schema (the same tables on both back ends, written once through store_sql.h) and the one
 * transaction per difference: replace the pair's old rows, insert the new ones, associate the
 * candidates with objects. Queries are store_cand_read.c's; the cutout codec store_cutout.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "skycell.h"
#include "store_cand_cols.h"
#include "tide/status.h"

#ifndef TIDE_VERSION_STRING
#define TIDE_VERSION_STRING "unknown"
#endif

#define DT(f) 'T', offsetof(tide_store_diff, f), sizeof(((tide_store_diff *)0)->f)
#define DR(f) 'R', offsetof(tide_store_diff, f), 0
#define DI(f) 'I', offsetof(tide_store_diff, f), 0
const tide_scand_col tide_scand_diff_cols[] = {
    {"sci_checksum", DT(sci_checksum)},
    {"tmpl_checksum", DT(tmpl_checksum)},
    {"sci_file", DT(sci_file)},
    {"tmpl_file", DT(tmpl_file)},
    {"outdir", DT(outdir)},
    {"processed", DT(processed)},
    {"tide_version", DT(tide_version)},
    {"mjd_sci", DR(mjd_sci)},
    {"mjd_tmpl", DR(mjd_tmpl)},
    {"filter", DT(filter)},
    {"naxis1", DI(naxis1)},
    {"naxis2", DI(naxis2)},
    {"ra_center", DR(ra_center)},
    {"dec_center", DR(dec_center)},
    {"scale_arcsec", DR(scale_arcsec)},
    {"fwhm_sci", DR(fwhm_sci)},
    {"fwhm_tmpl", DR(fwhm_tmpl)},
    {"kernel_sum", DR(kernel_sum)},
    {"kernel_chi2", DR(kernel_chi2)},
    {"kernel_w", DI(kernel_w)},
    {"kernel_nfit", DI(kernel_nfit)},
    {"convolved", DI(convolved)},
    {"var_scale", DR(var_scale)},
    {"noise", DR(noise)},
    {"ncand", DI(ncand)},
    {"nfit", DI(nfit)},
    {"nreject", DI(nreject)},
};
const int tide_scand_ndiff_cols =
    (int)(sizeof tide_scand_diff_cols / sizeof tide_scand_diff_cols[0]);

void tide_store_diff_init(tide_store_diff *d) {
    memset(d, 0, sizeof *d);
    d->id = -1;
    for (int i = 0; i < tide_scand_ndiff_cols; i++) {
        const tide_scand_col *c = &tide_scand_diff_cols[i];
        if (c->kind == 'R')
            *(double *)((char *)d + c->off) = NAN;
        else if (c->kind == 'I')
            *(int64_t *)((char *)d + c->off) = -1;
    }
}

void tide_store_diff_free(tide_store_diff *d) {
    free((char *)d->grid_header);
    d->grid_header = NULL;
}

int tide_scand_reserved(const char *n) {
    static const char *const r[] = {"id", "diff_id", "seq", "object_id", "mjd", "cell", "score"};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (!strcasecmp(n, r[i]))
            return 1;
    return 0;
}

/* ---- schema ------------------------------------------------------------------------------ */

/* @p in with the type tokens of the back end: {ID} a key never reused, {R} {I} {T} {B}. */
static void typed(const char *in, int pg, char *out, size_t cap) {
    static const char *const tok[] = {"{ID}", "{R}", "{I}", "{T}", "{B}"};
    static const char *const sq[] = {"INTEGER PRIMARY KEY AUTOINCREMENT", "REAL", "INTEGER", "TEXT",
                                     "BLOB"};
    static const char *const pq[] = {"bigserial PRIMARY KEY", "double precision", "bigint", "text",
                                     "bytea"};
    size_t k = 0;
    while (*in && k + 40 < cap) {
        int hit = -1;
        for (int t = 0; t < 5 && hit < 0; t++)
            if (!strncmp(in, tok[t], strlen(tok[t])))
                hit = t;
        if (hit < 0) {
            out[k++] = *in++;
            continue;
        }
        k += (size_t)snprintf(out + k, cap - k, "%s", pg ? pq[hit] : sq[hit]);
        in += strlen(tok[hit]);
    }
    out[k] = 0;
}

int tide_store_cand_schema(tide_store *s) {
    const int pg = s->kind == TIDE_STORE_PG;
    char cols[2048];
    int k = 0;
    for (int i = 0; i < tide_scand_ndiff_cols; i++) {
        const tide_scand_col *c = &tide_scand_diff_cols[i];
        k += snprintf(cols + k, sizeof cols - (size_t)k, ", %s %s%s", c->name,
                      c->kind == 'T'   ? "{T}"
                      : c->kind == 'R' ? "{R}"
                                       : "{I}",
                      i < 2 ? " NOT NULL" : "");
    }
    char tmpl[6144];
    snprintf(
        tmpl, sizeof tmpl,
        "CREATE TABLE IF NOT EXISTS diffs (id {ID}%s, grid_header {T}, "
        "UNIQUE (sci_checksum, tmpl_checksum));"
        "CREATE TABLE IF NOT EXISTS objects (id {ID}, ra {R}, dec {R}, cell {I} NOT NULL, "
        "sx {R}, sy {R}, sz {R}, ndet {I} NOT NULL, first_mjd {R}, last_mjd {R}, last_diff {I});"
        "CREATE INDEX IF NOT EXISTS objects_cell ON objects (cell);"
        "CREATE TABLE IF NOT EXISTS candidates (id {ID}, diff_id {I} NOT NULL, seq {I} NOT "
        "NULL, object_id {I}, mjd {R}, cell {I} NOT NULL, score {R}, "
        "\"ALPHA_J2000\" {R}, \"DELTA_J2000\" {R});"
        "CREATE INDEX IF NOT EXISTS candidates_diff ON candidates (diff_id);"
        "CREATE INDEX IF NOT EXISTS candidates_cell ON candidates (cell);"
        "CREATE INDEX IF NOT EXISTS candidates_object ON candidates (object_id);"
        "CREATE TABLE IF NOT EXISTS cutouts (candidate_id {I} NOT NULL, kind {T} NOT NULL, "
        "w {I} NOT NULL, h {I} NOT NULL, zero {R}, scale {R}, data {B}, "
        "PRIMARY KEY (candidate_id, kind));"
        "CREATE TABLE IF NOT EXISTS reviewers (id {ID}, name {T} NOT NULL UNIQUE, "
        "created {T}, token_hash {T});"
        "CREATE TABLE IF NOT EXISTS labels (id {ID}, candidate_id {I} NOT NULL, "
        "reviewer_id {I} NOT NULL, label {T} NOT NULL CHECK (label IN ('real', 'bogus', "
        "'unsure')), tags {T}, comment {T}, time {T} NOT NULL);"
        "CREATE INDEX IF NOT EXISTS labels_candidate ON labels (candidate_id);%s",
        cols,
        pg ? "CREATE INDEX IF NOT EXISTS candidates_q3c ON candidates "
             "(q3c_ang2ipix(\"ALPHA_J2000\", \"DELTA_J2000\"));"
             "CREATE INDEX IF NOT EXISTS objects_q3c ON objects (q3c_ang2ipix(ra, dec));"
           : "");
    char sql[8192];
    typed(tmpl, pg, sql, sizeof sql);
    int st = tide_ssql_begin(s);
    if (!st && pg) /* as the frames' schema: two processes creating it at once wait */
        st = tide_ssql_exec(s, "SELECT pg_advisory_xact_lock(7346915013)");
    if (!st)
        st = tide_ssql_exec(s, sql);
    if (!st) /* stores made before the review tools' tokens */
        st = tide_store_review_schema(s);
    if (!st)
        st = tide_ssql_commit(s);
    return st ? tide_ssql_rollback(s, st, " (creating the candidate tables)") : TIDE_OK;
}

/* ---- replacing a pair ------------------------------------------------------------------- */

/* Radians per degree. */
#define DEG (3.14159265358979323846 / 180)

/* Unit vector of (ra, dec) in degrees. */
static void unit(double ra, double dec, double v[3]) {
    const double a = ra * DEG, d = dec * DEG;
    v[0] = cos(d) * cos(a);
    v[1] = cos(d) * sin(a);
    v[2] = sin(d);
}

/* (ra, dec) in degrees of the direction of @p v (any length > 0). */
static void direction(const double v[3], double *ra, double *dec) {
    const double r = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    *dec = asin(fmax(-1.0, fmin(1.0, v[2] / r))) * (1 / DEG);
    double a = atan2(v[1], v[0]) * (1 / DEG);
    *ra = a < 0 ? a + 360 : a;
}

/* An object's position into $1..$6 of @p q: ra, dec, its sky cell, its summed unit vectors. */
static void bind_position(tide_ssql *q, double ra, double dec, const double u[3]) {
    tide_ssql_bind_f64(q, 1, ra);
    tide_ssql_bind_f64(q, 2, dec);
    tide_ssql_bind_i64(q, 3, tide_skycell_index(TIDE_SKYCELL_ORDER, ra, dec));
    for (int k = 0; k < 3; k++)
        tide_ssql_bind_f64(q, 4 + k, u[k]);
}

/* Write object @p id from its sums (or delete it when @p n is 0); @p diff >= 0: the
 * difference that just gave it a detection. */
static int object_write(tide_store *s, int64_t id, const double v[3], int64_t n, double first,
                        double last, int64_t diff) {
    if (n <= 0) {
        const int64_t p[1] = {id};
        return tide_ssql_run_i64(s, "DELETE FROM objects WHERE id = $1", 1, p);
    }
    double ra, dec;
    direction(v, &ra, &dec);
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s,
                               "UPDATE objects SET ra = $1, dec = $2, cell = $3, sx = $4, sy = "
                               "$5, sz = $6, ndet = $7, first_mjd = $8, last_mjd = $9, "
                               "last_diff = coalesce($11, last_diff) WHERE id = $10",
                               &q);
    if (st)
        return st;
    bind_position(q, ra, dec, v);
    tide_ssql_bind_i64(q, 7, n);
    tide_ssql_bind_f64(q, 8, first);
    tide_ssql_bind_f64(q, 9, last);
    tide_ssql_bind_i64(q, 10, id);
    if (diff >= 0)
        tide_ssql_bind_i64(q, 11, diff);
    else
        tide_ssql_bind_null(q, 11);
    st = tide_ssql_step(q);
    tide_ssql_finalize(q);
    return st < 0 ? st : TIDE_OK;
}

/* Object @p id recomputed from the detections it has left (removed with none). */
static int object_recompute(tide_store *s, int64_t id) {
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(
        s, "SELECT \"ALPHA_J2000\", \"DELTA_J2000\", mjd FROM candidates WHERE object_id = $1", &q);
    if (st)
        return st;
    tide_ssql_bind_i64(q, 1, id);
    double v[3] = {0, 0, 0}, first = NAN, last = NAN;
    int64_t n = 0;
    while ((st = tide_ssql_step(q)) == 1) {
        double u[3];
        unit(tide_ssql_col_f64(q, 0), tide_ssql_col_f64(q, 1), u);
        for (int k = 0; k < 3; k++)
            v[k] += u[k];
        const double m = tide_ssql_col_f64(q, 2);
        first = isnan(first) || m < first ? m : first;
        last = isnan(last) || m > last ? m : last;
        n++;
    }
    tide_ssql_finalize(q);
    return st < 0 ? st : object_write(s, id, v, n, first, last, -1);
}

/* Delete diff @p id: its cutouts, candidates and row, and recompute its objects. */
static int delete_diff(tide_store *s, int64_t id) {
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s,
                               "SELECT DISTINCT object_id FROM candidates WHERE diff_id = $1 AND "
                               "object_id IS NOT NULL",
                               &q);
    int64_t *obj = NULL, nobj = 0, cap = 0;
    if (!st) {
        tide_ssql_bind_i64(q, 1, id);
        while ((st = tide_ssql_step(q)) == 1) {
            if (nobj == cap) {
                cap = cap ? 2 * cap : 64;
                int64_t *m = realloc(obj, (size_t)cap * sizeof *m);
                if (!m) {
                    st = tide_error(TIDE_E_NOMEM, "store: objects of a difference");
                    break;
                }
                obj = m;
            }
            obj[nobj++] = tide_ssql_col_i64(q, 0);
        }
        st = st < 0 ? st : TIDE_OK;
    }
    tide_ssql_finalize(q);
    const int64_t p[1] = {id};
    if (!st)
        st = tide_ssql_run_i64(s,
                               "DELETE FROM cutouts WHERE candidate_id IN (SELECT id FROM "
                               "candidates WHERE diff_id = $1)",
                               1, p);
    if (!st)
        st = tide_ssql_run_i64(s, "DELETE FROM candidates WHERE diff_id = $1", 1, p);
    if (!st)
        st = tide_ssql_run_i64(s, "DELETE FROM diffs WHERE id = $1", 1, p);
    for (int64_t i = 0; i < nobj && !st; i++)
        st = object_recompute(s, obj[i]);
    free(obj);
    return st;
}

/* ---- inserting --------------------------------------------------------------------------- */

static int insert_diff(tide_store *s, const tide_store_diff *d, int64_t *id) {
    char sql[4096];
    int k = snprintf(sql, sizeof sql, "INSERT INTO diffs (");
    for (int i = 0; i < tide_scand_ndiff_cols; i++)
        k += snprintf(sql + k, sizeof sql - (size_t)k, "%s, ", tide_scand_diff_cols[i].name);
    k += snprintf(sql + k, sizeof sql - (size_t)k, "grid_header) VALUES (");
    for (int i = 0; i <= tide_scand_ndiff_cols; i++)
        k += snprintf(sql + k, sizeof sql - (size_t)k, "%s$%d", i ? ", " : "", i + 1);
    snprintf(sql + k, sizeof sql - (size_t)k, ") RETURNING id");
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s, sql, &q);
    if (st)
        return st;
    for (int i = 0; i < tide_scand_ndiff_cols; i++) {
        const tide_scand_col *c = &tide_scand_diff_cols[i];
        const char *f = (const char *)d + c->off;
        if (c->kind == 'T')
            tide_ssql_bind_text(q, i + 1, f);
        else if (c->kind == 'R')
            tide_ssql_bind_f64(q, i + 1, *(const double *)f);
        else if (*(const int64_t *)f < 0)
            tide_ssql_bind_null(q, i + 1);
        else
            tide_ssql_bind_i64(q, i + 1, *(const int64_t *)f);
    }
    tide_ssql_bind_text(q, tide_scand_ndiff_cols + 1, d->grid_header);
    st = tide_ssql_step(q);
    if (st == 1)
        *id = tide_ssql_col_i64(q, 0);
    else if (st == 0)
        st = tide_error(TIDE_E_DB, "store %s: inserting the diffs row returned no id", s->target);
    tide_ssql_finalize(q);
    return st < 0 ? st : TIDE_OK;
}

/* The candidate table's stored columns: numeric, repeat 1, not reserved, not the position. */
typedef struct cand_cols {
    int n;
    int *col; /* index in the table */
    int ira, idec;
} cand_cols;

static int is_int_type(tide_col_type t) {
    return t != TIDE_COL_F64 && t != TIDE_COL_F32 && t != TIDE_COL_STR;
}

/* Add the candidate table's columns the candidates table lacks (inside the transaction). */
static int add_columns(tide_store *s, const tide_table *t, cand_cols *cc) {
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s, "SELECT * FROM candidates WHERE id < 0", &q);
    if (!st && s->kind == TIDE_STORE_PG) /* PostgreSQL knows the columns once it has run */
        st = tide_ssql_step(q) < 0 ? TIDE_E_DB : TIDE_OK;
    cc->col = calloc((size_t)t->ncols + 1, sizeof *cc->col);
    cc->n = 0;
    cc->ira = cc->idec = -1;
    if (!st && !cc->col)
        st = tide_error(TIDE_E_NOMEM, "store: candidate columns");
    for (int i = 0; i < t->ncols && !st; i++) {
        const tide_column *c = &t->cols[i];
        if (c->type == TIDE_COL_STR || c->repeat != 1 || strchr(c->name, '"'))
            continue;
        if (!strcmp(c->name, "ALPHA_J2000") && c->type == TIDE_COL_F64) {
            cc->ira = i;
            continue;
        }
        if (!strcmp(c->name, "DELTA_J2000") && c->type == TIDE_COL_F64) {
            cc->idec = i;
            continue;
        }
        if (tide_scand_reserved(c->name)) {
            st =
                tide_error(TIDE_E_INVAL, "store: candidate column %s has a reserved name", c->name);
            break;
        }
        int have = 0;
        for (int j = 0; j < tide_ssql_ncols(q) && !have; j++)
            have = !strcmp(tide_ssql_col_name(q, j), c->name);
        if (!have) {
            char sql[256], typ[256];
            snprintf(typ, sizeof typ, "ALTER TABLE candidates ADD COLUMN \"%s\" %s", c->name,
                     is_int_type(c->type) ? "{I}" : "{R}");
            typed(typ, s->kind == TIDE_STORE_PG, sql, sizeof sql);
            st = tide_ssql_exec(s, sql);
        }
        cc->col[cc->n++] = i;
    }
    tide_ssql_finalize(q);
    if (!st && (cc->ira < 0 || cc->idec < 0))
        st = tide_error(TIDE_E_NOTFOUND,
                        "store: the candidate table needs F64 columns ALPHA_J2000 and DELTA_J2000");
    return st;
}

static double value_f(const tide_column *c, int64_t r) {
    switch (c->type) {
    case TIDE_COL_F64: return ((const double *)c->data)[r];
    case TIDE_COL_F32: return ((const float *)c->data)[r];
    default: return NAN;
    }
}

static int64_t value_i(const tide_column *c, int64_t r) {
    switch (c->type) {
    case TIDE_COL_I64: return ((const int64_t *)c->data)[r];
    case TIDE_COL_I32: return ((const int32_t *)c->data)[r];
    case TIDE_COL_I16: return ((const int16_t *)c->data)[r];
    case TIDE_COL_U8: return ((const uint8_t *)c->data)[r];
    default: return 0;
    }
}

/* Cell ranges of the association's cover per look-up (a 1" disc needs 1 to 4). */
#define NEAR_RANGES 4

/* Association: the nearest object within @p radius (deg) of (ra, dec) that has no detection
 * of difference @p diff yet (one detection per object and epoch, as Rubin's DIAObjects) joins
 * the detection (its sums updated), else a new object; its id into *obj. */
static int associate(tide_store *s, tide_ssql *near, int64_t diff, double ra, double dec,
                     double mjd, double radius, int64_t *obj) {
    int64_t *rg = NULL, nrg = 0;
    int st = tide_skycell_cover(TIDE_SKYCELL_ORDER, ra, dec, radius, &rg, &nrg);
    int64_t best = -1, bn = 0;
    double bsep = INFINITY, bv[3] = {0, 0, 0}, bfirst = NAN, blast = NAN;
    for (int64_t g0 = 0; g0 < nrg && !st; g0 += NEAR_RANGES) {
        tide_ssql_reset(near);
        for (int64_t g = g0; g < g0 + NEAR_RANGES; g++) { /* an empty range pads the rest */
            tide_ssql_bind_i64(near, 1 + 2 * (int)(g - g0), g < nrg ? rg[2 * g] : -2);
            tide_ssql_bind_i64(near, 2 + 2 * (int)(g - g0), g < nrg ? rg[2 * g + 1] : -2);
        }
        while ((st = tide_ssql_step(near)) == 1) {
            const double sep = tide_store_separation(ra, dec, tide_ssql_col_f64(near, 1),
                                                     tide_ssql_col_f64(near, 2));
            const int64_t id = tide_ssql_col_i64(near, 0);
            if (!(sep <= radius) || sep > bsep || (sep == bsep && id > best) ||
                (!tide_ssql_col_null(near, 9) && tide_ssql_col_i64(near, 9) == diff))
                continue;
            bsep = sep;
            best = id;
            for (int k = 0; k < 3; k++)
                bv[k] = tide_ssql_col_f64(near, 3 + k);
            bn = tide_ssql_col_i64(near, 6);
            bfirst = tide_ssql_col_f64(near, 7);
            blast = tide_ssql_col_f64(near, 8);
        }
        st = st < 0 ? st : TIDE_OK;
    }
    free(rg);
    if (st)
        return st;
    double u[3];
    unit(ra, dec, u);
    if (best >= 0) {
        for (int k = 0; k < 3; k++)
            bv[k] += u[k];
        bfirst = isnan(bfirst) || mjd < bfirst ? mjd : bfirst;
        blast = isnan(blast) || mjd > blast ? mjd : blast;
        *obj = best;
        return object_write(s, best, bv, bn + 1, bfirst, blast, diff);
    }
    tide_ssql *q = NULL;
    st = tide_ssql_prepare(s,
                           "INSERT INTO objects (ra, dec, cell, sx, sy, sz, ndet, first_mjd, "
                           "last_mjd, last_diff) VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $7, $8) "
                           "RETURNING id",
                           &q);
    if (st)
        return st;
    bind_position(q, ra, dec, u);
    tide_ssql_bind_f64(q, 7, mjd);
    tide_ssql_bind_i64(q, 8, diff);
    st = tide_ssql_step(q);
    if (st == 1)
        *obj = tide_ssql_col_i64(q, 0);
    tide_ssql_finalize(q);
    return st == 1 ? TIDE_OK : st < 0 ? st : tide_error(TIDE_E_DB, "store: no object id");
}

/* Cutouts per INSERT: one round trip to PostgreSQL for several rows. */
#define CUT_ROWS 8

static int prepare_cutout_insert(tide_store *s, int m, tide_ssql **q) {
    char sql[1024];
    int k = snprintf(sql, sizeof sql,
                     "INSERT INTO cutouts (candidate_id, kind, w, h, zero, scale, data) VALUES ");
    for (int i = 0; i < m; i++)
        k += snprintf(sql + k, sizeof sql - (size_t)k, "%s($%d, $%d, $%d, $%d, $%d, $%d, $%d)",
                      i ? ", " : "", 7 * i + 1, 7 * i + 2, 7 * i + 3, 7 * i + 4, 7 * i + 5,
                      7 * i + 6, 7 * i + 7);
    return tide_ssql_prepare(s, sql, q);
}

static int insert_cutouts(tide_store *s, const tide_store_cutout *cuts, int64_t ncut,
                          const int64_t *cand_id, int64_t nrows) {
    for (int64_t i = 0; i < ncut; i++) {
        const tide_store_cutout *c = &cuts[i];
        if (c->row < 0 || c->row >= nrows || !tide_cutout_kind_name(c->kind) || c->w < 1 ||
            c->h < 1 || !c->pix || (int64_t)c->w * c->h > 4096 * 4096)
            return tide_error(TIDE_E_INVAL, "store: cutout %lld (row %lld, kind %d, %dx%d) is bad",
                              (long long)i, (long long)c->row, c->kind, c->w, c->h);
    }
    tide_ssql *full = NULL, *rest = NULL;
    const int64_t nfull = ncut / CUT_ROWS * CUT_ROWS;
    int st = nfull ? prepare_cutout_insert(s, CUT_ROWS, &full) : 0;
    if (!st && ncut > nfull)
        st = prepare_cutout_insert(s, (int)(ncut - nfull), &rest);
    int16_t *buf = NULL;
    size_t bufn = 0;
    for (int64_t i0 = 0; i0 < ncut && !st; i0 += CUT_ROWS) {
        tide_ssql *q = i0 < nfull ? full : rest;
        const int64_t i1 = i0 + CUT_ROWS < ncut ? i0 + CUT_ROWS : ncut;
        tide_ssql_reset(q);
        for (int64_t i = i0; i < i1 && !st; i++) {
            const tide_store_cutout *c = &cuts[i];
            const size_t n = (size_t)c->w * (size_t)c->h;
            if (n > bufn) {
                free(buf);
                bufn = (buf = malloc(n * sizeof *buf)) ? n : 0;
                if (!buf) {
                    st = tide_error(TIDE_E_NOMEM, "store: cutout buffer");
                    break;
                }
            }
            double zero, scale;
            tide_cutout_encode(c->pix, (int64_t)n, buf, &zero, &scale);
            const int b = 7 * (int)(i - i0); /* the bindings copy the values */
            tide_ssql_bind_i64(q, b + 1, cand_id[c->row]);
            tide_ssql_bind_text(q, b + 2, tide_cutout_kind_name(c->kind));
            tide_ssql_bind_i64(q, b + 3, c->w);
            tide_ssql_bind_i64(q, b + 4, c->h);
            tide_ssql_bind_f64(q, b + 5, zero);
            tide_ssql_bind_f64(q, b + 6, scale);
            tide_ssql_bind_blob(q, b + 7, buf, (int)(n * sizeof *buf));
        }
        if (!st) {
            st = tide_ssql_step(q);
            st = st < 0 ? st : TIDE_OK;
        }
    }
    free(buf);
    tide_ssql_finalize(full);
    tide_ssql_finalize(rest);
    return st;
}

/* Insert the candidates (and their objects) of diff @p id; their ids into cand_id. */
static int insert_candidates(tide_store *s, int64_t diff_id, double mjd, const tide_table *t,
                             const cand_cols *cc, double radius, int64_t *cand_id) {
    size_t cap = 512 + (size_t)cc->n * 80;
    char *sql = malloc(cap);
    if (!sql)
        return tide_error(TIDE_E_NOMEM, "store: candidate insert");
    /* a real/bogus score (tide rb, tide diff --rb-model) is also the candidate's score, the
     * column the review queues read */
    int isc = -1;
    for (int i = 0; i < t->ncols && isc < 0; i++)
        if (!strcmp(t->cols[i].name, "RB_SCORE") && !is_int_type(t->cols[i].type))
            isc = i;
    if (cc->n + 9 > TIDE_SSQL_MAXP) {
        free(sql);
        return tide_error(TIDE_E_RANGE, "store: %d candidate columns (%d at most)", cc->n,
                          TIDE_SSQL_MAXP - 9);
    }
    size_t k = (size_t)snprintf(sql, cap,
                                "INSERT INTO candidates (diff_id, seq, object_id, mjd, cell, "
                                "\"ALPHA_J2000\", \"DELTA_J2000\"");
    for (int i = 0; i < cc->n; i++)
        k += (size_t)snprintf(sql + k, cap - k, ", \"%s\"", t->cols[cc->col[i]].name);
    if (isc >= 0)
        k += (size_t)snprintf(sql + k, cap - k, ", score");
    k += (size_t)snprintf(sql + k, cap - k, ") VALUES ($1, $2, $3, $4, $5, $6, $7");
    for (int i = 0; i < cc->n + (isc >= 0); i++)
        k += (size_t)snprintf(sql + k, cap - k, ", $%d", 8 + i);
    snprintf(sql + k, cap - k, ") RETURNING id");
    tide_ssql *ins = NULL, *near = NULL;
    int st = tide_ssql_prepare(s, sql, &ins);
    free(sql);
    if (!st)
        st = tide_ssql_prepare(s,
                               "SELECT id, ra, dec, sx, sy, sz, ndet, first_mjd, last_mjd, "
                               "last_diff FROM objects WHERE cell BETWEEN $1 AND $2 OR cell "
                               "BETWEEN $3 AND $4 OR cell BETWEEN $5 AND $6 OR cell BETWEEN $7 "
                               "AND $8",
                               &near);
    const double *ra = t->cols[cc->ira].data, *dec = t->cols[cc->idec].data;
    for (int64_t r = 0; r < t->nrows && !st; r++) {
        const int pos = isfinite(ra[r]) && isfinite(dec[r]) && fabs(dec[r]) <= 90;
        int64_t obj = -1;
        if (pos)
            st = associate(s, near, diff_id, ra[r], dec[r], mjd, radius, &obj);
        if (st)
            break;
        tide_ssql_reset(ins);
        tide_ssql_bind_i64(ins, 1, diff_id);
        tide_ssql_bind_i64(ins, 2, r + 1);
        if (obj >= 0)
            tide_ssql_bind_i64(ins, 3, obj);
        else
            tide_ssql_bind_null(ins, 3);
        tide_ssql_bind_f64(ins, 4, mjd);
        tide_ssql_bind_i64(ins, 5,
                           pos ? tide_skycell_index(TIDE_SKYCELL_ORDER, ra[r], dec[r]) : -1);
        tide_ssql_bind_f64(ins, 6, ra[r]);
        tide_ssql_bind_f64(ins, 7, dec[r]);
        for (int i = 0; i < cc->n; i++) {
            const tide_column *c = &t->cols[cc->col[i]];
            if (is_int_type(c->type))
                tide_ssql_bind_i64(ins, 8 + i, value_i(c, r));
            else
                tide_ssql_bind_f64(ins, 8 + i, value_f(c, r));
        }
        if (isc >= 0)
            tide_ssql_bind_f64(ins, 8 + cc->n, value_f(&t->cols[isc], r));
        st = tide_ssql_step(ins);
        if (st == 1) {
            cand_id[r] = tide_ssql_col_i64(ins, 0);
            st = TIDE_OK;
        } else if (st == 0) {
            st = tide_error(TIDE_E_DB, "store %s: a candidate insert returned no id", s->target);
        }
    }
    tide_ssql_finalize(near);
    tide_ssql_finalize(ins);
    return st;
}

int tide_store_put_diff(tide_store *s, const tide_store_diff *din, const tide_table *cands,
                        const tide_store_cutout *cuts, int64_t ncut, double radius_arcsec,
                        int64_t *id_out) {
    if (!s || !din || !cands || (ncut > 0 && !cuts) || ncut < 0)
        return tide_error(TIDE_E_INVAL, "store: put_diff needs a store, a diff and candidates");
    if (s->opt.read_only)
        return tide_error(TIDE_E_INVAL, "store %s: opened read-only", s->target);
    if (strlen(din->sci_checksum) < 8 || strlen(din->tmpl_checksum) < 8)
        return tide_error(TIDE_E_INVAL, "store: difference %s - %s has no checksums", din->sci_file,
                          din->tmpl_file);
    if (!(radius_arcsec > 0) || !isfinite(radius_arcsec))
        return tide_error(TIDE_E_INVAL, "store: bad object radius %g arcsec", radius_arcsec);
    tide_store_diff d = *din; /* defaults filled on a copy (the header is borrowed) */
    if (!d.processed[0])
        tide_store_now_iso(d.processed, sizeof d.processed);
    if (!d.tide_version[0])
        snprintf(d.tide_version, sizeof d.tide_version, "%s", TIDE_VERSION_STRING);
    if (d.ncand < 0)
        d.ncand = cands->nrows;
    int64_t *cand_id = malloc((size_t)(cands->nrows + 1) * sizeof *cand_id);
    if (!cand_id)
        return tide_error(TIDE_E_NOMEM, "store: candidate ids");
    cand_cols cc = {0, NULL, -1, -1};
    int st = tide_ssql_begin(s);
    if (!st && s->kind == TIDE_STORE_PG) /* one association at a time (see store_cand.h) */
        st = tide_ssql_exec(s, "SELECT pg_advisory_xact_lock(7346915014)");
    int64_t old = -1, id = -1;
    if (!st) {
        tide_ssql *q = NULL;
        st = tide_ssql_prepare(
            s, "SELECT id FROM diffs WHERE sci_checksum = $1 AND tmpl_checksum = $2", &q);
        if (!st) {
            tide_ssql_bind_text(q, 1, d.sci_checksum);
            tide_ssql_bind_text(q, 2, d.tmpl_checksum);
            st = tide_ssql_step(q);
            if (st == 1)
                old = tide_ssql_col_i64(q, 0);
            st = st < 0 ? st : TIDE_OK;
        }
        tide_ssql_finalize(q);
    }
    if (!st && old >= 0)
        st = delete_diff(s, old);
    if (!st)
        st = add_columns(s, cands, &cc);
    if (!st)
        st = insert_diff(s, &d, &id);
    if (!st)
        st = insert_candidates(s, id, d.mjd_sci, cands, &cc, radius_arcsec / 3600.0, cand_id);
    if (!st)
        st = insert_cutouts(s, cuts, ncut, cand_id, cands->nrows);
    if (!st)
        st = tide_ssql_commit(s);
    free(cc.col);
    free(cand_id);
    if (st) {
        char why[2200];
        snprintf(why, sizeof why, " (difference %.1000s - %.1000s rolled back)", d.sci_file,
                 d.tmpl_file);
        return tide_ssql_rollback(s, st, why);
    }
    if (id_out)
        *id_out = id;
    return TIDE_OK;
}
