/* cmd_index.c — placeholder while the session's helper writes it (replaced before commit). */
#include <stdio.h>

#include "cli.h"

int tide_cmd_index(int argc, char **argv) {
    fprintf(stderr, "tide: %s is not built yet\n", argv[0]);
    return 1;
}
