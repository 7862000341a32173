/* metrics.h — counters, gauges and histograms for Prometheus, and the small HTTP server that
 * serves them (GET /metrics) with a health check (GET /healthz).
 *
 * A registry holds metric families. Each family has a name, a help text and at most one label
 * with a fixed, small set of values given at creation (tide_frames_total{status="done"}): a
 * family is an array of series, one per label value, addressed by index (the label values'
 * order at creation; tide_metric_index finds one by value). Families are created at start-up
 * and live as long as the registry; updates are thread-safe (one mutex per registry: the
 * worker updates from a few threads at frame rate, far from contention), and a scrape sees
 * every family at one instant (a histogram's _count always equals its +Inf bucket).
 *
 * The exposition is Prometheus' text format 0.0.4: # HELP (backslash and newline escaped),
 * # TYPE, label values escaped (backslash, quote, newline), histograms as cumulative
 * NAME_bucket{le="..."} with le="+Inf", NAME_sum and NAME_count, numbers written in the
 * shortest form that reads back to the same double (+Inf, -Inf, NaN spelled so).
 *
 * Every scrape also fills the standard process metrics of this process, read from /proc:
 * process_resident_memory_bytes, process_virtual_memory_bytes, process_open_fds,
 * process_max_fds, process_cpu_seconds_total, process_start_time_seconds, and
 * tide_uptime_seconds; then it calls the caller's scrape hook (tide_metrics_on_scrape), where
 * the caller sets gauges it only knows on demand (device memory, queue depth).
 *
 * The server (tide_metrics_serve) runs libmicrohttpd's own polling thread on a socket bound
 * to "HOST:PORT": "127.0.0.1:9464", "[::1]:9464", "localhost:9464" (a name resolves to its
 * first address), ":9464" (every interface, IPv6 and IPv4 where the host has IPv6); port 0
 * picks a free port (tide_metrics_server_port says which). GET or HEAD of /metrics gives the
 * exposition (Content-Type text/plain; version=0.0.4; charset=utf-8), of /healthz a JSON
 * object from the caller's health callback: 200 {"status":"ok",...} or 503
 * {"status":"unhealthy","reason":...}; any other path is 404, any other method 405. */
#ifndef TIDE_METRICS_H
#define TIDE_METRICS_H
#include <stddef.h>

#include "tide/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A registry of metric families. */
typedef struct tide_metrics tide_metrics;

/** One metric family: its series, one per label value (or one without a label). */
typedef struct tide_metric tide_metric;

/** Most label values of one family: the label is for small, fixed sets (statuses, stages). */
#define TIDE_METRIC_MAX_VALUES 32
/** Most bucket bounds of one histogram (+Inf is added to them). */
#define TIDE_METRIC_MAX_BOUNDS 64

/** Make an empty registry. The process start time is read now. Errors: TIDE_E_NOMEM. */
TIDE_API int tide_metrics_create(tide_metrics **out);

/** Free the registry and its families. Stop every server of it first. NULL is a no-op. */
TIDE_API void tide_metrics_destroy(tide_metrics *m);

/** Add a counter family (a value that only goes up; name it NAME_total). @p label is the label
 *  name, or NULL for a family of one series; @p values its @p nvalues values (1 to
 *  TIDE_METRIC_MAX_VALUES, distinct). Every series starts at 0, so a status never seen is
 *  exposed as 0 rather than missing. Errors: TIDE_E_INVAL (a name that is not a Prometheus
 *  metric or label name, a name already in the registry, a label of "le" or starting "__",
 *  repeated values), TIDE_E_NOMEM. */
TIDE_API int tide_metrics_counter(tide_metrics *m, const char *name, const char *help,
                                  const char *label, const char *const *values, int nvalues,
                                  tide_metric **out);

/** Add a gauge family (a value that goes up and down); arguments as tide_metrics_counter. */
TIDE_API int tide_metrics_gauge(tide_metrics *m, const char *name, const char *help,
                                const char *label, const char *const *values, int nvalues,
                                tide_metric **out);

/** Add a histogram family with the @p nbounds upper bounds @p bounds (finite, strictly
 *  increasing, at most TIDE_METRIC_MAX_BOUNDS; +Inf is added), or with
 *  tide_metrics_seconds_bounds when @p bounds is NULL. A label may not be "le". Other
 *  arguments and errors as tide_metrics_counter. */
TIDE_API int tide_metrics_histogram(tide_metrics *m, const char *name, const char *help,
                                    const char *label, const char *const *values, int nvalues,
                                    const double *bounds, int nbounds, tide_metric **out);

/** The default bounds of latency histograms, in seconds: 0.005 0.01 0.025 0.05 0.1 0.25 0.5
 *  1 2.5 5 10 30 60. Stores their number in *n. */
TIDE_API const double *tide_metrics_seconds_bounds(int *n);

/** Index of the series of label value @p value in @p f, or -1 when it has none. */
TIDE_API int tide_metric_index(const tide_metric *f, const char *value);

/** Add @p v to series @p i of a counter (v >= 0, else ignored: a counter never goes down) or
 *  of a gauge. An index out of range or a histogram is ignored (a caller's bug must not take
 *  the worker down). */
