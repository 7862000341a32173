/* test_metrics_http.c — the metrics server (tide/metrics.h) scraped by a real client, curl:
 * GET /metrics with its content type, /healthz healthy and not, 404, 405, HEAD; the listen
 * forms (IPv4, [IPv6], a name, every interface, port 0) and the errors of bad ones, a port in
 * use named in the error; start and stop again and again with no descriptor left open.
 *
 * `test_metrics_http serve HOST:PORT PORTFILE` is the program tests/cli/test_metrics_scrape.sh
 * runs while a real Prometheus scrapes it: the worker's families with known values, the port
 * written to PORTFILE, unhealthy while PORTFILE.unhealthy exists (its text the reason),
 * served until SIGTERM or SIGINT, then stopped cleanly (exit 0). */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tide/metrics.h"
#include "tide_test.h"

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1;
}

static int have_curl(void) {
    return system("curl --version >/dev/null 2>&1") == 0;
}

/* curl @p args @p url: the status code (0 when curl failed), the content type and the body. */
static int http(const char *args, const char *url, char *ctype, size_t ccap, char *body,
                size_t bcap) {
    char tmpl[] = "/tmp/tide-metrics-body.XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return 0;
    close(fd);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "curl -s -g --max-time 10 %s -o %s -w '%%{http_code} %%{content_type}' '%s'", args,
             tmpl, url);
    FILE *p = popen(cmd, "r");
    char out[512] = "";
    if (p) {
        size_t n = fread(out, 1, sizeof out - 1, p);
        out[n] = 0;
        pclose(p);
    }
    int code = atoi(out);
    const char *sp = strchr(out, ' ');
    snprintf(ctype, ccap, "%s", sp ? sp + 1 : "");
    body[0] = 0;
    FILE *f = fopen(tmpl, "r");
    if (f) {
        size_t n = fread(body, 1, bcap - 1, f);
        body[n] = 0;
        fclose(f);
    }
    unlink(tmpl);
    return code;
}

/* A connection to 127.0.0.1:@p port that sends half a request and then nothing. */
static int stalled_client(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const char half[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        write(fd, half, sizeof half - 1) != (ssize_t)(sizeof half - 1)) {
        close(fd);
        return -1;
    }
    return fd;
}

typedef struct {
    int bad;
    const char *reason;
    int calls;
} health_state;

static int health(void *user, char *reason, size_t cap) {
    health_state *h = user;
    h->calls++;
    snprintf(reason, cap, "%s", h->reason);
    return h->bad;
}

static char body[1 << 16];

static int starts(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void test_endpoints(void) {
    tide_metrics *m = NULL;
    CHECK_OK(tide_metrics_create(&m));
    if (!m)
        return;
    tide_metric *c = NULL;
    static const char *const st[] = {"done", "failed"};
    CHECK_OK(tide_metrics_counter(m, "t_frames_total", "Frames.", "status", st, 2, &c));
    tide_metric_add(c, 1, 4);
    health_state hs = {0, "broker connected", 0};
    tide_metrics_server *s = NULL;
    CHECK_OK(tide_metrics_serve(m, "127.0.0.1:0", health, &hs, &s));
    if (!s) {
        tide_metrics_destroy(m);
        return;
    }
    int port = tide_metrics_server_port(s);
    CHECK(port > 0 && port < 65536);
    char base[64], url[128], ct[256];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", port);

    snprintf(url, sizeof url, "%s/metrics", base);
    CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 200);
    CHECK(strcmp(ct, "text/plain; version=0.0.4; charset=utf-8") == 0);
    CHECK(strstr(body, "# TYPE t_frames_total counter\n"
                       "t_frames_total{status=\"done\"} 0\n"
                       "t_frames_total{status=\"failed\"} 4\n") != NULL);
    CHECK(strstr(body, "\nprocess_open_fds ") != NULL);
    snprintf(url, sizeof url, "%s/metrics?x=1", base); /* a query string is no other path */
    CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 200);
    snprintf(url, sizeof url, "%s/metrics", base);
    CHECK(http("-I", url, ct, sizeof ct, body, sizeof body) == 200);
    CHECK(strstr(body, "t_frames_total") == NULL); /* HEAD: headers only */

    snprintf(url, sizeof url, "%s/healthz", base);
    CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 200);
    CHECK(strcmp(ct, "application/json") == 0);
    CHECK(starts(body, "{\"status\":\"ok\",\"detail\":\"broker connected\",\"uptime_seconds\":"));
    hs.bad = 1;
    hs.reason = "broker \"amqp://h/v\" disconnected";
    CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 503);
    CHECK(starts(
        body, "{\"status\":\"unhealthy\",\"reason\":\"broker \\\"amqp://h/v\\\" disconnected\","));
    hs.reason = "";
    CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 503);
    CHECK(strstr(body, "\"reason\":\"unhealthy\"") != NULL);
    CHECK(hs.calls == 3);

    snprintf(url, sizeof url, "%s/", base);
    CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 404);
    snprintf(url, sizeof url, "%s/metrics/x", base);
    CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 404);
    snprintf(url, sizeof url, "%s/metrics", base);
    CHECK(http("-X POST -d x=1", url, ct, sizeof ct, body, sizeof body) == 405);
    CHECK(http("-X DELETE", url, ct, sizeof ct, body, sizeof body) == 405);
    CHECK(http("-i -X PUT -d x", url, ct, sizeof ct, body, sizeof body) == 405);
    CHECK(strstr(body, "Allow: GET, HEAD") != NULL);
    /* the server still answers after all that */
    CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 200);
    /* a client that stalls half-way through its request holds no one else up */
    int stalled = stalled_client(port);
    CHECK(stalled >= 0);
    snprintf(url, sizeof url, "%s/healthz", base);
    hs.bad = 0;
    CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 200);
    if (stalled >= 0)
        close(stalled);
    snprintf(url, sizeof url, "%s/metrics", base);

    /* the same port again: in use, and the error says where and why */
    char where[64];
    snprintf(where, sizeof where, "127.0.0.1:%d", port);
    tide_metrics_server *s2 = NULL;
    CHECK(tide_metrics_serve(m, where, NULL, NULL, &s2) == TIDE_E_IO && !s2);
    CHECK(strstr(tide_error_detail(), where) && strstr(tide_error_detail(), "in use"));
    printf("in use: %s\n", tide_error_detail());
    tide_metrics_server_stop(s);
    /* stopped: nothing listens there any more */
    CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 0);
    tide_metrics_destroy(m);
}

