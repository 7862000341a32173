/* store_pg.c — the PostgreSQL + Q3C store (see store.h for the layout) and reference-catalog
 * cone queries.
 *
 * Frames go in with one transaction each: delete the rows of the same checksum, insert the
 * image row (RETURNING id), stream the sources with COPY in PostgreSQL's binary format (no
 * text formatting or parsing of ~50 numbers per row) in sky-cell order (send_order), commit.
 * Where the time goes (130,000 rows of 62 values, PostgreSQL 15; docs/postgresql.md has the
 * measurements and the server settings a facility should use): ~550 ms of one backend's CPU
 * on a 2-core VM, of which reading the binary fields 32% (~21 ns each: a receive-function call
 * per value), forming tuples 8%, heap pages 19% (PostgreSQL 15 extends the file one zero-filled
 * page at a time), the q3c B-tree 22% + q3c_ang2ipix 5%, BRIN 4%; WAL ~57 MB per frame. Into an
 * unlogged table with no index the same COPY still takes ~320 ms, so one COPY in one
 * transaction cannot reach 200 ms per frame on this schema; COPY cannot be split over
 * connections inside one transaction. sources is indexed by
 * q3c_ang2ipix(ALPHA_J2000, DELTA_J2000) (Koposov & Bartunov 2006, ASP Conf. 351, 735) and by a
 * BRIN index on IMAGE_ID (ids grow with insertion, so a few block ranges per frame: cheap to
 * maintain, enough to find a frame's rows when it is replaced). Connections are retried with
 * growing waits; errors name the target without its password (nor one libpq misread as
 * another field). A read-only handle (tide query) creates nothing, needs tide's tables and
 * runs its session with default_transaction_read_only. Reference-catalog cones are in
 * refcat_pg.c. */
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "skycell.h"
#include "store_internal.h"
#include "store_pg.h"
#include "tide/redact.h"
#include "tide/status.h"

typedef struct pg {
    PGconn *conn;
    char *conninfo;
    unsigned char *stage; /* COPY rows of the last frame, kept for the next (copy_sources) */
    size_t stage_cap;
} pg;

PGconn *tide_store_pg_conn(tide_store *s) {
    return ((pg *)s->impl)->conn;
}

