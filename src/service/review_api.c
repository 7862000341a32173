/* review_api.c — the review API's answers (docs/review.md): queues, a candidate with its fit
 * values, labels and light curve, its stamps as PNG at one shared stretch, the reviewer's
 * summary, and labels written. Every value from the request is checked here (ids are digits,
 * the stamp kind one of four names, the label one of three) and reaches SQL bound. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/review_internal.h"
#include "tide/png.h"
#include "tide/status.h"
#include "tide/store_cand.h"
#include "tide/store_review.h"

void review_error(review_reply *r, unsigned int code, const char *msg) {
    json_t *o = json_pack("{ss}", "error", msg);
    r->code = code;
    r->type = "application/json";
    r->body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    r->len = r->body ? strlen(r->body) : 0;
    json_decref(o);
}

/* @p o as the answer (taken). */
static void reply_json(review_reply *r, json_t *o) {
    r->code = 200;
    r->type = "application/json";
    r->body =
        o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) : NULL;
    r->len = r->body ? strlen(r->body) : 0;
    json_decref(o);
    if (!r->body)
        review_error(r, 500, "out of memory");
}

/* A whole decimal id (1..18 digits) from @p s up to @p end (NULL: the string's end). */
static int parse_id(const char *s, const char *end, int64_t *id) {
    const size_t n = end ? (size_t)(end - s) : strlen(s);
    if (n < 1 || n > 18 || strspn(s, "0123456789") < n)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    *id = v;
    return 0;
}

static json_t *num_or_null(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static const char *table_str(const tide_table *t, const char *name, int64_t r, char *buf,
                             size_t cap) {
    const tide_column *c = tide_table_column(t, name);
    if (!c || c->type != TIDE_COL_STR)
        return "";
    const size_t n = strnlen((const char *)c->data + r * c->repeat, (size_t)c->repeat);
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), (const char *)c->data + r * c->repeat);
    return buf;
}

/* Candidate @p id's labels as a JSON array; *mine its index of reviewer @p who (or -1). */
static json_t *labels_json(tide_store *s, int64_t id, int64_t who, json_t **mine) {
    tide_table t;
    tide_table_init(&t);
    json_t *a = json_array();
    *mine = NULL;
    if (tide_store_labels(s, id, &t) == 0) {
        const int64_t *rid = tide_table_i64(&t, "REVIEWER_ID");
        for (int64_t r = 0; r < t.nrows; r++) {
            char b[5][600];
            json_t *o = json_pack("{sIssssssssss}", "reviewer_id", (json_int_t)rid[r], "reviewer",
                                  table_str(&t, "REVIEWER", r, b[0], sizeof b[0]), "label",
                                  table_str(&t, "LABEL", r, b[1], sizeof b[1]), "tags",
                                  table_str(&t, "TAGS", r, b[2], sizeof b[2]), "comment",
                                  table_str(&t, "COMMENT", r, b[3], sizeof b[3]), "time",
                                  table_str(&t, "TIME", r, b[4], sizeof b[4]));
            if (!o) /* a text that is not UTF-8 */
                o = json_pack("{sIss}", "reviewer_id", (json_int_t)rid[r], "label", "?");
            if (rid[r] == who && !*mine)
                *mine = json_incref(o);
            json_array_append_new(a, o);
        }
    }
    tide_table_free(&t);
    return a;
}

/* The value of column @p name in row @p r, as a double (NaN when missing). */
static double cell(const tide_table *t, const char *name, int64_t r) {
    const tide_column *c = tide_table_column(t, name);
    if (!c)
        return NAN;
    if (c->type == TIDE_COL_I64)
        return (double)((const int64_t *)c->data)[r];
    if (c->type == TIDE_COL_F64)
        return ((const double *)c->data)[r];
    return NAN;
}

