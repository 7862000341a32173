/* xray_write.h — the outputs of tide xray fit and traces (xray_write.c): what the fit hands
 * the writers. */
#ifndef TIDE_XRAY_WRITE_H
#define TIDE_XRAY_WRITE_H
#include "tide/ctx.h"
#include "xray/xray_internal.h"

/** Everything the writers read; nothing is owned. */
typedef struct xray_write_ctx {
    tide_ctx *ctx;
    const char *on, *off;
    const tide_xray_info *info;
    const tide_xray_trace_params *tp;
    const tide_xray_fit_params *fp; /**< NULL: traces only */
    const xray_trace_grid *g;
    const tide_xray_fit_stats *stats;
    const double *traces;           /**< ntr × nframes on/off ratio */
    const double *seg;              /**< ntr × fit_len smoothed segments that were fitted */
    const tide_xray_lp_result *res; /**< ntr results (NULL: traces only) */
    const float *fft;               /**< fit_len/2 × ntr |DFT|/n (xray_fft_map; NULL: traces) */
    double dt;
    const char *sha_on, *sha_off; /**< the inputs' SHA-256 in hex (tide_store_file_checksum) */
} xray_write_ctx;

/** Write DIR's files (see tide_xray_fit_pair) as one output set. */
int xray_write_outputs(const xray_write_ctx *w, const char *dir);

#endif