static PGconn *CONN(tide_store *s) {
    return tide_store_pg_conn(s);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* "host=... port=... dbname=... user=..." of a connection, never the password. */
static void describe(PGconn *c, char *out, size_t n) {
    const char *host = "", *hostaddr = "", *port = "", *db = "", *user = "";
    PQconninfoOption *o = c ? PQconninfo(c) : NULL;
    for (PQconninfoOption *p = o; p && p->keyword; p++) {
        if (!p->val)
            continue;
        if (!strcmp(p->keyword, "host"))
            host = p->val;
        else if (!strcmp(p->keyword, "hostaddr"))
            hostaddr = p->val;
        else if (!strcmp(p->keyword, "port"))
            port = p->val;
        else if (!strcmp(p->keyword, "dbname"))
            db = p->val;
        else if (!strcmp(p->keyword, "user"))
            user = p->val;
    }
    snprintf(out, n, "postgresql host=%s%s%s port=%s dbname=%s user=%s",
             host[0] ? host : "(default)", hostaddr[0] ? " hostaddr=" : "", hostaddr,
             port[0] ? port : "(default)", db, user);
    if (o)
        PQconninfoFree(o);
}

/* @p src as one line: libpq's continuation lines ("\n\tIs the server running...",
 * "\nCONTEXT: ...") joined with spaces, no trailing newline. */
const char *tide_store_pg_oneline(const char *src, char *buf, size_t n) {
    snprintf(buf, n, "%s", src ? src : "");
    char *w = buf;
    for (const char *r = buf; *r; r++) {
        if (*r == '\n' || *r == '\t') {
            if (w > buf && w[-1] != ' ')
                *w++ = ' ';
        } else {
            *w++ = *r;
        }
    }
    while (w > buf && w[-1] == ' ')
        w--;
    *w = 0;
    return buf;
}

static const char *pgmsg(PGconn *c, char *buf, size_t n) {
    return tide_store_pg_oneline(c ? PQerrorMessage(c) : "out of memory", buf, n);
}

/* Connect with the options' bounded retries; *conn on success, TIDE_E_DB after the last. */
int tide_store_pg_connect(const tide_store_options *opt, const char *conninfo, PGconn **conn,
                          char *target, size_t ntarget) {
    char tmo[16];
    snprintf(tmo, sizeof tmo, "%d", opt->connect_timeout_s);
    /* connect_timeout first: a value in the conninfo / URI (expanded from dbname) wins */
    const char *kw[] = {"connect_timeout", "dbname", "fallback_application_name", NULL};
    const char *val[] = {opt->connect_timeout_s > 0 ? tmo : NULL, conninfo, "tide", NULL};
    int attempts = opt->connect_attempts > 0 ? opt->connect_attempts : 1;
    double delay = opt->retry_delay_ms > 0 ? opt->retry_delay_ms : 0;
    char msg[1024] = "";
    *conn = NULL;
    for (int a = 0; a < attempts; a++) {
        if (a) {
            sleep_ms((int)delay);
            delay *= opt->retry_backoff > 1 ? opt->retry_backoff : 1;
        }
        PGconn *c = PQconnectdbParams(kw, val, 1);
        /* what libpq made of the conninfo, and its message, may hold a password it misread
         * (an unencoded '/' in "postgresql://u:pa/ss@h" makes host u, port pa): hide it */
        char raw[1024];
        describe(c, raw, sizeof raw);
        tide_redact_uri_in(raw, conninfo, target, ntarget);
        if (c && PQstatus(c) == CONNECTION_OK) {
            /* short statements: JIT compilation (on by default for costly plans, which a
             * DELETE on a large sources table is) would cost more than it saves */
            PQclear(PQexec(c, "SET jit = off"));
            *conn = c;
            return TIDE_OK;
        }
        tide_redact_uri_in(pgmsg(c, raw, sizeof raw), conninfo, msg, sizeof msg);
        PQfinish(c);
        if (!c)
            break;
    }
    return tide_error(TIDE_E_DB, "%s: cannot connect after %d attempt%s: %s", target, attempts,
                      attempts > 1 ? "s" : "", msg);
}

void tide_store_pg_quiet(void *arg, const char *m) {
    (void)arg;
    (void)m;
}

int tide_store_pg_fail(tide_store *s, const char *what, PGresult *r) {
    char m[1024];
    const char *e = r ? PQresultErrorMessage(r) : NULL;
    if (e && *e)
        tide_store_pg_oneline(e, m, sizeof m);
    else
        pgmsg(CONN(s), m, sizeof m);
    return tide_error(TIDE_E_DB, "%s: %.200s: %s", s->target, what, m);
}

/* Run SQL that returns no rows (or rows we ignore). */
int tide_store_pg_run(tide_store *s, const char *sql) {
    PGresult *r = PQexec(CONN(s), sql);
    ExecStatusType t = PQresultStatus(r);
    int st =
        t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK ? TIDE_OK : tide_store_pg_fail(s, sql, r);
    PQclear(r);
    return st;
}

/* A new session: notices dropped (the library never prints); a read-only handle's session
 * cannot write (every transaction read-only, as the server enforces). */
static int session_setup(tide_store *s) {
    PQsetNoticeProcessor(CONN(s), tide_store_pg_quiet, NULL);
    return s->opt.read_only ? tide_store_pg_run(s, "SET default_transaction_read_only = on") : 0;
}

/* Reconnect when the server dropped us (restart, killed backend). */
int tide_store_pg_ensure(tide_store *s) {
    pg *p = s->impl;
    if (p->conn && PQstatus(p->conn) == CONNECTION_OK)
        return TIDE_OK;
    PQfinish(p->conn);
    p->conn = NULL;
    int st = tide_store_pg_connect(&s->opt, p->conninfo, &p->conn, s->target, sizeof s->target);
    return st ? st : session_setup(s);
}

/* A statement that may open a session's work (BEGIN, a read): when it fails because the
 * connection died since the last call (server restart, killed backend: libpq only notices on
 * the next use), reconnect with the bounded retries and run it once more. */
PGresult *tide_store_pg_query(tide_store *s, const char *sql, int nparams,
                              const char *const *vals) {
    PGresult *r = PQexecParams(CONN(s), sql, nparams, NULL, vals, NULL, NULL, 0);
    ExecStatusType t = PQresultStatus(r);
    if ((t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK) || PQstatus(CONN(s)) == CONNECTION_OK)
        return r;
    PQclear(r);
    if (tide_store_pg_ensure(s) != TIDE_OK)
        return NULL; /* the detail names the target and libpq's message */
    return PQexecParams(CONN(s), sql, nparams, NULL, vals, NULL, NULL, 0);
}

static int create_schema(tide_store *s) {
    char sql[4096];
    int k =
        snprintf(sql, sizeof sql, "CREATE TABLE IF NOT EXISTS images (id bigserial PRIMARY KEY");
    for (int i = 0; i < TIDE_STORE_NIMG; i++) {
        char kd = tide_store_img_kinds[i];
        k += snprintf(sql + k, sizeof sql - (size_t)k, ", %s %s%s", tide_store_img_cols[i],
                      kd == 'T'   ? "text"
                      : kd == 'R' ? "double precision"
                                  : "bigint",
                      i == 1 ? " NOT NULL UNIQUE" : "");
    }
    snprintf(sql + k, sizeof sql - (size_t)k, ")");
    /* an advisory lock serialises two processes creating the schema at once */
    int st = tide_store_pg_run(s, "BEGIN; SELECT pg_advisory_xact_lock(7346915013)");
    if (!st)
        st = tide_store_pg_run(s, "CREATE EXTENSION IF NOT EXISTS q3c");
    if (!st)
        st = tide_store_pg_run(s, sql);
    if (!st)
        st = tide_store_pg_run(s,
                               "CREATE INDEX IF NOT EXISTS images_file ON images (file);"
                               "CREATE TABLE IF NOT EXISTS sources (\"IMAGE_ID\" bigint NOT NULL, "
                               "\"SEQ\" bigint NOT NULL, \"ALPHA_J2000\" double precision, "
                               "\"DELTA_J2000\" double precision);"
                               "CREATE INDEX IF NOT EXISTS sources_q3c ON sources "
                               "(q3c_ang2ipix(\"ALPHA_J2000\", \"DELTA_J2000\"));"
                               "CREATE INDEX IF NOT EXISTS sources_image ON sources USING brin "
                               "(\"IMAGE_ID\");");
    if (!st)
        return tide_store_pg_run(s, "COMMIT");
    PGresult *r = PQexec(CONN(s), "ROLLBACK");
    PQclear(r);
    return st;
}

/* A read-only handle creates nothing: the database must hold tide's tables (those of the
 * search path, as every statement names them). */
static int check_store(tide_store *s) {
    PGresult *r = PQexec(CONN(s), "SELECT to_regclass('images') IS NOT NULL AND "
                                  "to_regclass('sources') IS NOT NULL");
    int st = TIDE_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        st = tide_store_pg_fail(s, "looking for tide's tables", r);
    else if (strcmp(PQgetvalue(r, 0, 0), "t"))
        st = tide_error(TIDE_E_FORMAT, "%s: not a tide store (no images and sources tables)",
                        s->target);
    PQclear(r);
    return st;
}

/* ---- put ------------------------------------------------------------------------------ */

/* Wire (and column) types of stored values: the catalog's own width, so a float32 column
 * costs 4 bytes of heap and WAL per row, not 8. */
enum { W_F8, W_F4, W_I8, W_I4, W_I2 };
static const char *const wire_sql[] = {"double precision", "real", "bigint", "integer", "smallint"};
static const int wire_width[] = {8, 4, 8, 4, 2};

static int wire_of_catalog(const tide_table *t, const store_col *c) {
    switch (t->cols[c->src].type) {
    case TIDE_COL_F64: return W_F8;
    case TIDE_COL_F32: return W_F4;
    case TIDE_COL_I64: return W_I8;
    case TIDE_COL_I32: return W_I4;
    default: return W_I2; /* I16, U8 */
    }
}

static int is_int_wire(int w) {
    return w >= W_I8;
}

/* Can a column of type @p have hold values of type @p want exactly (as the old one-kind
 * layout did: integers in a double precision column as doubles)? */
static int fits(int want, int have) {
    if (want == have || have == W_F8)
        return 1;
    if (is_int_wire(have))
        return is_int_wire(want) && wire_width[want] <= wire_width[have];
    return want == W_I2; /* real holds int16 exactly */
}

/* Wire types of the catalog's columns in @p kind: the existing column's type when it holds the
 * catalog's values exactly; a missing column is added with the catalog's type, a too narrow
 * one widened (ALTER ... TYPE: integers to the wider integer, else double precision). */
static int column_kinds(tide_store *s, const store_schema *sc, const tide_table *t, int *kind) {
    /* pg_attribute of the relation COPY will name (the search path's sources): ~0.3 ms, where
     * the information_schema view took ~9 ms per frame; format_type spells the types as
     * wire_sql does */
    PGresult *r = PQexec(CONN(s), "SELECT attname, format_type(atttypid, atttypmod) FROM "
                                  "pg_attribute WHERE attrelid = 'sources'::regclass AND "
                                  "attnum > 0 AND NOT attisdropped");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int st = tide_store_pg_fail(s, "reading the sources columns", r);
        PQclear(r);
        return st;
    }
    int *have = malloc((size_t)(sc->n + 1) * sizeof *have);
    if (!have) {
        PQclear(r);
        return tide_error(TIDE_E_NOMEM, "store: column kinds");
    }
    for (int i = 0; i < sc->n; i++)
        have[i] = -1;
    int st = TIDE_OK;
    for (int k = 0; k < PQntuples(r) && !st; k++) {
        const char *nm = PQgetvalue(r, k, 0), *ty = PQgetvalue(r, k, 1);
        for (int i = 0; i < sc->n; i++) {
            if (strcmp(nm, sc->cols[i].name))
                continue;
            for (int w = W_F8; w <= W_I2; w++)
                if (!strcmp(ty, wire_sql[w]))
                    have[i] = w;
            if (have[i] < 0)
                st = tide_error(TIDE_E_DB,
                                "%s: sources.\"%s\" has type %s (a number type "
                                "expected)",
                                s->target, nm, ty);
        }
    }
    PQclear(r);
    for (int i = 0; i < sc->n && !st; i++) {
        int want = wire_of_catalog(t, &sc->cols[i]);
        char sql[256];
        if (have[i] < 0) {
            snprintf(sql, sizeof sql, "ALTER TABLE sources ADD COLUMN IF NOT EXISTS \"%s\" %s",
                     sc->cols[i].name, wire_sql[want]);
            st = tide_store_pg_run(s, sql);
            kind[i] = want;
        } else if (fits(want, have[i])) {
            kind[i] = have[i];
        } else {
            int w = is_int_wire(want) && is_int_wire(have[i]) ? want : W_F8;
            snprintf(sql, sizeof sql, "ALTER TABLE sources ALTER COLUMN \"%s\" TYPE %s",
                     sc->cols[i].name, wire_sql[w]);
            st = tide_store_pg_run(s, sql);
            kind[i] = w;
        }
    }
    free(have);
    return st;
}

