/* amqp_link.c — one AMQP 0-9-1 connection through librabbitmq: address and credentials,
 * queues, persistent publishes (confirmed or transactional), manual-ack consuming. */
#include "amqp_link.h"

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "tide/status.h"

struct tide_amqp {
    amqp_connection_state_t conn;
    char where[600]; /* amqp://HOST:PORT/VHOST, for messages */
    int broken;      /* the connection or channel is gone: no more polite calls */
    int confirm;     /* confirm mode: publishes wait for the broker's ack */
};

/* ---- address -------------------------------------------------------------------------- */

static int unescape(const char *in, size_t n, char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)in[i];
        if (c == '%') {
            if (i + 2 >= n || !isxdigit((unsigned char)in[i + 1]) ||
                !isxdigit((unsigned char)in[i + 2]))
                return -1;
            char hex[3] = {in[i + 1], in[i + 2], 0};
            c = (int)strtol(hex, NULL, 16);
            i += 2;
        }
        if (o + 1 >= cap)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = 0;
    return 0;
}

/* Read the password file @p path: its first line, without the line end. */
static int read_secret_file(const char *path, char *out, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f)
        return tide_error(TIDE_E_IO, "TIDE_AMQP_PASSWORD_FILE %s: cannot open: %s", path,
                          strerror(errno));
    if (!fgets(out, (int)cap, f))
        out[0] = 0;
    fclose(f);
    out[strcspn(out, "\r\n")] = 0;
    if (!out[0])
        return tide_error(TIDE_E_INVAL, "TIDE_AMQP_PASSWORD_FILE %s: empty", path);
    return TIDE_OK;
}

int tide_amqp_addr_parse(const char *url, tide_amqp_addr *a) {
    memset(a, 0, sizeof *a);
    if (!url || strncmp(url, "amqp://", 7) != 0)
        return tide_error(TIDE_E_INVAL, "%s: not an AMQP URL (amqp://HOST[:PORT][/VHOST])",
                          url ? url : "(null)");
    const char *p = url + 7, *slash = strchr(p, '/');
    size_t alen = slash ? (size_t)(slash - p) : strlen(p);
    if (memchr(p, '@', alen))
        return tide_error(TIDE_E_INVAL,
                          "amqp://...: credentials do not go in the URL (they would show in ps "
                          "and in logs): set TIDE_AMQP_USER and TIDE_AMQP_PASSWORD or "
                          "TIDE_AMQP_PASSWORD_FILE");
    a->port = 5672;
    const char *hend = p + alen, *colon = NULL;
    if (alen && p[0] == '[') {
        const char *rb = memchr(p, ']', alen);
        if (!rb || rb - p - 1 <= 0 || (size_t)(rb - p - 1) >= sizeof a->host)
            return tide_error(TIDE_E_INVAL, "%s: bad IPv6 host", url);
        memcpy(a->host, p + 1, (size_t)(rb - p - 1));
        if (rb + 1 < hend) {
            if (rb[1] != ':')
                return tide_error(TIDE_E_INVAL, "%s: bad host", url);
            colon = rb + 1;
        }
    } else {
        colon = memchr(p, ':', alen);
        size_t hl = colon ? (size_t)(colon - p) : alen;
        if (hl >= sizeof a->host)
            return tide_error(TIDE_E_INVAL, "%s: host name too long", url);
        memcpy(a->host, p, hl);
    }
    if (!a->host[0])
        return tide_error(TIDE_E_INVAL, "%s: no host", url);
    if (colon) {
        char *end;
        long port = strtol(colon + 1, &end, 10);
        if (end != hend || port < 1 || port > 65535)
            return tide_error(TIDE_E_INVAL, "%s: bad port", url);
        a->port = (int)port;
    }
    if (!slash || !slash[1])
        snprintf(a->vhost, sizeof a->vhost, "/");
    else if (unescape(slash + 1, strlen(slash + 1), a->vhost, sizeof a->vhost))
        return tide_error(TIDE_E_INVAL, "%s: bad virtual host", url);
    const char *u = getenv("TIDE_AMQP_USER"), *pw = getenv("TIDE_AMQP_PASSWORD"),
               *pf = getenv("TIDE_AMQP_PASSWORD_FILE");
    snprintf(a->user, sizeof a->user, "%s", u && *u ? u : "guest");
    if (pf && *pf) {
        int st = read_secret_file(pf, a->pass, sizeof a->pass);
        if (st)
            return st;
    } else {
        snprintf(a->pass, sizeof a->pass, "%s", pw && *pw ? pw : "guest");
    }
    return TIDE_OK;
}

void tide_amqp_addr_text(const tide_amqp_addr *a, char *out, size_t n) {
    int v6 = strchr(a->host, ':') != NULL;
    snprintf(out, n, "amqp://%s%s%s:%d/%s", v6 ? "[" : "", a->host, v6 ? "]" : "", a->port,
             strcmp(a->vhost, "/") ? a->vhost : "%2F");
}

