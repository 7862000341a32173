/* test_fits_write.c — write/read round trips of images (with mask, variance, header, row
 * stride) and tables (every column type, vectors, strings, TUNIT/TDISP/comments), and the
 * atomic-write guarantee: a failed write leaves no file behind and the old target intact. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fitsio.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tide/tide.h"
#include "tide_test.h"

static char dir[256];

static const char *tmp(const char *name) {
    static char buf[8][512];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Number of entries in @p d (besides . and ..); leftover temporaries show up here. */
static int count_files(const char *d) {
    DIR *dp = opendir(d);
    int n = 0;
    struct dirent *e;
    while (dp && (e = readdir(dp)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (dp)
        closedir(dp);
    return n;
}

static void test_image_roundtrip(void) {
    /* 7x5 pixels in rows of stride 9, every plane, NaN pixels, odd values */
    tide_image im;
    CHECK_OK(tide_image_alloc(NULL, &im, 9, 5, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    im.width = 7;
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 9; x++) {
            int i = y * 9 + x;
            im.pix[i] = (float)(x * 0.1 - y * 1e-7 + 1e30 * (x == 6 && y == 4));
            im.mask[i] = (uint16_t)((x + y) % 3 == 0 ? TIDE_MASK_COSMIC | TIDE_MASK_USER : 0);
            im.var[i] = (float)(x + 10 * y) + 0.25f;
        }
    im.pix[1 * 9 + 2] = NAN;
    im.mask[1 * 9 + 2] |= TIDE_MASK_NODATA;
    tide_header h;
    tide_header_init(&h);
    CHECK_OK(tide_header_set_str(&h, "OBJECT", "NGC 6205", "target"));
    CHECK_OK(tide_header_set_dbl(&h, "EXPTIME", 30.5, "seconds"));
    CHECK_OK(tide_header_set_int(&h, "BITPIX", 16, "must not survive"));
    CHECK_OK(tide_header_set_dbl(&h, "BSCALE", 2.0, "must not survive"));
    CHECK_OK(tide_header_add_text(&h, "HISTORY", "made by test_fits_write"));
    const char *path = tmp("rt.fits");
    CHECK_OK(tide_fits_write_image(path, &im, &h));
    tide_header_free(&h);

    tide_image back;
    tide_header hb;
    CHECK_OK(tide_fits_read_image(NULL, path, &back, &hb));
    CHECK(back.width == 7 && back.height == 5 && back.mask && back.var);
    int bad = 0;
    for (int y = 0; y < 5 && back.var; y++)
        for (int x = 0; x < 7; x++) {
            float a = im.pix[y * 9 + x], b = back.pix[y * 7 + x];
            if (!(a == b || (isnan(a) && isnan(b))))
                bad++;
            if (im.mask[y * 9 + x] != back.mask[y * 7 + x] ||
                im.var[y * 9 + x] != back.var[y * 7 + x])
                bad++;
        }
    CHECK(bad == 0);
    char obj[40] = "";
    double t = 0;
    int64_t bp = 0;
    CHECK_OK(tide_header_get_str(&hb, "OBJECT", obj, sizeof obj));
    CHECK(!strcmp(obj, "NGC 6205"));
    CHECK_OK(tide_header_get_dbl(&hb, "EXPTIME", &t));
    CHECK(t == 30.5);
    CHECK_OK(tide_header_get_int(&hb, "BITPIX", &bp));
    CHECK(bp == -32);
    CHECK(tide_header_find(&hb, "BSCALE") < 0);
    CHECK(tide_header_find(&hb, "HISTORY") >= 0);

    /* the read header written again gives the same file content (idempotent) */
    const char *path2 = tmp("rt2.fits");
    CHECK_OK(tide_fits_write_image(path2, &back, &hb));
    tide_image again;
    CHECK_OK(tide_fits_read_image(NULL, path2, &again, NULL));
    CHECK(again.var && again.mask && !memcmp(again.mask, back.mask, 35 * sizeof(uint16_t)));
    tide_image_free(NULL, &again);

    /* the extensions are addressable by name */
    char spec[600];
    snprintf(spec, sizeof spec, "%s[VAR]", path);
    CHECK_OK(tide_fits_read_image(NULL, spec, &again, NULL));
    CHECK(again.pix && again.pix[8] == im.var[9 + 1] && again.var == NULL);
    tide_image_free(NULL, &again);
    tide_fits_hdu *list = NULL;
    int n = 0;
    CHECK_OK(tide_fits_inventory(path, &list, &n));
    CHECK(n == 3 && list && !strcmp(list[1].extname, "MASK") && list[1].bitpix == 16 &&
          list[1].bzero == 32768.0 && !strcmp(list[2].extname, "VAR"));
    free(list);
    tide_header_free(&hb);
    tide_image_free(NULL, &back);

    /* pixels only: one HDU, no TIDEMASK */
    tide_image plain = im;
    plain.mask = NULL;
    plain.var = NULL;
    CHECK_OK(tide_fits_write_image(path, &plain, NULL));
    CHECK_OK(tide_fits_inventory(path, &list, &n));
    CHECK(n == 1);
    free(list);
    tide_image_free(NULL, &im);
}

static void test_table_roundtrip(void) {
    tide_table t;
    tide_table_init(&t);
    int i;
    CHECK_OK(tide_table_add_column(&t, "NUMBER", TIDE_COL_I32, 1, NULL, "running number", &i));
    CHECK_OK(tide_table_add_column(&t, "X_IMAGE", TIDE_COL_F64, 1, "pixel", "x centroid", NULL));
    CHECK_OK(tide_table_add_column(&t, "FLUX_APER", TIDE_COL_F32, 4, "count", "apertures", NULL));
    CHECK_OK(tide_table_add_column(&t, "ID64", TIDE_COL_I64, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_add_column(&t, "FLAGS", TIDE_COL_I16, 3, NULL, "flag words", NULL));
    CHECK_OK(tide_table_add_column(&t, "CLASS", TIDE_COL_U8, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_add_column(&t, "NAME", TIDE_COL_STR, 8, NULL, "object name", NULL));
    const int64_t N = 5000; /* more than one string chunk */
    CHECK_OK(tide_table_resize(&t, N));
    snprintf(t.cols[1].disp, sizeof t.cols[1].disp, "F11.4");
    int32_t *num = t.cols[0].data;
    double *x = t.cols[1].data;
    float *fa = t.cols[2].data;
    int64_t *id = t.cols[3].data;
    int16_t *fl = t.cols[4].data;
    uint8_t *cl = t.cols[5].data;
    char *nm = t.cols[6].data;
    for (int64_t r = 0; r < N; r++) {
        num[r] = (int32_t)(r + 1) * (r % 2 ? -1 : 1);
        x[r] = r * 1.000000001 + 1e-9;
        for (int k = 0; k < 4; k++)
            fa[r * 4 + k] = (float)(r * 4 + k) * 0.5f;
        id[r] = (int64_t)1 << 40 | r;
        for (int k = 0; k < 3; k++)
            fl[r * 3 + k] = (int16_t)(k == 2 ? -32768 : r + k);
        cl[r] = (uint8_t)(r % 256);
        char s[16];
        snprintf(s, sizeof s, "S%07lld", (long long)r); /* exactly 8 chars: no NUL */
        memcpy(nm + r * 8, s, 8);
    }
    memset(nm + 3 * 8, 0, 8);
    memcpy(nm + 3 * 8, "ab", 2);
    tide_header h;
    tide_header_init(&h);
    CHECK_OK(tide_header_set_str(&h, "OBJECT", "field 7", NULL));
    CHECK_OK(tide_header_set_str(&h, "TTYPE1", "WRONG", "must not survive"));
    const char *path = tmp("cat.fits");
    CHECK_OK(tide_fits_write_table(path, &t, &h, "CATALOG"));
    tide_header_free(&h);

    tide_table b;
    tide_header hb;
    CHECK_OK(tide_fits_read_table(path, &b, &hb));
    CHECK(b.nrows == N && b.ncols == 7);
    for (int c = 0; c < b.ncols && c < t.ncols; c++) {
        const tide_column *p = &t.cols[c], *q = &b.cols[c];
        CHECK(!strcmp(p->name, q->name) && !strcmp(p->unit, q->unit) && !strcmp(p->disp, q->disp));
        CHECK(!strcmp(p->comment, q->comment));
        CHECK(p->type == q->type && p->repeat == q->repeat);
        if (p->type == q->type && p->repeat == q->repeat)
            CHECK(!memcmp(p->data, q->data, (size_t)(N * p->repeat * tide_col_type_size(p->type))));
        if (strcmp(p->comment, q->comment))
            fprintf(stderr, "comment '%s' vs '%s'\n", p->comment, q->comment);
    }
    char s[40] = "";
    CHECK_OK(tide_header_get_str(&hb, "EXTNAME", s, sizeof s));
    CHECK(!strcmp(s, "CATALOG"));
    CHECK_OK(tide_header_get_str(&hb, "OBJECT", s, sizeof s));
    CHECK(!strcmp(s, "field 7"));
    CHECK_OK(tide_header_get_str(&hb, "TTYPE1", s, sizeof s));
    CHECK(!strcmp(s, "NUMBER"));
    tide_header_free(&hb);
    tide_table_free(&b);

    /* by name, and an image HDU is refused */
    char spec[600];
    snprintf(spec, sizeof spec, "%s[CATALOG]", path);
    CHECK_OK(tide_fits_read_table(spec, &b, NULL));
    CHECK(b.nrows == N);
    tide_table_free(&b);
    snprintf(spec, sizeof spec, "%s[0]", path);
    CHECK(tide_fits_read_table(spec, &b, NULL) == TIDE_E_FORMAT);

    /* zero rows */
    CHECK_OK(tide_table_resize(&t, 0));
    CHECK_OK(tide_fits_write_table(path, &t, NULL, NULL));
    CHECK_OK(tide_fits_read_table(path, &b, NULL));
    CHECK(b.nrows == 0 && b.ncols == 7 && b.cols && b.cols[2].repeat == 4);
    tide_table_free(&b);
    tide_table_free(&t);
}

/* Read a table cfitsio wrote with types tide maps: unsigned 16-bit, logical, scaled. */
static void test_table_foreign(void) {
    const char *path = tmp("foreign.fits");
    fitsfile *f = NULL;
    int st = 0;
    fits_create_diskfile(&f, path, &st);
    fits_create_img(f, 8, 0, NULL, &st);
    char *tt[] = {"U16", "FLAG", "SCALED", "BITS"}, *tf[] = {"1U", "1L", "1I", "8X"};
    fits_create_tbl(f, BINARY_TBL, 3, 4, tt, tf, NULL, NULL, &st);
    double sc = 0.5;
    fits_write_key(f, TDOUBLE, "TSCAL3", &sc, NULL, &st);
    fits_set_tscale(f, 3, 0.5, 0.0, &st);
    unsigned short u[3] = {0, 40000, 65535};
    char l[3] = {1, 0, 1};
    float sv[3] = {1.5f, -2.0f, 100.5f};
    fits_write_col(f, TUSHORT, 1, 1, 1, 3, u, &st);
    fits_write_col(f, TLOGICAL, 2, 1, 1, 3, l, &st);
    fits_write_col(f, TFLOAT, 3, 1, 1, 3, sv, &st);
    fits_close_file(f, &st);
    CHECK(st == 0);
    tide_table t;
    CHECK(tide_fits_read_table(path, &t, NULL) == TIDE_E_UNSUPPORTED); /* the X column */
    CHECK(strstr(tide_error_detail(), "BITS") && strstr(tide_error_detail(), path));
    /* without the bit column */
    st = 0;
    fits_open_file(&f, path, READWRITE, &st);
    int type;
    fits_movabs_hdu(f, 2, &type, &st);
    fits_delete_col(f, 4, &st);
    fits_close_file(f, &st);
    CHECK(st == 0);
    CHECK_OK(tide_fits_read_table(path, &t, NULL));
    CHECK(t.ncols == 3);
    if (t.ncols == 3) {
        CHECK(t.cols[0].type == TIDE_COL_I32 && ((int32_t *)t.cols[0].data)[1] == 40000);
        CHECK(t.cols[1].type == TIDE_COL_U8 && ((uint8_t *)t.cols[1].data)[0] == 1 &&
              ((uint8_t *)t.cols[1].data)[1] == 0);
        CHECK(t.cols[2].type == TIDE_COL_F32 && ((float *)t.cols[2].data)[2] == 100.5f);
    }
    tide_table_free(&t);
}

static void test_atomic(void) {
    tide_image im;
    CHECK_OK(tide_image_alloc(NULL, &im, 200, 200, TIDE_HOST, TIDE_IMAGE_MASK));
    for (int i = 0; i < 40000; i++)
        im.pix[i] = (float)i;

    /* a directory that does not exist, a "directory" that is a file, a path that is a dir */
    const char *nodir = tmp("no/such/dir/out.fits");
    CHECK(tide_fits_write_image(nodir, &im, NULL) == TIDE_E_IO);
    CHECK(strstr(tide_error_detail(), nodir) != NULL);
    const char *plainfile = tmp("plain");
    FILE *fp = fopen(plainfile, "w");
    fputs("x", fp);
    fclose(fp);
    char under[600];
    snprintf(under, sizeof under, "%s/out.fits", plainfile);
    CHECK(tide_fits_write_image(under, &im, NULL) == TIDE_E_IO);
    CHECK(strstr(tide_error_detail(), under) != NULL);
    CHECK(tide_fits_write_image(dir, &im, NULL) == TIDE_E_IO);
    unlink(plainfile);
    CHECK(count_files(dir) == 0);

    /* a read-only directory (root ignores permissions: skip that part then) */
    if (geteuid() != 0) {
        char ro[600];
        snprintf(ro, sizeof ro, "%s/ro", dir);
        mkdir(ro, 0555);
        char in_ro[700];
        snprintf(in_ro, sizeof in_ro, "%s/out.fits", ro);
        CHECK(tide_fits_write_image(in_ro, &im, NULL) == TIDE_E_IO);
        CHECK(count_files(ro) == 0);
        rmdir(ro);
    }

    /* a good file exists; a failing write over it must leave it as it was */
    const char *target = tmp("target.fits");
    CHECK_OK(tide_fits_write_image(target, &im, NULL));
    struct stat before, after;
    CHECK(stat(target, &before) == 0);

    /* failure in the middle of writing: a table column of an invalid type */
    tide_table t;
    tide_table_init(&t);
    CHECK_OK(tide_table_add_column(&t, "A", TIDE_COL_F64, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_add_column(&t, "B", TIDE_COL_F64, 1, NULL, NULL, NULL));
    CHECK_OK(tide_table_resize(&t, 10));
    t.cols[1].type = (tide_col_type)99;
    CHECK(tide_fits_write_table(target, &t, NULL, "X") == TIDE_E_INVAL);
    CHECK(strstr(tide_error_detail(), "B") != NULL);
    tide_table_free(&t);
    CHECK(count_files(dir) == 1);

    /* failure while the data are written: the file size limit is hit (in a child process) */
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {20000, 20000};
        setrlimit(RLIMIT_FSIZE, &rl);
        int st = tide_fits_write_image(target, &im, NULL);
        _exit(st == TIDE_E_IO ? 0 : 10 + (st < 0 ? -st : st));
    }
    int wst = 0;
    waitpid(pid, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    CHECK(count_files(dir) == 1);
    CHECK(stat(target, &after) == 0 && after.st_size == before.st_size &&
          after.st_ino == before.st_ino);
    tide_image back;
    CHECK_OK(tide_fits_read_image(NULL, target, &back, NULL));
    CHECK(back.pix && back.pix[39999] == 39999.0f);
    tide_image_free(NULL, &back);

    /* a device image is refused before anything is created */
    tide_image dev = im;
    dev.location = TIDE_DEVICE;
    CHECK(tide_fits_write_image(tmp("dev.fits"), &dev, NULL) == TIDE_E_INVAL);
    CHECK(count_files(dir) == 1);
    unlink(target);
    tide_image_free(NULL, &im);
}

/* The parallel data-unit writer (fits_fast_planes.c) gives cfitsio's bytes: a contiguous
 * image (fast path) and the same image as a row-strided view (cfitsio's writer) must make
 * identical files, over several blocks, with NaN, -0, denormals, infinities and every mask
 * bit (uint16 goes through BZERO 32768). */
static void test_fast_planes_bytes(void) {
    const int64_t W = 1031, H = 517, S = W + 5; /* > 2 blocks of 2^18 values per plane */
    tide_image a, b;
    CHECK_OK(tide_image_alloc(NULL, &a, W, H, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    CHECK_OK(tide_image_alloc(NULL, &b, S, H, TIDE_HOST, TIDE_IMAGE_MASK | TIDE_IMAGE_VAR));
    b.width = W;
    uint32_t r = 2463534242u;
    for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++) {
            r ^= r << 13, r ^= r >> 17, r ^= r << 5;
            float v;
            memcpy(&v, &r, 4); /* any bit pattern: NaNs with payloads, Inf, denormals, -0 */
            const int64_t i = y * W + x, j = y * S + x;
            a.pix[i] = b.pix[j] = v;
            a.mask[i] = b.mask[j] = (uint16_t)(r >> 7);
            a.var[i] = b.var[j] = (float)(r % 1000) * 0.5f;
        }
    tide_header h;
    tide_header_init(&h);
    CHECK_OK(tide_header_set_str(&h, "OBJECT", "bytes", "target"));
    CHECK_OK(tide_fits_write_image(tmp("fast.fits"), &a, &h));
    CHECK_OK(tide_fits_write_image(tmp("slow.fits"), &b, &h));
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", tmp("fast.fits"), tmp("slow.fits"));
    CHECK(system(cmd) == 0);
    struct stat st;
    CHECK(stat(tmp("fast.fits"), &st) == 0 && st.st_size % 2880 == 0);
    unlink(tmp("fast.fits"));
    unlink(tmp("slow.fits"));
    tide_header_free(&h);
    tide_image_free(NULL, &a);
    tide_image_free(NULL, &b);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tide_fits_write_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_image_roundtrip();
    test_fast_planes_bytes();
    test_table_roundtrip();
    test_table_foreign();
    unlink(tmp("rt.fits"));
    unlink(tmp("rt2.fits"));
    unlink(tmp("cat.fits"));
    unlink(tmp("foreign.fits"));
    test_atomic();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    return TIDE_TEST_RESULT();
}
