/* status.c — status names and the thread-local error detail (passwords redacted on the way
 * in: a detail may name a store or reference-catalog URI, see redact.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tide/redact.h"
#include "tide/status.h"

#define TIDE_DETAIL_MAX 1024

/* One detail per thread, so two contexts on two threads never mix their messages. */
static _Thread_local char detail[TIDE_DETAIL_MAX];

const char *tide_strerror(int status) {
    switch (status) {
    case TIDE_OK: return "success";
    case TIDE_E_INVAL: return "invalid argument";
    case TIDE_E_NOMEM: return "out of memory";
    case TIDE_E_IO: return "I/O error";
    case TIDE_E_FORMAT: return "malformed input";
    case TIDE_E_NOTFOUND: return "not found";
    case TIDE_E_UNSUPPORTED: return "unsupported";
    case TIDE_E_CUDA: return "CUDA error";
    case TIDE_E_NODEVICE: return "no usable GPU";
    case TIDE_E_CONFIG: return "configuration error";
    case TIDE_E_WCS: return "WCS error";
    case TIDE_E_FFT: return "FFT error";
    case TIDE_E_RANGE: return "value out of range";
    case TIDE_E_EMPTY: return "no valid data";
    case TIDE_E_INTERNAL: return "internal error";
    case TIDE_E_NOSOLVE: return "field not solved";
    case TIDE_E_DB: return "catalog store error";
    case TIDE_E_TIMEOUT: return "time limit reached";
    default: return "unknown error";
    }
}

int tide_error(int status, const char *fmt, ...) {
    va_list ap;
    char raw[TIDE_DETAIL_MAX];
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    tide_redact_uri(raw, detail, sizeof detail);
    return status;
}

int tide_error_prefix(int status, const char *fmt, ...) {
    char prefix[TIDE_DETAIL_MAX], old[TIDE_DETAIL_MAX], raw[TIDE_DETAIL_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, detail, sizeof old);
    snprintf(raw, sizeof raw, "%s%s", prefix, old);
    tide_redact_uri(raw, detail, sizeof detail);
    return status;
}

const char *tide_error_detail(void) {
    return detail;
}

void tide_error_clear(void) {
    detail[0] = '\0';
}
