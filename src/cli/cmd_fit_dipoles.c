/* cmd_fit_dipoles.c — `tide fit-dipoles STAMPS.fits -o FITS.fits`: batched dipole and
 * point-source fits of stamps supplied by the user (dipole.h), on the CPU or the GPU.
 *
 * The input layout (cfitsio reads the cubes directly: tide_image is 2-D):
 *   STAMPS  image HDU named STAMPS, or else the primary HDU: a float cube NAXIS1 = NAXIS2 =
 *           side, NAXIS3 = number of stamps (a 2-D image is one stamp)
 *   VAR     variance cube of the same shape (required: it sets the weights and errors)
 *   MASK    optional integer cube of the same shape; pixels with any bit of --mask-bits set
 *           are ignored
 *   PSF     for --model psf: a 2-D odd-sided PSF stamp for all, or a cube with one per stamp
 *   CENTERS optional binary table with columns X, Y: FITS 1-based image coordinates of each
 *           stamp's central pixel ((side+1)/2, (side+1)/2); without it positions are 1-based
 *           stamp coordinates. */
#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/checked.h"
#include "io/fits/fits_internal.h"
#include "tide/dipole.h"
#include "tide/fits.h"

static const char *help =
    "usage: tide fit-dipoles STAMPS.fits -o FITS.fits [options]\n"
    "\n"
    "Fit every stamp of STAMPS.fits with a dipole (a positive and a negative lobe of one flux)\n"
    "and with a single point source, by weighted Levenberg-Marquardt (one stamp per GPU warp).\n"
    "\n"
    "STAMPS.fits: HDU STAMPS (or the primary HDU): float cube side x side x N; HDU VAR: the\n"
    "variance cube (required); HDU MASK: integer cube (optional); HDU PSF: 2-D PSF stamp, or a\n"
    "cube of one per stamp (odd side, centred, sum 1; needed by --model psf); table CENTERS\n"
    "with columns X, Y: FITS 1-based image position of each stamp's central pixel (optional;\n"
    "without it positions are 1-based stamp coordinates).\n"
    "\n"
    "FITS.fits: a binary table (EXTNAME DIPOLES), one row per stamp: ID, DIP_XPOS, DIP_YPOS,\n"
    "DIP_XNEG, DIP_YNEG, DIP_FLUX and their _ERR, DIP_SIGMA1, DIP_SIGMA2, DIP_THETA (gauss\n"
    "model), DIP_CHI2, PS_X, PS_Y, PS_FLUX and their _ERR, PS_CHI2, DELTA_CHI2 (= PS_CHI2 -\n"
    "DIP_CHI2: large for a real dipole), NPIX, NITER, FIT_STATUS and PS_STATUS:\n"
    "  0 converged, 1 iteration limit (--max-iter reached without convergence), 2 singular,\n"
    "  3 bad input; for the dipole fit only, why it is not a measured dipole:\n"
    "  4 unresolved (gauss: lobe separation below 0.25 sigma and its own error, or merged),\n"
    "  5 single-signed (a fitted lobe centre outside the stamp: one sign of signal only),\n"
    "  6 no signal (the fitted dipole's S/N sqrt(sum w m^2) below 8).\n"
    "\n"
    "options:\n"
    "  -o FILE                  output table (required)\n"
    "  --model gauss|psf        elliptical Gaussian lobes (free widths and angle) or the PSF\n"
    "                           of HDU PSF [gauss]\n"
    "  --max-iter N             iterations per fit [100]\n"
    "  --sigma S                starting Gaussian width, pixels [1.5]\n"
    "  --mask-bits B            mask bits that exclude a pixel [65535]\n"
    "  --no-ps                  skip the point-source fit\n";

typedef struct cube {
    int64_t nx, ny, nz;
    void *data;
} cube;

/* Read image HDU @p ext (NULL: STAMPS, else the primary) as floats or ints; 0 when absent and
 * !required. */
