/* sim_write.h — writing what the simulator makes: a truth table's header, and a simulated
 * mosaic exposure with its truth (`tide sim --ccds`, `tide bench --mosaic`). */
#ifndef TIDE_CLI_SIM_WRITE_H
#define TIDE_CLI_SIM_WRITE_H
#include "tide/tide.h"

/** The header of a truth or reference table: the frame's SIMSEED, SIMEPOCH, DATE-OBS,
 *  MJD-OBS, FILTER, EXPTIME, GAIN, SIMZPADU, SIMZP, SIMCOLT (when @p frame is non-NULL) and
 *  FLUXUNIT, appended to @p h. */
int tide_cli_sim_table_header(const tide_header *frame, tide_header *h);

/** What writing a mosaic found. */
typedef struct tide_cli_sim_mosaic_summary {
    long long rows;      /**< truth rows over all CCDs */
    long long saturated; /**< of which saturated */
    long long cosmics;   /**< cosmic-ray tracks over all CCDs */
    double seconds;      /**< rendering and writing */
} tide_cli_sim_mosaic_summary;

/** Render epoch @p epoch of @p m CCD after CCD into @p path (an empty primary with the
 *  exposure's cards, then one image extension per CCD, EXTNAME the CCD's) and, when
 *  @p truth is non-NULL, its truth (one TRUTH table per CCD, EXTNAME the CCD's, with CCDNUM).
 *  One CCD is in memory at a time; both files appear complete or not at all. */
int tide_cli_sim_mosaic_write(tide_ctx *ctx, const tide_sim_mosaic *m, int epoch, const char *path,
                              const char *truth, tide_cli_sim_mosaic_summary *sum);

#endif