/* ---- errors ---------------------------------------------------------------------------- */

/* A failed round trip as words, marking the link broken when the broker closed it. */
static int reply_error(tide_amqp *l, amqp_rpc_reply_t r, const char *what) {
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return TIDE_OK;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) {
        l->broken = 1;
        return tide_error(TIDE_E_IO, "%s: %s: %s", l->where, what,
                          amqp_error_string2(r.library_error));
    }
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION) {
        l->broken = 1;
        if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
            amqp_connection_close_t *m = r.reply.decoded;
            return tide_error(TIDE_E_IO, "%s: %s: the broker closed the connection: %d %.*s",
                              l->where, what, m->reply_code, (int)m->reply_text.len,
                              (const char *)m->reply_text.bytes);
        }
        if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            amqp_channel_close_t *m = r.reply.decoded;
            return tide_error(TIDE_E_IO, "%s: %s: the broker closed the channel: %d %.*s", l->where,
                              what, m->reply_code, (int)m->reply_text.len,
                              (const char *)m->reply_text.bytes);
        }
        return tide_error(TIDE_E_IO, "%s: %s: the broker refused (method 0x%08x)", l->where, what,
                          (unsigned)r.reply.id);
    }
    l->broken = 1;
    return tide_error(TIDE_E_IO, "%s: %s: no reply", l->where, what);
}

static int status_error(tide_amqp *l, int s, const char *what) {
    if (s == AMQP_STATUS_OK)
        return TIDE_OK;
    l->broken = 1;
    return tide_error(TIDE_E_IO, "%s: %s: %s", l->where, what, amqp_error_string2(s));
}

/* ---- connection ------------------------------------------------------------------------ */

int tide_amqp_connect(const tide_amqp_addr *a, int timeout_ms, const char *name, tide_amqp **out) {
    *out = NULL;
    tide_amqp *l = calloc(1, sizeof *l);
    if (!l)
        return tide_error(TIDE_E_NOMEM, "amqp: out of memory");
    tide_amqp_addr_text(a, l->where, sizeof l->where);
    l->conn = amqp_new_connection();
    amqp_socket_t *sock = l->conn ? amqp_tcp_socket_new(l->conn) : NULL;
    if (!sock) {
        if (l->conn)
            amqp_destroy_connection(l->conn);
        free(l);
        return tide_error(TIDE_E_NOMEM, "amqp: out of memory");
    }
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    int s = amqp_socket_open_noblock(sock, a->host, a->port, &tv);
    if (s != AMQP_STATUS_OK) {
        int st = tide_error(TIDE_E_IO, "%s: cannot connect: %s", l->where, amqp_error_string2(s));
        amqp_destroy_connection(l->conn);
        free(l);
        return st;
    }
    amqp_set_rpc_timeout(l->conn, &tv);
    amqp_set_handshake_timeout(l->conn, &tv);
    amqp_table_entry_t prop = {
        amqp_cstring_bytes("connection_name"),
        {.kind = AMQP_FIELD_KIND_UTF8, .value.bytes = amqp_cstring_bytes(name ? name : "tide")}};
    amqp_table_t props = {1, &prop};
    /* heartbeats every 15 s: a broker that vanished without closing is noticed */
    amqp_rpc_reply_t r = amqp_login_with_properties(l->conn, a->vhost, 0, 131072, 15, &props,
                                                    AMQP_SASL_METHOD_PLAIN, a->user, a->pass);
    int st = reply_error(l, r, "login");
    if (!st) {
        amqp_channel_open(l->conn, 1);
        st = reply_error(l, amqp_get_rpc_reply(l->conn), "opening a channel");
    }
    if (st) {
        l->broken = 1;
        tide_amqp_close(l);
        return st;
    }
    *out = l;
    return TIDE_OK;
}

void tide_amqp_close(tide_amqp *l) {
    if (!l)
        return;
    if (!l->broken) {
        amqp_channel_close(l->conn, 1, AMQP_REPLY_SUCCESS);
        amqp_connection_close(l->conn, AMQP_REPLY_SUCCESS);
    }
    amqp_destroy_connection(l->conn);
    free(l);
}

int tide_amqp_declare(tide_amqp *l, const char *queue, int64_t *depth) {
    amqp_queue_declare_ok_t *ok =
        amqp_queue_declare(l->conn, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0, amqp_empty_table);
    char what[400];
    snprintf(what, sizeof what, "declaring queue %s", queue);
    int st = reply_error(l, amqp_get_rpc_reply(l->conn), what);
    if (st)
        return st;
    if (depth)
        *depth = ok ? (int64_t)ok->message_count : 0;
    return TIDE_OK;
}