static void put_be16(unsigned char *p, int v) {
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}
static void put_be32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (24 - 8 * i));
}
static void put_be64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (56 - 8 * i));
}

/* One COPY row (binary format) of catalog row @p row at @p p: the field count, then each field
 * as a 4-byte length and its big-endian bytes (int8/int4/int2 or float8/float4 as @p kind
 * says). Every row has the same size, copy_row_bytes(). */
static size_t copy_row_bytes(const store_schema *sc, const int *kind) {
    size_t b = 2 + 2 * 12;
    for (int i = 0; i < sc->n; i++)
        b += 4 + (size_t)wire_width[kind[i]];
    return b;
}

static void encode_row(const store_schema *sc, const int *kind, const tide_table *t, int64_t id,
                       int64_t row, unsigned char *p) {
    put_be16(p, sc->n + 2);
    p += 2;
    put_be32(p, 8);
    put_be64(p + 4, (uint64_t)id);
    put_be32(p + 12, 8);
    put_be64(p + 16, (uint64_t)(row + 1));
    p += 24;
    for (int i = 0; i < sc->n; i++) {
        const store_col *c = &sc->cols[i];
        const int w = kind[i];
        put_be32(p, (uint32_t)wire_width[w]);
        p += 4;
        switch (w) {
        case W_F8: {
            double v = tide_store_value_f(t, c, row);
            uint64_t bits;
            memcpy(&bits, &v, 8);
            put_be64(p, bits);
            break;
        }
        case W_F4: {
            float v = (float)tide_store_value_f(t, c, row);
            uint32_t bits;
            memcpy(&bits, &v, 4);
            put_be32(p, bits);
            break;
        }
        case W_I8: put_be64(p, (uint64_t)tide_store_value_i(t, c, row)); break;
        case W_I4: put_be32(p, (uint32_t)tide_store_value_i(t, c, row)); break;
        default: put_be16(p, (int)(uint16_t)tide_store_value_i(t, c, row)); break;
        }
        p += wire_width[w];
    }
}

