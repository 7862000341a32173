/* store.c — catalog stores: options, dispatch by URI, the mapping of a catalog onto stored
 * columns, and the public calls that check their arguments before the back end runs (see
 * store.h; the frame record is in store_frame.c, cone results in store_result.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "store_cand_cols.h"
#include "store_internal.h"
#include "tide/status.h"

#ifndef TIDE_VERSION_STRING
#define TIDE_VERSION_STRING "unknown"
#endif

void tide_store_options_init(tide_store_options *o) {
    memset(o, 0, sizeof *o);
    o->connect_attempts = 3;
    o->retry_delay_ms = 200;
    o->retry_backoff = 2.5;
    o->connect_timeout_s = 3;
    o->sqlite_busy_ms = 5000;
    o->sqlite_synchronous = 1;
}

/* ---- catalog -> stored columns -------------------------------------------------------- */

static int is_reserved(const char *n) {
    return !strcasecmp(n, "IMAGE_ID") || !strcasecmp(n, "SEQ") || !strcasecmp(n, "CELL") ||
           !strcasecmp(n, "SRC_ID") || !strcasecmp(n, "FILE");
}

int tide_store_schema_make(const tide_table *t, store_schema *s) {
    memset(s, 0, sizeof *s);
    s->ira = s->idec = -1;
    int64_t n = 0;
    for (int i = 0; i < t->ncols; i++)
        if (t->cols[i].type != TIDE_COL_STR)
            n += t->cols[i].repeat;
    if (n > 1500)
        return tide_error(TIDE_E_RANGE,
                          "store: the catalog has %lld numeric values per row "
                          "(1500 at most)",
                          (long long)n);
    s->cols = calloc((size_t)(n ? n : 1), sizeof *s->cols);
    if (!s->cols)
        return tide_error(TIDE_E_NOMEM, "store: column list");
    for (int i = 0; i < t->ncols; i++) {
        const tide_column *c = &t->cols[i];
        if (c->type == TIDE_COL_STR)
            continue;
        if (is_reserved(c->name)) {
            tide_store_schema_free(s);
            return tide_error(TIDE_E_INVAL, "store: catalog column %s has a reserved name",
                              c->name);
        }
        for (int64_t e = 0; e < c->repeat; e++) {
            store_col *sc = &s->cols[s->n];
            if (c->repeat == 1)
                snprintf(sc->name, sizeof sc->name, "%s", c->name);
            else
                snprintf(sc->name, sizeof sc->name, "%s_%lld", c->name, (long long)e + 1);
            for (char *p = sc->name; *p; p++)
                if (*p == '"')
                    *p = '_'; /* names are quoted identifiers: keep them well formed */
            sc->src = i;
            sc->elem = e;
            sc->is_int = c->type != TIDE_COL_F64 && c->type != TIDE_COL_F32;
            if (c->repeat == 1 && c->type == TIDE_COL_F64 && !strcmp(c->name, "ALPHA_J2000"))
                s->ira = s->n;
            if (c->repeat == 1 && c->type == TIDE_COL_F64 && !strcmp(c->name, "DELTA_J2000"))
                s->idec = s->n;
            s->n++;
        }
    }
    for (int i = 0; i < s->n; i++) /* NAME_k of an array may clash with a scalar column */
        for (int j = 0; j < i; j++)
            if (!strcasecmp(s->cols[i].name, s->cols[j].name)) {
                int st = tide_error(TIDE_E_INVAL, "store: two catalog columns map onto %s",
                                    s->cols[i].name);
                tide_store_schema_free(s);
                return st;
            }
    if (s->ira < 0 || s->idec < 0) {
        tide_store_schema_free(s);
        return tide_error(TIDE_E_NOTFOUND, "store: the catalog needs F64 columns ALPHA_J2000 "
                                           "and DELTA_J2000 (is the field plate-solved?)");
    }
    return TIDE_OK;
}

void tide_store_schema_free(store_schema *s) {
    free(s->cols);
    memset(s, 0, sizeof *s);
}

double tide_store_value_f(const tide_table *t, const store_col *c, int64_t row) {
    const tide_column *col = &t->cols[c->src];
    int64_t k = row * col->repeat + c->elem;
    switch (col->type) {
    case TIDE_COL_F64: return ((const double *)col->data)[k];
    case TIDE_COL_F32: return ((const float *)col->data)[k];
    case TIDE_COL_I64: return (double)((const int64_t *)col->data)[k];
    case TIDE_COL_I32: return ((const int32_t *)col->data)[k];
    case TIDE_COL_I16: return ((const int16_t *)col->data)[k];
    case TIDE_COL_U8: return ((const uint8_t *)col->data)[k];
    default: return NAN;
    }
}

int64_t tide_store_value_i(const tide_table *t, const store_col *c, int64_t row) {
    const tide_column *col = &t->cols[c->src];
    int64_t k = row * col->repeat + c->elem;
    switch (col->type) {
    case TIDE_COL_I64: return ((const int64_t *)col->data)[k];
    case TIDE_COL_I32: return ((const int32_t *)col->data)[k];
    case TIDE_COL_I16: return ((const int16_t *)col->data)[k];
    case TIDE_COL_U8: return ((const uint8_t *)col->data)[k];
    default: return (int64_t)tide_store_value_f(t, c, row);
    }
}