int tide_amqp_confirm_mode(tide_amqp *l) {
    amqp_confirm_select(l->conn, 1);
    int st = reply_error(l, amqp_get_rpc_reply(l->conn), "asking for publisher confirms");
    if (!st)
        l->confirm = 1;
    return st;
}

int tide_amqp_tx_mode(tide_amqp *l) {
    amqp_tx_select(l->conn, 1);
    return reply_error(l, amqp_get_rpc_reply(l->conn), "starting transactions");
}

int tide_amqp_commit(tide_amqp *l) {
    amqp_tx_commit(l->conn, 1);
    return reply_error(l, amqp_get_rpc_reply(l->conn), "committing");
}

/* ---- publishing ------------------------------------------------------------------------ */

/* Wait for the broker's verdict on the one message just published in confirm mode. */
static int wait_confirm(tide_amqp *l, const char *queue) {
    int returned = 0;
    for (;;) {
        amqp_frame_t fr;
        struct timeval tv = {30, 0};
        int s = amqp_simple_wait_frame_noblock(l->conn, &fr, &tv);
        if (s != AMQP_STATUS_OK)
            return status_error(l, s, "waiting for the broker to confirm a message");
        if (fr.frame_type != AMQP_FRAME_METHOD)
            continue;
        switch (fr.payload.method.id) {
        case AMQP_BASIC_ACK_METHOD:
            if (returned)
                return tide_error(TIDE_E_IO, "%s: message to %s returned: no such queue", l->where,
                                  queue);
            return TIDE_OK;
        case AMQP_BASIC_NACK_METHOD:
            return tide_error(TIDE_E_IO, "%s: the broker refused a message to %s", l->where, queue);
        case AMQP_BASIC_RETURN_METHOD: {
            amqp_message_t m;
            amqp_rpc_reply_t r = amqp_read_message(l->conn, fr.channel, &m, 0);
            if (r.reply_type != AMQP_RESPONSE_NORMAL)
                return reply_error(l, r, "reading a returned message");
            amqp_destroy_message(&m);
            returned = 1;
            break;
        }
        case AMQP_CHANNEL_CLOSE_METHOD:
        case AMQP_CONNECTION_CLOSE_METHOD:
            l->broken = 1;
            return tide_error(TIDE_E_IO, "%s: the broker closed the link while confirming",
                              l->where);
        default: break;
        }
    }
}

int tide_amqp_publish(tide_amqp *l, const char *queue, const void *body, size_t n,
                      const tide_amqp_meta *meta) {
    amqp_basic_properties_t pr;
    memset(&pr, 0, sizeof pr);
    pr._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
    pr.content_type = amqp_cstring_bytes("application/json");
    pr.delivery_mode = 2; /* persistent */
    amqp_table_entry_t h[3];
    int nh = 0;
    if (meta && meta->attempts > 0) {
        h[nh].key = amqp_cstring_bytes("x-tide-attempts");
        h[nh].value.kind = AMQP_FIELD_KIND_I32;
        h[nh++].value.value.i32 = meta->attempts;
    }
    if (meta && meta->reason) {
        h[nh].key = amqp_cstring_bytes("x-tide-reason");
        h[nh].value.kind = AMQP_FIELD_KIND_UTF8;
        h[nh++].value.value.bytes = amqp_cstring_bytes(meta->reason);
    }
    if (meta && meta->submitted > 0) {
        h[nh].key = amqp_cstring_bytes("x-tide-submitted");
        h[nh].value.kind = AMQP_FIELD_KIND_F64;
        h[nh++].value.value.f64 = meta->submitted;
    }
    if (nh) {
        pr._flags |= AMQP_BASIC_HEADERS_FLAG;
        pr.headers.num_entries = nh;
        pr.headers.entries = h;
    }
    if (meta && meta->task_id) {
        pr._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
        pr.message_id = amqp_cstring_bytes(meta->task_id);
    }
    amqp_bytes_t b = {n, (void *)body};
    int s =
        amqp_basic_publish(l->conn, 1, amqp_empty_bytes, amqp_cstring_bytes(queue), 1, 0, &pr, b);
    int st = status_error(l, s, "publishing");
    if (st || !l->confirm)
        return st;
    return wait_confirm(l, queue);
}

/* ---- consuming ------------------------------------------------------------------------- */

int tide_amqp_consume(tide_amqp *l, const char *queue, int prefetch) {
    amqp_basic_qos(l->conn, 1, 0,
                   (uint16_t)(prefetch < 1       ? 1
                              : prefetch > 65535 ? 65535
                                                 : prefetch),
                   0);
    int st = reply_error(l, amqp_get_rpc_reply(l->conn), "setting the prefetch");
    if (st)
        return st;
    amqp_basic_consume(l->conn, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0,
                       amqp_empty_table);
    char what[400];
    snprintf(what, sizeof what, "consuming %s", queue);
    return reply_error(l, amqp_get_rpc_reply(l->conn), what);
}