/* The order in which the rows are sent: by sky cell (HEALPix NESTED at TIDE_SKYCELL_ORDER,
 * 1.7 arcmin; rows without a position first), catalog order within a cell. Neighbouring rows
 * then have neighbouring q3c_ang2ipix keys, so the index's B-tree takes each leaf's new keys
 * one after the other instead of in random order over the frame's whole key range (fewer cache
 * misses per insert), and a frame's rows of one patch of sky share heap pages (a cone reads
 * fewer pages). SEQ still numbers the catalog rows. NULL when out of memory. */
static int64_t *send_order(const store_schema *sc, const tide_table *t) {
    const int64_t n = t->nrows;
    int64_t *cells = malloc((size_t)(n + 1) * sizeof *cells);
    if (!cells)
        return NULL;
    const double *ra = t->cols[sc->cols[sc->ira].src].data;
    const double *dec = t->cols[sc->cols[sc->idec].src].data;
    for (int64_t r = 0; r < n; r++) /* ~3 ms for 130,000 rows, + ~3 ms for the sort */
        cells[r] = tide_skycell_index(TIDE_SKYCELL_ORDER, ra[r], dec[r]);
    int64_t *order = tide_store_cell_order(cells, n);
    free(cells);
    return order;
}

/* Rows are encoded in catalog order (sequential reads of every column, on all cores) into a
 * staging buffer and sent from there in send_order: gathering the values of rows in sky order
 * straight from the columns missed the cache on almost every value (~1 us per row). A frame
 * whose staging would pass this size is sent in catalog order, encoded as it goes. */
