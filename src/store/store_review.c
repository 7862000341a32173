/* store_review.c — reviewers, their tokens and labels (store_review.h), written once over
 * both back ends through store_sql.c; every value a caller gives is a bound parameter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "store_cand_cols.h"
#include "store_sql.h"
#include "tide/status.h"
#include "tide/store_review.h"

int tide_review_queue_parse(const char *name) {
    static const char *const names[] = {"uncertainty", "disagreement", "audit"};
    for (int i = 0; name && i < 3; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

/* The reviewers' token_hash column, added to stores made before it existed. */
int tide_store_review_schema(tide_store *s) {
    if (s->kind == TIDE_STORE_PG)
        return tide_ssql_exec(s, "ALTER TABLE reviewers ADD COLUMN IF NOT EXISTS token_hash text");
    int64_t have = 0;
    int st = tide_ssql_one_i64(s,
                               "SELECT count(*) FROM pragma_table_info('reviewers') WHERE name = "
                               "'token_hash'",
                               0, 0, 0, &have);
    if (!st && !have)
        st = tide_ssql_exec(s, "ALTER TABLE reviewers ADD COLUMN token_hash TEXT");
    return st;
}

/* Now as ISO 8601 UTC. */
static void iso_now(char *out, size_t n) {
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

/* The SHA-256 of a token as stored; 0, or -1 when @p token is not 64 hex digits. */
static int token_hash(const char *token, char out[65]) {
    if (!token || strlen(token) != TIDE_REVIEW_TOKEN_LEN ||
        strspn(token, "0123456789abcdef") != TIDE_REVIEW_TOKEN_LEN)
        return -1;
    tide_store_sha256_hex(token, TIDE_REVIEW_TOKEN_LEN, out);
    return 0;
}

int tide_store_add_reviewer(tide_store *s, const char *name, char *token, int64_t *id) {
    if (!s || !name || !token)
        return tide_error(TIDE_E_INVAL, "store: add reviewer: no name");
    if (s->opt.read_only)
        return tide_error(TIDE_E_INVAL, "store %s: read-only: cannot add a reviewer", s->target);
    const size_t len = strlen(name);
    int ok = len >= 1 && len <= 63;
    for (size_t i = 0; ok && i < len; i++)
        ok = (unsigned char)name[i] > 32 && (unsigned char)name[i] < 127;
    if (!ok)
        return tide_error(TIDE_E_INVAL,
                          "store %s: reviewer name must be 1-63 printable characters without "
                          "spaces",
                          s->target);
    unsigned char raw[32];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
        if (r <= 0)
            return tide_error(TIDE_E_IO, "store: add reviewer: getrandom failed");
        got += (size_t)r;
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        token[2 * i] = hex[raw[i] >> 4];
        token[2 * i + 1] = hex[raw[i] & 15];
    }
    token[TIDE_REVIEW_TOKEN_LEN] = 0;
    char h[65], now[32];
    token_hash(token, h);
    iso_now(now, sizeof now);
    int64_t taken = 0;
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s, "SELECT count(*) FROM reviewers WHERE name = $1", &q);
    if (!st) {
        tide_ssql_bind_text(q, 1, name);
        st = tide_ssql_step(q);
        taken = st == 1 ? tide_ssql_col_i64(q, 0) : 0;
        st = st < 0 ? st : 0;
    }
    tide_ssql_finalize(q);
    q = NULL;
    if (!st && taken)
        return tide_error(TIDE_E_INVAL, "store %s: there is already a reviewer called %s",
                          s->target, name);
    if (!st)
        st = tide_ssql_prepare(s,
                               "INSERT INTO reviewers (name, created, token_hash) VALUES ($1, $2, "
                               "$3) RETURNING id",
                               &q);
    if (!st) {
        tide_ssql_bind_text(q, 1, name);
        tide_ssql_bind_text(q, 2, now);
        tide_ssql_bind_text(q, 3, h);
        st = tide_ssql_step(q);
        if (st == 1 && id)
            *id = tide_ssql_col_i64(q, 0);
        st = st < 0 ? st : 0;
    }
    tide_ssql_finalize(q);
    return st;
}