/* ---- dispatch ------------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcasecmp(s + n - m, suf);
}

int tide_store_uri_is_pg(const char *uri) {
    return uri && (!strncmp(uri, "postgresql://", 13) || !strncmp(uri, "postgres://", 11) ||
                   !strncmp(uri, "pg:", 3));
}

int tide_store_open(const char *uri, const tide_store_options *opt, tide_store **out) {
    *out = NULL;
    if (!uri || !*uri)
        return tide_error(TIDE_E_INVAL, "store: empty URI");
    tide_store *s = calloc(1, sizeof *s);
    if (!s)
        return tide_error(TIDE_E_NOMEM, "store: open %s", uri);
    if (opt)
        s->opt = *opt;
    else
        tide_store_options_init(&s->opt);
    int st;
    if (tide_store_uri_is_pg(uri)) {
        s->kind = TIDE_STORE_PG;
        st = tide_store_pg_open(s, strncmp(uri, "pg:", 3) ? uri : uri + 3);
    } else if (!strncmp(uri, "sqlite:", 7)) {
        s->kind = TIDE_STORE_SQLITE;
        st = tide_store_sqlite_open(s, uri + 7);
    } else if (ends_with(uri, ".db") || ends_with(uri, ".sqlite") || ends_with(uri, ".sqlite3")) {
        s->kind = TIDE_STORE_SQLITE;
        st = tide_store_sqlite_open(s, uri);
    } else {
        free(s);
        return tide_error(TIDE_E_INVAL,
                          "store: '%s' is neither sqlite:PATH, a *.db/*.sqlite "
                          "path, postgresql://... nor pg:CONNINFO",
                          uri);
    }
    if (st) {
        free(s);
        return st;
    }
    /* the difference tables (store_cand.h) beside the frames' */
    if (!s->opt.read_only && (st = tide_store_cand_schema(s)) != 0) {
        tide_store_close(s);
        return st;
    }
    *out = s;
    return TIDE_OK;
}

void tide_store_close(tide_store *s) {
    if (!s)
        return;
    s->ops->close(s);
    free(s);
}

tide_store_kind tide_store_get_kind(const tide_store *s) {
    return s->kind;
}

int tide_store_put_frame(tide_store *s, const tide_store_frame *frame, const tide_table *sources,
                         int64_t *id_out) {
    if (!s || !frame || !sources)
        return tide_error(TIDE_E_INVAL, "store: put_frame needs a store, a frame and a table");
    if (s->opt.read_only)
        return tide_error(TIDE_E_INVAL, "store %s: opened read-only", s->target);
    if (strlen(frame->checksum) < 8)
        return tide_error(TIDE_E_INVAL, "store: frame %s has no checksum", frame->file);
    if (sources->nrows >= ((int64_t)1 << 32))
        return tide_error(TIDE_E_RANGE, "store: %lld sources in one frame",
                          (long long)sources->nrows);
    store_schema sc;
    int st = tide_store_schema_make(sources, &sc);
    if (st)
        return tide_error_prefix(st, "%s: ", frame->file);
    tide_store_frame f = *frame; /* fill the defaults on a copy (the header is borrowed) */
    if (!f.processed[0])
        tide_store_now_iso(f.processed, sizeof f.processed);
    if (!f.tide_version[0])
        snprintf(f.tide_version, sizeof f.tide_version, "%s", TIDE_VERSION_STRING);
    if (f.nsources < 0)
        f.nsources = sources->nrows;
    int64_t id = -1;
    st = s->ops->put(s, &f, &sc, sources, &id);
    tide_store_schema_free(&sc);
    if (!st && id_out)
        *id_out = id;
    return st;
}

int tide_store_cone(tide_store *s, double ra, double dec, double radius_deg, int64_t limit,
                    tide_table *out) {
    if (!isfinite(ra) || !(dec >= -90 && dec <= 90) || !(radius_deg >= 0) || !isfinite(radius_deg))
        return tide_error(TIDE_E_INVAL, "store: bad cone RA %g Dec %g radius %g deg", ra, dec,
                          radius_deg);
    return s->ops->cone(s, ra, dec, radius_deg, limit, out);
}

int tide_store_all_sources(tide_store *s, tide_table *out) {
    return s->ops->cone(s, 0, 0, -1, 0, out);
}

int tide_store_image(tide_store *s, const char *key, tide_store_frame *out) {
    char sum[72] = "";
    FILE *f = fopen(key, "rb");
    if (f) {
        fclose(f);
        if (tide_store_file_checksum(key, sum) != 0)
            sum[0] = 0;
    }
    tide_store_frame_init(out);
    return s->ops->image(s, key, sum[0] ? sum : NULL, out);
}

int tide_store_count(tide_store *s, int64_t *nimg, int64_t *nsrc) {
    int64_t a = 0, b = 0;
    int st = s->ops->count(s, &a, &b);
    if (nimg)
        *nimg = a;
    if (nsrc)
        *nsrc = b;
    return st;
}

int tide_store_exec(tide_store *s, const char *sql) {
    if (!s || !sql)
        return tide_error(TIDE_E_INVAL, "store: exec needs a store and SQL");
    return s->ops->exec(s, sql);
}

int tide_store_delete_frame(tide_store *s, const char *checksum) {
    if (s->opt.read_only)
        return tide_error(TIDE_E_INVAL, "store %s: opened read-only", s->target);
    tide_store_frame f;
    tide_store_frame_init(&f);
    int st = s->ops->image(s, checksum, checksum, &f);
    tide_store_frame_free(&f);
    if (st)
        return st;
    if (strcmp(f.checksum, checksum))
        return tide_error(TIDE_E_NOTFOUND, "store: no frame with checksum %s", checksum);
    char sql[512];
    long long id = (long long)f.id;
    if (s->kind == TIDE_STORE_SQLITE)
        return tide_store_sqlite_delete_frame(s, f.id);
    /* one PQexec string without BEGIN runs as one transaction */
    snprintf(sql, sizeof sql,
             "DELETE FROM sources WHERE \"IMAGE_ID\" = %lld; DELETE FROM images WHERE id = %lld",
             id, id);
    return s->ops->exec(s, sql);
}
