/* xray_bg.c — a step of tide xray in a thread of its own, its error carried back to the thread
 * that waits for it (tide_error's detail is thread-local). */
#include <stdio.h>

#include "tide/status.h"
#include "xray/xray_bg.h"

static void *bg_thread(void *arg) {
    xray_bg *b = arg;
    b->st = b->fn(b->arg);
    if (b->st)
        snprintf(b->detail, sizeof b->detail, "%s", tide_error_detail());
    return NULL;
}

int xray_bg_start(xray_bg *b, xray_bg_fn fn, void *arg, int background) {
    b->fn = fn;
    b->arg = arg;
    b->st = 0;
    b->started = 0;
    b->detail[0] = 0;
    if (background && !pthread_create(&b->thread, NULL, bg_thread, b)) {
        b->started = 1;
        return 0;
    }
    return fn(arg);
}

int xray_bg_join(xray_bg *b) {
    if (!b->started)
        return 0;
    pthread_join(b->thread, NULL);
    b->started = 0;
    return b->st ? tide_error(b->st, "%s", b->detail) : 0;
}