#define PG_STAGE_MAX ((int64_t)1 << 30)

/* COPY sources FROM STDIN (FORMAT binary). */
static int copy_sources(tide_store *s, const store_schema *sc, const int *kind, const tide_table *t,
                        int64_t id) {
    const int64_t nrows = t->nrows;
    const size_t row_bytes = copy_row_bytes(sc, kind);
    pg *P = s->impl;
    unsigned char *stage = NULL;
    int64_t *order = NULL;
    if (nrows > 1 && nrows <= PG_STAGE_MAX / (int64_t)row_bytes) {
        /* kept between frames: a new 76 MB buffer per 130,000-row frame cost ~20k page faults */
        const size_t need = (size_t)nrows * row_bytes;
        if (P->stage_cap < need) {
            free(P->stage);
            P->stage_cap = 0;
            if ((P->stage = malloc(need)) != NULL)
                P->stage_cap = need;
        }
        order = P->stage ? send_order(sc, t) : NULL;
        stage = order ? P->stage : NULL; /* no memory for the sky order: catalog order */
    }
    if (stage) {
#pragma omp parallel for schedule(static) if (nrows > 20000)
        for (int64_t r = 0; r < nrows; r++)
            encode_row(sc, kind, t, id, r, stage + (size_t)r * row_bytes);
    }
    size_t cap = 256 + (size_t)sc->n * 104;
    char *sql = malloc(cap);
    const size_t bufcap = (1 << 20) + row_bytes + 32;
    unsigned char *buf = sql ? malloc(bufcap) : NULL;
    if (!buf) {
        free(sql);
        free(order);
        return tide_error(TIDE_E_NOMEM, "store: COPY buffer");
    }
    size_t k = (size_t)snprintf(sql, cap, "COPY sources (\"IMAGE_ID\", \"SEQ\"");
    for (int i = 0; i < sc->n; i++)
        k += (size_t)snprintf(sql + k, cap - k, ", \"%s\"", sc->cols[i].name);
    snprintf(sql + k, cap - k, ") FROM STDIN (FORMAT binary)");
    PGresult *r = PQexec(CONN(s), sql);
    free(sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        int st = tide_store_pg_fail(s, "starting COPY", r);
        PQclear(r);
        free(buf);
        free(order);
        return st;
    }
    PQclear(r);
    static const unsigned char sig[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0};
    memcpy(buf, sig, 11);
    put_be32(buf + 11, 0); /* flags */
    put_be32(buf + 15, 0); /* header extension length */
    size_t n = 19;
    int st = TIDE_OK;
    for (int64_t q = 0; q <= nrows && !st; q++) {
        if (q < nrows) {
            if (stage)
                memcpy(buf + n, stage + (size_t)order[q] * row_bytes, row_bytes);
            else
                encode_row(sc, kind, t, id, q, buf + n);
            n += row_bytes;
        } else {
            put_be16(buf + n, 0xffff); /* trailer: field count -1 */
            n += 2;
        }
        if (n + row_bytes > bufcap - 8 || q == nrows) {
            if (PQputCopyData(CONN(s), (const char *)buf, (int)n) != 1)
                st = tide_store_pg_fail(s, "sending sources (COPY)", NULL);
            n = 0;
        }
    }
    free(buf);
    free(order);
    if (PQputCopyEnd(CONN(s), st ? "tide: aborted" : NULL) != 1 && !st)
        st = tide_store_pg_fail(s, "ending COPY", NULL);
    while ((r = PQgetResult(CONN(s))) != NULL) {
        if (!st && PQresultStatus(r) != PGRES_COMMAND_OK)
            st = tide_store_pg_fail(s, "COPY into sources", r);
        PQclear(r);
    }
    return st;
}