static int read_cube(tide_fits_src *src, const char *path, const char *ext, int required,
                     int as_int, cube *c) {
    fitsfile *f = src->f;
    int fst = 0, naxis = 0;
    memset(c, 0, sizeof *c);
    char name[32];
    snprintf(name, sizeof name, "%s", ext ? ext : "STAMPS");
    if (fits_movnam_hdu(f, IMAGE_HDU, name, 0, &fst)) {
        fst = 0;
        if (ext) {
            if (!required)
                return 0;
            return tide_error(TIDE_E_NOTFOUND, "%s: no image HDU %s", path, ext);
        }
        fits_movabs_hdu(f, 1, NULL, &fst);
    }
    int hdu = 0;
    fits_get_hdu_num(f, &hdu);
    LONGLONG ax[3] = {1, 1, 1};
    if (fits_get_img_dim(f, &naxis, &fst) || naxis < 2 || naxis > 3 ||
        fits_get_img_sizell(f, naxis, ax, &fst))
        return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: %s is not a 2-D or 3-D image", path, hdu - 1,
                          name);
    c->nx = ax[0];
    c->ny = ax[1];
    c->nz = naxis == 3 ? ax[2] : 1;
    size_t bytes;
    if (tide_size_block(c->nx, c->ny, c->nz, 4, &bytes))
        return tide_error(TIDE_E_RANGE,
                          "%s[HDU %d]: %s of %lld x %lld x %lld values overflows "
                          "the address space",
                          path, hdu - 1, name, (long long)c->nx, (long long)c->ny,
                          (long long)c->nz);
    const int64_t n = (int64_t)(bytes / 4);
    if (n <= 0)
        return tide_error(TIDE_E_EMPTY, "%s[HDU %d]: empty image", path, hdu - 1);
    c->data = malloc(bytes);
    if (!c->data)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory", path);
    int st = tide_fits_check_streams(src, hdu - 1); /* before cfitsio decodes any tile */
    if (st)
        return st;
    LONGLONG first[3] = {1, 1, 1};
    int anynul = 0; /* cfitsio writes it whenever a null is met: it must not be NULL */
    if (as_int) {
        int nul = 0;
        fits_read_pixll(f, TINT, first, n, &nul, c->data, &anynul, &fst);
    } else {
        float nul = NAN;
        fits_read_pixll(f, TFLOAT, first, n, &nul, c->data, &anynul, &fst);
    }
    if (fst) {
        char msg[FLEN_STATUS];
        fits_get_errstatus(fst, msg);
        return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: reading %s: %s", path, hdu - 1, name, msg);
    }
    return 0;
}

static int read_centers(fitsfile *f, const char *path, int64_t n, double **x, double **y) {
    int fst = 0;
    *x = *y = NULL;
    if (fits_movnam_hdu(f, BINARY_TBL, "CENTERS", 0, &fst))
        return 0;
    long nrows = 0;
    int cx = 0, cy = 0;
    fits_get_num_rows(f, &nrows, &fst);
    fits_get_colnum(f, CASEINSEN, "X", &cx, &fst);
    fits_get_colnum(f, CASEINSEN, "Y", &cy, &fst);
    if (fst || nrows != n)
        return tide_error(TIDE_E_FORMAT, "%s[CENTERS]: needs columns X and Y and %lld rows", path,
                          (long long)n);
    *x = malloc(sizeof(double) * n);
    *y = malloc(sizeof(double) * n);
    if (!*x || !*y)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory", path);
    fits_read_col(f, TDOUBLE, cx, 1, 1, n, NULL, *x, NULL, &fst);
    fits_read_col(f, TDOUBLE, cy, 1, 1, n, NULL, *y, NULL, &fst);
    if (fst)
        return tide_error(TIDE_E_FORMAT, "%s[CENTERS]: unreadable X or Y", path);
    for (int64_t i = 0; i < n; i++)
        (*x)[i] -= 1.0, (*y)[i] -= 1.0; /* to 0-based */
    return 0;
}

