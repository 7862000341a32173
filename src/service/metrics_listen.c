/* metrics_listen.c — "HOST:PORT" to a listening socket: the forms the worker's --metrics
 * takes, and errors that name the address and why it cannot be had. The socket is made here,
 * not by libmicrohttpd, so that a bind failure says which address and why (its own says
 * neither) and port 0 reports the port the kernel picked. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "service/metrics_internal.h"
#include "tide/status.h"

/* Split @p where into host (empty: every interface) and port; an IPv6 address comes in
 * brackets, as in a URL, since its colons would be ambiguous. */
static int split(const char *where, char *host, size_t cap, int *port, int *bracketed) {
    const char *colon;
    *bracketed = 0;
    if (where[0] == '[') {
        const char *close = strchr(where, ']');
        if (!close || close[1] != ':')
            return tide_error(TIDE_E_INVAL, "metrics: \"%s\" is not [IPV6]:PORT", where);
        *bracketed = 1;
        colon = close + 1;
        if ((size_t)(close - where - 1) >= cap || close == where + 1)
            return tide_error(TIDE_E_INVAL, "metrics: \"%s\": bad IPv6 address", where);
        memcpy(host, where + 1, (size_t)(close - where - 1));
        host[close - where - 1] = 0;
    } else {
        colon = strrchr(where, ':');
        if (!colon)
            return tide_error(TIDE_E_INVAL,
                              "metrics: \"%s\" is not HOST:PORT (e.g. "
                              "127.0.0.1:9464, [::1]:9464, :9464)",
                              where);
        if (memchr(where, ':', (size_t)(colon - where)))
            return tide_error(TIDE_E_INVAL,
                              "metrics: \"%s\": an IPv6 address goes in brackets ([::1]:9464)",
                              where);
        if ((size_t)(colon - where) >= cap)
            return tide_error(TIDE_E_INVAL, "metrics: \"%s\": host name too long", where);
        memcpy(host, where, (size_t)(colon - where));
        host[colon - where] = 0;
    }
    const char *p = colon + 1;
    long v = 0;
    if (!*p)
        return tide_error(TIDE_E_INVAL, "metrics: \"%s\": no port", where);
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || v > 65535)
            return tide_error(TIDE_E_INVAL, "metrics: \"%s\": the port is not 0..65535", where);
        v = v * 10 + (*p - '0');
    }
    if (v > 65535)
        return tide_error(TIDE_E_INVAL, "metrics: \"%s\": the port is not 0..65535", where);
    *port = (int)v;
    return 0;
}

/* A socket bound to @p sa and listening; -1 with errno set on failure. */
static int bind_one(const struct sockaddr *sa, socklen_t len, int dual_stack) {
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    int one = 1, zero = 0;
    /* A restarted worker gets its port back at once, despite connections in TIME_WAIT. Linux
     * still refuses a second listener on the port. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (sa->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, dual_stack ? &zero : &one, sizeof one);
    if (bind(fd, sa, len) != 0 || listen(fd, 64) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int bound_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

int metrics_listen(const char *where, int *fd_out, int *port_out) {
    *fd_out = -1;
    if (!where)
        return tide_error(TIDE_E_INVAL, "metrics: no listen address");
    char host[256];
    int port = 0, bracketed = 0, st = split(where, host, sizeof host, &port, &bracketed);
    if (st)
        return st;
    int fd = -1, err = 0;
    if (!host[0]) {
        /* Every interface: IPv6's any address taking IPv4 too, or IPv4 alone on a host
         * without IPv6. */
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6,
                                  .sin6_port = htons((uint16_t)port),
                                  .sin6_addr = IN6ADDR_ANY_INIT};
        fd = bind_one((struct sockaddr *)&a6, sizeof a6, 1);
        if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
            struct sockaddr_in a4 = {.sin_family = AF_INET,
                                     .sin_port = htons((uint16_t)port),
                                     .sin_addr.s_addr = htonl(INADDR_ANY)};
            fd = bind_one((struct sockaddr *)&a4, sizeof a4, 0);
        }
        err = errno;
    } else {
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
        hints.ai_flags = AI_NUMERICSERV | (bracketed ? AI_NUMERICHOST : 0);
        if (bracketed)
            hints.ai_family = AF_INET6;
        char service[8];
        snprintf(service, sizeof service, "%d", port);
        struct addrinfo *res = NULL;
        int g = getaddrinfo(host, service, &hints, &res);
        if (g != 0)
            return tide_error(g == EAI_NONAME || g == EAI_FAIL || g == EAI_AGAIN ? TIDE_E_NOTFOUND
                                                                                 : TIDE_E_INVAL,
                              "metrics: cannot listen on %s: %s: %s", where, host, gai_strerror(g));
        /* The first address that binds; the first failure is the one reported. */
        for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
            fd = bind_one(a->ai_addr, a->ai_addrlen, 0);
            if (fd < 0 && !err)
                err = errno;
        }
        freeaddrinfo(res);
    }
    if (fd < 0)
        return tide_error(TIDE_E_IO, "metrics: cannot listen on %s: %s", where, strerror(err));
    *fd_out = fd;
    *port_out = bound_port(fd);
    return 0;
}
