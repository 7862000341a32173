/* submit.h — what `tide submit` and `tide watch` share: a task made ready to publish. */
#ifndef TIDE_CLI_SUBMIT_H
#define TIDE_CLI_SUBMIT_H
#include <jansson.h>
#include <stddef.h>

#include "tide/task.h"

/** Make @p out from @p base for a worker that runs elsewhere: the frame and the template as
 *  absolute paths (each must exist), @p opts (a JSON object of task options, may be NULL)
 *  merged into its options, @p id as its id (NULL: base's, else the absolute path), and the
 *  whole checked as the worker will check it (tide_task_parse). 0, or -1 with the reason in
 *  @p reason (@p cap bytes) and *out empty. */
int tide_submit_task(const tide_task *base, const json_t *opts, const char *id, tide_task *out,
                     char *reason, size_t cap);

/** Add a --option KEY=VALUE to the JSON object @p opts: VALUE as JSON when it parses as JSON,
 *  else as a string. 0, or -1 when @p kv is not KEY=VALUE. */
int tide_submit_add_option(json_t *opts, const char *kv);

#endif