/* GET /api/candidates/ID */
static void get_candidate(tide_store *s, const review_who *who, int64_t id, review_reply *r) {
    tide_store_cand_query q;
    tide_store_cand_query_init(&q);
    q.cand_id = id;
    tide_table t;
    tide_table_init(&t);
    if (tide_store_candidates(s, &q, &t) || t.nrows != 1) {
        tide_table_free(&t);
        review_error(r, 404, "no such candidate");
        return;
    }
    json_t *fit = json_object();
    for (int j = 0; j < t.ncols; j++) {
        const char *n = t.cols[j].name;
        if (strcmp(n, "CAND_ID") && strcmp(n, "DIFF_ID") && strcmp(n, "SEQ") &&
            strcmp(n, "OBJECT_ID") && strcmp(n, "CELL") && strcmp(n, "SCORE") && strcmp(n, "MJD"))
            json_object_set_new(fit, n, num_or_null(cell(&t, n, 0)));
    }
    const int64_t obj = (int64_t)cell(&t, "OBJECT_ID", 0);
    json_t *mine = NULL;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(id));
    json_object_set_new(o, "diff_id", json_integer((json_int_t)cell(&t, "DIFF_ID", 0)));
    json_object_set_new(o, "seq", json_integer((json_int_t)cell(&t, "SEQ", 0)));
    json_object_set_new(o, "object_id", obj >= 0 ? json_integer(obj) : json_null());
    json_object_set_new(o, "mjd", num_or_null(cell(&t, "MJD", 0)));
    json_object_set_new(o, "score", num_or_null(cell(&t, "SCORE", 0)));
    json_object_set_new(o, "fit", fit);
    json_object_set_new(o, "labels", labels_json(s, id, who->reviewer, &mine));
    json_object_set_new(o, "my_label", mine ? mine : json_null());
    json_t *kinds = json_array();
    for (int k = 0; k < 4; k++) {
        float *pix = NULL;
        int w, h;
        if (!tide_store_get_cutout(s, id, k, &pix, &w, &h))
            json_array_append_new(kinds, json_string(tide_cutout_kind_name(k)));
        free(pix);
    }
    json_object_set_new(o, "stamps", kinds);
    tide_table_free(&t);
    /* the light curve: the object's detections */
    json_t *lc = json_array();
    if (obj >= 0) {
        tide_store_cand_query_init(&q);
        q.object_id = obj;
        tide_table_init(&t);
        if (!tide_store_candidates(s, &q, &t))
            for (int64_t i = 0; i < t.nrows; i++)
                json_array_append_new(
                    lc, json_pack("{sIsososo}", "id", (json_int_t)cell(&t, "CAND_ID", i), "mjd",
                                  num_or_null(cell(&t, "MJD", i)), "flux",
                                  num_or_null(cell(&t, "FLUX", i)), "flux_err", /* 1 sigma */
                                  num_or_null(fabs(cell(&t, "FLUX", i)) / cell(&t, "SNR", i))));
        tide_table_free(&t);
    }
    json_object_set_new(o, "light_curve", lc);
    reply_json(r, o);
}

/* GET /api/candidates/ID/stamp/KIND.png: the four stamps share the limits of the broadest
 * (symmetric, from the stamps' own rule: tide diff's candidates.png draws the same way). */
static void get_stamp(tide_store *s, int64_t id, const char *kind_png, review_reply *r) {
    int kind = -1;
    for (int k = 0; k < 4; k++) {
        char want[32];
        snprintf(want, sizeof want, "%s.png", tide_cutout_kind_name(k));
        if (!strcmp(kind_png, want))
            kind = k;
    }
    if (kind < 0) {
        review_error(r, 404, "no such stamp: science, template, diff or residual .png");
        return;
    }
    tide_png_stretch st;
    tide_png_stamp_stretch(&st);
    double hi = 0;
    float *mine = NULL;
    int mw = 0, mh = 0;
    for (int k = 0; k < 4; k++) {
        float *pix = NULL;
        int w, h;
        if (tide_store_get_cutout(s, id, k, &pix, &w, &h))
            continue;
        double lo_k, hi_k;
        tide_png_limits(pix, w, h, w, &st, &lo_k, &hi_k);
        hi = fmax(hi, fmax(fabs(lo_k), fabs(hi_k)));
        if (k == kind)
            mine = pix, mw = w, mh = h;
        else
            free(pix);
    }
    if (!mine) {
        review_error(r, 404, "no such stamp for this candidate");
        return;
    }
    st.lo = -(hi > 0 ? hi : 1);
    st.hi = hi > 0 ? hi : 1;
    st.scale = mw < 40 ? 8 : 4;
    unsigned char *png = NULL;
    size_t n = 0;
    int rc = tide_png_encode_image(mine, mw, mh, mw, &st, &png, &n);
    free(mine);
    if (rc) {
        review_error(r, 500, "cannot draw the stamp");
        return;
    }
    r->code = 200;
    r->type = "image/png";
    r->body = (char *)png;
    r->len = n;
}

