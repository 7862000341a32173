/* xray_write.c — the outputs of tide xray: maps.fits (image HDUs FREQ, DAMP, AMP, PHASE, FFT,
 * STATUS through cfitsio: tide_image is 2-D and these are cubes), maps.h5, PNG maps,
 * summary.json (inputs with their SHA-256, parameters, device, totals) and traces.h5; staged
 * and published together as one output set (outfile.h). */
#include <errno.h>
#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/fits/fits_fast.h"
#include "tide/outfile.h"
#include "tide/png.h"
#include "tide/status.h"
#include "xray/xray_bg.h"
#include "xray/xray_math.h"
#include "xray/xray_write.h"

/* The maps on the trace grid. */
typedef struct maps {
    int64_t M, ny, nx, nb;
    float *freq, *damp, *amp, *phase, *cst, *chi2;
    const float *fft; /**< the fit's (xray_fft_map), not owned */
    double *fft_freq;
    uint8_t *status, *reason;
} maps;

static void maps_free(maps *m) {
    free(m->freq);
    free(m->fft_freq);
    free(m->status);
}

static int maps_make(const xray_write_ctx *w, maps *m) {
    memset(m, 0, sizeof *m);
    const int64_t np = w->g->ty * w->g->tx, L = w->stats->fit_len;
    m->M = w->fp->modes;
    m->ny = w->g->ty;
    m->nx = w->g->tx;
    m->nb = L / 2;
    m->freq = malloc((size_t)(np * (4 * m->M + 2)) * sizeof *m->freq);
    m->fft = w->fft;
    m->fft_freq = malloc((size_t)(m->nb + 1) * sizeof *m->fft_freq);
    m->status = malloc((size_t)np * 2);
    if (!m->freq || !m->fft_freq || !m->status) {
        maps_free(m);
        return tide_error(TIDE_E_NOMEM, "xray: maps of %lld traces", (long long)np);
    }
    m->damp = m->freq + m->M * np;
    m->amp = m->damp + m->M * np;
    m->phase = m->amp + m->M * np;
    m->cst = m->phase + m->M * np;
    m->chi2 = m->cst + np;
    m->reason = m->status + np;
    for (int64_t k = 0; k < m->nb; k++)
        m->fft_freq[k] = (double)k / ((double)L * w->dt);
    const int64_t M = m->M;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < np; i++) {
        const tide_xray_lp_result *r = &w->res[i];
        for (int64_t k = 0; k < M; k++) {
            const int ok = r->status == TIDE_XRAY_OK && k < r->nmodes;
            m->freq[k * np + i] = ok ? (float)(r->omega[k] / 6.283185307179586) : NAN;
            m->damp[k * np + i] = ok ? (float)r->decay[k] : NAN;
            m->amp[k * np + i] = ok ? (float)r->amp[k] : NAN;
            m->phase[k * np + i] = ok ? (float)r->phase[k] : NAN;
        }
        m->cst[i] = r->status == TIDE_XRAY_OK ? (float)r->constant : NAN;
        m->chi2[i] = r->status == TIDE_XRAY_OK ? (float)r->chi2 : NAN;
        m->status[i] = (uint8_t)r->status;
        m->reason[i] = (uint8_t)r->reason;
    }
    return 0;
}

static int fits_hdu(fitsfile *f, const char *path, const char *name, int naxis, const int64_t *ax,
                    int btype, int dtype, void *data, const char *bunit, const char *comment,
                    int *status) {
    long naxes[3];
    LONGLONG n = 1;
    for (int i = 0; i < naxis; i++) {
        naxes[i] = (long)ax[i];
        n *= ax[i];
    }
    fits_create_img(f, btype, naxis, naxes, status);
    fits_update_key(f, TSTRING, "EXTNAME", (void *)name, NULL, status);
    if (bunit)
        fits_update_key(f, TSTRING, "BUNIT", (void *)bunit, NULL, status);
    if (comment)
        fits_write_comment(f, comment, status);
    if (dtype == TFLOAT && !*status) {
        /* the header is complete: tide's converter on several threads, cfitsio's bytes (per
         * pixel the FFT cube alone is ~200 MB, which cfitsio swaps on one thread) */
        if (tide_fits_fast_write_plane(f, path, data, (int64_t)n, 0))
            *status = WRITE_ERROR;
    } else
        fits_write_img(f, dtype, 1, n, data, status);
    return *status;
}

