/* task_internal.h — what the task files share: a task's options turned into configuration
 * assignments and calibration choices (task_options.c), and the derived output names. */
#ifndef TIDE_SERVICE_TASK_INTERNAL_H
#define TIDE_SERVICE_TASK_INTERNAL_H
#include <stddef.h>

#include "tide/config.h"
#include "tide/job.h"
#include "tide/task.h"

/** What a task's "options" object says, split: configuration assignments as --set gives them
 *  ("section.key=value", owned) and the calibration choices of tide reduce. */
typedef struct tide_task_opts {
    char **sets;
    int nsets;
    char *refcat;    /**< "refcat", or NULL */
    char *index_dir; /**< "index_dir", or NULL */
    int solve;       /**< "solve": true */
} tide_task_opts;

/** Split the options object @p json (compact JSON text; NULL = none) of a task of kind
 *  @p kind into @p o and check every assignment against the configuration's schema (type
 *  and range, on the built-in defaults). TIDE_E_FORMAT naming the option on any error; on
 *  error @p o is empty. */
int tide_task_opts_parse(const char *json, tide_task_kind kind, tide_task_opts *o);

/** Free @p o's strings and zero it. */
void tide_task_opts_free(tide_task_opts *o);

/** A new configuration: @p base with @p o's assignments applied (TIDE_E_CONFIG naming the
 *  assignment when one does not apply). */
int tide_task_opts_config(const tide_config *base, const tide_task_opts *o, tide_config **out);

#endif
