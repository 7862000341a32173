/* xray_sim.c — tide xray sim: a laser-on/laser-off HDF5 pair with known damped oscillations
 * per tile of pixels, monitor fluctuations, shot and read noise and a zero-delay offset, and
 * the truth beside it. Deterministic: every pixel's noise is a pure function of (seed, file,
 * frame, pixel) through core/rng.h, so threads and block sizes do not change a value. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/rng.h"
#include "tide/outfile.h"
#include "tide/status.h"
#include "xray/xray_internal.h"
#include "xray/xray_math.h"

/* Streams of core/rng.h for tide xray (beyond the frame simulator's). */
enum { XRAY_STREAM_PIXEL = 40, XRAY_STREAM_MONITOR = 41, XRAY_STREAM_GLITCH = 44 };

void tide_xray_sim_defaults(tide_xray_sim_params *p) {
    memset(p, 0, sizeof *p);
    p->layout = TIDE_XRAY_CROPPED;
    p->nframes = 100;
    p->ny = p->nx = 1024;
    p->active[2] = -1;
    p->nmodes = 2;
    const double om[2] = {1.25, 0.45}, de[2] = {0.09, 0.03}, am[2] = {2.4, 0.9},
                 ph[2] = {0.30, -0.75};
    for (int k = 0; k < 2; k++) {
        p->omega[k] = om[k];
        p->decay[k] = de[k];
        p->amp[k] = am[k];
        p->phase[k] = ph[k];
    }
    p->constant = 0.15;
    p->amp_scale = 0.25;
    p->dt = 0.1;
    p->zero_index = 4;
    p->zero_offset = 0.37;
    p->counts = 1000.0;
    p->read_noise = 0.0;
    p->noise = 1;
    p->tile = 16;
    p->seed = 1;
}

/* The truth of tile (ty, tx): the modes and constant of its pixels. */
static void tile_truth(const tide_xray_sim_params *p, int64_t ty, int64_t tx,
                       tide_xray_lp_result *t) {
    memset(t, 0, sizeof *t);
    const double u = ((double)tx + 0.5) * p->tile / (double)p->nx - 0.5;
    const double v = ((double)ty + 0.5) * p->tile / (double)p->ny - 0.5;
    t->nmodes = p->nmodes;
    for (int k = 0; k < p->nmodes; k++) {
        t->omega[k] = p->omega[k] * (1.0 + 0.2 * u);
        t->decay[k] = p->decay[k];
        t->amp[k] = p->amp[k] * p->amp_scale * (1.0 + 0.4 * v);
        t->phase[k] = p->phase[k];
    }
    t->constant = p->constant * p->amp_scale;
    t->status = TIDE_XRAY_OK;
}

/* The on/off ratio - 1 of a tile at time t from zero delay, with the chirp. */
static double signal(const tide_xray_lp_result *t, double chirp, double tt) {
    if (chirp == 0.0)
        return xray_model(t, tt);
    double v = t->constant;
    for (int k = 0; k < t->nmodes; k++)
        v += t->amp[k] * exp(-t->decay[k] * tt) *
             cos(t->omega[k] * tt * (1.0 + 0.5 * chirp * tt) + t->phase[k]);
    return v;
}

static double monitor(const tide_xray_sim_params *p, int file, int64_t f) {
    sim_rng r = sim_rng_make(p->seed, XRAY_STREAM_MONITOR, (uint64_t)(file * p->nframes + f));
    const double g = p->noise ? sim_rng_gauss(&r) : 0.0;
    return 1.0 + 0.1 * sin((file ? 0.5 : 0.7) * (double)f + (file ? 1.1 : 0.3)) + 0.03 * g;
}

