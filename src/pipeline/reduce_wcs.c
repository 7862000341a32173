/* reduce_wcs.c — the frame's WCS parsed on a plain host thread while the reduction's stages
 * run (reduce_internal.h).
 *
 * wcslib's header parser (wcspih, then wcsfix and wcsset) takes 0.3-0.5 ms of one core for a
 * frame's ~120 cards, and the sky positions are the last thing the reduction needs it for.
 * The thread does no OpenMP work, so it never competes with the stages' teams for more than
 * one core, and only for that long. (wcspih's scanner is reentrant; `tide diff` parses its
 * two frames' headers on two threads the same way.) */
#include <stdio.h>
#include <string.h>

#include "reduce_internal.h"
#include "tide/status.h"

static void parse(tide_pipe_wcs_job *j) {
    j->status = tide_wcs_from_header(j->hdr, j->source, &j->wcs);
    if (j->status)
        snprintf(j->detail, sizeof j->detail, "%s", tide_error_detail());
}

static void *parse_thread(void *arg) {
    parse(arg);
    return NULL;
}

void tide_pipe_wcs_start(tide_pipe_wcs_job *j, const tide_header *hdr, const char *source) {
    memset(j, 0, sizeof *j);
    j->hdr = hdr;
    snprintf(j->source, sizeof j->source, "%s", source);
    if (hdr && pthread_create(&j->thread, NULL, parse_thread, j) == 0)
        j->running = 1;
}

int tide_pipe_wcs_finish(tide_pipe_wcs_job *j, tide_wcs **w) {
    *w = NULL;
    if (!j->hdr)
        return tide_error(TIDE_E_NOTFOUND, "%s: no header", j->source);
    if (j->running) {
        pthread_join(j->thread, NULL);
        j->running = 0;
    } else if (!j->done) {
        parse(j); /* the thread could not be started: parse here, now */
    }
    j->done = 1;
    if (j->status)
        return tide_error(j->status, "%s", j->detail); /* the detail, in this thread */
    *w = j->wcs;
    j->wcs = NULL;
    return 0;
}

void tide_pipe_wcs_discard(tide_pipe_wcs_job *j) {
    if (j->running) {
        pthread_join(j->thread, NULL);
        j->running = 0;
    }
    j->done = 1;
    tide_wcs_free(j->wcs);
    j->wcs = NULL;
}
