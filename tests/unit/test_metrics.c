/* test_metrics.c — the metrics registry and its exposition (tide/metrics.h): the exact text
 * format 0.0.4 of counters, gauges and histograms with labels and escapes, numbers that read
 * back to the same double, names refused, updates from several threads counted exactly while
 * scrapes see consistent histograms, the process metrics and the scrape hook, the worker's
 * families. The HTTP server is tests/unit/test_metrics_http.c. */
#include <pthread.h>
#include <time.h>

#include "tide/metrics.h"
#include "tide_test.h"

/* The text before the process metrics: the caller's families, written first. */
static char *caller_part(tide_metrics *m) {
    char *t = tide_metrics_render(m, NULL);
    CHECK(t != NULL);
    if (!t)
        return NULL;
    char *p = strstr(t, "# HELP process_resident_memory_bytes");
    CHECK(p != NULL);
    if (p)
        *p = 0;
    return t;
}

/* The value of the sample line that starts with @p series ("name{...} "), NAN if none. */
static double sample(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return NAN;
}

static void test_exposition(void) {
    tide_metrics *m = NULL;
    CHECK_OK(tide_metrics_create(&m));
    if (!m)
        return;
    static const char *const status[] = {"done", "a\"b\\c\nd"};
    tide_metric *c = NULL, *g = NULL, *h = NULL, *hl = NULL;
    CHECK_OK(tide_metrics_counter(m, "t_frames_total", "Frames by \\status\\,\nper line.", "status",
                                  status, 2, &c));
    CHECK_OK(tide_metrics_gauge(m, "t_queue_depth", "Depth.", NULL, NULL, 0, &g));
    static const double b[] = {0.1, 1, 10};
    CHECK_OK(tide_metrics_histogram(m, "t_seconds", "Latency.", NULL, NULL, 0, b, 3, &h));
    static const char *const st[] = {"read"};
    CHECK_OK(tide_metrics_histogram(m, "t_stage_seconds", "", "stage", st, 1, b, 1, &hl));
    tide_metric_add(c, 0, 3);
    tide_metric_add(c, 1, 1);
    tide_metric_add(c, 1, -5);  /* a counter never goes down */
    tide_metric_set(c, 0, 100); /* nor is it set */
    tide_metric_add(g, 0, 2.5);
    tide_metric_set(g, 0, -7);
    tide_metric_observe(h, 0, 0.05);
    tide_metric_observe(h, 0, 0.1); /* on a bound: in that bucket (le is <=) */
    tide_metric_observe(h, 0, 5);
    tide_metric_observe(h, 0, 100);
    tide_metric_observe(h, 0, NAN); /* ignored */
    tide_metric_observe(hl, 0, 2);
    tide_metric_observe(h, 7, 1); /* out of range: ignored */
    tide_metric_add(h, 0, 1);     /* not a histogram's operation: ignored */
    char *t = caller_part(m);
    const char *want = "# HELP t_frames_total Frames by \\\\status\\\\,\\nper line.\n"
                       "# TYPE t_frames_total counter\n"
                       "t_frames_total{status=\"done\"} 3\n"
                       "t_frames_total{status=\"a\\\"b\\\\c\\nd\"} 1\n"
                       "# HELP t_queue_depth Depth.\n"
                       "# TYPE t_queue_depth gauge\n"
                       "t_queue_depth -7\n"
                       "# HELP t_seconds Latency.\n"
                       "# TYPE t_seconds histogram\n"
                       "t_seconds_bucket{le=\"0.1\"} 2\n"
                       "t_seconds_bucket{le=\"1\"} 2\n"
                       "t_seconds_bucket{le=\"10\"} 3\n"
                       "t_seconds_bucket{le=\"+Inf\"} 4\n"
                       "t_seconds_sum 105.15\n"
                       "t_seconds_count 4\n"
                       "# TYPE t_stage_seconds histogram\n"
                       "t_stage_seconds_bucket{stage=\"read\",le=\"0.1\"} 0\n"
                       "t_stage_seconds_bucket{stage=\"read\",le=\"+Inf\"} 1\n"
                       "t_stage_seconds_sum{stage=\"read\"} 2\n"
                       "t_stage_seconds_count{stage=\"read\"} 1\n";
    CHECK(t && strcmp(t, want) == 0);
    if (t && strcmp(t, want) != 0)
        fprintf(stderr, "exposition:\n%s\nwanted:\n%s", t, want);
    free(t);
    CHECK(tide_metric_value(c, 0) == 3);
    CHECK(tide_metric_value(h, 0) == 4);
    CHECK(isnan(tide_metric_value(c, 2)));
    CHECK(tide_metric_index(c, "done") == 0);
    CHECK(tide_metric_index(c, "nope") == -1);
    CHECK(tide_metric_index(g, "done") == -1);
    tide_metrics_destroy(m);
}

