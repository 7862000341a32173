/* core_internal.h — links between core files that are not public API. */
#ifndef TIDE_CORE_INTERNAL_H
#define TIDE_CORE_INTERNAL_H
#include "tide/ctx.h"

/** Free the device pointer→size map kept in ctx->device_sizes (device_memory.c). */
void tide_device_map_free(void *map);

/** Free the context's stage timers (timer.c). */
void tide_timer_set_free(tide_ctx *ctx);

#endif
