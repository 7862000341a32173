/* review_http.c — the review server (review.h): libmicrohttpd's polling thread on a socket of
 * metrics_listen, the page, sign-in and sessions, authentication and CSRF checks, then the
 * JSON API (review_api.c). One thread answers every request in turn, so the store (one
 * connection) is used by one request at a time. */
#include <jansson.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "service/metrics_internal.h"
#include "service/review_internal.h"
#include "tide/status.h"
#include "tide/store_review.h"

/* Sessions live 12 hours; at most 256 at once (the oldest is dropped). */
#define SESSION_SECONDS (12 * 3600)
#define MAX_SESSIONS 256
/* The largest request body read (a label with its tags and comment). */
#define MAX_BODY 16384

typedef struct session {
    char sid[65], csrf[65];
    int64_t reviewer;
    char name[64];
    time_t made;
} session;

struct tide_review_server {
    struct MHD_Daemon *daemon;
    tide_store *store;
    uint64_t seed;
    int port;
    session sessions[MAX_SESSIONS];
};

/* A request's body, gathered over the calls of one request. */
typedef struct upload {
    char buf[MAX_BODY + 1];
    size_t n;
    int too_big;
} upload;

/* 32 random bytes as 64 hex digits into @p out; -1 without random bytes. */
static int random_hex(char out[65]) {
    unsigned char raw[32];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++)
        out[2 * i] = hex[raw[i] >> 4], out[2 * i + 1] = hex[raw[i] & 15];
    out[64] = 0;
    return 0;
}

