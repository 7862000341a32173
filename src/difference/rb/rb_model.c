/* rb_model.c — the real/bogus model: XGBoost's C API, loaded at run time.
 *
 * libxgboost is a C++ library of 5 MB with its own thread pool; linking it into libtide would
 * make every tide program load it (and fail to start where it is not installed, as on a GPU
 * host without libxgboost-dev). So it is opened with dlopen on first use, and only the entry
 * points below are looked up. The model file is XGBoost's JSON model, whose attributes carry
 * tide's: tide_rb_version, features, and what the trainer adds (training_set, auc). */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/outfile.h"
#include "tide/rb.h"
#include "tide/status.h"

typedef uint64_t bst_ulong;
typedef void *xgb_handle;

/* The entry points, as declared in <xgboost/c_api.h> (1.7). */
typedef struct xgb_api {
    const char *(*last_error)(void);
    int (*dm_from_mat)(const float *, bst_ulong, bst_ulong, float, xgb_handle *);
    int (*dm_set_float)(xgb_handle, const char *, const float *, bst_ulong);
    int (*dm_free)(xgb_handle);
    int (*create)(const xgb_handle *, bst_ulong, xgb_handle *);
    int (*free_)(xgb_handle);
    int (*set_param)(xgb_handle, const char *, const char *);
    int (*update)(xgb_handle, int, xgb_handle);
    int (*predict_dense)(xgb_handle, const char *, const char *, xgb_handle, const bst_ulong **,
                         bst_ulong *, const float **);
    int (*save_buf)(xgb_handle, const char *, bst_ulong *, const char **);
    int (*load_buf)(xgb_handle, const void *, bst_ulong);
    int (*set_attr)(xgb_handle, const char *, const char *);
    int (*get_attr)(xgb_handle, const char *, const char **, int *);
    int (*set_feat)(xgb_handle, const char *, const char **, bst_ulong);
    int (*score)(xgb_handle, const char *, bst_ulong *, const char ***, bst_ulong *,
                 const bst_ulong **, const float **);
} xgb_api;

static xgb_api api;
static int api_state; /* 1 loaded, -1 missing */
static char api_why[512];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

/* Open the library and look up every entry point, once per process (worker threads may ask
 * at the same time). */
static void open_api(void) {
    api_state = -1;
    /* TIDE_XGBOOST_LIB names another build of the library (or, in the tests, none) */
    const char *lib = getenv("TIDE_XGBOOST_LIB");
    void *h = dlopen(lib && *lib ? lib : "libxgboost.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h && !(lib && *lib))
        h = dlopen("libxgboost.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(api_why, sizeof api_why, "%s", dlerror());
        return;
    }
    struct {
        const char *name;
        void **slot;
    } const syms[] = {
        {"XGBGetLastError", (void **)&api.last_error},
        {"XGDMatrixCreateFromMat", (void **)&api.dm_from_mat},
        {"XGDMatrixSetFloatInfo", (void **)&api.dm_set_float},
        {"XGDMatrixFree", (void **)&api.dm_free},
        {"XGBoosterCreate", (void **)&api.create},
        {"XGBoosterFree", (void **)&api.free_},
        {"XGBoosterSetParam", (void **)&api.set_param},
        {"XGBoosterUpdateOneIter", (void **)&api.update},
        {"XGBoosterPredictFromDense", (void **)&api.predict_dense},
        {"XGBoosterSaveModelToBuffer", (void **)&api.save_buf},
        {"XGBoosterLoadModelFromBuffer", (void **)&api.load_buf},
        {"XGBoosterSetAttr", (void **)&api.set_attr},
        {"XGBoosterGetAttr", (void **)&api.get_attr},
        {"XGBoosterSetStrFeatureInfo", (void **)&api.set_feat},
        {"XGBoosterFeatureScore", (void **)&api.score},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        /* POSIX dlsym returns an object pointer; storing it through void ** is the sanctioned
         * way to get a function pointer out of it. */
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot) {
            snprintf(api_why, sizeof api_why, "it has no %s (need 1.6 or later)", syms[i].name);
            return;
        }
    }
    api_state = 1;
}

