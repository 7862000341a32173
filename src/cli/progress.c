/* progress.c — the status line of progress.h: "12/40 done, 1 failed, 3.1/s, 9 s left",
 * redrawn with a carriage return, blanking what a longer earlier line left behind. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"
#include "tide/timer.h"

void tide_progress_start(tide_progress *p, int64_t total, const char *unit, int mode, int json) {
    memset(p, 0, sizeof *p);
    p->total = total;
    p->unit = unit ? unit : "tasks";
    p->t0 = tide_now();
    const int on = json ? 0 : mode >= 0 ? mode : isatty(fileno(stderr));
    p->f = on ? stderr : NULL;
}

void tide_progress_format(const tide_progress *p, double now, char *buf, size_t cap) {
    const double el = now - p->t0;
    const double rate = el > 0 ? (double)p->done / el : 0;
    int n;
    if (p->total > 0)
        n = snprintf(buf, cap, "%lld/%lld %s done", (long long)p->done, (long long)p->total,
                     p->unit);
    else
        n = snprintf(buf, cap, "%lld %s done", (long long)p->done, p->unit);
    if (n < 0 || (size_t)n >= cap)
        return;
    n += snprintf(buf + n, cap - (size_t)n, ", %lld failed, %.2f/s", (long long)p->failed, rate);
    if (n < 0 || (size_t)n >= cap)
        return;
    if (p->total > 0 && p->done < p->total && rate > 0) {
        const double left = (double)(p->total - p->done) / rate;
        if (left < 120)
            snprintf(buf + n, cap - (size_t)n, ", %.0f s left", left);
        else if (left < 7200)
            snprintf(buf + n, cap - (size_t)n, ", %.0f min left", left / 60);
        else
            snprintf(buf + n, cap - (size_t)n, ", %.1f h left", left / 3600);
    } else if (p->total > 0 && p->done < p->total) {
        snprintf(buf + n, cap - (size_t)n, ", time left unknown");
    }
}

static void draw(tide_progress *p, double now) {
    char line[256];
    tide_progress_format(p, now, line, sizeof line);
    const int w = (int)strlen(line);
    /* blank the tail of a longer earlier line */
    fprintf(p->f, "\r%s%*s", line, p->width > w ? p->width - w : 0, "");
    fflush(p->f);
    p->width = w;
    p->last_draw = now;
}

void tide_progress_step(tide_progress *p, int failed) {
    p->done++;
    p->failed += failed != 0;
    if (!p->f)
        return;
    const double now = tide_now();
    if (now - p->last_draw >= 0.2 || (p->total > 0 && p->done >= p->total))
        draw(p, now);
}

void tide_progress_end(tide_progress *p) {
    if (!p->f)
        return;
    if (!p->width || p->done < p->total) /* the last step drew the final line already */
        draw(p, tide_now());
    fputc('\n', p->f);
    fflush(p->f);
    p->f = NULL;
}

void tide_progress_clear(tide_progress *p) {
    if (!p->f || !p->width)
        return;
    fprintf(p->f, "\r%*s\r", p->width, "");
    fflush(p->f);
    p->width = 0;
    p->last_draw = 0; /* the next step draws at once */
}