/* Every number written reads back to the same double, in the shortest form. */
static void test_numbers(void) {
    tide_metrics *m = NULL;
    CHECK_OK(tide_metrics_create(&m));
    if (!m)
        return;
    static const char *const v[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"};
    const double x[] = {0.1,
                        1.0 / 3,
                        1e-300,
                        5e-324,
                        1.7976931348623157e308,
                        12,
                        1e21,
                        -0.0,
                        123456789012345678.0,
                        INFINITY,
                        -INFINITY};
    tide_metric *g = NULL;
    CHECK_OK(tide_metrics_gauge(m, "t_value", "Values.", "v", v, 11, &g));
    for (int i = 0; i < 11; i++)
        tide_metric_set(g, i, x[i]);
    char *t = caller_part(m);
    for (int i = 0; t && i < 11; i++) {
        char series[64];
        snprintf(series, sizeof series, "t_value{v=\"%s\"}", v[i]);
        double y = sample(t, series);
        CHECK(y == x[i] && signbit(y) == signbit(x[i]));
        if (!(y == x[i]))
            fprintf(stderr, "%s: %.17g wrote %.17g\n", series, x[i], y);
    }
    CHECK(t && strstr(t, "t_value{v=\"a\"} 0.1\n") && strstr(t, "t_value{v=\"f\"} 12\n"));
    CHECK(t && strstr(t, "t_value{v=\"g\"} 1e+21\n") && strstr(t, "t_value{v=\"h\"} -0\n"));
    CHECK(t && strstr(t, "t_value{v=\"i\"} 123456789012345680\n"));
    CHECK(t && strstr(t, "t_value{v=\"j\"} +Inf\n") && strstr(t, "t_value{v=\"k\"} -Inf\n"));
    free(t);
    tide_metric_set(g, 0, NAN);
    t = caller_part(m);
    CHECK(t && strstr(t, "t_value{v=\"a\"} NaN\n"));
    free(t);
    tide_metrics_destroy(m);
}

static void test_refused(void) {
    tide_metrics *m = NULL;
    CHECK_OK(tide_metrics_create(&m));
    if (!m)
        return;
    tide_metric *f = NULL;
    static const char *const two[] = {"x", "x"};
    static const char *const one[] = {"x"};
    static const double up[] = {1, 2}, down[] = {2, 1}, nan_b[] = {1, NAN};
    CHECK(tide_metrics_counter(m, "1abc", "", NULL, NULL, 0, &f) == TIDE_E_INVAL && !f);
    CHECK(tide_metrics_counter(m, "a-b", "", NULL, NULL, 0, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_counter(m, "", "", NULL, NULL, 0, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_counter(m, "ok:name_total", "", NULL, NULL, 0, &f) == 0 && f);
    CHECK(tide_metrics_gauge(m, "ok:name_total", "", NULL, NULL, 0, &f) == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "already") != NULL);
    CHECK(tide_metrics_gauge(m, "process_open_fds", "", NULL, NULL, 0, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_gauge(m, "g", "", "__x", one, 1, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_gauge(m, "g", "", "a:b", one, 1, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_gauge(m, "g", "", "x", two, 2, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_gauge(m, "g", "", "x", one, 0, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_gauge(m, "g", "", NULL, one, 1, &f) == TIDE_E_INVAL);
    static const char *const latin1[] = {"caf\xe9"}, *const utf8[] = {
                                                         "caf\xc3\xa9 \xf0\x9f\x94\xad"};
    static const char *const overlong[] = {"\xc0\xaf"}, *const surrogate[] = {"\xed\xa0\x80"};
    CHECK(tide_metrics_gauge(m, "g", "", "x", latin1, 1, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_gauge(m, "g", "", "x", overlong, 1, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_gauge(m, "g", "", "x", surrogate, 1, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_gauge(m, "g", "caf\xe9", NULL, NULL, 0, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_gauge(m, "g_utf8", "caf\xc3\xa9", "x", utf8, 1, &f) == 0);
    CHECK(tide_metrics_histogram(m, "h", "", "le", one, 1, up, 2, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_histogram(m, "h", "", NULL, NULL, 0, down, 2, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_histogram(m, "h", "", NULL, NULL, 0, nan_b, 2, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_histogram(m, "h", "", NULL, NULL, 0, up, 0, &f) == TIDE_E_INVAL);
    /* A histogram owns its _bucket, _sum and _count names, both ways round. */
    CHECK(tide_metrics_histogram(m, "h", "", NULL, NULL, 0, up, 2, &f) == 0);
    CHECK(tide_metrics_counter(m, "h_count", "", NULL, NULL, 0, &f) == TIDE_E_INVAL);
    CHECK(tide_metrics_gauge(m, "y_sum", "", NULL, NULL, 0, &f) == 0);
    CHECK(tide_metrics_histogram(m, "y", "", NULL, NULL, 0, NULL, 0, &f) == TIDE_E_INVAL);
    /* Default bounds. */
    CHECK(tide_metrics_histogram(m, "z_seconds", "", NULL, NULL, 0, NULL, 0, &f) == 0);
    int n = 0;
    const double *sb = tide_metrics_seconds_bounds(&n);
    CHECK(n == 13 && sb[0] == 0.005 && sb[12] == 60);
    char *t = tide_metrics_render(m, NULL);
    CHECK(t && strstr(t, "z_seconds_bucket{le=\"0.005\"} 0\nz_seconds_bucket{le=\"0.01\"} 0\n"));
    CHECK(t && strstr(t, "z_seconds_bucket{le=\"60\"} 0\nz_seconds_bucket{le=\"+Inf\"} 0\n"));
    free(t);
    tide_metrics_destroy(m);
}

/* ---- threads: exact counts, and every scrape a consistent snapshot ------------------------ */

enum { NTHREADS = 4, NPER = 20000 };

typedef struct {
    tide_metric *c, *h;
    int k;
} worker_arg;

static void *updater(void *p) {
    worker_arg *a = p;
    for (int i = 0; i < NPER; i++) {
        tide_metric_add(a->c, a->k % 2, 1);
        tide_metric_observe(a->h, 0, (double)(i % 7));
    }
    return NULL;
}

typedef struct {
    tide_metrics *m;
    volatile int stop;
    int scrapes, inconsistent;
} scraper_arg;

static void *scraper(void *p) {
    scraper_arg *a = p;
    while (!a->stop || a->scrapes == 0) {
        char *t = tide_metrics_render(a->m, NULL);
        if (!t) {
            a->inconsistent++;
            break;
        }
        double inf = sample(t, "t_obs_bucket{phase=\"x\",le=\"+Inf\"}");
        double cnt = sample(t, "t_obs_count{phase=\"x\"}");
        double le3 = sample(t, "t_obs_bucket{phase=\"x\",le=\"3\"}");
        if (!(inf == cnt) || !(le3 <= inf))
            a->inconsistent++;
        free(t);
        a->scrapes++;
    }
    return NULL;
}

static void test_threads(void) {
    tide_metrics *m = NULL;
    CHECK_OK(tide_metrics_create(&m));
    if (!m)
        return;
    static const char *const par[] = {"even", "odd"};
    static const char *const ph[] = {"x"};
    static const double b[] = {1, 3, 5};
    tide_metric *c = NULL, *h = NULL;
    CHECK_OK(tide_metrics_counter(m, "t_events_total", "Events.", "parity", par, 2, &c));
    CHECK_OK(tide_metrics_histogram(m, "t_obs", "Obs.", "phase", ph, 1, b, 3, &h));
    pthread_t th[NTHREADS], sc;
    worker_arg wa[NTHREADS];
    scraper_arg sa = {.m = m};
    CHECK(pthread_create(&sc, NULL, scraper, &sa) == 0);
    for (int k = 0; k < NTHREADS; k++) {
        wa[k] = (worker_arg){c, h, k};
        CHECK(pthread_create(&th[k], NULL, updater, &wa[k]) == 0);
    }
    for (int k = 0; k < NTHREADS; k++)
        pthread_join(th[k], NULL);
    sa.stop = 1;
    pthread_join(sc, NULL);
    CHECK(sa.scrapes > 0 && sa.inconsistent == 0);
    CHECK(tide_metric_value(c, 0) == (double)NTHREADS / 2 * NPER);
    CHECK(tide_metric_value(c, 1) == (double)NTHREADS / 2 * NPER);
    CHECK(tide_metric_value(h, 0) == (double)NTHREADS * NPER);
    char *t = tide_metrics_render(m, NULL);
    /* i % 7 over 0..6: 0,1 <= 1; 2,3 <= 3; 4,5 <= 5; 6 above. NPER = 20000 = 2857 * 7 + 1. */
    double per7 = NPER / 7, extra0 = NPER - 7 * (NPER / 7); /* extra: the i%7 == 0 leftovers */
    double le1 = NTHREADS * (2 * per7 + extra0);
    CHECK(t && sample(t, "t_obs_bucket{phase=\"x\",le=\"1\"}") == le1);
    CHECK(t && sample(t, "t_obs_sum{phase=\"x\"}") == NTHREADS * per7 * 21);
    free(t);
    printf("threads: %d x %d updates, %d consistent scrapes meanwhile\n", NTHREADS, NPER,
           sa.scrapes);
    tide_metrics_destroy(m);
}

/* ---- process metrics and the scrape hook ------------------------------------------------ */

static void hook(tide_metrics *m, void *user) {
    tide_metric *g = user;
    tide_metric_add(g, 0, 1); /* counts the scrapes: the hook runs once per scrape */
}

static void test_process_and_hook(void) {
    tide_metrics *m = NULL;
    CHECK_OK(tide_metrics_create(&m));
    if (!m)
        return;
    tide_metric *g = NULL;
    CHECK_OK(tide_metrics_gauge(m, "t_scrapes", "Scrapes seen.", NULL, NULL, 0, &g));
    tide_metrics_on_scrape(m, hook, g);
    char *t = tide_metrics_render(m, NULL);
    free(t);
    size_t len = 0;
    t = tide_metrics_render(m, &len);
    CHECK(t && len == strlen(t));
    if (!t) {
        tide_metrics_destroy(m);
        return;
    }
    CHECK(sample(t, "t_scrapes") == 2);
    double rss = sample(t, "process_resident_memory_bytes");
    double vsz = sample(t, "process_virtual_memory_bytes");
    double fds = sample(t, "process_open_fds");
    double start = sample(t, "process_start_time_seconds");
    double up = sample(t, "tide_uptime_seconds");
    double now = (double)time(NULL);
    CHECK(rss > 1e5 && vsz >= rss);
    CHECK(fds >= 3 && fds < 1000 && sample(t, "process_max_fds") >= fds);
    CHECK(sample(t, "process_cpu_seconds_total") >= 0);
    /* The process started within the last hour, not at the registry's creation. */
    CHECK(start > now - 3600 && start <= now + 2);
    CHECK(up >= 0 && up < 3600);
    CHECK(strstr(t, "# TYPE process_cpu_seconds_total counter\n") != NULL);
    free(t);
    tide_metrics_on_scrape(m, NULL, NULL);
    t = tide_metrics_render(m, NULL);
    CHECK(t && sample(t, "t_scrapes") == 2);
    free(t);
    tide_metrics_destroy(m);
}

static void test_worker_families(void) {
    tide_metrics *m = NULL;
    CHECK_OK(tide_metrics_create(&m));
    if (!m)
        return;
    tide_worker_metrics w;
    CHECK_OK(tide_metrics_worker(m, &w));
    CHECK(tide_metric_index(w.frames, "done") == TIDE_WM_DONE);
    CHECK(tide_metric_index(w.frames, "retried") == TIDE_WM_RETRIED);
    CHECK(tide_metric_index(w.stage_seconds, "calibrate") == TIDE_WM_CALIBRATE);
    CHECK(tide_metric_index(w.stage_seconds, "diff") == TIDE_WM_DIFF);
    CHECK(tide_metric_index(w.device_memory, "total") == TIDE_WM_TOTAL);
    CHECK(w.frame_seconds && w.store_seconds && w.queue_depth);
    tide_metric_add(w.frames, TIDE_WM_FAILED, 1);
    tide_metric_observe(w.stage_seconds, TIDE_WM_STORE, 0.02);
    char *t = tide_metrics_render(m, NULL);
    CHECK(t && sample(t, "tide_frames_total{status=\"failed\"}") == 1);
    CHECK(t && sample(t, "tide_frames_total{status=\"done\"}") == 0);
    CHECK(t && sample(t, "tide_stage_seconds_bucket{stage=\"store\",le=\"0.025\"}") == 1);
    CHECK(t && sample(t, "tide_device_memory_bytes{kind=\"used\"}") == 0);
    free(t);
    tide_worker_metrics w2;
    CHECK(tide_metrics_worker(m, &w2) == TIDE_E_INVAL && !w2.frames);
    tide_metrics_destroy(m);
}

int main(void) {
    test_exposition();
    test_numbers();
    test_refused();
    test_threads();
    test_process_and_hook();
    test_worker_families();
    return TIDE_TEST_RESULT();
}