static int load_api(void) {
    pthread_once(&api_once, open_api);
    if (api_state > 0)
        return 0;
    return tide_error(TIDE_E_UNSUPPORTED,
                      "rb: libxgboost.so.0 cannot be used (%s; Debian: apt-get install "
                      "libxgboost-dev)",
                      api_why);
}

static int xgb_fail(const char *what) {
    return tide_error(TIDE_E_INTERNAL, "rb: XGBoost %s failed: %s", what, api.last_error());
}

struct tide_rb_model {
    xgb_handle b;
    int nthread; /* the booster's nthread, -1 until set */
};

static const char *feature_list(void) {
    static char list[512];
    if (!list[0])
        for (int i = 0; i < TIDE_RB_NFEAT; i++) {
            strcat(list, tide_rb_feature_name(i));
            if (i + 1 < TIDE_RB_NFEAT)
                strcat(list, ",");
        }
    return list;
}

/* The feature names in the booster, so that its importance and JSON read by name. */
static int name_features(xgb_handle b) {
    const char *n[TIDE_RB_NFEAT], *t[TIDE_RB_NFEAT];
    for (int i = 0; i < TIDE_RB_NFEAT; i++) {
        n[i] = tide_rb_feature_name(i);
        t[i] = "float";
    }
    if (api.set_feat(b, "feature_name", n, TIDE_RB_NFEAT) ||
        api.set_feat(b, "feature_type", t, TIDE_RB_NFEAT))
        return xgb_fail("feature names");
    return 0;
}

void tide_rb_train_params_default(tide_rb_train_params *p) {
    p->rounds = 100;
    p->max_depth = 5;
    p->eta = 0.1;
    p->min_child = 1.0;
    p->nthread = 2;
    p->seed = 1;
}

int tide_rb_train(const float *x, const float *y, int64_t n, const tide_rb_train_params *pp,
                  tide_rb_model **out) {
    *out = NULL;
    tide_rb_train_params p;
    if (pp)
        p = *pp;
    else
        tide_rb_train_params_default(&p);
    int64_t npos = 0;
    for (int64_t i = 0; i < n; i++)
        npos += y[i] > 0.5f;
    if (n < 2 || npos == 0 || npos == n)
        return tide_error(TIDE_E_INVAL,
                          "rb train: needs real and bogus examples (%lld examples, %lld real)",
                          (long long)n, (long long)npos);
    if (p.rounds < 1 || p.max_depth < 1 || !(p.eta > 0) || p.nthread < 1)
        return tide_error(TIDE_E_INVAL, "rb train: rounds, depth, eta and threads must be > 0");
    int st = load_api();
    if (st)
        return st;
    xgb_handle dm = NULL, b = NULL;
    if (api.dm_from_mat(x, (bst_ulong)n, TIDE_RB_NFEAT, NAN, &dm))
        return xgb_fail("DMatrix");
    if (api.dm_set_float(dm, "label", y, (bst_ulong)n) || api.create(&dm, 1, &b)) {
        st = xgb_fail("booster");
        goto out;
    }
    char v[64];
    struct {
        const char *k;
        const char *v;
    } prm[] = {{"objective", "binary:logistic"},
               {"eval_metric", "auc"},
               {"tree_method", "exact"},
               {"verbosity", "0"},
               {"max_depth", NULL},
               {"eta", NULL},
               {"min_child_weight", NULL},
               {"nthread", NULL},
               {"seed", NULL}};
    char bufs[5][32];
    snprintf(bufs[0], 32, "%d", p.max_depth);
    snprintf(bufs[1], 32, "%.17g", p.eta);
    snprintf(bufs[2], 32, "%.17g", p.min_child);
    snprintf(bufs[3], 32, "%d", p.nthread);
    snprintf(bufs[4], 32, "%llu", (unsigned long long)(p.seed % 2147483647ULL));
    for (int i = 0; i < 5; i++)
        prm[4 + i].v = bufs[i];
    for (size_t i = 0; i < sizeof prm / sizeof prm[0]; i++)
        if (api.set_param(b, prm[i].k, prm[i].v)) {
            st = xgb_fail(prm[i].k);
            goto out;
        }
    if ((st = name_features(b)))
        goto out;
    for (int it = 0; it < p.rounds; it++)
        if (api.update(b, it, dm)) {
            st = xgb_fail("training");
            goto out;
        }
    snprintf(v, sizeof v, "%d", TIDE_RB_FEATURES_VERSION);
    if (api.set_attr(b, "tide_rb_version", v) || api.set_attr(b, "features", feature_list())) {
        st = xgb_fail("attributes");
        goto out;
    }
    tide_rb_model *m = malloc(sizeof *m);
    if (!m) {
        st = tide_error(TIDE_E_NOMEM, "rb train: out of memory");
        goto out;
    }
    m->b = b;
    m->nthread = p.nthread;
    b = NULL;
    *out = m;
out:
    if (b)
        api.free_(b);
    api.dm_free(dm);
    return st;
}