static void test_listen_forms(void) {
    tide_metrics *m = NULL;
    CHECK_OK(tide_metrics_create(&m));
    if (!m)
        return;
    tide_metrics_server *s = NULL;
    static const char *const bad[] = {"9464",
                                      "127.0.0.1",
                                      "127.0.0.1:",
                                      "127.0.0.1:x",
                                      "127.0.0.1:65536",
                                      "127.0.0.1:-1",
                                      "::1:9464",
                                      "[::1]",
                                      "[::1]9464",
                                      "[]:9464",
                                      "127.0.0.1:99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int st = tide_metrics_serve(m, bad[i], NULL, NULL, &s);
        CHECK(st == TIDE_E_INVAL && !s);
        if (st != TIDE_E_INVAL)
            fprintf(stderr, "listen \"%s\": %d %s\n", bad[i], st, tide_error_detail());
    }
    CHECK(tide_metrics_serve(m, NULL, NULL, NULL, &s) == TIDE_E_INVAL);
    CHECK(tide_metrics_serve(m, "no-such-host.invalid:0", NULL, NULL, &s) == TIDE_E_NOTFOUND);
    CHECK(strstr(tide_error_detail(), "no-such-host.invalid:0") != NULL);
    /* an address of no interface here (TEST-NET-2) */
    CHECK(tide_metrics_serve(m, "198.51.100.7:0", NULL, NULL, &s) == TIDE_E_IO);
    CHECK(strstr(tide_error_detail(), "198.51.100.7:0") != NULL);
    printf("not here: %s\n", tide_error_detail());

    char url[128], ct[256];
    /* every interface: IPv4 loopback reaches it (dual stack or IPv4 alone) */
    CHECK_OK(tide_metrics_serve(m, ":0", NULL, NULL, &s));
    if (s) {
        snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", tide_metrics_server_port(s));
        CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 200);
        tide_metrics_server_stop(s);
        s = NULL;
    }
    CHECK_OK(tide_metrics_serve(m, "localhost:0", NULL, NULL, &s));
    if (s) {
        snprintf(url, sizeof url, "http://localhost:%d/healthz", tide_metrics_server_port(s));
        CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 200);
        tide_metrics_server_stop(s);
        s = NULL;
    }
    /* IPv6 loopback, where the host has IPv6 */
    int st = tide_metrics_serve(m, "[::1]:0", NULL, NULL, &s);
    if (st == 0) {
        snprintf(url, sizeof url, "http://[::1]:%d/metrics", tide_metrics_server_port(s));
        CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 200);
        CHECK(strstr(body, "process_start_time_seconds") != NULL);
        tide_metrics_server_stop(s);
        s = NULL;
    } else {
        CHECK(st == TIDE_E_IO);
        printf("note: no IPv6 loopback here (%s)\n", tide_error_detail());
    }
    tide_metrics_destroy(m);
}

