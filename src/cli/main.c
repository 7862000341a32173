/* main.c — the `tide` command: dispatch to one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} tide_command;

/* Keep alphabetical; each entry lives in cmd_NAME.c. */
static const tide_command commands[] = {
    {"batch", tide_cmd_batch, "run a manifest of reduce and diff tasks (one process or mpirun)"},
    {"bench", tide_cmd_bench, "benchmark the compute primitives on CPU and GPU"},
    {"config", tide_cmd_config, "show the resolved instrument configuration"},
    {"diff", tide_cmd_diff, "difference imaging: reproject, PSF-match, subtract, fit candidates"},
    {"fit-dipoles", tide_cmd_fit_dipoles, "fit dipoles and point sources to difference stamps"},
    {"index", tide_cmd_index, "build astrometry.net index files from a reference catalog"},
    {"info", tide_cmd_info, "describe a FITS file: HDUs, shape, compression, WCS, key values"},
    {"query", tide_cmd_query, "cone search and image lookup in a catalog store"},
    {"review", tide_cmd_review, "review difference candidates: queues, the review page, export"},
    {"rb", tide_cmd_rb, "real/bogus scores of difference candidates: train a model, score"},
    {"reduce", tide_cmd_reduce, "reduce a frame to a source catalog (detection, PSF, photometry)"},
    {"reproject", tide_cmd_reproject, "resample frames onto one pixel grid (Lanczos-3)"},
    {"sim", tide_cmd_sim, "simulate a realistic frame with known truth"},
    {"solve", tide_cmd_solve, "plate-solve a frame or a source list (astrometry.net)"},
    {"stats", tide_cmd_stats, "pixel statistics of an image (identical on CPU and GPU)"},
    {"submit", tide_cmd_submit, "put frames on a worker's queue; take back its dead letters"},
    {"watch", tide_cmd_watch, "submit every FITS file that appears in a directory"},
    {"worker", tide_cmd_worker, "reduce and difference frames from a RabbitMQ queue, unattended"},
    {"xray", tide_cmd_xray, "X-ray detector delay scans: probe, sim, traces, LPSVD fit maps"},
};
static const int ncommands = (int)(sizeof commands / sizeof commands[0]);

static void print_help(FILE *f) {
    fprintf(f, "tide %s — GPU-native astronomical imaging pipeline\n\n", TIDE_VERSION_STRING);
    fprintf(f, "usage: tide COMMAND [OPTIONS] [ARGS]\n       tide COMMAND --help\n\ncommands:\n");
    for (int i = 0; i < ncommands; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nA frame is FILE, FILE[N] (HDU number, 0 = primary) or FILE[EXTNAME]; without a\n"
               "selector the first HDU that holds an image is used.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_help(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        print_help(stdout);
        return 0;
    }
    tide_cli_omp_spin(argc, argv);
    if (!strcmp(argv[1], "--version")) {
        printf("tide %s\n", TIDE_VERSION_STRING);
        return 0;
    }
    for (int i = 0; i < ncommands; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tide: unknown command '%s' (tide --help lists them)\n", argv[1]);
    return 2;
}
