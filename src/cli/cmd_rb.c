/* cmd_rb.c — `tide rb train` (and the dispatch of `tide rb score`, cmd_rb_score.c): the
 * real/bogus model of difference candidates (rb.h). train gathers labelled examples from its
 * sources (rb_sources.h), holds one pair in five out, trains the model on the rest and writes
 * it with its ROC curve, feature importance and a JSON summary, all or nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "rb_sources.h"
#include "tide/outfile.h"

static const char *help_train =
    "usage: tide rb train -o MODEL.json [--sim N] [--labels CSV --candidates FILE.fits]\n"
    "                     [--store URI]\n"
    "                     [OPTIONS]\n"
    "\n"
    "Train the real/bogus model of difference candidates: a gradient-boosted tree model\n"
    "(XGBoost) on the features of rb.h, from labelled examples of one or more sources. One\n"
    "pair (or labelled row) in five is held out; the model is trained on the others and its\n"
    "AUC on the held-out part is recorded in the model file.\n"
    "\n"
    "sources:\n"
    "  --sim N              N simulated pairs with truth (tide sim's epochs 1 and 2,\n"
    "                       differenced by tide diff): transients, variables and movers are\n"
    "                       real, every other candidate bogus\n"
    "  --seed S             first seed of the pairs [1]\n"
    "  --size PX            side of the simulated frames [768]\n"
    "  --labels CSV         ROW,LABEL lines (1-based row of --candidates, 1/0/real/bogus)\n"
    "  --candidates FILE    the candidates.fits the labels refer to\n"
    "  --difference FILE    its difference image [difference.fits beside it]\n"
    "  --store URI          the human labels of a candidate store (tide review): each\n"
    "                       candidate by its majority real/bogus label, features from its\n"
    "                       stored difference cutout and fit row\n"
    "\n"
    "outputs (MODEL's stem: MODEL without .json):\n"
    "  MODEL                the model (XGBoost JSON with tide's attributes)\n"
    "  STEM.roc.png         ROC curve of the held-out examples\n"
    "  STEM.importance.png  gain importance of each feature\n"
    "  STEM.summary.json    counts, AUC, timings, importance\n"
    "\n"
    "options:\n"
    "  --rounds N           boosting rounds [100]\n"
    "  --depth N            tree depth [5]\n"
    "  --eta X              learning rate [0.1]\n"
    "  --train-threads N    threads of training (results do not depend on others) [2]\n"
    "  --examples CSV       also write every example: group, label, held-out flag, the\n"
    "                       held-out score, features\n";

/* MODEL's stem: the path without a trailing .json. */
static void stem_of(const char *model, char *out, size_t n) {
    snprintf(out, n, "%s", model);
    const size_t l = strlen(out);
    if (l > 5 && !strcmp(out + l - 5, ".json"))
        out[l - 5] = 0;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The held-out part: one group in five. */
static int held_out(int64_t group) {
    return group % 5 == 4;
}

typedef struct train_out {
    int64_t ntrain, ntrain_real, ntest, ntest_real;
    double auc, ms_train, ms_predict;
    double gain[TIDE_RB_NFEAT];
} train_out;

static int write_summary(const char *path, const char *model, const rb_set *s, const train_out *o,
                         const tide_rb_train_params *tp) {
    tide_outfile of;
    FILE *f = NULL;
    int st = tide_outfile_open(&of, path, &f);
    if (st)
        return st;
    fprintf(f, "{\n  \"model\": ");
    tide_cli_json_string(f, model);
    fprintf(f, ",\n  \"features_version\": %d,\n  \"training_set\": ", TIDE_RB_FEATURES_VERSION);
    tide_cli_json_string(f, s->desc);
    fprintf(f,
            ",\n  \"n_train\": %lld,\n  \"n_train_real\": %lld,\n  \"n_heldout\": %lld,\n"
            "  \"n_heldout_real\": %lld,\n  \"auc_heldout\": %.6f,\n",
            (long long)o->ntrain, (long long)o->ntrain_real, (long long)o->ntest,
            (long long)o->ntest_real, o->auc);
    fprintf(f,
            "  \"rounds\": %d,\n  \"max_depth\": %d,\n  \"eta\": %g,\n  \"ms_train\": %.1f,\n"
            "  \"ms_predict_10000\": %.3f,\n  \"importance_gain\": {",
            tp->rounds, tp->max_depth, tp->eta, o->ms_train, o->ms_predict);
    for (int i = 0; i < TIDE_RB_NFEAT; i++)
        fprintf(f, "%s\n    \"%s\": %.6g", i ? "," : "", tide_rb_feature_name(i), o->gain[i]);
    fprintf(f, "\n  }\n}\n");
    return tide_outfile_close(&of, f);
}

/* --examples: every row of the set as CSV, for a look at what the model learns from. */
static int write_examples(const char *path, const rb_set *s, const float *heldout_score) {
    tide_outfile of;
    FILE *f = NULL;
    int st = tide_outfile_open(&of, path, &f);
    if (st)
        return st;
    fprintf(f, "GROUP,LABEL,HELDOUT,SCORE");
    for (int i = 0; i < TIDE_RB_NFEAT; i++)
        fprintf(f, ",%s", tide_rb_feature_name(i));
    fprintf(f, "\n");
    int64_t k = 0;
    for (int64_t r = 0; r < s->n; r++) {
        const int t = held_out(s->group[r]);
        fprintf(f, "%lld,%d,%d,%.6g", (long long)s->group[r], s->y[r] > 0.5f, t,
                t ? heldout_score[k++] : NAN);
        for (int i = 0; i < TIDE_RB_NFEAT; i++)
            fprintf(f, ",%.6g", s->x[(size_t)r * TIDE_RB_NFEAT + i]);
        fprintf(f, "\n");
    }
    return tide_outfile_close(&of, f);
}

/* Train on the kept part of @p s, measure it on the held-out part, write everything. */
static int train_and_write(const rb_set *s, const tide_rb_train_params *tp, const char *model,
                           const char *examples, train_out *o) {
    memset(o, 0, sizeof *o);
    const int64_t n = s->n;
    float *xa = malloc((size_t)(n + 1) * TIDE_RB_NFEAT * sizeof *xa),
          *ya = malloc((size_t)(n + 1) * sizeof *ya);
    float *xb = malloc((size_t)(n + 1) * TIDE_RB_NFEAT * sizeof *xb),
          *yb = malloc((size_t)(n + 1) * sizeof *yb);
    float *sc = malloc((size_t)(n + 1) * sizeof *sc);
    float *big = malloc((size_t)10000 * TIDE_RB_NFEAT * sizeof *big),
          *bs = malloc(10000 * sizeof *bs);
    double *fpr = malloc((size_t)(n + 2) * sizeof *fpr),
           *tpr = malloc((size_t)(n + 2) * sizeof *tpr);
    tide_rb_model *m = NULL;
    int st = 0;
    if (!xa || !ya || !xb || !yb || !sc || !big || !bs || !fpr || !tpr) {
        st = tide_error(TIDE_E_NOMEM, "rb train: out of memory");
        goto out;
    }
    for (int64_t i = 0; i < n; i++) {
        const int t = held_out(s->group[i]);
        float *x =
            t ? xb + (size_t)o->ntest * TIDE_RB_NFEAT : xa + (size_t)o->ntrain * TIDE_RB_NFEAT;
        memcpy(x, s->x + (size_t)i * TIDE_RB_NFEAT, TIDE_RB_NFEAT * sizeof *x);
        if (t) {
            yb[o->ntest++] = s->y[i];
            o->ntest_real += s->y[i] > 0.5f;
        } else {
            ya[o->ntrain++] = s->y[i];
            o->ntrain_real += s->y[i] > 0.5f;
        }
    }
    if (o->ntest == 0 || o->ntest_real == 0 || o->ntest_real == o->ntest) {
        st = tide_error(TIDE_E_INVAL,
                        "rb train: the held-out part (every fifth pair or row) needs real and "
                        "bogus examples (%lld, %lld real): give more pairs or labels",
                        (long long)o->ntest, (long long)o->ntest_real);
        goto out;
    }
    double t0 = now_ms();
    st = tide_rb_train(xa, ya, o->ntrain, tp, &m);
    o->ms_train = now_ms() - t0;
    if (!st)
        st = tide_rb_predict(m, xb, o->ntest, 0, sc);
    if (st)
        goto out;
    int64_t npts = 0;
    o->auc = tide_rb_auc(sc, yb, o->ntest, fpr, tpr, &npts);
    if (examples && (st = write_examples(examples, s, sc)))
        goto out;
    /* 10,000 candidates scored, from the examples repeated: the best of five runs */
    for (int64_t i = 0; i < 10000; i++)
        memcpy(big + (size_t)i * TIDE_RB_NFEAT, s->x + (size_t)(i % n) * TIDE_RB_NFEAT,
               TIDE_RB_NFEAT * sizeof *big);
    o->ms_predict = INFINITY;
    for (int r = 0; r < 5 && !st; r++) {
        t0 = now_ms();
        st = tide_rb_predict(m, big, 10000, 0, bs);
        o->ms_predict = fmin(o->ms_predict, now_ms() - t0);
    }
    char buf[1200], stem[4096], path[4200];
    snprintf(buf, sizeof buf, "%.6f", o->auc);
    if (!st)
        st = tide_rb_model_set(m, "auc_heldout", buf);
    snprintf(buf, sizeof buf, "%s (%lld train, %lld real; %lld held out, %lld real)", s->desc,
             (long long)o->ntrain, (long long)o->ntrain_real, (long long)o->ntest,
             (long long)o->ntest_real);
    if (!st)
        st = tide_rb_model_set(m, "training_set", buf);
    if (!st)
        st = tide_rb_model_importance(m, o->gain);
    /* The four outputs as one set: each written whole into its staging place, then all
     * renamed into place together, or none (DESIGN §6). */
    tide_outset set;
    tide_outset_init(&set);
    tide_outfile *of[4] = {NULL};
    static const char *const ext[4] = {"", ".roc.png", ".importance.png", ".summary.json"};
    stem_of(model, stem, sizeof stem);
    for (int k = 0; k < 4 && !st; k++) {
        snprintf(path, sizeof path, "%s%s", k ? stem : model, ext[k]);
        st = tide_outset_add(&set, path, &of[k]);
    }
    if (!st)
        st = tide_rb_model_save(m, of[0]->tmp);
    if (!st)
        st = tide_rb_plot_roc(of[1]->tmp, fpr, tpr, npts);
    if (!st)
        st = tide_rb_plot_bars(of[2]->tmp, o->gain, TIDE_RB_NFEAT);
    if (!st)
        st = write_summary(of[3]->tmp, model, s, o, tp);
    if (!st)
        st = tide_outset_commit(&set);
    tide_outset_abort(&set);
out:
    tide_rb_model_free(m);
    free(xa), free(ya), free(xb), free(yb), free(sc), free(big), free(bs), free(fpr), free(tpr);
    return st;
}

static int cmd_train(int argc, char **argv) {
    const char *cmd = "rb train";
    tide_cli_common com;
    tide_cli_common_init(&com);
    tide_rb_train_params tp;
    tide_rb_train_params_default(&tp);
    const char *model = NULL, *labels = NULL, *cands = NULL, *diff = NULL, *examples = NULL,
               *store = NULL;
    double nsim = 0, seed = 1, size = 768, v = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\n%s", help_train, tide_cli_common_help);
            return 0;
        }
        const int c = tide_cli_common_option(&com, cmd, argc, argv, &i);
        if (c < 0)
            return 2;
        if (c > 0)
            continue;
        if (i + 1 >= argc)
            return tide_cli_usage_error(cmd, "%s: unknown option or missing value", a);
        const char *val = argv[++i];
        int rc = 0;
        if (!strcmp(a, "-o") || !strcmp(a, "--output"))
            model = val;
        else if (!strcmp(a, "--labels"))
            labels = val;
        else if (!strcmp(a, "--candidates"))
            cands = val;
        else if (!strcmp(a, "--difference"))
            diff = val;
        else if (!strcmp(a, "--store"))
            store = val;
        else if (!strcmp(a, "--examples"))
            examples = val;
        else if (!strcmp(a, "--sim"))
            rc = tide_cli_parse_range(cmd, a, val, 0, 100000, &nsim);
        else if (!strcmp(a, "--seed"))
            rc = tide_cli_parse_range(cmd, a, val, 0, 1e15, &seed);
        else if (!strcmp(a, "--size"))
            rc = tide_cli_parse_range(cmd, a, val, 128, 8192, &size);
        else if (!strcmp(a, "--rounds") || !strcmp(a, "--depth") || !strcmp(a, "--eta") ||
                 !strcmp(a, "--train-threads")) {
            const int r = !strcmp(a, "--rounds"), d = !strcmp(a, "--depth"),
                      e = !strcmp(a, "--eta");
            rc = tide_cli_parse_range(cmd, a, val, e ? 1e-4 : 1,
                                      r   ? 100000
                                      : d ? 20
                                      : e ? 1
                                          : 1024,
                                      &v);
            if (!rc && !e && v != floor(v))
                rc = tide_cli_usage_error(cmd, "%s takes an integer (got '%s')", a, val);
            if (!rc && !e)
                *(r ? &tp.rounds : d ? &tp.max_depth : &tp.nthread) = (int)v;
            if (!rc && e)
                tp.eta = v;
        } else
            return tide_cli_usage_error(cmd, "unknown option %s", a);
        if (rc)
            return rc;
    }
    if (!model)
        return tide_cli_usage_error(cmd, "needs -o MODEL.json");
    if (nsim < 1 && !labels && !store)
        return tide_cli_usage_error(cmd, "needs a source: --sim N, --labels CSV or --store URI");
    if (!labels != !cands)
        return tide_cli_usage_error(cmd, "--labels and --candidates go together");
    if (nsim != floor(nsim) || size != floor(size) || seed != floor(seed))
        return tide_cli_usage_error(cmd, "--sim, --seed and --size take integers");
    tide_ctx *ctx = tide_cli_make_ctx(&com, cmd);
    if (!ctx)
        return 1;
    rb_set s;
    memset(&s, 0, sizeof s);
    int st = 0;
    if (nsim >= 1)
        st = rb_source_sim(ctx, (int)nsim, (uint64_t)seed, (int)size, 0, com.json, &s);
    if (!st && labels)
        st = rb_source_labels(ctx, cands, labels, diff, 1000000, &s);
    if (!st && store)
        st = rb_source_store(store, 2000000000, &s);
    train_out o;
    if (!st)
        st = train_and_write(&s, &tp, model, examples, &o);
    if (!st) {
        if (com.json) {
            char stem[4096];
            stem_of(model, stem, sizeof stem);
            printf("{\"model\": ");
            tide_cli_json_string(stdout, model);
            printf(", \"auc_heldout\": %.6f, \"n_train\": %lld, \"n_heldout\": %lld, "
                   "\"ms_predict_10000\": %.3f}\n",
                   o.auc, (long long)o.ntrain, (long long)o.ntest, o.ms_predict);
        } else {
            printf("%s: %lld examples trained (%lld real), %lld held out (%lld real)\n", model,
                   (long long)o.ntrain, (long long)o.ntrain_real, (long long)o.ntest,
                   (long long)o.ntest_real);
            printf("  held-out AUC %.4f; training %.0f ms; 10000 candidates scored in %.2f ms\n",
                   o.auc, o.ms_train, o.ms_predict);
        }
    }
    rb_set_free(&s);
    tide_ctx_destroy(ctx);
    return st ? tide_cli_fail(cmd, st) : 0;
}

int tide_cmd_rb(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "train"))
        return cmd_train(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "score"))
        return tide_cmd_rb_score(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: tide rb train|score ...\n\n%s\n(tide rb score --help for scoring)\n",
               help_train);
        return 0;
    }
    return tide_cli_usage_error("rb", "needs a subcommand: train or score");
}
