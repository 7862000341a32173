/* xray_fit.c — tide xray fit and traces: probe the pair, stream the traces by row blocks, find
 * the zero delay, smooth and fit every trace's segment after it, and hand the maps to the
 * writers (xray_write.c). The traces of the whole ROI are kept in memory (trace grid × frames
 * doubles) because the zero delay is found from their mean before any fit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tide/status.h"
#include "tide/store.h"
#include "xray/xray_bg.h"
#include "xray/xray_fft.h"
#include "xray/xray_internal.h"
#include "xray/xray_math.h"
#include "xray/xray_write.h"

void tide_xray_fit_defaults(tide_xray_fit_params *p) {
    memset(p, 0, sizeof *p);
    p->components = 5;
    p->modes = 2;
    p->refine = 1;
    p->png = 1;
}

/* An input's SHA-256 for summary.json, computed beside the read and the fit (xray_bg.h): the
 * two files of a detector-sized pair are 840 MB, ~0.5 s of hashing on one core, which made
 * most of the write step. */
typedef struct checksum_args {
    const char *path;
    char hex[72];
} checksum_args;

static int checksum_step(void *arg) {
    checksum_args *a = arg;
    return tide_store_file_checksum(a->path, a->hex);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The zero-delay frame: given, nearest to a given delay, or the largest step of the mean
 * trace of the lit traces. */
static int find_zero(const tide_xray_trace_params *tp, const tide_xray_info *in, const double *tr,
                     const uint8_t *reason, int64_t ntr, int *zero, int *from_data) {
    const int64_t F = in->nframes;
    *from_data = 0;
    if (tp->zero_index >= 0) {
        if (tp->zero_index >= F)
            return tide_error(TIDE_E_RANGE, "xray: zero index %d beyond %lld frames",
                              tp->zero_index, (long long)F);
        *zero = tp->zero_index;
        return 0;
    }
    if (isfinite(tp->zero_delay)) {
        int b = 0;
        for (int64_t f = 1; f < F; f++)
            if (fabs(in->delays[f] - tp->zero_delay) < fabs(in->delays[b] - tp->zero_delay))
                b = (int)f;
        *zero = b;
        return 0;
    }
    double *m = calloc((size_t)F, sizeof *m);
    if (!m)
        return tide_error(TIDE_E_NOMEM, "xray: mean trace");
    int64_t nl = 0;
    for (int64_t i = 0; i < ntr; i++)
        if (reason[i] == TIDE_XRAY_R_NONE) {
            nl++;
            for (int64_t f = 0; f < F; f++)
                m[f] += tr[i * F + f];
        }
    if (nl == 0) {
        free(m);
        return tide_error(TIDE_E_EMPTY, "xray: no lit trace to find the zero delay in");
    }
    *zero = xray_zero_from_trace(m, (int)F);
    *from_data = 1;
    free(m);
    return 0;
}

int tide_xray_fit_pair(struct tide_ctx *ctx, const char *on, const char *off,
                       const tide_xray_trace_params *tp, const tide_xray_fit_params *fp,
                       const char *dir, tide_xray_fit_stats *stats) {
    tide_xray_fit_stats st0;
    tide_xray_fit_stats *S = stats ? stats : &st0;
    memset(S, 0, sizeof *S);
    if (fp && (fp->components < 1 || fp->components > TIDE_XRAY_MAX_COMPONENTS || fp->modes < 1 ||
               fp->modes > TIDE_XRAY_MAX_COMPONENTS))
        return tide_error(TIDE_E_INVAL, "xray fit: components %d (1..%d), modes %d", fp->components,
                          TIDE_XRAY_MAX_COMPONENTS, fp->modes);
    if (tp->savgol_window > 1 &&
        (tp->savgol_window % 2 == 0 || tp->savgol_order >= tp->savgol_window ||
         tp->savgol_order < 0 || tp->savgol_order > 10 || tp->savgol_window > 63))
        return tide_error(TIDE_E_INVAL,
                          "xray: Savitzky-Golay window %d (odd, <= 63) order %d "
                          "(< window, <= 10)",
                          tp->savgol_window, tp->savgol_order);
    double t0 = now_s();
    tide_xray_info ion, ioff;
    int st = tide_xray_probe_pair(on, off, &ion, &ioff);
    if (st)
        return st;
    tide_xray_info_free(&ioff);
    xray_file fon, foff;
    memset(&fon, 0, sizeof fon);
    memset(&foff, 0, sizeof foff);
    fon.file = fon.cube = foff.file = foff.cube = -1;
    double *tr = NULL, *seg = NULL;
    float *fft = NULL;
    xray_bg fj = {0};
    uint8_t *reason = NULL;
    tide_xray_lp_result *res = NULL;
    xray_trace_grid g;
    checksum_args sums[2] = {{on, ""}, {off, ""}};
    xray_bg sum_bg[2] = {{0}, {0}};
    xray_rows_buf rb = {0};
    if ((st = xray_open(on, &fon)) || (st = xray_open(off, &foff)) ||
        (st = xray_grid(&ion, tp, on, &g)))
        goto done;
    for (int i = 0; i < 2 && !st; i++)
        st = xray_bg_start(&sum_bg[i], checksum_step, &sums[i], 1);
    if (st)
        goto done;
    if (!ion.uniform) {
        st = tide_error(TIDE_E_UNSUPPORTED,
                        "%s: dataset %s: delays are not equally spaced "
                        "(linear prediction needs a uniform step)",
                        on, ion.delays_name);
        goto done;
    }
    const int64_t F = ion.nframes, ntr = g.ty * g.tx;
    S->ty = g.ty;
    S->tx = g.tx;
    S->ntraces = ntr;
    tr = malloc((size_t)(ntr * F) * sizeof *tr);
    reason = malloc((size_t)ntr);
    if (!tr || !reason) {
        st = tide_error(TIDE_E_NOMEM, "xray: %lld traces of %lld frames", (long long)ntr,
                        (long long)F);
        goto done;
    }
    int64_t rows = tp->block_rows / tp->tile_y;
    if (rows < 1)
        rows = 1;
    if ((st = xray_rows_buf_alloc(&fon, tp, &g, rows, &rb)))
        goto done;
    for (int64_t y0 = 0; y0 < g.ty; y0 += rows) {
        const int64_t y1 = y0 + rows < g.ty ? y0 + rows : g.ty;
        if ((st = xray_traces_rows(&fon, &foff, tp, &g, y0, y1, &rb, tr + y0 * g.tx * F,
                                   reason + y0 * g.tx)))
            goto done;
    }
    xray_rows_buf_free(&rb);
    const double t1 = now_s();
    S->read_s = t1 - t0;
    int zero = 0;
    if ((st = find_zero(tp, &ion, tr, reason, ntr, &zero, &S->zero_from_data)))
        goto done;
    S->zero_index = zero;
    const int start = zero > tp->drop_leading ? zero : tp->drop_leading;
    const int L = (int)F - tp->drop_trailing - start;
    S->fit_start = start;
    S->fit_len = L;
    if (L < 8) {
        st = tide_error(TIDE_E_RANGE,
                        "xray: %d samples after the zero delay (frame %d) to fit; "
                        "at least 8 are needed",
                        L, zero);
        goto done;
    }
    /* the smoothing weights are the same for every trace: computed once (per trace they were
     * most of this step: ~400 pow() calls a trace) */
    double sgw_table[63 * 63];
    const int sgw = tp->savgol_window > 1 && L >= tp->savgol_window &&
                            !xray_savgol_table(tp->savgol_window, tp->savgol_order, sgw_table)
                        ? tp->savgol_window
                        : 0;
    seg = malloc((size_t)(ntr * L) * sizeof *seg);
    if (!seg) {
        st = tide_error(TIDE_E_NOMEM, "xray: fit segments");
        goto done;
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < ntr; i++) {
        const double *s = tr + i * F + start;
        double *o = seg + i * L;
        if (!sgw || xray_savgol_apply(s, L, sgw, sgw_table, o))
            memcpy(o, s, (size_t)L * sizeof *o);
    }
    const double t2 = now_s();
    S->trace_s = t2 - t1;
    if (fp) {
        res = malloc((size_t)(ntr > 0 ? ntr : 1) * sizeof *res);
        fft = malloc((size_t)(ntr * (L / 2 > 0 ? L / 2 : 1)) * sizeof *fft);
        if (!res || !fft) {
            st = tide_error(TIDE_E_NOMEM, "xray: %lld results", (long long)ntr);
            goto done;
        }
        /* the FFT map needs only the segments: on the GPU backend the host computes it
         * meanwhile */
        /* beside the GPU fit, two cores are left to the thread that feeds the device (its
         * pageable copies run on the host's cores) */
        const int bg = ctx->backend == TIDE_BACKEND_CUDA;
        int fthreads = 0;
#ifdef _OPENMP
        fthreads = bg && omp_get_max_threads() > 2 ? omp_get_max_threads() - 2 : 0;
#endif
        xray_fft_args fa = {seg, ntr, L, fft, fthreads};
        if ((st = xray_bg_start(&fj, xray_fft_step, &fa, bg)))
            goto done;
        st = tide_xray_lpsvd_batch(ctx, seg, ntr, L, ion.dt, fp->components, fp->refine, res);
        const int sf = xray_bg_join(&fj);
        if (!st)
            st = sf;
        if (st)
            goto done;
        for (int64_t i = 0; i < ntr; i++) {
            if (reason[i] != TIDE_XRAY_R_NONE) {
                res[i].status = TIDE_XRAY_SKIPPED;
                res[i].reason = reason[i];
                res[i].nmodes = 0;
            }
            S->nok += res[i].status == TIDE_XRAY_OK;
            S->nskipped += res[i].status == TIDE_XRAY_SKIPPED;
            S->nfailed += res[i].status == TIDE_XRAY_FAILED;
        }
    }
    const double t3 = now_s();
    S->fit_s = t3 - t2;
    for (int i = 0; i < 2; i++) {
        const int sj = xray_bg_join(&sum_bg[i]);
        if (!st)
            st = sj;
    }
    if (st)
        goto done;
    xray_write_ctx wc = {ctx, on,  off, &ion, tp,     fp,          &g,         S,
                         tr,  seg, res, fft,  ion.dt, sums[0].hex, sums[1].hex};
    st = xray_write_outputs(&wc, dir);
    S->write_s = now_s() - t3;
done:
    xray_rows_buf_free(&rb);
    xray_bg_join(&fj);
    xray_bg_join(&sum_bg[0]);
    xray_bg_join(&sum_bg[1]);
    free(fft);
    free(tr);
    free(seg);
    free(reason);
    free(res);
    xray_close(&fon);
    xray_close(&foff);
    tide_xray_info_free(&ion);
    return st;
}