static int insert_image(tide_store *s, const tide_store_frame *f, int64_t *id) {
    const char *txt[TIDE_STORE_NIMG];
    double num[TIDE_STORE_NIMG];
    tide_store_frame_values(f, txt, num);
    char nbuf[TIDE_STORE_NIMG][32];
    const char *vals[TIDE_STORE_NIMG];
    char sql[2048];
    int k = snprintf(sql, sizeof sql, "INSERT INTO images (");
    for (int i = 0; i < TIDE_STORE_NIMG; i++)
        k += snprintf(sql + k, sizeof sql - (size_t)k, "%s%s", i ? ", " : "",
                      tide_store_img_cols[i]);
    k += snprintf(sql + k, sizeof sql - (size_t)k, ") VALUES (");
    for (int i = 0; i < TIDE_STORE_NIMG; i++) {
        k += snprintf(sql + k, sizeof sql - (size_t)k, "%s$%d", i ? ", " : "", i + 1);
        char kd = tide_store_img_kinds[i];
        if (kd == 'T') {
            vals[i] = txt[i];
        } else if (!isfinite(num[i])) {
            vals[i] = NULL;
        } else {
            if (kd == 'I')
                snprintf(nbuf[i], sizeof nbuf[i], "%lld", (long long)num[i]);
            else
                snprintf(nbuf[i], sizeof nbuf[i], "%.17g", num[i]);
            vals[i] = nbuf[i];
        }
    }
    snprintf(sql + k, sizeof sql - (size_t)k, ") RETURNING id");
    PGresult *r = PQexecParams(CONN(s), sql, TIDE_STORE_NIMG, NULL, vals, NULL, NULL, 0);
    int st = TIDE_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        st = tide_store_pg_fail(s, "inserting the image row", r);
    else
        *id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return st;
}

