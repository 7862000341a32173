/* log.c — leveled text or JSON-lines logging into a caller-chosen stream (passwords of URIs
 * redacted, redact.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tide/log.h"
#include "tide/redact.h"
#include "tide/status.h"

static const char *level_names[] = {"error", "warn", "info", "debug"};

/* The frame the calling thread works on (tide_log_set_frame): thread-local, so the runner
 * threads of one worker each tag their own lines without a lock. */
static _Thread_local char frame_id[256];

void tide_log_set_frame(const char *id) {
    snprintf(frame_id, sizeof frame_id, "%s", id ? id : "");
}

/* JSON-escape @p s into @p out (always NUL-terminated). */
static void json_escape(const char *s, char *out, size_t cap) {
    size_t o = 0;
    for (; *s && o + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else if (c < 0x20) {
            o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
}

void tide_log(const tide_logger *lg, tide_log_level level, const char *stage, const char *fmt,
              ...) {
    if (!lg || !lg->stream || level > lg->level)
        return;
    char raw[2048], msg[2048], line[4608];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    tide_redact_uri(raw, msg, sizeof msg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[96];
    snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (long)(ts.tv_nsec / 1000000) % 1000);
    int n;
    if (lg->json) {
        char emsg[4096 - 1024], eframe[768] = "";
        json_escape(msg, emsg, sizeof emsg);
        if (frame_id[0]) {
            char e[700];
            json_escape(frame_id, e, sizeof e);
            snprintf(eframe, sizeof eframe, ",\"frame\":\"%s\"", e);
        }
        n = snprintf(line, sizeof line,
                     "{\"t\":\"%s\",\"level\":\"%s\",\"stage\":\"%s\"%s,\"msg\":\"%s\"}\n", when,
                     level_names[level], stage ? stage : "", eframe, emsg);
    } else if (frame_id[0]) {
        n = snprintf(line, sizeof line, "%s %-5s [%s] {%s} %s\n", when, level_names[level],
                     stage ? stage : "-", frame_id, msg);
    } else {
        n = snprintf(line, sizeof line, "%s %-5s [%s] %s\n", when, level_names[level],
                     stage ? stage : "-", msg);
    }
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    /* One fwrite per message keeps lines whole when threads log concurrently. */
    fwrite(line, 1, (size_t)n, lg->stream);
    fflush(lg->stream);
}

int tide_log_level_parse(const char *s, tide_log_level *out) {
    for (int i = 0; i < 4; i++) {
        if (!strcmp(s, level_names[i]) || (s[0] == '0' + i && s[1] == '\0')) {
            *out = (tide_log_level)i;
            return TIDE_OK;
        }
    }
    if (!strcmp(s, "warning")) {
        *out = TIDE_LOG_WARN;
        return TIDE_OK;
    }
    return tide_error(TIDE_E_INVAL, "unknown log level '%s' (error, warn, info, debug)", s);
}
