/* store_review_queue.c — the review queues, a reviewer's summary and the labels as a table
 * (store_review.h): SQL over candidates and labels, the same on SQLite and PostgreSQL. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sql.h"
#include "tide/status.h"
#include "tide/store_review.h"

/* $1 the reviewer, $2 the limit, $3 the audit seed. "Mine" = labelled by the reviewer. */
#define MINE "(SELECT count(*) FROM labels m WHERE m.candidate_id = c.id AND m.reviewer_id = $1)"

static const char *const queue_sql[3] = {
    /* uncertainty */
    "SELECT c.id FROM candidates c WHERE $3 >= 0 ORDER BY " MINE
    " > 0, c.score IS NULL, abs(c.score - 0.5), c.id LIMIT $2",
    /* disagreement: labels of different values, or one against the score */
    "SELECT c.id FROM candidates c WHERE $1 >= -1 AND $3 >= 0 AND ((SELECT count(DISTINCT "
    "l.label) FROM labels l WHERE l.candidate_id = c.id) > 1 OR EXISTS (SELECT 1 FROM labels l "
    "WHERE l.candidate_id = c.id AND ((l.label = 'real' AND c.score < 0.5) OR (l.label = "
    "'bogus' AND c.score > 0.5)))) ORDER BY (SELECT count(DISTINCT l.label) FROM labels l "
    "WHERE l.candidate_id = c.id) DESC, c.id LIMIT $2",
    /* audit: a seeded hash of the id, two steps of the Lehmer generator (modulus 2^31 - 1,
     * every product below 2^47) from id + seed */
    "SELECT c.id FROM candidates c ORDER BY " MINE
    " > 0, ((((c.id + $3) % 2147483647) * 48271 % 2147483647) * 48271) % 2147483647, c.id "
    "LIMIT $2"};

int tide_store_review_queue(tide_store *s, int kind, int64_t reviewer_id, int64_t limit,
                            uint64_t seed, int64_t *ids, int64_t *n) {
    *n = 0;
    if (kind < 0 || kind > 2 || limit < 0)
        return tide_error(TIDE_E_INVAL, "store: bad review queue %d or limit %lld", kind,
                          (long long)limit);
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s, queue_sql[kind], &q);
    if (st)
        return st;
    tide_ssql_bind_i64(q, 1, reviewer_id);
    tide_ssql_bind_i64(q, 2, limit);
    tide_ssql_bind_i64(q, 3, (int64_t)(seed % 2147483647u));
    while ((st = tide_ssql_step(q)) == 1 && *n < limit)
        ids[(*n)++] = tide_ssql_col_i64(q, 0);
    tide_ssql_finalize(q);
    return st < 0 ? st : TIDE_OK;
}

/* The integer columns of the one row of @p sql with the reviewer as $1. */
static int counts(tide_store *s, const char *sql, int64_t reviewer_id, int nc, int64_t *out) {
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s, sql, &q);
    for (int j = 0; j < nc; j++)
        out[j] = 0;
    if (!st) {
        tide_ssql_bind_i64(q, 1, reviewer_id);
        st = tide_ssql_step(q);
        for (int j = 0; st == 1 && j < nc; j++)
            out[j] = tide_ssql_col_null(q, j) ? 0 : tide_ssql_col_i64(q, j);
    }
    tide_ssql_finalize(q);
    return st < 0 ? st : TIDE_OK;
}

