/* xray_h5.c — the HDF5 side of tide xray: classify and check an input file (tide xray probe),
 * check a pair, read row blocks of the cube as hyperslabs, and write plain datasets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/status.h"
#include "xray/xray_internal.h"

void xray_h5_quiet(void) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static int has(hid_t f, const char *name) {
    return H5Lexists(f, name, H5P_DEFAULT) > 0;
}

/* The dims of dataset @p name (rank <= 3), checking the rank. */
static int dset_dims(hid_t f, const char *path, const char *name, int want_rank, int64_t *dims,
                     hid_t *out) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0)
        return tide_error(TIDE_E_FORMAT, "%s: dataset %s cannot be opened", path, name);
    hid_t sp = H5Dget_space(d);
    const int rank = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
    if (rank != want_rank) {
        H5Sclose(sp);
        H5Dclose(d);
        return tide_error(TIDE_E_FORMAT, "%s: dataset %s has rank %d, expected %d", path, name,
                          rank, want_rank);
    }
    hsize_t hd[3] = {0, 0, 0};
    H5Sget_simple_extent_dims(sp, hd, NULL);
    H5Sclose(sp);
    for (int i = 0; i < rank; i++)
        dims[i] = (int64_t)hd[i];
    hid_t t = H5Dget_type(d);
    const H5T_class_t cl = H5Tget_class(t);
    H5Tclose(t);
    if (cl != H5T_FLOAT && cl != H5T_INTEGER) {
        H5Dclose(d);
        return tide_error(TIDE_E_FORMAT, "%s: dataset %s is not numeric", path, name);
    }
    if (out)
        *out = d;
    else
        H5Dclose(d);
    return 0;
}

/* A 1-D numeric dataset of exactly @p n values, as doubles (malloc'd). */
static int read_vec(hid_t f, const char *path, const char *name, int64_t n, double **out) {
    int64_t len = 0;
    hid_t d;
    int st = dset_dims(f, path, name, 1, &len, &d);
    if (st)
        return st;
    if (len != n) {
        H5Dclose(d);
        return tide_error(TIDE_E_FORMAT, "%s: dataset %s has %lld values, the cube %lld frames",
                          path, name, (long long)len, (long long)n);
    }
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) {
        H5Dclose(d);
        return tide_error(TIDE_E_NOMEM, "%s: %s", path, name);
    }
    const herr_t e = H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(d);
    if (e < 0) {
        free(v);
        return tide_error(TIDE_E_IO, "%s: dataset %s cannot be read", path, name);
    }
    *out = v;
    return 0;
}

static void type_name(hid_t t, char *out, size_t n) {
    const H5T_class_t cl = H5Tget_class(t);
    const size_t sz = H5Tget_size(t);
    if (cl == H5T_FLOAT)
        snprintf(out, n, "float%zu", 8 * sz);
    else if (H5Tget_sign(t) == H5T_SGN_NONE)
        snprintf(out, n, "uint%zu", 8 * sz);
    else
        snprintf(out, n, "int%zu", 8 * sz);
}