static int pg_put(tide_store *s, const tide_store_frame *f, const store_schema *sc,
                  const tide_table *t, int64_t *id_out) {
    int st = tide_store_pg_ensure(s);
    if (st)
        return st;
    int *kind = calloc((size_t)sc->n + 1, sizeof *kind);
    if (!kind)
        return tide_error(TIDE_E_NOMEM, "store: column kinds");
    PGresult *rb = tide_store_pg_query(s, "BEGIN", 0, NULL);
    if (!rb)
        st = TIDE_E_DB;
    else if (PQresultStatus(rb) != PGRES_COMMAND_OK)
        st = tide_store_pg_fail(s, "BEGIN", rb);
    PQclear(rb);
    if (!st)
        st = column_kinds(s, sc, t, kind);
    if (!st) {
        /* the frame's old rows: the id first, so the sources are deleted by a constant that
         * the BRIN index on IMAGE_ID narrows to a few block ranges */
        const char *v[1] = {f->checksum};
        PGresult *r = PQexecParams(CONN(s), "SELECT id FROM images WHERE checksum = $1 FOR UPDATE",
                                   1, NULL, v, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK)
            st = tide_store_pg_fail(s, "looking up the checksum", r);
        else if (PQntuples(r) == 1) {
            char sql[256];
            long long old = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
            snprintf(sql, sizeof sql,
                     "DELETE FROM sources WHERE \"IMAGE_ID\" = %lld; "
                     "DELETE FROM images WHERE id = %lld",
                     old, old);
            st = tide_store_pg_run(s, sql);
        }
        PQclear(r);
    }
    int64_t id = -1;
    if (!st)
        st = insert_image(s, f, &id);
    if (!st)
        st = copy_sources(s, sc, kind, t, id);
    if (!st)
        st = tide_store_pg_run(s, "COMMIT");
    free(kind);
    if (st) {
        char keep[1200];
        snprintf(keep, sizeof keep, "%s", tide_error_detail());
        if (PQstatus(CONN(s)) == CONNECTION_OK && PQtransactionStatus(CONN(s)) != PQTRANS_IDLE)
            PQclear(PQexec(CONN(s), "ROLLBACK"));
        return tide_error(st, "%s (frame %s rolled back)", keep, f->file);
    }
    *id_out = id;
    return TIDE_OK;
}

static int pg_exec(tide_store *s, const char *sql) {
    int st = tide_store_pg_ensure(s);
    return st ? st : tide_store_pg_run(s, sql);
}

static void pg_close(tide_store *s) {
    pg *p = s->impl;
    if (p) {
        PQfinish(p->conn);
        free(p->conninfo);
        free(p->stage);
        free(p);
    }
    s->impl = NULL;
}

static const store_ops pg_ops = {
    pg_put, tide_store_pg_cone, tide_store_pg_image, tide_store_pg_count, pg_exec, pg_close};

int tide_store_pg_open(tide_store *s, const char *conninfo) {
    pg *p = calloc(1, sizeof *p);
    if (!p || !(p->conninfo = strdup(conninfo))) {
        free(p);
        return tide_error(TIDE_E_NOMEM, "store: postgresql");
    }
    s->impl = p;
    s->ops = &pg_ops;
    int st = tide_store_pg_connect(&s->opt, conninfo, &p->conn, s->target, sizeof s->target);
    if (!st)
        st = session_setup(s);
    if (!st)
        st = s->opt.read_only ? check_store(s) : create_schema(s);
    if (st)
        pg_close(s);
    return st;
}