int tide_store_review_summary(tide_store *s, int64_t reviewer_id, tide_review_summary *o) {
    memset(o, 0, sizeof *o);
    int64_t v[4];
    int st = counts(s,
                    "SELECT count(*), sum(CASE WHEN label = 'real' THEN 1 ELSE 0 END), sum(CASE "
                    "WHEN label = 'bogus' THEN 1 ELSE 0 END), sum(CASE WHEN label = 'unsure' "
                    "THEN 1 ELSE 0 END) FROM labels WHERE reviewer_id = $1",
                    reviewer_id, 4, v);
    o->nlabels = v[0], o->nreal = v[1], o->nbogus = v[2], o->nunsure = v[3];
    if (!st)
        st = counts(s,
                    "SELECT count(*), sum(CASE WHEN a.label = b.label THEN 1 ELSE 0 END) FROM "
                    "labels a JOIN labels b ON b.candidate_id = a.candidate_id AND b.reviewer_id "
                    "<> a.reviewer_id WHERE a.reviewer_id = $1",
                    reviewer_id, 2, v);
    o->npairs = v[0], o->nagree = v[1];
    if (!st)
        st = counts(s,
                    "SELECT count(*), sum(CASE WHEN (a.label = 'real' AND c.score > 0.5) OR "
                    "(a.label = 'bogus' AND c.score <= 0.5) THEN 1 ELSE 0 END) FROM labels a "
                    "JOIN candidates c ON c.id = a.candidate_id WHERE a.reviewer_id = $1 AND "
                    "a.label IN ('real', 'bogus') AND c.score IS NOT NULL",
                    reviewer_id, 2, v);
    o->nmodel = v[0], o->nmodel_agree = v[1];
    return st;
}

static const struct {
    const char *name;
    tide_col_type type;
    int width;
} label_cols[] = {
    {"LABEL_ID", TIDE_COL_I64, 1},  {"CAND_ID", TIDE_COL_I64, 1},     {"DIFF_ID", TIDE_COL_I64, 1},
    {"SEQ", TIDE_COL_I64, 1},       {"REVIEWER_ID", TIDE_COL_I64, 1}, {"SCORE", TIDE_COL_F64, 1},
    {"REVIEWER", TIDE_COL_STR, 64}, {"LABEL", TIDE_COL_STR, 8},       {"TAGS", TIDE_COL_STR, 256},
    {"COMMENT", TIDE_COL_STR, 512}, {"TIME", TIDE_COL_STR, 32}};
enum { NLABEL_COLS = sizeof label_cols / sizeof label_cols[0] };

int tide_store_labels(tide_store *s, int64_t cand_id, tide_table *out) {
    tide_table_free(out);
    tide_table_init(out);
    int st = TIDE_OK;
    for (int j = 0; j < NLABEL_COLS && !st; j++)
        st = tide_table_add_column(out, label_cols[j].name, label_cols[j].type, label_cols[j].width,
                                   NULL, NULL, NULL);
    tide_ssql *q = NULL;
    if (!st)
        st = tide_ssql_prepare(s,
                               "SELECT l.id, l.candidate_id, c.diff_id, c.seq, l.reviewer_id, "
                               "c.score, r.name, l.label, l.tags, l.comment, l.time FROM labels "
                               "l JOIN candidates c ON c.id = l.candidate_id JOIN reviewers r ON "
                               "r.id = l.reviewer_id WHERE $1 < 0 OR l.candidate_id = $1 ORDER BY "
                               "l.id",
                               &q);
    if (st)
        return st;
    tide_ssql_bind_i64(q, 1, cand_id);
    int rc;
    while ((rc = tide_ssql_step(q)) == 1) {
        const int64_t r = out->nrows;
        if ((st = tide_table_resize(out, r + 1)))
            break;
        for (int j = 0; j < NLABEL_COLS; j++) {
            tide_column *c = &out->cols[j];
            if (c->type == TIDE_COL_I64)
                ((int64_t *)c->data)[r] = tide_ssql_col_null(q, j) ? -1 : tide_ssql_col_i64(q, j);
            else if (c->type == TIDE_COL_F64)
                ((double *)c->data)[r] = tide_ssql_col_f64(q, j);
            else {
                const char *t = tide_ssql_col_text(q, j);
                char *dst = (char *)c->data + r * c->repeat;
                memset(dst, 0, (size_t)c->repeat);
                if (t)
                    memcpy(dst, t, strnlen(t, (size_t)c->repeat));
            }
        }
    }
    tide_ssql_finalize(q);
    return st ? st : rc < 0 ? rc : TIDE_OK;
}
