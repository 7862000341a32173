/* test_store_review.c — reviewers, tokens, labels and the review queues (store_review.h) on
 * SQLite and, when TIDE_TEST_PG names a server (tests/cli/test_review_api.sh starts one), on
 * PostgreSQL: tokens are 64 hex digits that find their reviewer and nothing else finds, a
 * label replaces the reviewer's previous one, the uncertainty queue is |score − 0.5|
 * ascending with the reviewer's labelled candidates and the unscored last, the disagreement
 * queue holds exactly the candidates with differing labels or a label against the score,
 * the audit sample is fixed by its seed, the summary counts agree with the labels, and a
 * store made before the token column gets it when opened.
 * Public API only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tide/store.h"
#include "tide/store_cand.h"
#include "tide/store_review.h"
#include "tide_test.h"

/* Scores of the ten candidates (NaN: unscored). */
static const double SCORE[10] = {0.1, 0.45, 0.52, 0.9, 0.7, 0.3, NAN, 0.61, 0.05, 0.49};

static void one_diff(tide_store *s) {
    tide_table t;
    tide_table_init(&t);
    static const char *const cols[] = {"X_IMAGE", "Y_IMAGE", "ALPHA_J2000", "DELTA_J2000",
                                       "RB_SCORE"};
    for (int k = 0; k < 5; k++)
        CHECK_OK(tide_table_add_column(&t, cols[k], TIDE_COL_F64, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_resize(&t, 10));
    for (int r = 0; r < 10; r++) {
        tide_table_f64(&t, "X_IMAGE")[r] = 100 + 50 * r;
        tide_table_f64(&t, "Y_IMAGE")[r] = 200;
        tide_table_f64(&t, "ALPHA_J2000")[r] = 150 + 0.01 * r;
        tide_table_f64(&t, "DELTA_J2000")[r] = 2;
        tide_table_f64(&t, "RB_SCORE")[r] = SCORE[r];
    }
    tide_store_diff d;
    tide_store_diff_init(&d);
    tide_store_sha256_hex("sci", 3, d.sci_checksum);
    tide_store_sha256_hex("tmpl", 4, d.tmpl_checksum);
    CHECK_OK(tide_store_put_diff(s, &d, &t, NULL, 0, 1.0, NULL));
    tide_table_free(&t);
}

/* The queue as ids. */
static int64_t queue(tide_store *s, int kind, int64_t who, uint64_t seed, int64_t *ids) {
    int64_t n = -1;
    CHECK_OK(tide_store_review_queue(s, kind, who, 100, seed, ids, &n));
    return n;
}

static void run_store(const char *uri) {
    printf("store %s\n", uri);
    tide_store *s = NULL;
    CHECK_OK(tide_store_open(uri, NULL, &s));
    if (!s)
        return;
    if (tide_store_get_kind(s) == TIDE_STORE_PG) { /* a server other tests used: anew */
        CHECK_OK(tide_store_exec(s, "DROP TABLE IF EXISTS diffs, candidates, cutouts, objects, "
                                    "labels, reviewers"));
        tide_store_close(s);
        s = NULL;
        CHECK_OK(tide_store_open(uri, NULL, &s));
        if (!s)
            return;
    }
    /* a store made before the tokens: reopening adds token_hash */
    CHECK_OK(tide_store_exec(s, "ALTER TABLE reviewers DROP COLUMN token_hash"));
    tide_store_close(s);
    s = NULL;
    CHECK_OK(tide_store_open(uri, NULL, &s));
    if (!s)
        return;
    one_diff(s);
    /* candidate ids: 1..10 in row order */
    char ta[TIDE_REVIEW_TOKEN_LEN + 1], tb[TIDE_REVIEW_TOKEN_LEN + 1], name[64];
    int64_t a = -1, b = -1, id = -1;
    CHECK_OK(tide_store_add_reviewer(s, "alice", ta, &a));
    CHECK_OK(tide_store_add_reviewer(s, "bob", tb, &b));
    CHECK(a > 0 && b > 0 && a != b);
    CHECK(strlen(ta) == 64 && strspn(ta, "0123456789abcdef") == 64 && strcmp(ta, tb));
    char tc[TIDE_REVIEW_TOKEN_LEN + 1];
    CHECK(tide_store_add_reviewer(s, "alice", tc, NULL) == TIDE_E_INVAL);
    CHECK(tide_store_add_reviewer(s, "has space", tc, NULL) == TIDE_E_INVAL);
    CHECK_OK(tide_store_reviewer_by_token(s, ta, &id, name, sizeof name));
    CHECK(id == a && !strcmp(name, "alice"));
    CHECK_OK(tide_store_reviewer_by_token(s, tb, &id, name, sizeof name));
    CHECK(id == b && !strcmp(name, "bob"));
    char bad[TIDE_REVIEW_TOKEN_LEN + 1];
    memcpy(bad, ta, sizeof bad);
    bad[10] = bad[10] == '0' ? '1' : '0';
    CHECK(tide_store_reviewer_by_token(s, bad, &id, NULL, 0) == TIDE_E_NOTFOUND);
    CHECK(tide_store_reviewer_by_token(s, "", &id, NULL, 0) == TIDE_E_NOTFOUND);
    CHECK(tide_store_reviewer_by_token(s, "' OR 1=1 --", &id, NULL, 0) == TIDE_E_NOTFOUND);
    bad[10] = 'G';
    CHECK(tide_store_reviewer_by_token(s, bad, &id, NULL, 0) == TIDE_E_NOTFOUND);
    CHECK_OK(tide_store_reviewer_id(s, "bob", &id));
    CHECK(id == b);
    CHECK(tide_store_reviewer_id(s, "carol", &id) == TIDE_E_NOTFOUND);

    /* uncertainty: |score - 0.5| ascending, unscored last */
    int64_t ids[100], n;
    static const int64_t want_u[10] = {10, 3, 2, 8, 5, 6, 1, 4, 9, 7};
    n = queue(s, TIDE_QUEUE_UNCERTAINTY, a, 1, ids);
    CHECK(n == 10);
    for (int i = 0; i < 10 && n == 10; i++)
        CHECK(ids[i] == want_u[i]);
    /* labels: bad ones refused */
    CHECK(tide_store_put_label(s, 10, a, "maybe", NULL, NULL) == TIDE_E_INVAL);
    CHECK(tide_store_put_label(s, 999, a, "real", NULL, NULL) == TIDE_E_NOTFOUND);
    CHECK(tide_store_put_label(s, 10, 999, "real", NULL, NULL) == TIDE_E_NOTFOUND);
    /* alice: 10 bogus then real (replaced), 4 real (agrees, score 0.9), 1 real (against 0.1),
     * 8 unsure; bob: 10 bogus (disagrees with alice), 4 real (agrees) */
    CHECK_OK(tide_store_put_label(s, 10, a, "bogus", "x", NULL));
    CHECK_OK(tide_store_put_label(s, 10, a, "real", "streak, faint", "looks 'odd'; \"quoted\""));
    CHECK_OK(tide_store_put_label(s, 4, a, "real", NULL, NULL));
    CHECK_OK(tide_store_put_label(s, 1, a, "real", NULL, NULL));
    CHECK_OK(tide_store_put_label(s, 8, a, "unsure", NULL, NULL));
    CHECK_OK(tide_store_put_label(s, 10, b, "bogus", NULL, NULL));
    CHECK_OK(tide_store_put_label(s, 4, b, "real", NULL, NULL));
    tide_table L;
    tide_table_init(&L);
    CHECK_OK(tide_store_labels(s, -1, &L));
    CHECK(L.nrows == 6);
    CHECK_OK(tide_store_labels(s, 10, &L));
    CHECK(L.nrows == 2);
    if (L.nrows == 2) {
        const tide_column *lab = tide_table_column(&L, "LABEL"),
                          *tg = tide_table_column(&L, "TAGS"),
                          *cm = tide_table_column(&L, "COMMENT"),
                          *rv = tide_table_column(&L, "REVIEWER");
        CHECK(!strcmp((char *)lab->data, "real") && !strcmp((char *)tg->data, "streak, faint"));
        CHECK(!strcmp((char *)cm->data, "looks 'odd'; \"quoted\""));
        CHECK(!strcmp((char *)rv->data, "alice"));
        CHECK(!strcmp((char *)lab->data + lab->repeat, "bogus"));
        CHECK(fabs(tide_table_f64(&L, "SCORE")[0] - 0.49) < 1e-12);
        CHECK(tide_table_i64(&L, "SEQ")[0] == 10);
    }
    tide_table_free(&L);
    /* alice's labelled ones go last in her queue, in the same order; bob's queue keeps 8 */
    static const int64_t want_ua[10] = {3, 2, 5, 6, 9, 7, 10, 8, 1, 4};
    n = queue(s, TIDE_QUEUE_UNCERTAINTY, a, 1, ids);
    CHECK(n == 10);
    for (int i = 0; i < 10 && n == 10; i++)
        CHECK(ids[i] == want_ua[i]);
    n = queue(s, TIDE_QUEUE_UNCERTAINTY, b, 1, ids);
    CHECK(n == 10 && ids[0] == 3 && ids[2] == 8 && ids[8] == 10 && ids[9] == 4);
    /* disagreement: 10 (real/bogus) first, then 1 (real against 0.1) and 8? unsure alone
     * is no disagreement */
    n = queue(s, TIDE_QUEUE_DISAGREEMENT, a, 1, ids);
    CHECK(n == 2 && ids[0] == 10 && ids[1] == 1);
    /* bob agrees on 1 now: 1 stays (against the score) */
    CHECK_OK(tide_store_put_label(s, 1, b, "real", NULL, NULL));
    n = queue(s, TIDE_QUEUE_DISAGREEMENT, b, 1, ids);
    CHECK(n == 2 && ids[0] == 10 && ids[1] == 1);
    /* audit: every candidate once, the same for a seed, another order for another */
    int64_t a1[100], a2[100], a3[100];
    const int64_t n1 = queue(s, TIDE_QUEUE_AUDIT, -1, 7, a1),
                  n2 = queue(s, TIDE_QUEUE_AUDIT, -1, 7, a2),
                  n3 = queue(s, TIDE_QUEUE_AUDIT, -1, 12345, a3);
    CHECK(n1 == 10 && n2 == 10 && n3 == 10);
    int seen[11] = {0}, same = 1, differs = 0;
    for (int i = 0; i < 10 && n1 == 10 && n3 == 10; i++) {
        seen[a1[i] >= 1 && a1[i] <= 10 ? a1[i] : 0]++;
        same &= a1[i] == a2[i];
        differs |= a1[i] != a3[i];
    }
    for (int i = 1; i <= 10; i++)
        CHECK(seen[i] == 1);
    CHECK(same && differs);
    int64_t lim = -1;
    CHECK_OK(tide_store_review_queue(s, TIDE_QUEUE_AUDIT, -1, 3, 7, ids, &lim));
    CHECK(lim == 3 && ids[0] == a1[0] && ids[2] == a1[2]);
    /* summaries */
    tide_review_summary m;
    CHECK_OK(tide_store_review_summary(s, a, &m));
    CHECK(m.nlabels == 4 && m.nreal == 3 && m.nbogus == 0 && m.nunsure == 1);
    CHECK(m.npairs == 3 && m.nagree == 2);       /* 10 differs, 4 and 1 agree */
    CHECK(m.nmodel == 3 && m.nmodel_agree == 1); /* real: 10 (0.49) no, 4 (0.9) yes, 1 no */
    CHECK_OK(tide_store_review_summary(s, b, &m));
    CHECK(m.nlabels == 3 && m.npairs == 3 && m.nagree == 2 && m.nmodel == 3 && m.nmodel_agree == 2);
    CHECK(tide_review_queue_parse("audit") == TIDE_QUEUE_AUDIT);
    CHECK(tide_review_queue_parse("AUDIT") == -1 && tide_review_queue_parse(NULL) == -1);
    tide_store_close(s);
}

int main(void) {
    char path[] = "/tmp/tide-review-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    char uri[64];
    snprintf(uri, sizeof uri, "sqlite:%s", path);
    run_store(uri);
    const char *pg = getenv("TIDE_TEST_PG");
    if (pg && *pg)
        run_store(pg);
    else
        printf("PostgreSQL part skipped (no TIDE_TEST_PG)\n");
    char side[96];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    return tide_test_failures ? 1 : 0;
}
