/* test_xray_read_direct.c — tide xray's reader around libhdf5 (xray_h5_direct.c) against
 * libhdf5's own hyperslab read of the same blocks, bit for bit, on cubes written here in every
 * storage it takes: contiguous and chunked (chunks that do not divide the cube, chunks never
 * written, which read as the fill value), float32 and 8-, 16-, 32-bit integers, a user block
 * before the superblock. Storage it must leave to libhdf5 (deflate, float64, big-endian) is not
 * taken, and a cube whose file was cut short gives an error naming the file, not a crash. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tide_test.h"
#include "xray/xray_internal.h"

#define F 20
#define NY 23
#define NX 31

/* The cube's stored value at (f, y, x): signed, fractional for floats, varied. */
static double value(int f, int y, int x) {
    return ((f * 7919 + y * 104729 + x * 1299709) % 2003) - 1000.5 + 0.25 * (x % 3);
}

/* Write a cropped-cube file at @p path: imgs of @p ftype stored as @p dcpl says (when
 * @p partial, only frames 0..F/2 of rows 0..NY/2 are written), with @p fcpl's user block. */
static int make_cube(const char *path, hid_t ftype, hid_t dcpl, hid_t fcpl, int partial) {
    hid_t h = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    if (h < 0)
        return -1;
    double vec[F];
    long long roi[4] = {0, 0, NX, NY};
    hsize_t d1 = F, d4 = 4, dims[3] = {F, NY, NX};
    const char *names[4] = {"scan_var", "bin_count", "i0", "i0_ipm3"};
    int bad = 0;
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < F; i++)
            vec[i] = k == 0 ? 0.1 * i : 1.0 + 0.01 * i;
        hid_t sp = H5Screate_simple(1, &d1, NULL);
        hid_t d =
            H5Dcreate2(h, names[k], H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        bad |= d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, vec) < 0;
        H5Dclose(d);
        H5Sclose(sp);
    }
    hid_t sp = H5Screate_simple(1, &d4, NULL);
    hid_t d = H5Dcreate2(h, "ROI", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    bad |= d < 0 || H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, roi) < 0;
    H5Dclose(d);
    H5Sclose(sp);
    double *cube = malloc(sizeof(double) * F * NY * NX);
    for (int f = 0; f < F; f++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++)
                cube[(f * NY + y) * NX + x] = value(f, y, x);
    sp = H5Screate_simple(3, dims, NULL);
    d = H5Dcreate2(h, "imgs", ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (partial) {
        hsize_t start[3] = {0, 0, 0}, count[3] = {F / 2, NY / 2, NX};
        hid_t ms = H5Screate_simple(3, dims, NULL);
        H5Sselect_hyperslab(ms, H5S_SELECT_SET, start, NULL, count, NULL);
        H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL);
        bad |= d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, cube) < 0;
        H5Sclose(ms);
    } else
        bad |= d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, cube) < 0;
    free(cube);
    H5Dclose(d);
    H5Sclose(sp);
    bad |= H5Fclose(h) < 0;
    return bad ? -1 : 0;
}

/* Blocks (y0, y1, x0, x1) read both ways. */
static const int blocks[][4] = {{0, NY, 0, NX},   {0, 1, 0, NX}, {5, 17, 3, 29},
                                {22, 23, 30, 31}, {7, 8, 0, 1},  {11, 23, 9, 31}};

/* Open @p path, check that the direct reader is (@p want_direct) or is not taken, and that
 * every block it reads is libhdf5's, bit for bit. */
static void compare(const char *path, int want_direct, const char *what) {
    xray_file f;
    if (xray_open(path, &f)) {
        fprintf(stderr, "%s: %s\n", what, tide_error_detail());
        CHECK(0);
        return;
    }
    if (f.direct.ok != want_direct) {
        fprintf(stderr, "%s: direct reader %s\n", what, f.direct.ok ? "taken" : "not taken");
        CHECK(0);
    }
    float *a = malloc(sizeof(float) * F * NY * NX), *b = malloc(sizeof(float) * F * NY * NX);
    for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++) {
        const int *q = blocks[k];
        const size_t n = (size_t)F * (size_t)(q[1] - q[0]) * (size_t)(q[3] - q[2]);
        memset(a, 0xa5, n * sizeof *a);
        memset(b, 0x5a, n * sizeof *b);
        CHECK_OK(xray_read_block(&f, q[0], q[1], q[2], q[3], a));
        const int ok = f.direct.ok;
        f.direct.ok = 0; /* libhdf5's hyperslab read */
        CHECK_OK(xray_read_block(&f, q[0], q[1], q[2], q[3], b));
        f.direct.ok = ok;
        if (memcmp(a, b, n * sizeof *a)) {
            fprintf(stderr, "%s: block %d..%d x %d..%d differs\n", what, q[0], q[1], q[2], q[3]);
            CHECK(0);
        }
    }
    free(a);
    free(b);
    xray_close(&f);
}

