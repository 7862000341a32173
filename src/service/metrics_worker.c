/* metrics_worker.c — the families every `tide worker` exposes, made in one place so that the
 * names, labels and buckets are the same in every worker and in docs/operations.md. */
#include <string.h>

#include "service/metrics_internal.h"
#include "tide/status.h"

int tide_metrics_worker(tide_metrics *m, tide_worker_metrics *w) {
    if (!m || !w)
        return tide_error(TIDE_E_INVAL, "metrics: NULL registry or result");
    memset(w, 0, sizeof *w);
    /* Orders match the TIDE_WM_* indices of tide/metrics.h. */
    static const char *const status[] = {"done", "incomplete", "failed", "retried"};
    static const char *const stage[] = {"read", "reduce", "calibrate", "store", "write", "diff"};
    static const char *const kind[] = {"used", "total"};
    int st = tide_metrics_counter(m, "tide_frames_total",
                                  "Frames the worker finished, by how they ended.", "status",
                                  status, 4, &w->frames);
    if (!st)
        st = tide_metrics_histogram(m, "tide_stage_seconds", "Wall time of one stage of a frame.",
                                    "stage", stage, 6, NULL, 0, &w->stage_seconds);
    if (!st)
        st = tide_metrics_histogram(m, "tide_frame_seconds",
                                    "Seconds from a frame's submission to its commit.", NULL, NULL,
                                    0, NULL, 0, &w->frame_seconds);
    if (!st)
        st = tide_metrics_histogram(m, "tide_store_seconds",
                                    "Seconds to commit one frame's rows to the store.", NULL, NULL,
                                    0, NULL, 0, &w->store_seconds);
    if (!st)
        st = tide_metrics_gauge(m, "tide_queue_depth",
                                "Messages ready in the queue when the worker last looked.", NULL,
                                NULL, 0, &w->queue_depth);
    if (!st)
        st = tide_metrics_gauge(m, "tide_device_memory_bytes", "Device memory of the GPU in use.",
                                "kind", kind, 2, &w->device_memory);
    if (st)
        memset(w, 0, sizeof *w);
    return st;
}
