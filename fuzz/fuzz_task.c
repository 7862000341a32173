/* fuzz_task.c — libFuzzer harness: a task message as a worker takes it off its queue
 * (src/service/task_parse.c and task_options.c: jansson, the members, the options checked
 * against the configuration's schema), on a buffer of exactly the input's size (no NUL after
 * it: an over-read is an ASan report); a task that parses is written back as JSON and parsed
 * again, and must give the same JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tide/status.h"
#include "tide/task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tide_task t;
    if (tide_task_parse((const char *)data, size, &t) == 0) {
        char *json = tide_task_to_json(&t);
        if (json) {
            tide_task again;
            if (tide_task_parse(json, strlen(json), &again) != 0)
                abort(); /* what tide writes, tide must read */
            char *json2 = tide_task_to_json(&again);
            if (json2 && strcmp(json, json2) != 0)
                abort(); /* and read it as written */
            free(json2);
            tide_task_free(&again);
            free(json);
        }
        tide_task_free(&t);
    }
    tide_error_clear();
    return 0;
}