int main(void) {
    xray_h5_quiet();
    char dir[] = "/tmp/tide-xray-direct-XXXXXX", path[256];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return TIDE_TEST_RESULT();
    }
    snprintf(path, sizeof path, "%s/cube.h5", dir);
    const hsize_t odd[3] = {7, 5, 9}, frame[3] = {1, NY, NX};
    const float fill = 2.5f;
    hid_t plain = H5Pcreate(H5P_DATASET_CREATE), chunk = H5Pcreate(H5P_DATASET_CREATE);
    hid_t perframe = H5Pcreate(H5P_DATASET_CREATE), gz = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(chunk, 3, odd);
    H5Pset_fill_value(chunk, H5T_NATIVE_FLOAT, &fill);
    H5Pset_chunk(perframe, 3, frame);
    H5Pset_chunk(gz, 3, odd);
    H5Pset_deflate(gz, 4);
    hid_t ub = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_userblock(ub, 1024);
    const struct {
        hid_t type, dcpl, fcpl;
        int partial, direct;
        const char *what;
    } cases[] = {
        {H5T_IEEE_F32LE, plain, H5P_DEFAULT, 0, 1, "contiguous float32"},
        {H5T_IEEE_F32LE, chunk, H5P_DEFAULT, 0, 1, "chunked float32, 7x5x9 chunks"},
        {H5T_IEEE_F32LE, chunk, H5P_DEFAULT, 1, 1, "chunked float32, chunks never written"},
        {H5T_IEEE_F32LE, perframe, H5P_DEFAULT, 0, 1, "chunked per frame"},
        {H5T_IEEE_F32LE, plain, ub, 0, 1, "contiguous float32 after a user block"},
        {H5T_IEEE_F32LE, chunk, ub, 0, 1, "chunked float32 after a user block"},
        {H5T_STD_U16LE, chunk, H5P_DEFAULT, 0, 1, "chunked uint16"},
        {H5T_STD_I16LE, plain, H5P_DEFAULT, 0, 1, "contiguous int16"},
        {H5T_STD_I32LE, chunk, H5P_DEFAULT, 0, 1, "chunked int32"},
        {H5T_STD_U32LE, plain, H5P_DEFAULT, 0, 1, "contiguous uint32"},
        {H5T_STD_I8LE, plain, H5P_DEFAULT, 0, 1, "contiguous int8"},
        {H5T_STD_U8LE, chunk, H5P_DEFAULT, 0, 1, "chunked uint8"},
        {H5T_IEEE_F32LE, gz, H5P_DEFAULT, 0, 0, "deflated chunks (libhdf5)"},
        {H5T_IEEE_F64LE, plain, H5P_DEFAULT, 0, 0, "float64 (libhdf5)"},
        {H5T_IEEE_F32BE, plain, H5P_DEFAULT, 0, 0, "big-endian float32 (libhdf5)"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        unlink(path);
        if (make_cube(path, cases[c].type, cases[c].dcpl, cases[c].fcpl, cases[c].partial)) {
            fprintf(stderr, "%s: cannot write the cube\n", cases[c].what);
            CHECK(0);
            continue;
        }
        compare(path, cases[c].direct, cases[c].what);
    }
    /* TIDE_XRAY_DIRECT=0 keeps libhdf5's reader */
    unlink(path);
    CHECK(make_cube(path, H5T_IEEE_F32LE, plain, H5P_DEFAULT, 0) == 0);
    setenv("TIDE_XRAY_DIRECT", "0", 1);
    compare(path, 0, "contiguous float32, TIDE_XRAY_DIRECT=0");
    unsetenv("TIDE_XRAY_DIRECT");
    /* the file cut inside the cube: an error that names the file, from the open or the read */
    xray_file f;
    if (xray_open(path, &f) == 0) {
        CHECK(f.direct.ok);
        CHECK(truncate(path, (off_t)(f.direct.base + 4 * F * NY * NX / 2)) == 0);
        float *buf = malloc(sizeof(float) * F * NY * NX);
        const int st = xray_read_block(&f, 0, NY, 0, NX, buf);
        CHECK(st == TIDE_E_IO);
        CHECK(strstr(tide_error_detail(), path) != NULL);
        CHECK(strstr(tide_error_detail(), "ends inside") != NULL);
        free(buf);
        xray_close(&f);
    } else
        CHECK(0);
    H5Pclose(plain);
    H5Pclose(chunk);
    H5Pclose(perframe);
    H5Pclose(gz);
    H5Pclose(ub);
    unlink(path);
    rmdir(dir);
    return TIDE_TEST_RESULT();
}