static int write_fits(const maps *m, const char *path, const char *shown) {
    fitsfile *f = NULL;
    int s = 0;
    fits_create_file(&f, path, &s);
    if (s)
        return tide_error(TIDE_E_IO, "%s: cannot create (cfitsio %d)", shown, s);
    fits_create_img(f, FLOAT_IMG, 0, NULL, &s);
    fits_write_comment(f, "tide xray fit: LPSVD maps on the trace grid; modes by amplitude", &s);
    const int64_t a3[3] = {m->nx, m->ny, m->M}, af[3] = {m->nx, m->ny, m->nb},
                  a2[2] = {m->nx, m->ny};
    fits_hdu(f, shown, "FREQ", 3, a3, FLOAT_IMG, TFLOAT, m->freq, "cycles/delay",
             "omega/2pi of each mode; NaN where none", &s);
    fits_hdu(f, shown, "DAMP", 3, a3, FLOAT_IMG, TFLOAT, m->damp, "1/delay", "decay rate b", &s);
    fits_hdu(f, shown, "AMP", 3, a3, FLOAT_IMG, TFLOAT, m->amp, NULL, "amplitude A of the ratio",
             &s);
    fits_hdu(f, shown, "PHASE", 3, a3, FLOAT_IMG, TFLOAT, m->phase, "rad",
             "phase at the zero delay", &s);
    if (m->nb > 0)
        fits_hdu(f, shown, "FFT", 3, af, FLOAT_IMG, TFLOAT, (void *)m->fft, NULL,
                 "|DFT|/n of the fitted segment; bin k at k/(n dt)", &s);
    fits_hdu(f, shown, "STATUS", 2, a2, BYTE_IMG, TBYTE, m->status, NULL,
             "0 unprocessed, 1 ok, 2 skipped, 3 failed", &s);
    int s2 = 0;
    fits_close_file(f, &s2);
    if (s || s2)
        return tide_error(TIDE_E_IO, "%s: cannot write (cfitsio %d)", shown, s ? s : s2);
    return 0;
}

/* write_fits's arguments, for maps.fits in a thread of its own (xray_bg.h) */
typedef struct fits_args {
    const maps *m;
    const char *path, *shown;
} fits_args;

static int write_fits_step(void *arg) {
    const fits_args *a = arg;
    return write_fits(a->m, a->path, a->shown);
}

static int write_maps_h5(const maps *m, const char *path, const char *shown) {
    hid_t h = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (h < 0)
        return tide_error(TIDE_E_IO, "%s: cannot create", shown);
    const int64_t np = m->ny * m->nx;
    const int64_t d3[3] = {m->M, m->ny, m->nx}, df[3] = {m->nb, m->ny, m->nx},
                  d2[2] = {m->ny, m->nx}, d1[1] = {m->nb};
    int st = 0;
    const char *n3[4] = {"freq", "damp", "amp", "phase"};
    const float *p3[4] = {m->freq, m->damp, m->amp, m->phase};
    for (int q = 0; q < 4 && !st; q++)
        st = xray_h5_write(h, shown, n3[q], 3, d3, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, p3[q]);
    if (!st && m->nb > 0)
        st = xray_h5_write(h, shown, "fft", 3, df, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, m->fft);
    if (!st && m->nb > 0)
        st = xray_h5_write(h, shown, "fft_freq", 1, d1, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE,
                           m->fft_freq);
    if (!st)
        st =
            xray_h5_write(h, shown, "fit_status", 2, d2, H5T_NATIVE_UINT8, H5T_STD_U8LE, m->status);
    if (!st)
        st = xray_h5_write(h, shown, "reason", 2, d2, H5T_NATIVE_UINT8, H5T_STD_U8LE, m->reason);
    if (!st)
        st = xray_h5_write(h, shown, "constant", 2, d2, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, m->cst);
    if (!st)
        st = xray_h5_write(h, shown, "chi2", 2, d2, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, m->chi2);
    (void)np;
    if (H5Fclose(h) < 0 && !st)
        st = tide_error(TIDE_E_IO, "%s: cannot close", shown);
    return st;
}