static int probe_open(const char *path, tide_xray_info *in, hid_t *fout, hid_t *cout) {
    memset(in, 0, sizeof *in);
    for (int i = 0; i < 4; i++)
        in->roi[i] = -1;
    xray_h5_quiet();
    if (H5Fis_hdf5(path) <= 0)
        return tide_error(TIDE_E_IO, "%s: cannot open as an HDF5 file", path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return tide_error(TIDE_E_IO, "%s: cannot open as an HDF5 file", path);
    int st = 0;
    const char *counts = NULL;
    if (has(f, "imgs")) {
        in->layout = TIDE_XRAY_CROPPED;
        strcpy(in->cube, "imgs");
        strcpy(in->delays_name, "scan_var");
        counts = "bin_count";
        strcpy(in->monitor, "i0");
        strcpy(in->monitor2, "i0_ipm3");
    } else if (has(f, "jungfrau1M_data")) {
        in->layout = TIDE_XRAY_LEGATE;
        strcpy(in->cube, "jungfrau1M_data");
        strcpy(in->delays_name, "binVar_bins");
        counts = "nEntries";
        if (has(f, "ipm3__sum") && has(f, "ipm2__sum")) {
            strcpy(in->monitor, "ipm3__sum");
            strcpy(in->monitor2, "ipm2__sum");
        } else if (has(f, "ipm5__sum") && has(f, "ipm4__sum")) {
            strcpy(in->monitor, "ipm5__sum");
            strcpy(in->monitor2, "ipm4__sum");
        } else {
            H5Fclose(f);
            return tide_error(TIDE_E_NOTFOUND,
                              "%s: legate-cube without a monitor pair (ipm3__sum/ipm2__sum or "
                              "ipm5__sum/ipm4__sum)",
                              path);
        }
    } else {
        H5Fclose(f);
        return tide_error(TIDE_E_NOTFOUND,
                          "%s: neither dataset imgs (cropped-cube) nor jungfrau1M_data "
                          "(legate-cube)",
                          path);
    }
    strcpy(in->counts_name, counts);
    const char *need[5] = {in->delays_name, counts, in->monitor, in->monitor2,
                           in->layout == TIDE_XRAY_CROPPED ? "ROI" : NULL};
    for (int i = 0; i < 5; i++)
        if (need[i] && !has(f, need[i])) {
            H5Fclose(f);
            return tide_error(TIDE_E_NOTFOUND, "%s: dataset %s is missing (%s)", path, need[i],
                              in->layout == TIDE_XRAY_CROPPED ? "cropped-cube" : "legate-cube");
        }
    int64_t dims[3];
    hid_t c;
    if ((st = dset_dims(f, path, in->cube, 3, dims, &c))) {
        H5Fclose(f);
        return st;
    }
    in->nframes = dims[0];
    in->ny = dims[1];
    in->nx = dims[2];
    hid_t t = H5Dget_type(c);
    type_name(t, in->dtype, sizeof in->dtype);
    H5Tclose(t);
    hid_t pl = H5Dget_create_plist(c);
    if (H5Pget_layout(pl) == H5D_CHUNKED) {
        hsize_t ch[3];
        if (H5Pget_chunk(pl, 3, ch) == 3)
            for (int i = 0; i < 3; i++)
                in->chunk[i] = (int64_t)ch[i];
    }
    H5Pclose(pl);
    if (in->nframes < 2 || in->ny < 1 || in->nx < 1) {
        H5Dclose(c);
        H5Fclose(f);
        return tide_error(TIDE_E_FORMAT, "%s: dataset %s has shape %lld x %lld x %lld", path,
                          in->cube, (long long)in->nframes, (long long)in->ny, (long long)in->nx);
    }
    double *cnt = NULL, *m2 = NULL;
    if ((st = read_vec(f, path, in->delays_name, in->nframes, &in->delays)) ||
        (st = read_vec(f, path, counts, in->nframes, &cnt)) ||
        (st = read_vec(f, path, in->monitor, in->nframes, &in->mon)) ||
        (st = read_vec(f, path, in->monitor2, in->nframes, &m2)))
        goto fail;
    for (int64_t i = 0; i < in->nframes; i++) {
        if (!isfinite(in->delays[i])) {
            st = tide_error(TIDE_E_FORMAT, "%s: dataset %s: delay %lld is not finite", path,
                            in->delays_name, (long long)i);
            goto fail;
        }
        if (i > 0 && !(in->delays[i] > in->delays[i - 1])) {
            st = tide_error(TIDE_E_FORMAT, "%s: dataset %s: delays not increasing at %lld", path,
                            in->delays_name, (long long)i);
            goto fail;
        }
        if (!isfinite(in->mon[i])) {
            st = tide_error(TIDE_E_FORMAT, "%s: dataset %s: value %lld is not finite", path,
                            in->monitor, (long long)i);
            goto fail;
        }
        if (cnt[i] == 0)
            in->empty_bins++;
    }
    const int64_t n = in->nframes;
    in->dt = (in->delays[n - 1] - in->delays[0]) / (double)(n - 1);
    in->uniform = 1;
    for (int64_t i = 1; i < n; i++)
        if (fabs(in->delays[i] - in->delays[i - 1] - in->dt) > 1e-6 * fabs(in->dt))
            in->uniform = 0;
    if (in->layout == TIDE_XRAY_CROPPED) {
        int64_t len = 0;
        hid_t d;
        if ((st = dset_dims(f, path, "ROI", 1, &len, &d)))
            goto fail;
        long long r[16];
        if (len < 4 || len > 16) {
            H5Dclose(d);
            st = tide_error(TIDE_E_FORMAT, "%s: dataset ROI has %lld values, expected 4", path,
                            (long long)len);
            goto fail;
        }
        const herr_t e = H5Dread(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, r);
        H5Dclose(d);
        if (e < 0) {
            st = tide_error(TIDE_E_IO, "%s: dataset ROI cannot be read", path);
            goto fail;
        }
        for (int i = 0; i < 4; i++)
            in->roi[i] = r[i];
    }
    free(cnt);
    free(m2);
    *fout = f;
    *cout = c;
    return 0;
fail:
    free(cnt);
    free(m2);
    H5Dclose(c);
    H5Fclose(f);
    tide_xray_info_free(in);
    return st;
}

int tide_xray_probe_file(const char *path, tide_xray_info *info) {
    if (!path || !info)
        return tide_error(TIDE_E_INVAL, "tide_xray_probe_file: NULL argument");
    hid_t f, c;
    const int st = probe_open(path, info, &f, &c);
    if (st)
        return st;
    H5Dclose(c);
    H5Fclose(f);
    return 0;
}

void tide_xray_info_free(tide_xray_info *info) {
    if (!info)
        return;
    free(info->delays);
    free(info->mon);
    info->delays = NULL;
    info->mon = NULL;
}

static int check_pair(const char *on, const char *off, const tide_xray_info *a,
                      const tide_xray_info *b) {
    if (a->layout != b->layout)
        return tide_error(TIDE_E_FORMAT, "%s and %s: different layouts (%s, %s)", on, off, a->cube,
                          b->cube);
    if (a->nframes != b->nframes || a->ny != b->ny || a->nx != b->nx)
        return tide_error(TIDE_E_FORMAT,
                          "%s and %s: dataset %s shapes differ (%lld x %lld x %lld, "
                          "%lld x %lld x %lld)",
                          on, off, a->cube, (long long)a->nframes, (long long)a->ny,
                          (long long)a->nx, (long long)b->nframes, (long long)b->ny,
                          (long long)b->nx);
    for (int64_t i = 0; i < a->nframes; i++)
        if (fabs(a->delays[i] - b->delays[i]) > 1e-9 * fabs(a->dt) + 1e-12)
            return tide_error(TIDE_E_FORMAT, "%s and %s: dataset %s differs at frame %lld (%g, %g)",
                              on, off, a->delays_name, (long long)i, a->delays[i], b->delays[i]);
    return 0;
}

int tide_xray_probe_pair(const char *on, const char *off, tide_xray_info *ion,
                         tide_xray_info *ioff) {
    int st = tide_xray_probe_file(on, ion);
    if (st)
        return st;
    if ((st = tide_xray_probe_file(off, ioff))) {
        tide_xray_info_free(ion);
        return st;
    }
    if ((st = check_pair(on, off, ion, ioff))) {
        tide_xray_info_free(ion);
        tide_xray_info_free(ioff);
    }
    return st;
}

int xray_open(const char *path, xray_file *f) {
    memset(f, 0, sizeof *f);
    f->file = f->cube = -1;
    f->direct.fd = -1;
    snprintf(f->path, sizeof f->path, "%s", path);
    int st = probe_open(path, &f->info, &f->file, &f->cube);
    if (st)
        return st;
    /* Reopen the cube with a chunk cache that can hold a row block's chunks across all
     * frames: a file chunked per frame, and compressed, would otherwise decompress every
     * frame's chunk once per row block. Only what is used is allocated. */
    const double bytes = 4.0 * (double)f->info.nframes * (double)f->info.ny * (double)f->info.nx;
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    if (dapl >= 0 &&
        H5Pset_chunk_cache(dapl, 100003, (size_t)(bytes < 1073741824.0 ? bytes : 1073741824.0),
                           1.0) >= 0) {
        hid_t c = H5Dopen2(f->file, f->info.cube, dapl);
        if (c >= 0) {
            H5Dclose(f->cube);
            f->cube = c;
        }
    }
    if (dapl >= 0)
        H5Pclose(dapl);
    xray_direct_plan(f);
    return 0;
}

void xray_close(xray_file *f) {
    if (!f)
        return;
    xray_direct_close(f);
    if (f->cube >= 0)
        H5Dclose(f->cube);
    if (f->file >= 0)
        H5Fclose(f->file);
    f->cube = f->file = -1;
    tide_xray_info_free(&f->info);
}

int xray_read_block(xray_file *f, int64_t y0, int64_t y1, int64_t x0, int64_t x1, float *buf) {
    if (f->direct.ok)
        return xray_direct_read(f, y0, y1, x0, x1, buf);
    hsize_t start[3] = {0, (hsize_t)y0, (hsize_t)x0};
    hsize_t count[3] = {(hsize_t)f->info.nframes, (hsize_t)(y1 - y0), (hsize_t)(x1 - x0)};
    hid_t fs = H5Dget_space(f->cube);
    hid_t ms = H5Screate_simple(3, count, NULL);
    herr_t e =
        fs < 0 || ms < 0 ? -1 : H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    if (e >= 0)
        e = H5Dread(f->cube, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf);
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (e < 0)
        return tide_error(TIDE_E_IO, "%s: dataset %s: rows %lld..%lld cannot be read", f->path,
                          f->info.cube, (long long)y0, (long long)y1 - 1);
    return 0;
}

int xray_h5_write(hid_t loc, const char *path, const char *name, int rank, const int64_t *dims,
                  hid_t mtype, hid_t ftype, const void *data) {
    hsize_t hd[4];
    for (int i = 0; i < rank; i++)
        hd[i] = (hsize_t)dims[i];
    hid_t sp = H5Screate_simple(rank, hd, NULL);
    /* no modification times in the object headers: the same content gives the same bytes */
    hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
    if (pl >= 0)
        H5Pset_obj_track_times(pl, 0);
    hid_t d =
        sp < 0 || pl < 0 ? -1 : H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
    if (pl >= 0)
        H5Pclose(pl);
    herr_t e = d < 0 ? -1 : H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (d >= 0)
        H5Dclose(d);
    if (sp >= 0)
        H5Sclose(sp);
    return e < 0 ? tide_error(TIDE_E_IO, "%s: cannot write dataset %s", path, name) : 0;
}
