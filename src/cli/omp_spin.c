/* omp_spin.c — the OpenMP spin policy of the commands that run two host threads side by side.
 *
 * `tide diff` prepares its two frames on two host threads (the context's helper, side_job),
 * each with an OpenMP team of half the cores, and builds the PSF model beside the subtraction.
 * libgomp's idle threads spin up to GOMP_SPINCOUNT (300,000 by default) iterations before they
 * sleep; with two teams and two CUDA waits on 16 cores the spinning threads preempt the working
 * ones, and single runs of `tide diff` took up to twice the median; a spin count of
 * 10,000 removed those runs. The reduction, one host thread, is faster with the default, so
 * only the difference commands and mosaics change it (the A/B figures: CHANGES.md, issue 5).
 *
 * libgomp reads its settings when it is loaded, before main, so the setting needs a fresh
 * start of the program: the command re-executes itself once (/proc/self/exe) with the variable
 * set. A GOMP_SPINCOUNT or OMP_WAIT_POLICY of the user's is kept and nothing is re-executed;
 * so is a failed exec (the command then runs with libgomp's defaults). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tide/fits.h"
#include "tide/status.h"

#define TIDE_DIFF_SPINCOUNT "10000"
/* set in the re-executed program, so it never re-executes again */
#define TIDE_SPIN_MARK "TIDE_OMP_SPIN_SET"

/* Whether @p path is a mosaic exposure (tide reduce then reads the next CCDs on a thread of
 * its own beside the reduction). */
static int is_mosaic(const char *path) {
    tide_fits_mosaic_plan plan;
    const int mosaic = !tide_fits_mosaic_plan_make(path, &plan) && plan.nccd > 0;
    tide_fits_mosaic_plan_free(&plan);
    tide_error_clear(); /* the command itself reports what is wrong with the file */
    return mosaic;
}

/* Whether argv runs two host threads side by side: tide diff, tide bench --diff, and a mosaic
 * (tide bench --mosaic; tide reduce EXPOSURE.fits, the exposure first as the usage gives it),
 * whose reading thread the reduction's spinning team starved: 62 CCDs of 2k x 4k took
 * 4,374 ms on the H200 with libgomp's default, 1,813 ms with a spin count of 10,000. */
static int side_by_side(int argc, char **argv) {
    if (argc < 2)
        return 0;
    if (!strcmp(argv[1], "diff"))
        return 1;
    if (!strcmp(argv[1], "reduce"))
        return argc > 2 && argv[2][0] != '-' && is_mosaic(argv[2]);
    if (strcmp(argv[1], "bench"))
        return 0;
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--diff") || !strcmp(argv[i], "--mosaic"))
            return 1;
    return 0;
}

void tide_cli_omp_spin(int argc, char **argv) {
#ifdef __linux__
    if (!side_by_side(argc, argv) || getenv(TIDE_SPIN_MARK) || getenv("GOMP_SPINCOUNT") ||
        getenv("OMP_WAIT_POLICY"))
        return;
    if (setenv("GOMP_SPINCOUNT", TIDE_DIFF_SPINCOUNT, 0) || setenv(TIDE_SPIN_MARK, "1", 1))
        return;
    execv("/proc/self/exe", argv);
    /* exec failed: run as we are; the variables stay set, harmlessly (libgomp has read its) */
#else
    (void)argc;
    (void)argv;
#endif
}
