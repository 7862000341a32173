/* metrics_http.c — the metrics server: libmicrohttpd's own polling thread on the socket of
 * metrics_listen, GET /metrics (the exposition) and GET /healthz (the caller's health
 * callback as JSON), 404 and 405 for the rest. */
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "service/metrics_internal.h"
#include "tide/status.h"

struct tide_metrics_server {
    struct MHD_Daemon *daemon;
    tide_metrics *m;
    tide_metrics_health_fn health;
    void *health_user;
    int port;
};

/* Queue a response of @p len bytes of malloc'd @p body (taken: MHD frees it). */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned int code, char *body, size_t len,
                             const char *type) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (code == MHD_HTTP_SERVICE_UNAVAILABLE || code == MHD_HTTP_OK)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int code, const char *s) {
    char *body = strdup(s);
    if (!body)
        return MHD_NO;
    return reply(c, code, body, strlen(body), "text/plain; charset=utf-8");
}

static enum MHD_Result serve_metrics(tide_metrics_server *s, struct MHD_Connection *c) {
    size_t len = 0;
    char *body = tide_metrics_render(s->m, &len);
    if (!body)
        return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    return reply(c, MHD_HTTP_OK, body, len, "text/plain; version=0.0.4; charset=utf-8");
}

static enum MHD_Result serve_health(tide_metrics_server *s, struct MHD_Connection *c) {
    char reason[1024] = "";
    int bad = s->health ? s->health(s->health_user, reason, sizeof reason) : 0;
    reason[sizeof reason - 1] = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double up = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec - s->m->proc.start_time;
    /* jansson writes the JSON: a reason may hold quotes, backslashes or any byte. A reason
     * that is not UTF-8 is replaced rather than sent malformed. */
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string(bad ? "unhealthy" : "ok"));
    if (reason[0]) {
        json_t *r = json_string(reason);
        json_object_set_new(o, bad ? "reason" : "detail",
                            r ? r : json_string("(reason not UTF-8)"));
    } else if (bad) {
        json_object_set_new(o, "reason", json_string("unhealthy"));
    }
    json_object_set_new(o, "uptime_seconds", json_real(floor(up > 0 ? up * 1e3 : 0) / 1e3));
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(o);
    if (!text)
        return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    size_t n = strlen(text);
    /* json_dumps' buffer comes from jansson's allocator (malloc unless a program changed it):
     * copied into one of ours with its newline, which MHD frees. */
    char *body = malloc(n + 2);
    if (body) {
        memcpy(body, text, n);
        body[n] = '\n';
        body[n + 1] = 0;
    }
    free(text);
    if (!body)
        return MHD_NO;
    return reply(c, bad ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK, body, n + 1,
                 "application/json");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **req) {
    tide_metrics_server *s = cls;
    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    int known = strcmp(url, "/metrics") == 0 || strcmp(url, "/healthz") == 0;
    if (!known)
        return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics or /healthz\n");
    if (!get)
        return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET or HEAD\n");
    /* A GET with a body (none is expected): answered without reading it. */
    if (strcmp(url, "/metrics") == 0)
        return serve_metrics(s, c);
    return serve_health(s, c);
}

int tide_metrics_serve(tide_metrics *m, const char *where, tide_metrics_health_fn health,
                       void *health_user, tide_metrics_server **out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "metrics: NULL result");
    *out = NULL;
    if (!m)
        return tide_error(TIDE_E_INVAL, "metrics: NULL registry");
    int fd = -1, port = -1;
    int st = metrics_listen(where, &fd, &port);
    if (st)
        return st;
    tide_metrics_server *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return tide_error(TIDE_E_NOMEM, "metrics: out of memory");
    }
    s->m = m;
    s->health = health;
    s->health_user = health_user;
    s->port = port;
    /* One polling thread answers every request in turn: a scrape takes microseconds. A
     * client that stalls is dropped after 10 s; at most 32 at once. */
    s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL,
                                 handle, s, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)32, MHD_OPTION_END);
    if (!s->daemon) {
        close(fd);
        free(s);
        return tide_error(TIDE_E_IO, "metrics: %s: the HTTP server (libmicrohttpd) did not start",
                          where);
    }
    *out = s;
    return 0;
}

int tide_metrics_server_port(const tide_metrics_server *s) {
    return s ? s->port : -1;
}

void tide_metrics_server_stop(tide_metrics_server *s) {
    if (!s)
        return;
    /* Joins the polling thread and closes the listening socket with the connections. */
    MHD_stop_daemon(s->daemon);
    free(s);
}