static int write_traces_h5(const xray_write_ctx *w, const char *path, const char *shown) {
    hid_t h = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (h < 0)
        return tide_error(TIDE_E_IO, "%s: cannot create", shown);
    const int64_t F = w->info->nframes, L = w->stats->fit_len;
    const int64_t d3[3] = {w->g->ty, w->g->tx, F}, ds[3] = {w->g->ty, w->g->tx, L}, d1[1] = {F},
                  d0[1] = {1};
    const long long z = w->stats->zero_index, s0 = w->stats->fit_start;
    int st = xray_h5_write(h, shown, "ratio", 3, d3, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, w->traces);
    if (!st)
        st = xray_h5_write(h, shown, "smoothed", 3, ds, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, w->seg);
    if (!st)
        st = xray_h5_write(h, shown, "delay", 1, d1, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE,
                           w->info->delays);
    if (!st)
        st = xray_h5_write(h, shown, "zero_index", 1, d0, H5T_NATIVE_LLONG, H5T_STD_I64LE, &z);
    if (!st)
        st = xray_h5_write(h, shown, "fit_start", 1, d0, H5T_NATIVE_LLONG, H5T_STD_I64LE, &s0);
    if (H5Fclose(h) < 0 && !st)
        st = tide_error(TIDE_E_IO, "%s: cannot close", shown);
    return st;
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static int write_summary(const xray_write_ctx *w, const char *path, const char *shown) {
    const char *in[2] = {w->on, w->off}, *sum[2] = {w->sha_on, w->sha_off};
    FILE *f = fopen(path, "wx");
    if (!f)
        return tide_error(TIDE_E_IO, "%s: cannot create", shown);
    const tide_xray_info *I = w->info;
    const tide_xray_trace_params *tp = w->tp;
    const tide_xray_fit_stats *S = w->stats;
    fprintf(f, "{\n  \"command\": \"xray %s\",\n  \"inputs\": [", w->fp ? "fit" : "traces");
    for (int i = 0; i < 2; i++) {
        fprintf(f, "%s\n    {\"role\": \"%s\", \"path\": ", i ? "," : "", i ? "off" : "on");
        json_str(f, in[i]);
        fprintf(f, ", \"sha256\": \"%s\"}", sum[i]);
    }
    fprintf(f, "\n  ],\n  \"layout\": \"%s\",\n  \"cube\": \"%s\",\n  \"monitor\": \"%s\",\n",
            I->layout == TIDE_XRAY_LEGATE ? "legate-cube" : "cropped-cube", I->cube, I->monitor);
    fprintf(f, "  \"shape\": [%lld, %lld, %lld],\n  \"dt\": %.17g,\n", (long long)I->nframes,
            (long long)I->ny, (long long)I->nx, w->dt);
    fprintf(f,
            "  \"parameters\": {\"roi\": [%lld, %lld, %lld, %lld], \"tile_x\": %d, "
            "\"tile_y\": %d, \"integrate\": %d, \"savgol_window\": %d, \"savgol_order\": %d, "
            "\"drop_leading\": %d, \"drop_trailing\": %d",
            (long long)w->g->roi[0], (long long)w->g->roi[1], (long long)w->g->roi[2],
            (long long)w->g->roi[3], tp->tile_x, tp->tile_y, tp->integrate, tp->savgol_window,
            tp->savgol_order, tp->drop_leading, tp->drop_trailing);
    if (w->fp)
        fprintf(f, ", \"components\": %d, \"modes\": %d, \"refine\": %s", w->fp->components,
                w->fp->modes, w->fp->refine ? "true" : "false");
    fprintf(f, "},\n  \"device\": ");
    json_str(f, w->ctx ? w->ctx->device_name : "CPU");
    fprintf(f, ",\n  \"lpsvd_backend\": \"%s\",\n",
            w->ctx && w->ctx->backend == TIDE_BACKEND_CUDA ? "cuda" : "cpu");
    fprintf(f, "  \"zero_index\": %d,\n  \"zero_from_data\": %s,\n  \"zero_delay\": %.17g,\n",
            S->zero_index, S->zero_from_data ? "true" : "false", I->delays[S->zero_index]);
    fprintf(f, "  \"fit_start\": %d,\n  \"fit_len\": %d,\n  \"grid\": [%lld, %lld],\n",
            S->fit_start, S->fit_len, (long long)S->ty, (long long)S->tx);
    fprintf(f, "  \"traces\": %lld,\n  \"ok\": %lld,\n  \"skipped\": %lld,\n  \"failed\": %lld,\n",
            (long long)S->ntraces, (long long)S->nok, (long long)S->nskipped,
            (long long)S->nfailed);
    fprintf(f, "  \"seconds\": {\"read\": %.6f, \"traces\": %.6f, \"fit\": %.6f}\n}\n", S->read_s,
            S->trace_s, S->fit_s);
    const int bad = ferror(f);
    if (fclose(f) || bad)
        return tide_error(TIDE_E_IO, "%s: cannot write", shown);
    return 0;
}

static int write_png(const float *map, int64_t nx, int64_t ny, const char *path, int symmetric) {
    tide_png_stretch s;
    tide_png_stretch_default(&s);
    s.limits = symmetric ? TIDE_LIMITS_SYMMETRIC_PCT : TIDE_LIMITS_PERCENTILE;
    s.lo_pct = 1.0;
    s.hi_pct = 99.0;
    s.scale = nx < 256 ? (int)(256 / nx) + 1 : 1;
    if (s.scale > 16)
        s.scale = 16;
    return tide_png_write_image(path, map, nx, ny, nx, &s);
}

int xray_write_outputs(const xray_write_ctx *w, const char *dir) {
    xray_h5_quiet();
    if (mkdir(dir, 0777) && errno != EEXIST)
        return tide_error(TIDE_E_IO, "%s: cannot create the directory", dir);
    tide_outset set;
    tide_outset_init(&set);
    char path[TIDE_OUTSET_MAX][4200];
    tide_outfile *of[TIDE_OUTSET_MAX];
    const char *names[TIDE_OUTSET_MAX];
    int n = 0;
    maps m;
    memset(&m, 0, sizeof m);
    int st = 0;
    if (w->fp) {
        if ((st = maps_make(w, &m)))
            return st;
        names[n++] = "maps.fits";
        names[n++] = "maps.h5";
        names[n++] = "summary.json";
        if (w->fp->write_traces)
            names[n++] = "traces.h5";
        if (w->fp->png) {
            names[n++] = "status.png";
            names[n++] = "freq_0.png";
            names[n++] = "amp_0.png";
            names[n++] = "damp_0.png";
            if (m.M > 1) {
                names[n++] = "freq_1.png";
                names[n++] = "amp_1.png";
            }
        }
    } else {
        names[n++] = "traces.h5";
        names[n++] = "summary.json";
    }
    for (int i = 0; i < n && !st; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
        st = tide_outset_add(&set, path[i], &of[i]);
    }
    const int64_t np = m.nx * m.ny;
    float *sf = NULL;
    /* maps.fits (cfitsio) in a thread of its own while this one writes the rest (libhdf5,
     * libpng): each library used by one thread, and the two big cubes written at once */
    xray_bg fits_bg = {0};
    fits_args fa = {&m, NULL, NULL};
    for (int i = 0; i < n && !st; i++) {
        const char *nm = names[i], *tmp = of[i]->tmp;
        if (!strcmp(nm, "maps.fits")) {
            fa.path = tmp;
            fa.shown = path[i];
            st = xray_bg_start(&fits_bg, write_fits_step, &fa, 1);
        } else if (!strcmp(nm, "maps.h5"))
            st = write_maps_h5(&m, tmp, path[i]);
        else if (!strcmp(nm, "summary.json"))
            st = write_summary(w, tmp, path[i]);
        else if (!strcmp(nm, "traces.h5"))
            st = write_traces_h5(w, tmp, path[i]);
        else if (!strcmp(nm, "status.png")) {
            sf = malloc((size_t)np * sizeof *sf);
            if (!sf) {
                st = tide_error(TIDE_E_NOMEM, "status map");
                break;
            }
            for (int64_t j = 0; j < np; j++)
                sf[j] = (float)m.status[j];
            tide_png_stretch s;
            tide_png_stretch_default(&s);
            s.lo = 0;
            s.hi = 3;
            s.scale = m.nx < 256 ? (int)(256 / m.nx) + 1 : 1;
            if (s.scale > 16)
                s.scale = 16;
            st = tide_png_write_image(tmp, sf, m.nx, m.ny, m.nx, &s);
        } else {
            const int k = nm[strlen(nm) - 5] - '0';
            const float *src = !strncmp(nm, "freq", 4)  ? m.freq
                               : !strncmp(nm, "amp", 3) ? m.amp
                                                        : m.damp;
            st = write_png(src + k * np, m.nx, m.ny, tmp, 0);
        }
    }
    const int sfits = xray_bg_join(&fits_bg);
    if (!st)
        st = sfits;
    free(sf);
    if (!st)
        st = tide_outset_commit(&set);
    tide_outset_abort(&set);
    maps_free(&m);
    return st;
}