int tide_rb_predict(tide_rb_model *m, const float *x, int64_t n, int nthread, float *score) {
    if (!m || (n > 0 && (!x || !score)) || n < 0)
        return tide_error(TIDE_E_INVAL, "rb predict: needs a model, features and room");
    if (n == 0)
        return 0;
    if (nthread != m->nthread) {
        char t[16];
        snprintf(t, sizeof t, "%d", nthread > 0 ? nthread : 0);
        if (api.set_param(m->b, "nthread", t))
            return xgb_fail("nthread");
        m->nthread = nthread;
    }
    /* The array interface of the dense rows: no DMatrix copy (10,000 rows in ~1 ms). */
    char arr[256];
    snprintf(arr, sizeof arr,
             "{\"data\": [%llu, true], \"shape\": [%lld, %d], \"typestr\": \"<f4\", "
             "\"version\": 3}",
             (unsigned long long)(uintptr_t)x, (long long)n, TIDE_RB_NFEAT);
    static const char cfg[] = "{\"type\": 0, \"training\": false, \"iteration_begin\": 0, "
                              "\"iteration_end\": 0, \"strict_shape\": false, \"missing\": NaN, "
                              "\"cache_id\": 0}";
    const bst_ulong *shape = NULL;
    bst_ulong dim = 0;
    const float *res = NULL;
    if (api.predict_dense(m->b, arr, cfg, NULL, &shape, &dim, &res))
        return xgb_fail("prediction");
    memcpy(score, res, (size_t)n * sizeof *score);
    return 0;
}

int tide_rb_model_set(tide_rb_model *m, const char *key, const char *value) {
    if (!m || !key || !value)
        return tide_error(TIDE_E_INVAL, "rb model: set needs a key and a value");
    if (api.set_attr(m->b, key, value))
        return xgb_fail("attribute");
    return 0;
}

const char *tide_rb_model_get(tide_rb_model *m, const char *key) {
    const char *v = NULL;
    int ok = 0;
    if (!m || !key || api.get_attr(m->b, key, &v, &ok) || !ok)
        return NULL;
    return v;
}

int tide_rb_model_importance(tide_rb_model *m, double *gain) {
    for (int i = 0; i < TIDE_RB_NFEAT; i++)
        gain[i] = 0;
    bst_ulong nf = 0, dim = 0;
    const char **names = NULL;
    const bst_ulong *shape = NULL;
    const float *sc = NULL;
    if (api.score(m->b, "{\"importance_type\": \"total_gain\"}", &nf, &names, &dim, &shape, &sc))
        return xgb_fail("feature importance");
    for (bst_ulong k = 0; k < nf; k++)
        for (int i = 0; i < TIDE_RB_NFEAT; i++)
            if (!strcmp(names[k], tide_rb_feature_name(i)))
                gain[i] = sc[k];
    return 0;
}

int tide_rb_model_save(tide_rb_model *m, const char *path) {
    if (!m || !path)
        return tide_error(TIDE_E_INVAL, "rb model: save needs a model and a path");
    bst_ulong len = 0;
    const char *buf = NULL;
    if (api.save_buf(m->b, "{\"format\": \"json\"}", &len, &buf))
        return xgb_fail("saving");
    tide_outfile o;
    FILE *f = NULL;
    int st = tide_outfile_open(&o, path, &f);
    if (st)
        return st;
    fwrite(buf, 1, (size_t)len, f);
    fputc('\n', f);
    return tide_outfile_close(&o, f);
}