TIDE_API void tide_metric_add(tide_metric *f, int i, double v);

/** Set series @p i of a gauge to @p v. Anything but a gauge, or an index out of range, is
 *  ignored. */
TIDE_API void tide_metric_set(tide_metric *f, int i, double v);

/** Record the observation @p v (e.g. seconds) in series @p i of a histogram: the bucket of the
 *  first bound >= v and the ones above it, the sum and the count. NaN is ignored. */
TIDE_API void tide_metric_observe(tide_metric *f, int i, double v);

/** The value of series @p i of a counter or gauge, or the count of a histogram's series (NaN
 *  for an index out of range). For tests and for the caller's own reports. */
TIDE_API double tide_metric_value(const tide_metric *f, int i);

/** The caller's gauges filled at scrape time: called once per scrape, after the process
 *  metrics and before the exposition is written, outside the registry's lock (the hook sets
 *  values with tide_metric_set). Called from the server's thread. */
typedef void (*tide_metrics_scrape_fn)(tide_metrics *m, void *user);

/** Set (or with NULL remove) the scrape hook. Set it before serving. */
TIDE_API void tide_metrics_on_scrape(tide_metrics *m, tide_metrics_scrape_fn fn, void *user);

/** Fill the process metrics and call the scrape hook, then write the exposition of every
 *  family (in creation order, process metrics last) into a new NUL-terminated string
 *  (free()); its length in *len when @p len is not NULL. NULL when out of memory. */
TIDE_API char *tide_metrics_render(tide_metrics *m, size_t *len);

/** The health callback: return 0 when healthy, nonzero when not; write into @p reason (of
 *  @p cap bytes, NUL-terminated) why not ("broker disconnected"), or a note when healthy
 *  (may be left empty). Called from the server's thread for every GET /healthz. */
typedef int (*tide_metrics_health_fn)(void *user, char *reason, size_t cap);

/** A running metrics server. */
typedef struct tide_metrics_server tide_metrics_server;

/** Serve @p m on @p listen ("HOST:PORT", see the top of this file) until
 *  tide_metrics_server_stop. @p health may be NULL (always healthy). Errors: TIDE_E_INVAL (a
 *  listen string that is not HOST:PORT or a port out of 0..65535), TIDE_E_NOTFOUND (a host
 *  name that does not resolve), TIDE_E_IO (the address cannot be bound: in use, not an
 *  address of this host, a privileged port; the detail names HOST:PORT and why),
 *  TIDE_E_NOMEM. */
TIDE_API int tide_metrics_serve(tide_metrics *m, const char *listen, tide_metrics_health_fn health,
                                void *health_user, tide_metrics_server **out);

/** The port the server listens on (the one picked for port 0). */
TIDE_API int tide_metrics_server_port(const tide_metrics_server *s);

/** Stop serving: finish the requests in progress, close the socket and free the server.
 *  NULL is a no-op. */
TIDE_API void tide_metrics_server_stop(tide_metrics_server *s);

/* ---- the worker's families ------------------------------------------------------------ */

/** Label indices of tide_frames_total{status}. */
enum {
    TIDE_WM_DONE = 0,       /**< status="done": stored and acked */
    TIDE_WM_INCOMPLETE = 1, /**< status="incomplete": stored, calibration missing */
    TIDE_WM_FAILED = 2,     /**< status="failed": sent to the dead-letter queue */
    TIDE_WM_RETRIED = 3     /**< status="retried": given back to run again */
};

/** Label indices of tide_stage_seconds{stage}. */
enum {
    TIDE_WM_READ = 0,
    TIDE_WM_REDUCE = 1,
    TIDE_WM_CALIBRATE = 2,
    TIDE_WM_STORE = 3,
    TIDE_WM_WRITE = 4,
    TIDE_WM_DIFF = 5
};

/** Label indices of tide_device_memory_bytes{kind}. */
enum { TIDE_WM_USED = 0, TIDE_WM_TOTAL = 1 };

/** The families of `tide worker`, made together by tide_metrics_worker so that every worker
 *  exposes the same names. */
typedef struct tide_worker_metrics {
    tide_metric *frames;        /**< tide_frames_total{status=done|incomplete|failed|retried} */
    tide_metric *stage_seconds; /**< tide_stage_seconds{stage=read|reduce|calibrate|store|
                                     write|diff}, histogram of one stage's wall time */
    tide_metric *frame_seconds; /**< tide_frame_seconds, histogram: submit to commit */
    tide_metric *store_seconds; /**< tide_store_seconds, histogram: one frame's commit */
    tide_metric *queue_depth;   /**< tide_queue_depth, gauge: messages ready in the queue as
                                     the worker last saw them */
    tide_metric *device_memory; /**< tide_device_memory_bytes{kind=used|total}, gauge */
} tide_worker_metrics;

/** Add the worker's families to @p m (seconds histograms with tide_metrics_seconds_bounds)
 *  and fill @p w. Errors: those of tide_metrics_counter (a name already there). */
TIDE_API int tide_metrics_worker(tide_metrics *m, tide_worker_metrics *w);

#ifdef __cplusplus
}
#endif
#endif
