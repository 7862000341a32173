/* metrics_text.c — the exposition: Prometheus' text format 0.0.4, written from one consistent
 * snapshot of the registry (its lock held while writing). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/metrics_internal.h"

void metrics_format_double(double v, char *buf, size_t cap) {
    if (isnan(v)) {
        snprintf(buf, cap, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, cap, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    /* The fewest significant digits (1 to 17: 17 always do) that read back to v; then plain
     * notation from 1e-4 to below 1e21 ("10", "150754820096", not "1e+01"), an exponent
     * outside. Digits beyond the 17th, for a large integer, are the double's exact ones. */
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(buf, cap, "%.*e", prec - 1, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    snprintf(buf, cap, "%.*e", prec - 1, v);
    const char *e = strchr(buf, 'e');
    int x = e ? atoi(e + 1) : 0;
    if (x >= -4 && x < 21 && x + 1 > prec)
        prec = x + 1;
    snprintf(buf, cap, "%.*g", prec, v);
}

/* A growing text buffer; a failed allocation leaves it marked and writes nothing more. */
typedef struct text {
    char *p;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *s, size_t n) {
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->failed = 1;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = 0;
}

static void puts_(text *t, const char *s) {
    put(t, s, strlen(s));
}

static void putd(text *t, double v) {
    char b[40];
    metrics_format_double(v, b, sizeof b);
    puts_(t, b);
}

static void putu(text *t, uint64_t v) {
    char b[24];
    snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    puts_(t, b);
}

/* Help text escapes backslash and newline; a label value also the double quote. */
static void put_escaped(text *t, const char *s, int quote) {
    for (const char *p = s; *p; p++) {
        if (*p == '\\')
            puts_(t, "\\\\");
        else if (*p == '\n')
            puts_(t, "\\n");
        else if (quote && *p == '"')
            puts_(t, "\\\"");
        else
            put(t, p, 1);
    }
}

/* NAME[SUFFIX][{label="value"[,le="bound"]}] and the space before the value. */
static void put_series_name(text *t, const tide_metric *f, const char *suffix, int i,
                            const char *le) {
    puts_(t, f->name);
    puts_(t, suffix);
    if (f->label || le) {
        puts_(t, "{");
        if (f->label) {
            puts_(t, f->label);
            puts_(t, "=\"");
            put_escaped(t, f->values[i], 1);
            puts_(t, "\"");
        }
        if (le) {
            puts_(t, f->label ? ",le=\"" : "le=\"");
            puts_(t, le);
            puts_(t, "\"");
        }
        puts_(t, "}");
    }
    puts_(t, " ");
}

static void put_family(text *t, const tide_metric *f) {
    static const char *const type_names[] = {"counter", "gauge", "histogram"};
    if (f->help[0]) {
        puts_(t, "# HELP ");
        puts_(t, f->name);
        puts_(t, " ");
        put_escaped(t, f->help, 0);
        puts_(t, "\n");
    }
    puts_(t, "# TYPE ");
    puts_(t, f->name);
    puts_(t, " ");
    puts_(t, type_names[f->type]);
    puts_(t, "\n");
    for (int i = 0; i < f->nseries; i++) {
        const metric_series *s = &f->series[i];
        if (f->type != METRIC_HISTOGRAM) {
            put_series_name(t, f, "", i, NULL);
            putd(t, s->value);
            puts_(t, "\n");
            continue;
        }
        uint64_t cum = 0;
        for (int b = 0; b <= f->nbounds; b++) {
            char le[40];
            if (b < f->nbounds)
                metrics_format_double(f->bounds[b], le, sizeof le);
            else
                snprintf(le, sizeof le, "+Inf");
            cum += s->buckets[b];
            put_series_name(t, f, "_bucket", i, le);
            putu(t, cum);
            puts_(t, "\n");
        }
        put_series_name(t, f, "_sum", i, NULL);
        putd(t, s->sum);
        puts_(t, "\n");
        put_series_name(t, f, "_count", i, NULL);
        putu(t, s->count);
        puts_(t, "\n");
    }
}

char *tide_metrics_render(tide_metrics *m, size_t *len) {
    if (len)
        *len = 0;
    if (!m)
        return NULL;
    metrics_process_update(m);
    pthread_mutex_lock(&m->lock);
    tide_metrics_scrape_fn hook = m->hook;
    void *user = m->hook_user;
    pthread_mutex_unlock(&m->lock);
    /* Outside the lock: the hook sets gauges, which takes it. */
    if (hook)
        hook(m, user);
    text t = {0};
    pthread_mutex_lock(&m->lock);
    for (const tide_metric *f = m->first; f; f = f->next)
        put_family(&t, f);
    for (const tide_metric *f = m->proc_first; f; f = f->next)
        put_family(&t, f);
    pthread_mutex_unlock(&m->lock);
    if (!t.failed && !t.p)
        put(&t, "", 0);
    if (t.failed) {
        free(t.p);
        return NULL;
    }
    if (len)
        *len = t.len;
    return t.p;
}
