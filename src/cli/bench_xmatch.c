/* bench_xmatch.c — placeholder while the session's helper writes it (replaced before commit). */
#include <stdio.h>

#include "cli.h"

int tide_bench_xmatch(int argc, char **argv) {
    fprintf(stderr, "tide: %s is not built yet\n", argv[0]);
    return 1;
}