/* Write one file: file 0 = on, 1 = off. */
static int write_cube(const tide_xray_sim_params *p, int file, const char *path,
                      const char *shown) {
    const int64_t F = p->nframes, ny = p->ny, nx = p->nx;
    const int64_t ax0 = p->active[0], ay0 = p->active[1], aw = p->active[2], ah = p->active[3];
    hid_t h = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (h < 0)
        return tide_error(TIDE_E_IO, "%s: cannot create", shown);
    const int leg = p->layout == TIDE_XRAY_LEGATE;
    double *mon = malloc((size_t)F * 4 * sizeof *mon);
    float *buf = NULL;
    int st = 0;
    hid_t sp = -1, pl = -1, d = -1;
    if (!mon) {
        st = tide_error(TIDE_E_NOMEM, "%s", shown);
        goto done;
    }
    double *mon2 = mon + F, *del = mon + 2 * F, *cnt = mon + 3 * F;
    for (int64_t f = 0; f < F; f++) {
        mon[f] = monitor(p, file, f);
        mon2[f] = (leg ? 0.9 : 0.8) * mon[f];
        del[f] = (double)(f - p->zero_index) * p->dt + p->zero_offset;
        cnt[f] = 500;
    }
    const int64_t d1[1] = {F}, d4[1] = {4};
    const int64_t roi[4] = {0, 0, nx, ny};
    if ((st = xray_h5_write(h, shown, leg ? "binVar_bins" : "scan_var", 1, d1, H5T_NATIVE_DOUBLE,
                            H5T_IEEE_F64LE, del)) ||
        (st = xray_h5_write(h, shown, leg ? "nEntries" : "bin_count", 1, d1, H5T_NATIVE_DOUBLE,
                            H5T_STD_I64LE, cnt)) ||
        (st = xray_h5_write(h, shown, leg ? "ipm3__sum" : "i0", 1, d1, H5T_NATIVE_DOUBLE,
                            H5T_IEEE_F64LE, mon)) ||
        (st = xray_h5_write(h, shown, leg ? "ipm2__sum" : "i0_ipm3", 1, d1, H5T_NATIVE_DOUBLE,
                            H5T_IEEE_F64LE, mon2)))
        goto done;
    if (!leg && (st = xray_h5_write(h, shown, "ROI", 1, d4, H5T_NATIVE_LLONG, H5T_STD_I64LE, roi)))
        goto done;
    const hsize_t dims[3] = {(hsize_t)F, (hsize_t)ny, (hsize_t)nx};
    const hsize_t ch[3] = {(hsize_t)F, (hsize_t)(ny < 16 ? ny : 16),
                           (hsize_t)(nx < 128 ? nx : 128)};
    sp = H5Screate_simple(3, dims, NULL);
    pl = H5Pcreate(H5P_DATASET_CREATE);
    float fill = 0.0f;
    if (sp < 0 || pl < 0 || H5Pset_chunk(pl, 3, ch) < 0 ||
        H5Pset_fill_value(pl, H5T_NATIVE_FLOAT, &fill) < 0 || H5Pset_obj_track_times(pl, 0) < 0 ||
        (d = H5Dcreate2(h, leg ? "jungfrau1M_data" : "imgs", H5T_IEEE_F32LE, sp, H5P_DEFAULT, pl,
                        H5P_DEFAULT)) < 0) {
        st = tide_error(TIDE_E_IO, "%s: cannot create the cube", shown);
        goto done;
    }
    const int64_t brows = 16;
    buf = malloc((size_t)(F * brows * aw) * sizeof *buf);
    if (!buf) {
        st = tide_error(TIDE_E_NOMEM, "%s: cube buffer", shown);
        goto done;
    }
    for (int64_t y0 = ay0; y0 < ay0 + ah; y0 += brows) {
        const int64_t y1 = y0 + brows < ay0 + ah ? y0 + brows : ay0 + ah, nr = y1 - y0;
#pragma omp parallel for schedule(static)
        for (int64_t y = y0; y < y1; y++) {
            tide_xray_lp_result tr;
            int64_t cur_tx = -1;
            for (int64_t x = ax0; x < ax0 + aw; x++) {
                if (x / p->tile != cur_tx) {
                    cur_tx = x / p->tile;
                    tile_truth(p, y / p->tile, cur_tx, &tr);
                }
                const double I =
                    p->counts * (1.0 + 0.2 * cos((double)x / 37.0) * sin((double)y / 53.0));
                sim_rng r = sim_rng_make(p->seed, XRAY_STREAM_PIXEL + 2 * (uint64_t)file,
                                         (uint64_t)(y * nx + x));
                sim_rng rg = sim_rng_make(p->seed, XRAY_STREAM_GLITCH + (uint64_t)file,
                                          (uint64_t)(y * nx + x));
                for (int64_t f = 0; f < F; f++) {
                    double mean = I * mon[f];
                    if (file == 0 && f >= p->zero_index)
                        mean *= 1.0 + signal(&tr, p->chirp, (double)(f - p->zero_index) * p->dt);
                    double v = mean;
                    if (p->noise) {
                        const double g = sim_rng_gauss(&r);
                        v += g * sqrt(fmax(mean, 0.0) + p->read_noise * p->read_noise);
                    }
                    if (p->glitch_frac > 0 && sim_rng_uniform(&rg) < p->glitch_frac)
                        v *= 1.0 + sim_rng_range(&rg, 0.0, 4.0);
                    if (p->clip > 0 && v > p->clip)
                        v = p->clip;
                    buf[(f * nr + (y - y0)) * aw + (x - ax0)] = (float)v;
                }
            }
        }
        const hsize_t start[3] = {0, (hsize_t)y0, (hsize_t)ax0};
        const hsize_t cnt3[3] = {(hsize_t)F, (hsize_t)nr, (hsize_t)aw};
        hid_t ms = H5Screate_simple(3, cnt3, NULL), fs = H5Dget_space(d);
        herr_t e = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt3, NULL);
        if (e >= 0)
            e = H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf);
        H5Sclose(ms);
        H5Sclose(fs);
        if (e < 0) {
            st = tide_error(TIDE_E_IO, "%s: cannot write rows %lld..%lld", shown, (long long)y0,
                            (long long)y1 - 1);
            goto done;
        }
    }
