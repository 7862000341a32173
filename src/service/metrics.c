/* metrics.c — the registry of metric families: creation with the names checked, and the
 * thread-safe updates (one mutex per registry). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/metrics_internal.h"
#include "tide/status.h"

static const double seconds_bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                        1,     2.5,  5,     10,   30,  60};

const double *tide_metrics_seconds_bounds(int *n) {
    if (n)
        *n = (int)(sizeof seconds_bounds / sizeof seconds_bounds[0]);
    return seconds_bounds;
}

/* Prometheus' metric names: [a-zA-Z_:][a-zA-Z0-9_:]*; label names the same without ':'. */
static int valid_name(const char *s, int colon) {
    if (!s || !*s)
        return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                 (colon && c == ':') || (p > s && c >= '0' && c <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

/* The exposition is UTF-8: help texts and label values must be (overlong forms, surrogates
 * and code points past U+10FFFF refused, as Prometheus' parser refuses them). */
static int valid_utf8(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p, n = c < 0x80             ? 0
                             : (c & 0xE0) == 0xC0 ? 1
                             : (c & 0xF0) == 0xE0 ? 2
                             : (c & 0xF8) == 0xF0 ? 3
                                                  : 9;
        if (n == 9)
            return 0;
        unsigned cp = n == 0 ? c : c & (0x3F >> n);
        for (unsigned k = 1; k <= n; k++) {
            if ((p[k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (p[k] & 0x3F);
        }
        static const unsigned min_cp[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        p += n + 1;
    }
    return 1;
}

static tide_metric *find(const tide_metrics *m, const char *name) {
    for (const tide_metric *chain[2] = {m->first, m->proc_first}, **c = chain; c < chain + 2; c++)
        for (const tide_metric *f = *c; f; f = f->next)
            if (strcmp(f->name, name) == 0)
                return (tide_metric *)f;
    return NULL;
}

/* A histogram family NAME also owns NAME_bucket, NAME_sum and NAME_count: no other family may
 * take those names, nor may a histogram take a name whose series another family writes. */
static int name_clashes(const tide_metrics *m, const char *name, metric_type type) {
    if (find(m, name))
        return 1;
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    size_t n = strlen(name);
    for (int k = 0; k < 3; k++) {
        size_t ls = strlen(suffixes[k]);
        if (n > ls && strcmp(name + n - ls, suffixes[k]) == 0) {
            char base[256];
            if (n - ls >= sizeof base)
                continue;
            memcpy(base, name, n - ls);
            base[n - ls] = 0;
            const tide_metric *f = find(m, base);
            if (f && f->type == METRIC_HISTOGRAM)
                return 1;
        }
        if (type == METRIC_HISTOGRAM) {
            char full[320];
            snprintf(full, sizeof full, "%s%s", name, suffixes[k]);
            if (find(m, full))
                return 1;
        }
    }
    return 0;
}

static void family_free(tide_metric *f) {
    if (!f)
        return;
    if (f->values)
        for (int i = 0; i < f->nseries; i++)
            free(f->values[i]);
    if (f->series)
        for (int i = 0; i < f->nseries; i++)
            free(f->series[i].buckets);
    free(f->values);
    free(f->series);
    free(f->bounds);
    free(f->name);
    free(f->help);
    free(f->label);
    free(f);
}

static int check_family(const tide_metrics *m, metric_type type, const char *name, const char *help,
                        const char *label, const char *const *values, int nvalues,
                        const double *bounds, int nbounds) {
    if (!valid_name(name, 1) || strlen(name) > 200)
        return tide_error(TIDE_E_INVAL, "metrics: \"%s\" is not a metric name", name ? name : "");
    if (help && !valid_utf8(help))
        return tide_error(TIDE_E_INVAL, "metrics: %s: the help text is not UTF-8", name);
    if (name_clashes(m, name, type))
        return tide_error(TIDE_E_INVAL, "metrics: %s is already in the registry", name);
    if (label) {
        if (!valid_name(label, 0) || strncmp(label, "__", 2) == 0)
            return tide_error(TIDE_E_INVAL, "metrics: %s: \"%s\" is not a label name", name, label);
        if (type == METRIC_HISTOGRAM && strcmp(label, "le") == 0)
            return tide_error(TIDE_E_INVAL, "metrics: %s: a histogram's label cannot be le", name);
        if (!values || nvalues < 1 || nvalues > TIDE_METRIC_MAX_VALUES)
            return tide_error(TIDE_E_INVAL, "metrics: %s: %d label values (1 to %d)", name, nvalues,
                              TIDE_METRIC_MAX_VALUES);
        for (int i = 0; i < nvalues; i++) {
            if (!values[i] || !valid_utf8(values[i]))
                return tide_error(TIDE_E_INVAL, "metrics: %s: label value %d is %s", name, i,
                                  values[i] ? "not UTF-8" : "NULL");
            for (int j = 0; j < i; j++)
                if (strcmp(values[i], values[j]) == 0)
                    return tide_error(TIDE_E_INVAL, "metrics: %s: label value \"%s\" twice", name,
                                      values[i]);
        }
    } else if (values || nvalues) {
        return tide_error(TIDE_E_INVAL, "metrics: %s: label values without a label name", name);
    }
    if (type == METRIC_HISTOGRAM) {
        if (nbounds < 1 || nbounds > TIDE_METRIC_MAX_BOUNDS)
            return tide_error(TIDE_E_INVAL, "metrics: %s: %d bucket bounds (1 to %d)", name,
                              nbounds, TIDE_METRIC_MAX_BOUNDS);
        for (int i = 0; i < nbounds; i++) {
            if (!isfinite(bounds[i]))
                return tide_error(TIDE_E_INVAL, "metrics: %s: bucket bound %d is not finite", name,
                                  i);
            if (i > 0 && !(bounds[i] > bounds[i - 1]))
                return tide_error(TIDE_E_INVAL,
                                  "metrics: %s: bucket bounds are not strictly increasing at %d",
                                  name, i);
        }
    }
    return 0;
}

static char *dup_or_empty(const char *s) {
    return strdup(s ? s : "");
}

int metrics_family_add(tide_metrics *m, metric_type type, const char *name, const char *help,
                       const char *label, const char *const *values, int nvalues,
                       const double *bounds, int nbounds, int proc, tide_metric **out) {
    if (out)
        *out = NULL;
    if (!m || !out)
        return tide_error(TIDE_E_INVAL, "metrics: NULL registry or result");
    if (type == METRIC_HISTOGRAM && !bounds)
        bounds = tide_metrics_seconds_bounds(&nbounds);
    pthread_mutex_lock(&m->lock);
    int st = check_family(m, type, name, help, label, values, nvalues, bounds, nbounds);
    if (st) {
        pthread_mutex_unlock(&m->lock);
        return st;
    }
    tide_metric *f = calloc(1, sizeof *f);
    int nseries = label ? nvalues : 1;
    int bad = !f;
    if (f) {
        f->reg = m;
        f->type = type;
        f->nseries = nseries;
        f->name = strdup(name);
        f->help = dup_or_empty(help);
        f->label = label ? strdup(label) : NULL;
        f->series = calloc((size_t)nseries, sizeof *f->series);
        bad = !f->name || !f->help || (label && !f->label) || !f->series;
    }
    if (!bad && label) {
        f->values = calloc((size_t)nseries, sizeof *f->values);
        bad = !f->values;
        for (int i = 0; !bad && i < nseries; i++)
            bad = !(f->values[i] = strdup(values[i]));
    }
    if (!bad && type == METRIC_HISTOGRAM) {
        f->nbounds = nbounds;
        f->bounds = malloc((size_t)nbounds * sizeof *f->bounds);
        bad = !f->bounds;
        if (!bad)
            memcpy(f->bounds, bounds, (size_t)nbounds * sizeof *bounds);
        for (int i = 0; !bad && i < nseries; i++)
            bad = !(f->series[i].buckets = calloc((size_t)nbounds + 1, sizeof(uint64_t)));
    }
    if (bad) {
        pthread_mutex_unlock(&m->lock);
        family_free(f);
        return tide_error(TIDE_E_NOMEM, "metrics: %s: out of memory", name);
    }
    if (proc) {
        /* The process families keep their own chain, written after the caller's. */
        tide_metric **p = &m->proc_first;
        while (*p)
            p = &(*p)->next;
        *p = f;
    } else {
        if (m->last)
            m->last->next = f;
        else
            m->first = f;
        m->last = f;
    }
    pthread_mutex_unlock(&m->lock);
    *out = f;
    return 0;
}

int tide_metrics_create(tide_metrics **out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "metrics: NULL result");
    *out = NULL;
    tide_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return tide_error(TIDE_E_NOMEM, "metrics: out of memory");
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return tide_error(TIDE_E_NOMEM, "metrics: no mutex");
    }
    int st = metrics_process_init(m);
    if (st) {
        tide_metrics_destroy(m);
        return st;
    }
    *out = m;
    return 0;
}

void tide_metrics_destroy(tide_metrics *m) {
    if (!m)
        return;
    for (tide_metric *chain[2] = {m->first, m->proc_first}, **c = chain; c < chain + 2; c++) {
        tide_metric *f = *c;
        while (f) {
            tide_metric *next = f->next;
            family_free(f);
            f = next;
        }
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

int tide_metrics_counter(tide_metrics *m, const char *name, const char *help, const char *label,
                         const char *const *values, int nvalues, tide_metric **out) {
    return metrics_family_add(m, METRIC_COUNTER, name, help, label, values, nvalues, NULL, 0, 0,
                              out);
}

int tide_metrics_gauge(tide_metrics *m, const char *name, const char *help, const char *label,
                       const char *const *values, int nvalues, tide_metric **out) {
    return metrics_family_add(m, METRIC_GAUGE, name, help, label, values, nvalues, NULL, 0, 0, out);
}

int tide_metrics_histogram(tide_metrics *m, const char *name, const char *help, const char *label,
                           const char *const *values, int nvalues, const double *bounds,
                           int nbounds, tide_metric **out) {
    return metrics_family_add(m, METRIC_HISTOGRAM, name, help, label, values, nvalues, bounds,
                              nbounds, 0, out);
}

int tide_metric_index(const tide_metric *f, const char *value) {
    if (!f || !value || !f->values)
        return -1;
    for (int i = 0; i < f->nseries; i++)
        if (strcmp(f->values[i], value) == 0)
            return i;
    return -1;
}

void tide_metric_add(tide_metric *f, int i, double v) {
    if (!f || i < 0 || i >= f->nseries || f->type == METRIC_HISTOGRAM)
        return;
    if (f->type == METRIC_COUNTER && !(v >= 0))
        return;
    pthread_mutex_lock(&f->reg->lock);
    f->series[i].value += v;
    pthread_mutex_unlock(&f->reg->lock);
}

void tide_metric_set(tide_metric *f, int i, double v) {
    if (!f || i < 0 || i >= f->nseries || f->type != METRIC_GAUGE)
        return;
    pthread_mutex_lock(&f->reg->lock);
    f->series[i].value = v;
    pthread_mutex_unlock(&f->reg->lock);
}

void tide_metric_observe(tide_metric *f, int i, double v) {
    if (!f || i < 0 || i >= f->nseries || f->type != METRIC_HISTOGRAM || isnan(v))
        return;
    /* The bucket is found before taking the lock: the bounds never change. */
    int b = 0;
    while (b < f->nbounds && v > f->bounds[b])
        b++;
    pthread_mutex_lock(&f->reg->lock);
    metric_series *s = &f->series[i];
    s->buckets[b]++;
    s->sum += v;
    s->count++;
    pthread_mutex_unlock(&f->reg->lock);
}

double tide_metric_value(const tide_metric *f, int i) {
    if (!f || i < 0 || i >= f->nseries)
        return NAN;
    pthread_mutex_lock(&f->reg->lock);
    double v = f->type == METRIC_HISTOGRAM ? (double)f->series[i].count : f->series[i].value;
    pthread_mutex_unlock(&f->reg->lock);
    return v;
}

void tide_metrics_on_scrape(tide_metrics *m, tide_metrics_scrape_fn fn, void *user) {
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->hook = fn;
    m->hook_user = user;
    pthread_mutex_unlock(&m->lock);
}