/* GET /api/queue?by=...&limit=N */
static void get_queue(tide_store *s, uint64_t seed, const review_who *who, const char *by,
                      const char *limit_s, review_reply *r) {
    const int kind = tide_review_queue_parse(by ? by : "uncertainty");
    int64_t limit = 50;
    if (kind < 0 || (limit_s && (parse_id(limit_s, NULL, &limit) || limit < 1 || limit > 10000))) {
        review_error(r, 400, "by= uncertainty, disagreement or audit; limit= 1..10000");
        return;
    }
    int64_t *ids = malloc((size_t)limit * sizeof *ids), n = 0;
    if (!ids || tide_store_review_queue(s, kind, who->reviewer, limit, seed, ids, &n)) {
        free(ids);
        review_error(r, 500, "the queue could not be read");
        return;
    }
    json_t *a = json_array();
    for (int64_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer(ids[i]));
    free(ids);
    reply_json(r, json_pack("{sssIso}", "by", by ? by : "uncertainty", "limit", (json_int_t)limit,
                            "ids", a));
}

/* POST /api/candidates/ID/label {"label": ..., "tags": ..., "comment": ...} */
static void post_label(tide_store *s, const review_who *who, int64_t id, const char *body,
                       review_reply *r) {
    json_error_t e;
    json_t *in = json_loads(body ? body : "", 0, &e);
    const char *label = NULL, *tags = NULL, *comment = NULL;
    if (!in ||
        json_unpack(in, "{ss s?s s?s}", "label", &label, "tags", &tags, "comment", &comment)) {
        json_decref(in);
        review_error(r, 400,
                     "expected {\"label\": \"real|bogus|unsure\", \"tags\": ..., "
                     "\"comment\": ...}");
        return;
    }
    const int st = tide_store_put_label(s, id, who->reviewer, label, tags, comment);
    json_decref(in);
    if (st == TIDE_E_NOTFOUND)
        review_error(r, 404, "no such candidate");
    else if (st == TIDE_E_INVAL)
        review_error(r, 400, "a label is real, bogus or unsure; tags and comment 1000 bytes");
    else if (st)
        review_error(r, 500, "the label could not be saved");
    else {
        json_t *mine = NULL;
        json_t *all = labels_json(s, id, who->reviewer, &mine);
        json_decref(all);
        reply_json(
            r, json_pack("{sIso}", "id", (json_int_t)id, "my_label", mine ? mine : json_null()));
    }
}

/* GET /api/summary */
static void get_summary(tide_store *s, const review_who *who, review_reply *r) {
    tide_review_summary m;
    if (tide_store_review_summary(s, who->reviewer, &m)) {
        review_error(r, 500, "the summary could not be read");
        return;
    }
    json_t *o = json_pack("{sIsssIsIsIsI}", "reviewer_id", (json_int_t)who->reviewer, "reviewer",
                          who->name, "labels", (json_int_t)m.nlabels, "real", (json_int_t)m.nreal,
                          "bogus", (json_int_t)m.nbogus, "unsure", (json_int_t)m.nunsure);
    json_object_set_new(o, "pairs_with_others", json_integer(m.npairs));
    json_object_set_new(o, "agreement_with_others",
                        m.npairs ? json_real((double)m.nagree / (double)m.npairs) : json_null());
    json_object_set_new(o, "scored_labels", json_integer(m.nmodel));
    json_object_set_new(o, "agreement_with_model",
                        m.nmodel ? json_real((double)m.nmodel_agree / (double)m.nmodel)
                                 : json_null());
    reply_json(r, o);
}

void review_api(tide_store *s, uint64_t seed, const review_who *who, const char *method,
                const char *url, const char *body, const char *query_by, const char *query_limit,
                review_reply *r) {
    const int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    static const char cands[] = "/api/candidates/";
    if (!strcmp(url, "/api/queue") && get)
        return get_queue(s, seed, who, query_by, query_limit, r);
    if (!strcmp(url, "/api/summary") && get)
        return get_summary(s, who, r);
    if (!strncmp(url, cands, sizeof cands - 1)) {
        const char *p = url + sizeof cands - 1, *slash = strchr(p, '/');
        int64_t id;
        if (parse_id(p, slash, &id))
            return review_error(r, 404, "not found");
        if (!slash && get)
            return get_candidate(s, who, id, r);
        if (slash && !strcmp(slash, "/label") && post)
            return post_label(s, who, id, body, r);
        if (slash && !strncmp(slash, "/stamp/", 7) && get)
            return get_stamp(s, id, slash + 7, r);
    }
    review_error(r, 404, "not found");
}