/* Start and stop many times, scraping between: nothing left open or allocated (LSan). */
static void test_restart(void) {
    tide_metrics *m = NULL;
    CHECK_OK(tide_metrics_create(&m));
    if (!m)
        return;
    int before = open_fds();
    char url[128], ct[256];
    for (int k = 0; k < 20; k++) {
        tide_metrics_server *s = NULL;
        CHECK_OK(tide_metrics_serve(m, "127.0.0.1:0", NULL, NULL, &s));
        if (!s)
            break;
        if (k % 5 == 0) {
            snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", tide_metrics_server_port(s));
            CHECK(http("", url, ct, sizeof ct, body, sizeof body) == 200);
        }
        tide_metrics_server_stop(s);
    }
    int after = open_fds();
    CHECK(before == after);
    if (before != after)
        fprintf(stderr, "descriptors: %d before, %d after 20 servers\n", before, after);
    tide_metrics_server_stop(NULL);
    tide_metrics_destroy(m);
}

/* ---- serve mode (tests/cli/test_metrics_scrape.sh) -------------------------------------- */

typedef struct {
    tide_worker_metrics *w;
    const char *flag;
} serve_state;

static void serve_hook(tide_metrics *m, void *user) {
    serve_state *s = user;
    tide_metric_set(s->w->queue_depth, 0, 42);
    tide_metric_set(s->w->device_memory, TIDE_WM_USED, 1.5e9);
    tide_metric_set(s->w->device_memory, TIDE_WM_TOTAL, 150754820096.0);
}

static int serve_health(void *user, char *reason, size_t cap) {
    serve_state *s = user;
    FILE *f = fopen(s->flag, "r");
    if (!f)
        return 0;
    size_t n = fread(reason, 1, cap - 1, f);
    reason[n] = 0;
    if (n && reason[n - 1] == '\n')
        reason[n - 1] = 0;
    fclose(f);
    return 1;
}

static int serve(const char *where, const char *portfile) {
    /* SIGTERM and SIGINT are blocked before the server's thread starts, so that it inherits
     * the mask and the main thread takes them in sigwait. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    tide_metrics *m = NULL;
    tide_worker_metrics w;
    if (tide_metrics_create(&m) || tide_metrics_worker(m, &w)) {
        fprintf(stderr, "serve: %s\n", tide_error_detail());
        tide_metrics_destroy(m);
        return 1;
    }
    /* Known values that the scrape test looks for in Prometheus. */
    tide_metric_add(w.frames, TIDE_WM_DONE, 7);
    tide_metric_add(w.frames, TIDE_WM_INCOMPLETE, 1);
    tide_metric_add(w.frames, TIDE_WM_FAILED, 2);
    tide_metric_add(w.frames, TIDE_WM_RETRIED, 3);
    for (int i = 0; i < 5; i++) {
        tide_metric_observe(w.stage_seconds, TIDE_WM_READ, 0.02);
        tide_metric_observe(w.stage_seconds, TIDE_WM_REDUCE, 0.3);
        tide_metric_observe(w.store_seconds, 0, 0.004);
    }
    for (int i = 0; i < 3; i++)
        tide_metric_observe(w.frame_seconds, 0, 1.5);
    char flag[4096];
    snprintf(flag, sizeof flag, "%s.unhealthy", portfile);
    serve_state ss = {&w, flag};
    tide_metrics_on_scrape(m, serve_hook, &ss);
    tide_metrics_server *s = NULL;
    if (tide_metrics_serve(m, where, serve_health, &ss, &s)) {
        fprintf(stderr, "serve: %s\n", tide_error_detail());
        tide_metrics_destroy(m);
        return 1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", portfile);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", tide_metrics_server_port(s)) < 0 || fclose(f) != 0 ||
        rename(tmp, portfile) != 0) {
        fprintf(stderr, "serve: cannot write %s\n", portfile);
        tide_metrics_server_stop(s);
        tide_metrics_destroy(m);
        return 1;
    }
    int sig = 0;
    sigwait(&set, &sig);
    tide_metrics_server_stop(s);
    tide_metrics_destroy(m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "serve") == 0)
        return serve(argv[2], argv[3]);
    if (!have_curl())
        TIDE_TEST_SKIP("no curl to scrape with (scripts/install-deps.sh)");
    test_endpoints();
    test_listen_forms();
    test_restart();
    return TIDE_TEST_RESULT();
}
