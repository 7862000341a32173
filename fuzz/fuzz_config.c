/* fuzz_config.c — libFuzzer harness: the JSON configuration loader (src/core/config/config_load.c:
 * jansson, the schema check, error positions from config_scan.c) on a buffer of exactly the
 * input's size (no NUL after it: an over-read is an ASan report), as an instrument layer and
 * as a default layer, then the merged configuration written back as JSON; short inputs also
 * as a command-line override "section.key=value". */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tide/status.h"
#include "tide/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tide_config *cfg = NULL;
    if (tide_config_create(&cfg))
        return 0;
    tide_config_merge_string(cfg, (const char *)data, size, "fuzz.json", TIDE_CONFIG_INSTRUMENT);
    tide_config_merge_string(cfg, (const char *)data, size, "fuzz.json", TIDE_CONFIG_DEFAULT);
    if (size < 512) {
        char assignment[512];
        memcpy(assignment, data, size);
        assignment[size] = 0;
        tide_config_set(cfg, assignment);
    }
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        tide_config_write_json(cfg, null, 2, 0);
        fclose(null);
    }
    tide_config_free(cfg);
    tide_error_clear();
    return 0;
}