done:
    free(buf);
    free(mon);
    if (d >= 0)
        H5Dclose(d);
    if (pl >= 0)
        H5Pclose(pl);
    if (sp >= 0)
        H5Sclose(sp);
    if (H5Fclose(h) < 0 && !st)
        st = tide_error(TIDE_E_IO, "%s: cannot close", shown);
    return st;
}

static int write_truth_h5(const tide_xray_sim_params *p, const char *path, const char *shown) {
    const int64_t nty = (p->ny + p->tile - 1) / p->tile, ntx = (p->nx + p->tile - 1) / p->tile;
    const int64_t nt = nty * ntx, M = p->nmodes;
    double *a = malloc((size_t)(nt * (4 * M + 1)) * sizeof *a);
    if (!a)
        return tide_error(TIDE_E_NOMEM, "%s", shown);
    for (int64_t ty = 0; ty < nty; ty++)
        for (int64_t tx = 0; tx < ntx; tx++) {
            tide_xray_lp_result t;
            tile_truth(p, ty, tx, &t);
            const int64_t i = ty * ntx + tx;
            for (int64_t k = 0; k < M; k++) {
                a[(0 * M + k) * nt + i] = t.omega[k];
                a[(1 * M + k) * nt + i] = t.decay[k];
                a[(2 * M + k) * nt + i] = t.amp[k];
                a[(3 * M + k) * nt + i] = t.phase[k];
            }
            a[4 * M * nt + i] = t.constant;
        }
    hid_t h = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (h < 0) {
        free(a);
        return tide_error(TIDE_E_IO, "%s: cannot create", shown);
    }
    const int64_t d3[3] = {M, nty, ntx}, d2[2] = {nty, ntx};
    const char *names[4] = {"omega", "decay", "amp", "phase"};
    int st = 0;
    for (int q = 0; q < 4 && !st; q++)
        st = xray_h5_write(h, shown, names[q], 3, d3, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE,
                           a + q * M * nt);
    if (!st)
        st = xray_h5_write(h, shown, "constant", 2, d2, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE,
                           a + 4 * M * nt);
    free(a);
    if (H5Fclose(h) < 0 && !st)
        st = tide_error(TIDE_E_IO, "%s: cannot close", shown);
    return st;
}