/* The output table: ID, then the columns of tide_dipole_fits_to_table. */
static int write_fits(const char *out, const tide_dipole_fit *fit, int64_t n, int gauss) {
    tide_table t;
    tide_table_init(&t);
    int st = tide_table_add_column(&t, "ID", TIDE_COL_I64, 1, "", "1-based stamp index", NULL);
    if (!st)
        st = tide_dipole_fits_to_table(fit, n, gauss, &t);
    if (!st) {
        int64_t *id = tide_table_i64(&t, "ID");
        for (int64_t i = 0; i < n; i++)
            id[i] = i + 1;
        st = tide_fits_write_table(out, &t, NULL, "DIPOLES");
    }
    tide_table_free(&t);
    return st;
}

int tide_cmd_fit_dipoles(int argc, char **argv) {
    const char *cmd = "fit-dipoles";
    tide_cli_common com;
    tide_cli_common_init(&com);
    tide_dipole_params p;
    tide_dipole_params_default(&p);
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\n%s", help, tide_cli_common_help);
            return 0;
        }
        const int c = tide_cli_common_option(&com, cmd, argc, argv, &i);
        if (c < 0)
            return 2;
        if (c > 0)
            continue;
        if (!strcmp(a, "--no-ps")) {
            p.fit_ps = 0;
            continue;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--model") || !strcmp(a, "--max-iter") ||
            !strcmp(a, "--sigma") || !strcmp(a, "--mask-bits")) {
            if (i + 1 >= argc)
                return tide_cli_usage_error(cmd, "option %s needs a value", a);
            const char *v = argv[++i];
            char *end = NULL;
            if (!strcmp(a, "-o")) {
                out = v;
            } else if (!strcmp(a, "--model")) {
                if (!strcmp(v, "gauss"))
                    p.model = TIDE_DIPOLE_GAUSS;
                else if (!strcmp(v, "psf"))
                    p.model = TIDE_DIPOLE_PSF;
                else
                    return tide_cli_usage_error(cmd, "--model must be gauss or psf (got %s)", v);
            } else if (!strcmp(a, "--sigma")) {
                const double d = strtod(v, &end);
                if (end == v || *end || !(d > 0.0) || !isfinite(d))
                    return tide_cli_usage_error(cmd, "--sigma must be > 0 (got %s)", v);
                p.sigma_guess = d;
            } else {
                const long l = strtol(v, &end, 10);
                const long hi = !strcmp(a, "--max-iter") ? 100000 : 65535;
                const long lo = !strcmp(a, "--max-iter") ? 1 : 0;
                if (end == v || *end || l < lo || l > hi)
                    return tide_cli_usage_error(cmd, "%s must be an integer in [%ld, %ld] (got %s)",
                                                a, lo, hi, v);
                if (!strcmp(a, "--max-iter"))
                    p.max_iter = (int)l;
                else
                    p.mask_bits = (uint16_t)l;
            }
            continue;
        }
        if (a[0] == '-' && a[1])
            return tide_cli_usage_error(cmd, "unknown option %s", a);
        if (in)
            return tide_cli_usage_error(cmd, "one STAMPS file only (got '%s' and '%s')", in, a);
        in = a;
    }
    if (!in)
        return tide_cli_usage_error(cmd, "missing STAMPS.fits");
    if (!out)
        return tide_cli_usage_error(cmd, "missing -o FITS.fits");
    if (tide_cli_check_outputs(cmd, &in, 1, &out, 1))
        return 1;

    cube s = {0}, v = {0}, m = {0}, ps = {0};
    double *cx = NULL, *cy = NULL;
    uint16_t *mask = NULL;
    tide_dipole_fit *fit = NULL;
    tide_ctx *ctx = NULL;
    tide_fits_src src = {0};
    fitsfile *f = NULL;
    int st = 0, rc = 1;
    st = tide_fits_open(in, &src);
    if (st)
        goto done;
    f = src.f;
    st = read_cube(&src, in, NULL, 1, 0, &s);
    if (!st && (s.nx != s.ny || s.nx < 3))
        st = tide_error(TIDE_E_FORMAT, "%s: stamps must be square, side >= 3 (got %lld x %lld)", in,
                        (long long)s.nx, (long long)s.ny);
    if (!st)
        st = read_cube(&src, in, "VAR", 1, 0, &v);
    if (!st && (v.nx != s.nx || v.ny != s.ny || v.nz != s.nz))
        st = tide_error(TIDE_E_FORMAT, "%s[VAR]: shape differs from the stamps", in);
    if (!st)
        st = read_cube(&src, in, "MASK", 0, 1, &m);
    if (!st && m.data && (m.nx != s.nx || m.ny != s.ny || m.nz != s.nz))
        st = tide_error(TIDE_E_FORMAT, "%s[MASK]: shape differs from the stamps", in);
    if (!st && p.model == TIDE_DIPOLE_PSF) {
        st = read_cube(&src, in, "PSF", 1, 0, &ps);
        if (!st && (ps.nx != ps.ny || !(ps.nx & 1) || ps.nx < 3 || (ps.nz != 1 && ps.nz != s.nz)))
            st = tide_error(TIDE_E_FORMAT,
                            "%s[PSF]: needs odd square stamps, one or one per "
                            "stamp (got %lld x %lld x %lld)",
                            in, (long long)ps.nx, (long long)ps.ny, (long long)ps.nz);
        p.psf = ps.data;
        p.psf_side = (int)ps.nx;
        p.psf_per_stamp = ps.nz > 1;
    }
    if (!st)
        st = read_centers(f, in, s.nz, &cx, &cy);
    if (st)
        goto done;
    if (m.data) {
        const int64_t n = s.nx * s.ny * s.nz;
        if (!(mask = malloc(sizeof(uint16_t) * n))) {
            st = tide_error(TIDE_E_NOMEM, "out of memory");
            goto done;
        }
        for (int64_t i = 0; i < n; i++)
            mask[i] = (uint16_t)(((int *)m.data)[i] & 0xFFFF);
    }
    if (!(fit = malloc(sizeof *fit * s.nz))) {
        st = tide_error(TIDE_E_NOMEM, "out of memory");
        goto done;
    }
    if (!(ctx = tide_cli_make_ctx(&com, cmd)))
        goto done;
    st = tide_dipole_fit_stamps(ctx, s.nz, (int)s.nx, s.data, v.data, mask, cx, cy, &p, fit);
    if (!st)
        st = write_fits(out, fit, s.nz, p.model == TIDE_DIPOLE_GAUSS);
    if (!st) {
        int64_t nconv = 0;
        for (int64_t i = 0; i < s.nz; i++)
            nconv += fit[i].status == TIDE_DIPOLE_CONVERGED;
        if (com.json) {
            printf("{\n  \"stamps\": %lld,\n  \"side\": %lld,\n  \"converged\": %lld,\n"
                   "  \"backend\": \"%s\",\n  \"output\": ",
                   (long long)s.nz, (long long)s.nx, (long long)nconv,
                   tide_backend_name(ctx->backend));
            tide_cli_json_string(stdout, out);
            printf("\n}\n");
        } else {
            printf("%lld stamps of %lld x %lld fitted (%lld converged) -> %s\n", (long long)s.nz,
                   (long long)s.nx, (long long)s.ny, (long long)nconv, out);
        }
        rc = 0;
    }
done:
    if (st)
        rc = tide_cli_fail(cmd, st);
    tide_fits_close(&src);
    free(s.data), free(v.data), free(m.data), free(ps.data), free(cx), free(cy), free(mask);
    free(fit);
    tide_ctx_destroy(ctx);
    return rc;
}
