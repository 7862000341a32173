/* log.h — leveled logging into a stream chosen by the caller, as text or JSON lines.
 *
 * The library only logs through a tide_logger it is given (normally ctx->log); a logger with
 * a NULL stream is silent, which is the library default. The CLI points it at stderr. */
#ifndef TIDE_LOG_H
#define TIDE_LOG_H
#include "tide/export.h"
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Log levels, most severe first. A message is written when its level <= logger level. */
typedef enum {
    TIDE_LOG_ERROR = 0,
    TIDE_LOG_WARN = 1,
    TIDE_LOG_INFO = 2,
    TIDE_LOG_DEBUG = 3
} tide_log_level;

/** Where and how to log. Zero-initialised is a silent logger. */
typedef struct tide_logger {
    FILE *stream;         /**< destination; NULL = silent [NULL] */
    tide_log_level level; /**< most verbose level written [TIDE_LOG_ERROR] */
    int json; /**< 1 = one JSON object per line {"t","level","stage","msg"}, with "frame" after
                   "stage" when the thread names one (tide_log_set_frame) [0] */
} tide_logger;

/** Write one message from @p stage ("fits", "sim", ...). Safe to call from several threads:
 *  each message is formatted first and written with a single fwrite. */
TIDE_API void tide_log(const tide_logger *lg, tide_log_level level, const char *stage,
                       const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/** Name the frame (a worker's task id) the calling thread works on: every later message of
 *  this thread carries it ("frame" in JSON lines, "{ID}" after the stage in text), so the lines
 *  of one frame can be found among a worker's. NULL or "" clears it. The text is copied
 *  (up to 255 bytes). */
TIDE_API void tide_log_set_frame(const char *id);

/** Parse "error", "warn", "info", "debug" (or 0..3); returns TIDE_E_INVAL if unknown. */
TIDE_API int tide_log_level_parse(const char *s, tide_log_level *out);

#ifdef __cplusplus
}
#endif
#endif