/* Equal strings, in time that does not depend on where they differ. */
static int same_secret(const char *a, const char *b) {
    const size_t n = strlen(a);
    if (n != strlen(b) || n == 0)
        return 0;
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

static session *find_session(tide_review_server *s, const char *sid) {
    const time_t now = time(NULL);
    for (int i = 0; sid && i < MAX_SESSIONS; i++) {
        session *x = &s->sessions[i];
        if (x->sid[0] && now - x->made > SESSION_SECONDS)
            memset(x, 0, sizeof *x);
        else if (x->sid[0] && same_secret(x->sid, sid))
            return x;
    }
    return NULL;
}

static session *new_session(tide_review_server *s, int64_t reviewer, const char *name) {
    session *slot = &s->sessions[0];
    for (int i = 0; i < MAX_SESSIONS; i++) {
        if (!s->sessions[i].sid[0]) {
            slot = &s->sessions[i];
            break;
        }
        if (s->sessions[i].made < slot->made)
            slot = &s->sessions[i];
    }
    memset(slot, 0, sizeof *slot);
    if (random_hex(slot->sid) || random_hex(slot->csrf)) {
        memset(slot, 0, sizeof *slot);
        return NULL;
    }
    slot->reviewer = reviewer;
    snprintf(slot->name, sizeof slot->name, "%s", name);
    slot->made = time(NULL);
    return slot;
}

/* Send @p r (its body taken), with the headers every answer carries and @p cookie when set. */
static enum MHD_Result send_reply(struct MHD_Connection *c, review_reply *r, const char *cookie) {
    if (!r->body) {
        r->body = strdup("{\"error\":\"out of memory\"}");
        r->len = r->body ? strlen(r->body) : 0;
        r->code = 500;
        r->type = "application/json";
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(r->body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    /* nothing from the network: the page's own script and style, its own images */
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; script-src 'unsafe-inline'; style-src "
                            "'unsafe-inline'; img-src 'self'; connect-src 'self'; "
                            "form-action 'none'; frame-ancestors 'none'; base-uri 'none'");
    if (cookie)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, cookie);
    enum MHD_Result ret = MHD_queue_response(c, r->code, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* POST /api/login {"token": ...}: a session, its cookie and CSRF token. */
static enum MHD_Result login(tide_review_server *s, struct MHD_Connection *c, const char *body) {
    review_reply r = {0};
    json_error_t e;
    json_t *in = json_loads(body, 0, &e);
    const char *token = NULL;
    int64_t id = -1;
    char name[64] = "";
    session *x = NULL;
    if (in && !json_unpack(in, "{ss}", "token", &token) &&
        !tide_store_reviewer_by_token(s->store, token, &id, name, sizeof name))
        x = new_session(s, id, name);
    json_decref(in);
    if (!x) {
        review_error(&r, 401, "unauthorized");
        return send_reply(c, &r, NULL);
    }
    char cookie[160];
    snprintf(cookie, sizeof cookie,
             "tide_session=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d", x->sid,
             SESSION_SECONDS);
    json_t *o = json_pack("{sIssss}", "reviewer_id", (json_int_t)x->reviewer, "reviewer", x->name,
                          "csrf", x->csrf);
    r.code = 200;
    r.type = "application/json";
    r.body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    r.len = r.body ? strlen(r.body) : 0;
    json_decref(o);
    return send_reply(c, &r, cookie);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_size, void **req) {
    (void)version;
    tide_review_server *s = cls;
    const int post = !strcmp(method, MHD_HTTP_METHOD_POST);
    if (post && !*req) { /* the first call of a POST: a place for its body */
        upload *u = calloc(1, sizeof *u);
        if (!u)
            return MHD_NO;
        *req = u;
        return MHD_YES;
    }
    upload *u = *req;
    if (post && *data_size) {
        if (u->n + *data_size > MAX_BODY)
            u->too_big = 1;
        else
            memcpy(u->buf + u->n, data, *data_size), u->n += *data_size;
        *data_size = 0;
        return MHD_YES;
    }
    review_reply r = {0};
    const char *body = u ? u->buf : "";
    if (u && u->too_big) {
        review_error(&r, 413, "request body too large");
        return send_reply(c, &r, NULL);
    }
    if (!strcmp(url, "/") || !strcmp(url, "/summary")) {
        if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
            review_error(&r, 405, "method not allowed");
            return send_reply(c, &r, NULL);
        }
        r = (review_reply){200, "text/html; charset=utf-8", strdup(review_page_html),
                           strlen(review_page_html)};
        return send_reply(c, &r, NULL);
    }
    if (strncmp(url, "/api/", 5)) {
        review_error(&r, 404, "not found");
        return send_reply(c, &r, NULL);
    }
    if (!strcmp(url, "/api/login") && post) {
        /* JSON only: a cross-site form cannot send it without a preflight, which is never
         * answered, so no other site signs a browser in (login CSRF) */
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        if (!ct || strncmp(ct, "application/json", 16)) {
            review_error(&r, 415, "POST /api/login takes Content-Type: application/json");
            return send_reply(c, &r, NULL);
        }
        return login(s, c, body);
    }
    /* who: a bearer token, else the session cookie */
    review_who who = {-1, ""};
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    session *x = NULL;
    int by_cookie = 0;
    if (auth && !strncmp(auth, "Bearer ", 7)) {
        if (tide_store_reviewer_by_token(s->store, auth + 7, &who.reviewer, who.name,
                                         sizeof who.name))
            who.reviewer = -1;
    } else if ((x = find_session(
                    s, MHD_lookup_connection_value(c, MHD_COOKIE_KIND, "tide_session")))) {
        who.reviewer = x->reviewer;
        snprintf(who.name, sizeof who.name, "%s", x->name);
        by_cookie = 1;
    }
    if (who.reviewer < 0) {
        review_error(&r, 401, "unauthorized");
        return send_reply(c, &r, NULL);
    }
    if (by_cookie && strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
        const char *csrf = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-CSRF-Token");
        if (!csrf || !same_secret(csrf, x->csrf)) {
            review_error(&r, 403, "missing or bad CSRF token");
            return send_reply(c, &r, NULL);
        }
    }
    if (!strcmp(url, "/api/me") && !post) {
        json_t *o =
            json_pack("{sIss}", "reviewer_id", (json_int_t)who.reviewer, "reviewer", who.name);
        if (x)
            json_object_set_new(o, "csrf", json_string(x->csrf));
        r = (review_reply){200, "application/json", o ? json_dumps(o, JSON_COMPACT) : NULL, 0};
        r.len = r.body ? strlen(r.body) : 0;
        json_decref(o);
        return send_reply(c, &r, NULL);
    }
    if (!strcmp(url, "/api/logout") && post) {
        if (x)
            memset(x, 0, sizeof *x);
        r = (review_reply){200, "application/json", strdup("{}"), 2};
        return send_reply(c, &r, "tide_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    }
    review_api(s->store, s->seed, &who, method, url, body,
               MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "by"),
               MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit"), &r);
    return send_reply(c, &r, NULL);
}

static void request_done(void *cls, struct MHD_Connection *c, void **req,
                         enum MHD_RequestTerminationCode why) {
    (void)cls, (void)c, (void)why;
    free(*req);
    *req = NULL;
}

int tide_review_serve(tide_store *store, const char *listen, uint64_t seed,
                      tide_review_server **out) {
    if (!out || !store || !listen)
        return tide_error(TIDE_E_INVAL, "review: needs a store and an address");
    *out = NULL;
    int fd = -1, port = -1;
    int st = metrics_listen(listen, &fd, &port);
    if (st)
        return st;
    tide_review_server *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return tide_error(TIDE_E_NOMEM, "review: out of memory");
    }
    s->store = store;
    s->seed = seed;
    s->port = port;
    s->daemon =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL, handle, s,
                         MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_NOTIFY_COMPLETED,
                         request_done, s, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64, MHD_OPTION_END);
    if (!s->daemon) {
        close(fd);
        free(s);
        return tide_error(TIDE_E_IO, "review: %s: the HTTP server (libmicrohttpd) did not start",
                          listen);
    }
    *out = s;
    return 0;
}

int tide_review_server_port(const tide_review_server *s) {
    return s ? s->port : -1;
}

void tide_review_server_stop(tide_review_server *s) {
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    free(s);
}