int tide_rb_model_load(const char *path, tide_rb_model **out) {
    *out = NULL;
    int st = load_api();
    if (st)
        return st;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tide_error(TIDE_E_IO, "%s: cannot open the real/bogus model", path);
    char *buf = NULL;
    long len = -1;
    if (!fseek(f, 0, SEEK_END) && (len = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET))
        buf = malloc((size_t)len + 1);
    const int ok = buf && fread(buf, 1, (size_t)len, f) == (size_t)len;
    fclose(f);
    if (!ok) {
        free(buf);
        return tide_error(TIDE_E_IO, "%s: cannot read the real/bogus model", path);
    }
    xgb_handle b = NULL;
    if (api.create(NULL, 0, &b)) {
        free(buf);
        return xgb_fail("booster");
    }
    const int bad = api.load_buf(b, buf, (bst_ulong)len);
    free(buf);
    if (bad) {
        st = tide_error(TIDE_E_FORMAT, "%s: not an XGBoost model: %s", path, api.last_error());
        api.free_(b);
        return st;
    }
    tide_rb_model m = {b, -1};
    const char *ver = tide_rb_model_get(&m, "tide_rb_version");
    char want[16];
    snprintf(want, sizeof want, "%d", TIDE_RB_FEATURES_VERSION);
    if (!ver || strcmp(ver, want)) {
        st = tide_error(TIDE_E_FORMAT, "%s: %s (this tide computes features version %s)", path,
                        ver ? "a real/bogus model of another feature version"
                            : "no tide_rb_version attribute: not a tide real/bogus model",
                        want);
    } else {
        const char *feat = tide_rb_model_get(&m, "features");
        if (!feat || strcmp(feat, feature_list()))
            st = tide_error(TIDE_E_FORMAT, "%s: its features are not this tide's (%s)", path,
                            feat ? feat : "none");
    }
    if (!st) {
        st = name_features(b);
    }
    if (st) {
        api.free_(b);
        return st;
    }
    tide_rb_model *mm = malloc(sizeof *mm);
    if (!mm) {
        api.free_(b);
        return tide_error(TIDE_E_NOMEM, "rb model: out of memory");
    }
    mm->b = b;
    mm->nthread = -1;
    /* XGBoost configures a loaded booster and starts its threads on the first prediction
     * (~20-40 ms here): pay that now, not in the first frame's scores. */
    float row[TIDE_RB_NFEAT], score;
    for (int i = 0; i < TIDE_RB_NFEAT; i++)
        row[i] = NAN;
    st = tide_rb_predict(mm, row, 1, 0, &score);
    if (st) {
        tide_rb_model_free(mm);
        return tide_error_prefix(st, "%s: ", path);
    }
    *out = mm;
    return 0;
}

void tide_rb_model_free(tide_rb_model *m) {
    if (!m)
        return;
    api.free_(m->b);
    free(m);
}

int tide_rb_score_table(tide_rb_model *m, const tide_image *diff, tide_table *cands, double fwhm,
                        const double *stars, int64_t nstars) {
    const int64_t n = cands->nrows;
    float *x = malloc((size_t)(n > 0 ? n : 1) * TIDE_RB_NFEAT * sizeof *x);
    float *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
    int st = !x || !s ? tide_error(TIDE_E_NOMEM, "rb score: out of memory") : 0;
    if (!st)
        st = tide_rb_table_features(diff, cands, fwhm, stars, nstars, x);
    if (!st)
        st = tide_rb_predict(m, x, n, 0, s);
    if (!st && !tide_table_f32(cands, "RB_SCORE")) {
        if (tide_table_column(cands, "RB_SCORE"))
            tide_table_remove_column(cands, "RB_SCORE");
        st = tide_table_add_column(cands, "RB_SCORE", TIDE_COL_F32, 1, NULL,
                                   "real/bogus score: 1 real, 0 bogus", NULL);
    }
    if (!st && n > 0)
        memcpy(tide_table_f32(cands, "RB_SCORE"), s, (size_t)n * sizeof *s);
    free(x);
    free(s);
    return st;
}
