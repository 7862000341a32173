/* rb_source_store.c — `tide rb train --store URI`: the store's human labels (store_review.h)
 * as training examples. A candidate is an example when its real and bogus labels are not
 * tied (the majority wins; unsure labels do not count). Its features are those tide diff
 * --store kept beside it (RBF_* columns, diff_store.c: computed on the whole difference with
 * its variance and mask, as tide diff --rb-model scores). A store written before them gets
 * them from what it keeps of the candidate: the difference cutout (store.cutout_px, 63 × 63
 * by default, so the 21 × 21 stamp of rb.h lies inside it) and its fit row, positions moved
 * onto the cutout, the FWHM from its diffs row; without variance and mask there, the
 * pixel features differ (z from the stamp's robust scatter: FWHM_RATIO, ELLIP, SHARPNESS
 * by 5-14 % at the median on seed 777's pair). The group of an example is its candidate (as
 * --labels' rows): a store reviewed on one difference still has a held-out part. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_sources.h"
#include "tide/status.h"
#include "tide/store_cand.h"
#include "tide/store_review.h"

/* Columns holding x or y pixel positions (FITS 1-based), moved onto the cutout. */
static const char *const xcols[] = {"X_IMAGE", "DIP_XPOS", "DIP_XNEG", "PS_X"};
static const char *const ycols[] = {"Y_IMAGE", "DIP_YPOS", "DIP_YNEG", "PS_Y"};

/* The features tide diff --store kept (RBF_*, diff_store.c) of row 0 of @p t into @p x: 0, or
 * -1 when the row has none of this version (a store written before them). */
static int kept_features(const tide_table *t, float *x) {
    const int64_t *ver = tide_table_i64(t, "RBF_VERSION");
    if (!ver || ver[0] != TIDE_RB_FEATURES_VERSION)
        return -1;
    for (int k = 0; k < TIDE_RB_NFEAT; k++) {
        char name[72];
        snprintf(name, sizeof name, "RBF_%s", tide_rb_feature_name(k));
        const double *v = tide_table_f64(t, name);
        if (!v)
            return -1;
        x[k] = (float)v[0];
    }
    return 0;
}

/* The features of candidate @p id into @p x: those tide diff --store kept, else from the
 * stored cutout. *kept: 1 when kept. */
static int store_features(tide_store *st, int64_t id, float *x, int *kept) {
    tide_store_cand_query q;
    tide_store_cand_query_init(&q);
    q.cand_id = id;
    tide_table t;
    tide_table_init(&t);
    float *pix = NULL;
    int w = 0, h = 0;
    int rc = tide_store_candidates(st, &q, &t);
    if (!rc && t.nrows != 1)
        rc = tide_error(TIDE_E_NOTFOUND, "rb train: no candidate %lld", (long long)id);
    *kept = !rc && !kept_features(&t, x);
    if (*kept) {
        tide_table_free(&t);
        return 0;
    }
    if (!rc)
        rc = tide_store_get_cutout(st, id, TIDE_CUTOUT_DIFF, &pix, &w, &h);
    const double *X = rc ? NULL : tide_table_f64(&t, "X_IMAGE");
    const double *Y = rc ? NULL : tide_table_f64(&t, "Y_IMAGE");
    const int64_t *D = rc ? NULL : tide_table_i64(&t, "DIFF_ID");
    if (!rc && (!X || !Y || !D))
        rc = tide_error(TIDE_E_INVAL, "rb train: candidate %lld has no position", (long long)id);
    tide_store_diff d;
    tide_store_diff_init(&d);
    if (!rc)
        rc = tide_store_get_diff(st, D[0], &d);
    if (!rc) {
        /* the cutout's first pixel on the difference's grid (diff_store.c centres it on the
         * pixel nearest the candidate) */
        const double ox = (double)(llround(X[0] - 1) - w / 2),
                     oy = (double)(llround(Y[0] - 1) - h / 2);
        for (int k = 0; k < 4; k++) {
            double *cx = tide_table_f64(&t, xcols[k]), *cy = tide_table_f64(&t, ycols[k]);
            if (cx)
                cx[0] -= ox;
            if (cy)
                cy[0] -= oy;
        }
        tide_image im;
        memset(&im, 0, sizeof im);
        im.width = im.stride = w;
        im.height = h;
        im.pix = pix;
        im.location = TIDE_HOST;
        double fwhm =
            fmax(isfinite(d.fwhm_sci) ? d.fwhm_sci : 0, isfinite(d.fwhm_tmpl) ? d.fwhm_tmpl : 0);
        rc = tide_rb_table_features(&im, &t, fwhm > 0 ? fwhm : 3, NULL, 0, x);
    }
    tide_store_diff_free(&d);
    free(pix);
    tide_table_free(&t);
    return rc;
}

int rb_source_store(const char *uri, int64_t group0, rb_set *s) {
    tide_store_options opt;
    tide_store_options_init(&opt);
    opt.read_only = 1;
    tide_store *st = NULL;
    int rc = tide_store_open(uri, &opt, &st);
    tide_table L;
    tide_table_init(&L);
    if (!rc)
        rc = tide_store_labels(st, -1, &L);
    int64_t nused = 0, nreal = 0, nskip = 0, nkept = 0;
    if (!rc) {
        /* labels by candidate: one pass over them sorted by candidate */
        const int64_t n = L.nrows, *cand = tide_table_i64(&L, "CAND_ID");
        const tide_column *lab = tide_table_column(&L, "LABEL");
        int64_t *ord = malloc((size_t)(n + 1) * sizeof *ord);
        if (!ord)
            rc = tide_error(TIDE_E_NOMEM, "rb train: out of memory");
        for (int64_t i = 0; !rc && i < n; i++)
            ord[i] = i;
        for (int64_t i = 1; !rc && i < n; i++) /* insertion sort: labels come nearly ordered */
            for (int64_t j = i; j > 0 && cand[ord[j - 1]] > cand[ord[j]]; j--) {
                const int64_t tmp = ord[j];
                ord[j] = ord[j - 1], ord[j - 1] = tmp;
            }
        for (int64_t i = 0; !rc && i < n;) {
            int64_t j = i, real = 0, bogus = 0;
            for (; j < n && cand[ord[j]] == cand[ord[i]]; j++) {
                const char *v = (const char *)lab->data + ord[j] * lab->repeat;
                real += !strncmp(v, "real", 5), bogus += !strncmp(v, "bogus", 6);
            }
            if (real != bogus) {
                float x[TIDE_RB_NFEAT];
                int kept = 0;
                rc = store_features(st, cand[ord[i]], x, &kept);
                nkept += kept;
                if (!rc)
                    rc = rb_set_add(s, x, real > bogus ? 1.0f : 0.0f, group0 + cand[ord[i]]);
                nused++, nreal += real > bogus;
            } else {
                nskip++;
            }
            i = j;
        }
        free(ord);
    }
    if (!rc) {
        const size_t k = strlen(s->desc);
        snprintf(s->desc + k, sizeof s->desc - k,
                 "%sstore labels: %lld candidates (%lld real) of %s", k ? "; " : "",
                 (long long)nused, (long long)nreal, uri);
        fprintf(stderr,
                "rb train: %lld labelled candidates of %s (%lld real; features: %lld kept by "
                "tide diff, %lld from cutouts), %lld tied or unsure left out\n",
                (long long)nused, uri, (long long)nreal, (long long)nkept,
                (long long)(nused - nkept), (long long)nskip);
    }
    tide_table_free(&L);
    tide_store_close(st);
    return rc;
}
