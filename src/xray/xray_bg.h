/* xray_bg.h — a step of tide xray run in a thread of its own beside the main one (xray_bg.c):
 * the FFT map while the GPU fits, maps.fits while maps.h5 is written. */
#ifndef TIDE_XRAY_BG_H
#define TIDE_XRAY_BG_H
#include <pthread.h>

/** A step: returns 0 or a tide status (with tide_error's detail set in its thread). */
typedef int (*xray_bg_fn)(void *arg);

/** A step being run, maybe in a thread of its own. */
typedef struct xray_bg {
    xray_bg_fn fn;
    void *arg;
    int st;            /**< the step's status */
    int started;       /**< a thread runs it */
    char detail[1024]; /**< its error's detail (tide_error's is per thread) */
    pthread_t thread;
} xray_bg;

/** Run fn(arg) in a thread of its own when @p background, otherwise (or when no thread can be
 *  had) now. arg must outlive xray_bg_join. Returns the status when it ran now, else 0. */
int xray_bg_start(xray_bg *b, xray_bg_fn fn, void *arg, int background);

/** Wait for the step; returns its status, its error's detail raised again in this thread.
 *  Safe on a zeroed xray_bg and after a start that ran now (then it returns 0). */
int xray_bg_join(xray_bg *b);

#endif
