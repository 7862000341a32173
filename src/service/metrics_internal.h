/* metrics_internal.h — the registry's and families' layout, shared by the files of the metrics
 * module (registry, exposition, process metrics, server). */
#ifndef TIDE_METRICS_INTERNAL_H
#define TIDE_METRICS_INTERNAL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "tide/metrics.h"

typedef enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM } metric_type;

/* One series: a value (counter, gauge) or a histogram's counts per bucket (not cumulative:
 * the exposition sums them, so an observation touches one bucket), sum and count. */
typedef struct metric_series {
    double value;
    uint64_t *buckets; /* nbounds + 1 entries, the last for +Inf */
    double sum;
    uint64_t count;
} metric_series;

struct tide_metric {
    tide_metrics *reg; /* its registry, whose lock guards the series */
    metric_type type;
    char *name, *help, *label;
    char **values; /* nseries label values, or NULL without a label */
    int nseries;   /* 1 without a label */
    double *bounds;
    int nbounds;
    metric_series *series;
    struct tide_metric *next; /* creation order */
};

/* The process metrics the registry fills itself at each scrape. */
typedef struct metrics_process {
    tide_metric *rss, *vsize, *fds, *max_fds, *cpu, *start, *uptime;
    double start_time; /* seconds since the epoch */
} metrics_process;

struct tide_metrics {
    pthread_mutex_t lock;
    tide_metric *first, *last; /* the caller's families */
    tide_metric *proc_first;   /* the process families, written after the caller's */
    metrics_process proc;
    tide_metrics_scrape_fn hook;
    void *hook_user;
};

/* Make a family and link it into the chain of @p proc ? the process families : the caller's
 * (metrics.c). */
int metrics_family_add(tide_metrics *m, metric_type type, const char *name, const char *help,
                       const char *label, const char *const *values, int nvalues,
                       const double *bounds, int nbounds, int proc, tide_metric **out);

/* Make the process families and read the start time (metrics_process.c). */
int metrics_process_init(tide_metrics *m);

/* Read /proc into the process families (metrics_process.c). */
void metrics_process_update(tide_metrics *m);

/* Write @p v as the exposition spells numbers: the shortest %.*g that reads back to the same
 * double, +Inf, -Inf, NaN. @p buf holds at least 32 bytes (metrics_text.c). */
void metrics_format_double(double v, char *buf, size_t cap);

/* Bind and listen on @p listen ("HOST:PORT"): the socket, and the port bound
 * (metrics_listen.c). */
int metrics_listen(const char *where, int *fd, int *port);

#endif