/* Fill @p d from a message's properties and body. */
static int fill_delivery(tide_amqp_delivery *d, const amqp_message_t *m) {
    d->body = malloc(m->body.len + 1);
    if (!d->body)
        return tide_error(TIDE_E_NOMEM, "amqp: out of memory for a message of %zu bytes",
                          m->body.len);
    memcpy(d->body, m->body.bytes, m->body.len);
    d->body[m->body.len] = 0;
    d->len = m->body.len;
    if (m->properties._flags & AMQP_BASIC_HEADERS_FLAG) {
        const amqp_table_t *t = &m->properties.headers;
        for (int i = 0; i < t->num_entries; i++) {
            const amqp_table_entry_t *e = &t->entries[i];
            const amqp_field_value_t *v = &e->value;
            if (e->key.len == 15 && !memcmp(e->key.bytes, "x-tide-attempts", 15)) {
                if (v->kind == AMQP_FIELD_KIND_I32)
                    d->attempts = v->value.i32;
                else if (v->kind == AMQP_FIELD_KIND_I64)
                    d->attempts = (int)v->value.i64;
            } else if (e->key.len == 16 && !memcmp(e->key.bytes, "x-tide-submitted", 16) &&
                       v->kind == AMQP_FIELD_KIND_F64) {
                d->submitted = v->value.f64;
            } else if (e->key.len == 13 && !memcmp(e->key.bytes, "x-tide-reason", 13) &&
                       (v->kind == AMQP_FIELD_KIND_UTF8 || v->kind == AMQP_FIELD_KIND_BYTES)) {
                snprintf(d->reason, sizeof d->reason, "%.*s", (int)v->value.bytes.len,
                         (const char *)v->value.bytes.bytes);
            }
        }
    }
    return TIDE_OK;
}

int tide_amqp_next(tide_amqp *l, int timeout_ms, tide_amqp_delivery *d) {
    memset(d, 0, sizeof *d);
    if (l->broken)
        return tide_error(TIDE_E_IO, "%s: the link is closed", l->where);
    amqp_maybe_release_buffers(l->conn);
    amqp_envelope_t env;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    amqp_rpc_reply_t r = amqp_consume_message(l->conn, &env, &tv, 0);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
        d->tag = env.delivery_tag;
        d->redelivered = env.redelivered != 0;
        int st = fill_delivery(d, &env.message);
        amqp_destroy_envelope(&env);
        return st;
    }
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT)
        return 1;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
        /* a frame other than a delivery: a close from the broker, or one to skip */
        amqp_frame_t fr;
        struct timeval zero = {0, 0};
        int s = amqp_simple_wait_frame_noblock(l->conn, &fr, &zero);
        if (s == AMQP_STATUS_TIMEOUT)
            return 1;
        if (s != AMQP_STATUS_OK)
            return status_error(l, s, "reading from the broker");
        if (fr.frame_type == AMQP_FRAME_METHOD &&
            (fr.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ||
             fr.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD)) {
            l->broken = 1;
            return tide_error(TIDE_E_IO, "%s: the broker closed the %s", l->where,
                              fr.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ? "channel"
                                                                                : "connection");
        }
        return 1;
    }
    return reply_error(l, r, "waiting for a message");
}

void tide_amqp_delivery_free(tide_amqp_delivery *d) {
    if (!d)
        return;
    free(d->body);
    memset(d, 0, sizeof *d);
}

int tide_amqp_ack(tide_amqp *l, uint64_t tag) {
    return status_error(l, amqp_basic_ack(l->conn, 1, tag, 0), "acking a message");
}

int tide_amqp_requeue(tide_amqp *l, uint64_t tag) {
    return status_error(l, amqp_basic_nack(l->conn, 1, tag, 0, 1), "requeueing a message");
}

int tide_amqp_get(tide_amqp *l, const char *queue, tide_amqp_delivery *d) {
    memset(d, 0, sizeof *d);
    amqp_maybe_release_buffers(l->conn);
    amqp_rpc_reply_t r = amqp_basic_get(l->conn, 1, amqp_cstring_bytes(queue), 0);
    char what[400];
    snprintf(what, sizeof what, "reading queue %s", queue);
    int st = reply_error(l, r, what);
    if (st)
        return st;
    if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
        return 1;
    d->tag = ((amqp_basic_get_ok_t *)r.reply.decoded)->delivery_tag;
    amqp_message_t m;
    r = amqp_read_message(l->conn, 1, &m, 0);
    if ((st = reply_error(l, r, what)))
        return st;
    st = fill_delivery(d, &m);
    amqp_destroy_message(&m);
    return st;
}