int tide_store_reviewer_by_token(tide_store *s, const char *token, int64_t *id, char *name,
                                 int cap) {
    char h[65];
    if (!s || token_hash(token, h))
        return TIDE_E_NOTFOUND;
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s, "SELECT id, name FROM reviewers WHERE token_hash = $1", &q);
    if (!st) {
        tide_ssql_bind_text(q, 1, h);
        st = tide_ssql_step(q);
        if (st == 1) {
            if (id)
                *id = tide_ssql_col_i64(q, 0);
            if (name && cap > 0)
                snprintf(name, (size_t)cap, "%s", tide_ssql_col_text(q, 1));
            st = 0;
        } else if (st == 0) {
            st = TIDE_E_NOTFOUND;
        }
    }
    tide_ssql_finalize(q);
    return st;
}

int tide_store_reviewer_id(tide_store *s, const char *name, int64_t *id) {
    tide_ssql *q = NULL;
    int st = tide_ssql_prepare(s, "SELECT id FROM reviewers WHERE name = $1", &q);
    if (!st) {
        tide_ssql_bind_text(q, 1, name);
        st = tide_ssql_step(q);
        if (st == 1)
            *id = tide_ssql_col_i64(q, 0), st = 0;
        else if (st == 0)
            st = tide_error(TIDE_E_NOTFOUND, "store %s: no reviewer called %s", s->target, name);
    }
    tide_ssql_finalize(q);
    return st;
}

int tide_store_put_label(tide_store *s, int64_t cand_id, int64_t reviewer_id, const char *label,
                         const char *tags, const char *comment) {
    if (!s || !label ||
        (strcmp(label, "real") && strcmp(label, "bogus") && strcmp(label, "unsure")))
        return tide_error(TIDE_E_INVAL, "store: a label is real, bogus or unsure");
    if ((tags && strlen(tags) > 1000) || (comment && strlen(comment) > 1000))
        return tide_error(TIDE_E_INVAL, "store: a label's tags and comment are 1000 bytes at most");
    if (s->opt.read_only)
        return tide_error(TIDE_E_INVAL, "store %s: read-only: cannot label", s->target);
    int64_t nc = 0, nr = 0;
    int st =
        tide_ssql_one_i64(s, "SELECT count(*) FROM candidates WHERE id = $1", 1, cand_id, 0, &nc);
    if (!st)
        st = tide_ssql_one_i64(s, "SELECT count(*) FROM reviewers WHERE id = $1", 1, reviewer_id, 0,
                               &nr);
    if (!st && (!nc || !nr))
        return tide_error(TIDE_E_NOTFOUND, "store %s: no %s %lld", s->target,
                          nc ? "reviewer" : "candidate", (long long)(nc ? reviewer_id : cand_id));
    char now[32];
    iso_now(now, sizeof now);
    if (!st)
        st = tide_ssql_begin(s);
    if (st)
        return st;
    const int64_t key[2] = {cand_id, reviewer_id};
    st = tide_ssql_run_i64(s, "DELETE FROM labels WHERE candidate_id = $1 AND reviewer_id = $2", 2,
                           key);
    tide_ssql *q = NULL;
    if (!st)
        st = tide_ssql_prepare(s,
                               "INSERT INTO labels (candidate_id, reviewer_id, label, tags, "
                               "comment, time) VALUES ($1, $2, $3, $4, $5, $6)",
                               &q);
    if (!st) {
        tide_ssql_bind_i64(q, 1, cand_id);
        tide_ssql_bind_i64(q, 2, reviewer_id);
        tide_ssql_bind_text(q, 3, label);
        tide_ssql_bind_text(q, 4, tags && *tags ? tags : NULL);
        tide_ssql_bind_text(q, 5, comment && *comment ? comment : NULL);
        tide_ssql_bind_text(q, 6, now);
        st = tide_ssql_step(q);
        st = st < 0 ? st : 0;
    }
    tide_ssql_finalize(q);
    if (!st)
        st = tide_ssql_commit(s);
    return st ? tide_ssql_rollback(s, st, " (saving a label)") : TIDE_OK;
}
