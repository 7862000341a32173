/* progress.h — one status line for a command given many files (`tide batch`, `tide submit`):
 * done, failed, rate and time left, redrawn in place on standard error at most five times a
 * second, and nothing at all when standard error is not a terminal or the output is JSON. */
#ifndef TIDE_CLI_PROGRESS_H
#define TIDE_CLI_PROGRESS_H
#include <stdint.h>
#include <stdio.h>

/** The line's state. Zero-initialised is "off". */
typedef struct tide_progress {
    FILE *f;          /**< where it draws (stderr), NULL: off */
    int64_t total;    /**< tasks in all (0: unknown, no time left) */
    int64_t done;     /**< finished, failed included */
    int64_t failed;   /**< of them, failed */
    double t0;        /**< start, seconds (tide_now) */
    double last_draw; /**< when the line was last drawn */
    int width;        /**< characters of the last line drawn (to blank what it leaves) */
    const char *unit; /**< what is counted ("tasks", "frames") */
} tide_progress;

/** Start a line for @p total items of @p unit: on when @p mode is 1 (--progress), off when 0
 *  (--no-progress), and on when standard error is a terminal when -1 (the default). @p json
 *  (--json) turns it off whatever the mode. */
void tide_progress_start(tide_progress *p, int64_t total, const char *unit, int mode, int json);

/** Count one item finished (@p failed: it failed) and redraw when 0.2 s have passed since the
 *  last drawing, or when it is the last item. */
void tide_progress_step(tide_progress *p, int failed);

/** Redraw now and end the line (a newline), so what is printed next starts on its own line. */
void tide_progress_end(tide_progress *p);

/** Blank the line, for output of the caller's own to start on a clean line; the next step
 *  draws it again. */
void tide_progress_clear(tide_progress *p);

/** The line as it would be drawn, into @p buf (for tests and logs). */
void tide_progress_format(const tide_progress *p, double now, char *buf, size_t cap);

#endif