static int write_truth_json(const tide_xray_sim_params *p, const char *path, const char *shown) {
    FILE *f = fopen(path, "wx");
    if (!f)
        return tide_error(TIDE_E_IO, "%s: cannot create", shown);
    fprintf(f, "{\n  \"layout\": \"%s\",\n",
            p->layout == TIDE_XRAY_LEGATE ? "legate-cube" : "cropped-cube");
    fprintf(f, "  \"shape\": [%lld, %lld, %lld],\n", (long long)p->nframes, (long long)p->ny,
            (long long)p->nx);
    fprintf(f, "  \"active\": [%lld, %lld, %lld, %lld],\n", (long long)p->active[0],
            (long long)p->active[1], (long long)p->active[2], (long long)p->active[3]);
    fprintf(f, "  \"seed\": %llu,\n  \"dt\": %.17g,\n  \"zero_index\": %d,\n",
            (unsigned long long)p->seed, p->dt, p->zero_index);
    fprintf(f, "  \"zero_offset\": %.17g,\n  \"counts\": %.17g,\n  \"read_noise\": %.17g,\n",
            p->zero_offset, p->counts, p->read_noise);
    fprintf(f, "  \"noise\": %s,\n  \"amp_scale\": %.17g,\n  \"tile\": %d,\n",
            p->noise ? "true" : "false", p->amp_scale, p->tile);
    fprintf(f, "  \"chirp\": %.17g,\n  \"glitch_frac\": %.17g,\n  \"clip\": %.17g,\n", p->chirp,
            p->glitch_frac, p->clip);
    fprintf(f, "  \"constant\": %.17g,\n  \"modes\": [", p->constant * p->amp_scale);
    for (int k = 0; k < p->nmodes; k++)
        fprintf(f,
                "%s\n    {\"omega\": %.17g, \"freq\": %.17g, \"decay\": %.17g, \"amp\": %.17g, "
                "\"phase\": %.17g}",
                k ? "," : "", p->omega[k], p->omega[k] / 6.283185307179586, p->decay[k],
                p->amp[k] * p->amp_scale, p->phase[k]);
    fprintf(f, "\n  ],\n  \"variation\": \"per tile x tile block (ty, tx): omega_k * (1 + 0.2 u), "
               "amp_k * (1 + 0.4 v), u = (tx + 0.5) tile / nx - 0.5, v = (ty + 0.5) tile / ny - "
               "0.5; truth.h5 holds every tile\",\n");
    fprintf(f, "  \"signal\": \"on = I mon_on (1 + s(t)), off = I mon_off, s = 0 before "
               "zero_index, t = (frame - zero_index) dt\"\n}\n");
    const int bad = ferror(f);
    if (fclose(f) || bad)
        return tide_error(TIDE_E_IO, "%s: cannot write", shown);
    return 0;
}

int tide_xray_sim(const tide_xray_sim_params *pin, const char *dir) {
    tide_xray_sim_params p = *pin;
    if (p.nframes < 8 || p.ny < 1 || p.nx < 1 || p.nmodes < 1 || p.nmodes > 2 || p.tile < 1 ||
        !(p.dt > 0) || p.zero_index < 0 || p.zero_index >= p.nframes || !(p.counts > 0) ||
        !(p.glitch_frac >= 0 && p.glitch_frac <= 1) || !(p.clip >= 0) || !isfinite(p.chirp))
        return tide_error(TIDE_E_INVAL,
                          "xray sim: bad parameters (frames %lld, modes %d, tile "
                          "%d, dt %g, zero index %d, counts %g)",
                          (long long)p.nframes, p.nmodes, p.tile, p.dt, p.zero_index, p.counts);
    if (p.active[2] <= 0) {
        p.active[0] = p.active[1] = 0;
        p.active[2] = p.nx;
        p.active[3] = p.ny;
    }
    if (p.active[0] < 0 || p.active[1] < 0 || p.active[3] <= 0 ||
        p.active[0] + p.active[2] > p.nx || p.active[1] + p.active[3] > p.ny)
        return tide_error(TIDE_E_RANGE,
                          "xray sim: active region %lld,%lld,%lld,%lld outside the "
                          "%lld x %lld cube",
                          (long long)p.active[0], (long long)p.active[1], (long long)p.active[2],
                          (long long)p.active[3], (long long)p.nx, (long long)p.ny);
    xray_h5_quiet();
    if (mkdir(dir, 0777) && errno != EEXIST)
        return tide_error(TIDE_E_IO, "%s: cannot create the directory", dir);
    const char *names[4] = {"on.h5", "off.h5", "truth.h5", "truth.json"};
    char paths[4][4200];
    tide_outset set;
    tide_outset_init(&set);
    tide_outfile *of[4];
    int st = 0;
    for (int i = 0; i < 4 && !st; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", dir, names[i]);
        st = tide_outset_add(&set, paths[i], &of[i]);
    }
    if (!st)
        st = write_cube(&p, 0, of[0]->tmp, paths[0]);
    if (!st)
        st = write_cube(&p, 1, of[1]->tmp, paths[1]);
    if (!st)
        st = write_truth_h5(&p, of[2]->tmp, paths[2]);
    if (!st)
        st = write_truth_json(&p, of[3]->tmp, paths[3]);
    if (!st)
        st = tide_outset_commit(&set);
    tide_outset_abort(&set);
    return st;
}
