/* cmd_reproject.c — `tide reproject IN... (--onto REF | --grid north-up) -o OUT...`: resample
 * frames onto one pixel grid (reproject.h) and write each with its mask, variance, coverage
 * and the output WCS. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_config.h"
#include "tide/cosmetics.h"
#include "tide/fits.h"
#include "tide/instrument.h"
#include "tide/reproject.h"

static const char *help =
    "usage: tide reproject IN... (--onto REF | --grid north-up) -o OUT... [options]\n"
    "\n"
    "Resample frames onto one pixel grid: the grid of REF (its WCS and size), or a north-up,\n"
    "east-left TAN grid covering every input at the finest input pixel scale. Input WCS:\n"
    "anything wcslib reads (TAN, SIN, ZEA, ZPN..., SIP, TPV). TAN/TAN-SIP pairs are mapped\n"
    "exactly per pixel; other pairs through a node grid refined until its measured error is\n"
    "at most --grid-tol. Each OUT holds the resampled pixels (primary HDU, with the output WCS\n"
    "and the input's other keywords), a MASK extension and, when the input has one, VAR; the\n"
    "coverage map (0..1) is written beside it as OUT with .fits replaced by .coverage.fits.\n"
    "Pixels where no input pixel lands are NaN with the NODATA mask bit.\n"
    "IN and REF are FILE, FILE[N] or FILE[EXTNAME].\n"
    "\n"
    "options:\n"
    "  --onto REF               resample onto REF's grid\n"
    "  --grid north-up          resample onto a north-up TAN grid covering all inputs\n"
    "  -o OUT...                outputs, one per input (every argument after -o up to the\n"
    "                           next option; -o may be repeated), or one existing directory:\n"
    "                           DIR/NAME.fits for each input NAME\n"
    "  --kernel K               lanczos3 | bilinear | nearest [lanczos3]\n"
    "  --no-conserve            keep surface brightness (do not multiply by the Jacobian)\n"
    "  --mask-bits N            input mask bits that poison outputs [65535]\n"
    "  --map M                  auto | grid | exact [auto]\n"
    "  --grid-tol PX            bound of the grid mapping error, input px [0.001]\n"
    "  --no-coverage            do not write coverage maps\n"
    "  --mask-saturated         flag each input's pixels at or above its saturation level\n"
    "                           (SATURATED) before resampling [off]. The level comes from\n"
    "                           the header through the configuration's keyword map\n"
    "                           (camera.saturate when the keyword is missing), as for tide\n"
    "                           reduce; a frame without one gets no flags\n";

/* FILE[...] -> FILE */
static void spec_root(const char *spec, char *out, size_t len) {
    snprintf(out, len, "%s", spec);
    char *b = strchr(out, '[');
    if (b)
        *b = 0;
}

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* DIR/NAME.fits for input spec IN (NAME: the file name without .fits/.fit/.fz/.gz). */
static void dir_output(const char *dir, const char *in, char *out, size_t len) {
    char root[4096];
    spec_root(in, root, sizeof root);
    const char *base = strrchr(root, '/');
    base = base ? base + 1 : root;
    char stem[4096];
    snprintf(stem, sizeof stem, "%s", base);
    static const char *const ext[] = {".gz", ".fz", ".fits", ".fit", ".fts"};
    for (int k = 0; k < 5; k++) {
        const size_t n = strlen(stem), e = strlen(ext[k]);
        if (n > e && !strcmp(stem + n - e, ext[k]))
            stem[n - e] = 0;
    }
    snprintf(out, len, "%s/%s.fits", dir, stem);
}

static void coverage_path(const char *out, char *cov, size_t len) {
    const size_t n = strlen(out);
    if (n > 5 && !strcmp(out + n - 5, ".fits"))
        snprintf(cov, len, "%.*s.coverage.fits", (int)(n - 5), out);
    else
        snprintf(cov, len, "%s.coverage.fits", out);
}

static int parse_num(const char *s, double *v) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return (end == s || *end || errno) ? -1 : 0;
}

typedef struct {
    tide_image im;
    tide_header hdr;
    tide_wcs *wcs;
} frame;

/* Header of an output: the input's keywords with the output WCS and what was done. */
static int out_header(const frame *f, const tide_wcs *ow, const tide_reproject_params *p,
                      const tide_reproject_info *inf, tide_header *h) {
    int st = tide_header_copy(h, &f->hdr);
    /* IRAF's physical-to-image keywords describe the input's pixels, not these */
    static const char *const drop[] = {"LTV1",   "LTV2",     "LTM1_1",   "LTM1_2",   "LTM2_1",
                                       "LTM2_2", "WAT0_001", "WAT1_001", "WAT2_001", "WCSDIM"};
    for (int k = 0; !st && k < (int)(sizeof drop / sizeof *drop); k++)
        tide_header_remove(h, drop[k]);
    if (!st)
        st = tide_wcs_to_header(ow, h);
    if (!st)
        st = tide_header_set_str(h, "RPKERNEL", tide_resample_name(p->kernel),
                                 "tide reproject: resampling kernel");
    if (!st)
        st =
            tide_header_set_bool(h, "RPFLUX", p->conserve_flux != 0, "flux conserved (x Jacobian)");
    if (!st)
        st = tide_header_set_str(h, "RPMAP", inf->exact ? "exact" : "grid",
                                 "mapping: exact TAN/SIP or node grid");
    if (!st)
        st = tide_header_set_dbl(h, "RPSTEP", inf->grid_step, "[px] node grid step");
    if (!st && !inf->exact)
        st =
            tide_header_set_dbl(h, "RPMAPERR", inf->map_err_px, "[px] measured grid mapping error");
    if (!st)
        st = tide_header_set_dbl(h, "RPJACERR", inf->jac_err_rel,
                                 "measured relative Jacobian error");
    return st;
}

/* --mask-saturated: flag @p f's pixels at or above its saturation level through @p cfg (the
 * cosmetics stage's saturation pass alone); the count into *nsat (-1: no level known). */
static int mask_saturated(tide_ctx *ctx, const tide_config *cfg, const char *name, frame *f,
                          int64_t *nsat) {
    *nsat = -1;
    tide_instrument inst;
    int st = tide_instrument_resolve(cfg, &f->hdr, name, &inst);
    if (st || !inst.source[TIDE_INST_SATURATE] || !isfinite(inst.saturate))
        return st;
    if (!f->im.mask) { /* a frame read without a MASK HDU: one of zeros */
        tide_image m;
        st = tide_image_alloc(ctx, &m, f->im.width, f->im.height, f->im.location,
                              TIDE_IMAGE_MASK | (f->im.var ? TIDE_IMAGE_VAR : 0));
        if (!st)
            st = tide_image_copy(ctx, &m, &f->im);
        if (st)
            return st;
        tide_image_free(ctx, &f->im);
        f->im = m;
    }
    tide_cosmetics_params cp;
    tide_cosmetics_params_default(&cp);
    cp.saturation = inst.saturate;
    cp.bleed = cp.badcol = cp.hot = cp.cold = cp.cosmic = cp.inpaint = 0;
    tide_cosmetics_report cr;
    st = tide_cosmetics_apply(ctx, &f->im, &cp, &cr);
    if (!st)
        *nsat = cr.n_saturated;
    return st;
}

int tide_cmd_reproject(int argc, char **argv) {
    const char *cmd = "reproject";
    tide_cli_common com;
    tide_cli_common_init(&com);
    tide_reproject_params p;
    tide_reproject_params_default(&p);
    const char *onto = NULL, *grid = NULL;
    int write_cov = 1, mask_sat = 0;
    tide_cli_config cc;
    memset(&cc, 0, sizeof cc);
    tide_config *cfg = NULL;
    const char **ins = calloc((size_t)argc, sizeof *ins),
               **outs = calloc((size_t)argc, sizeof *outs);
    int nin = 0, nout = 0, in_o = 0, rc = 2;
    if (!ins || !outs) {
        free(ins);
        free(outs);
        return tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"));
    }
#define USAGE(...)                                                                                 \
    do {                                                                                           \
        rc = tide_cli_usage_error(cmd, __VA_ARGS__);                                               \
        goto out;                                                                                  \
    } while (0)
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s%s\n%s", help, tide_cli_config_help, tide_cli_common_help);
            rc = 0;
            goto out;
        }
        if (a[0] != '-' || !a[1]) {
            if (in_o)
                outs[nout++] = a;
            else
                ins[nin++] = a;
            continue;
        }
        in_o = 0;
        const int c = tide_cli_common_option(&com, cmd, argc, argv, &i);
        if (c < 0)
            goto out;
        if (c > 0)
            continue;
        const int k = tide_cli_config_option(&cc, cmd, argc, argv, &i);
        if (k < 0)
            goto out;
        if (k > 0)
            continue;
        if (!strcmp(a, "--mask-saturated")) {
            mask_sat = 1;
            continue;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            in_o = 1;
            continue;
        }
        if (!strcmp(a, "--no-conserve")) {
            p.conserve_flux = 0;
            continue;
        }
        if (!strcmp(a, "--no-coverage")) {
            write_cov = 0;
            continue;
        }
        if (strcmp(a, "--onto") && strcmp(a, "--grid") && strcmp(a, "--kernel") &&
            strcmp(a, "--mask-bits") && strcmp(a, "--map") && strcmp(a, "--grid-tol"))
            USAGE("unknown option %s", a);
        if (i + 1 >= argc)
            USAGE("option %s needs a value", a);
        const char *v = argv[++i];
        double d;
        if (!strcmp(a, "--onto")) {
            onto = v;
        } else if (!strcmp(a, "--grid")) {
            if (strcmp(v, "north-up"))
                USAGE("--grid takes 'north-up' (got '%s')", v);
            grid = v;
        } else if (!strcmp(a, "--kernel")) {
            if (tide_resample_parse(v, &p.kernel))
                USAGE("%s", tide_error_detail());
        } else if (!strcmp(a, "--mask-bits")) {
            if (parse_num(v, &d) || d < 0 || d > 65535 || d != floor(d))
                USAGE("--mask-bits takes an integer 0..65535 (got '%s')", v);
            p.mask_bits = (uint16_t)d;
        } else if (!strcmp(a, "--map")) {
            if (!strcmp(v, "auto"))
                p.map = TIDE_REPROJECT_MAP_AUTO;
            else if (!strcmp(v, "grid"))
                p.map = TIDE_REPROJECT_MAP_GRID;
            else if (!strcmp(v, "exact"))
                p.map = TIDE_REPROJECT_MAP_EXACT;
            else
                USAGE("--map takes auto, grid or exact (got '%s')", v);
        } else {
            if (parse_num(v, &d) || !(d > 0) || !isfinite(d))
                USAGE("--grid-tol takes a number > 0 (got '%s')", v);
            p.grid_tol = d;
        }
    }
    if (nin == 0)
        USAGE("missing input frames");
    if (!onto == !grid)
        USAGE("give exactly one of --onto REF and --grid north-up");
    const int dir_mode = nout == 1 && nin >= 1 && is_dir(outs[0]);
    if (nout == 0)
        USAGE("missing -o OUT");
    if (!dir_mode && nout != nin)
        USAGE("%d inputs but %d outputs (give one per input, or one directory)", nin, nout);
    { /* every output and its coverage map against the inputs, --onto and each other */
        char(*names)[4300] = calloc((size_t)nin * 2, sizeof *names);
        const char **on = calloc((size_t)nin * 2, sizeof *on);
        const char **in2 = calloc((size_t)nin + 3, sizeof *in2);
        int bad = !names || !on || !in2;
        for (int i = 0; !bad && i < nin; i++) {
            if (dir_mode)
                dir_output(outs[0], ins[i], names[2 * i], sizeof names[0]);
            else
                snprintf(names[2 * i], sizeof names[0], "%s", outs[i]);
            coverage_path(names[2 * i], names[2 * i + 1], sizeof names[0]);
            on[2 * i] = names[2 * i];
            on[2 * i + 1] = write_cov ? names[2 * i + 1] : NULL;
            in2[i] = ins[i];
        }
        int n2 = nin;
        if (!bad) { /* the configuration files are inputs too */
            in2[n2++] = onto;
            if (cc.instrument)
                in2[n2++] = cc.instrument;
            if (cc.def && *cc.def)
                in2[n2++] = cc.def;
        }
        rc = bad ? tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"))
                 : tide_cli_check_outputs(cmd, in2, n2, on, 2 * nin);
        free(names);
        free(on);
        free(in2);
        if (rc)
            goto out;
    }

    rc = 1;
    /* the configuration, when one is named or needed: errors name FILE:LINE:COLUMN */
    if (mask_sat || cc.instrument || cc.def || cc.nsets) {
        const int cst = tide_cli_config_load(&cc, &cfg);
        if (cst) {
            rc = tide_cli_fail(cmd, cst);
            goto out;
        }
    }
    tide_ctx *ctx = tide_cli_make_ctx(&com, cmd);
    if (!ctx)
        goto out;
    frame *fr = calloc((size_t)nin, sizeof *fr);
    tide_wcs *ow = NULL;
    int64_t ow_w = 0, ow_h = 0;
    int st = fr ? 0 : tide_error(TIDE_E_NOMEM, "out of memory");
    for (int i = 0; i < nin && !st; i++) {
        tide_header_init(&fr[i].hdr);
        st = tide_fits_read_image(ctx, ins[i], &fr[i].im, &fr[i].hdr);
        if (!st)
            st = tide_wcs_from_header(&fr[i].hdr, ins[i], &fr[i].wcs);
        int64_t nsat = -1;
        if (!st && mask_sat)
            st = mask_saturated(ctx, cfg, ins[i], &fr[i], &nsat);
        if (!st && mask_sat && !com.json && nsat < 0)
            printf("%s: no saturation level: no pixel flagged\n", ins[i]);
        else if (!st && mask_sat && !com.json)
            printf("%s: %lld pixels at or above the saturation level flagged\n", ins[i],
                   (long long)nsat);
    }
    if (!st && onto) {
        tide_header rh;
        tide_header_init(&rh);
        st = tide_fits_read_image_header(onto, &rh, NULL, &ow_w, &ow_h);
        if (!st)
            st = tide_wcs_from_header(&rh, onto, &ow);
        tide_header_free(&rh);
    } else if (!st) {
        const tide_wcs **ws = calloc((size_t)nin, sizeof *ws);
        int64_t *wd = calloc((size_t)nin * 2, sizeof *wd);
        if (!ws || !wd)
            st = tide_error(TIDE_E_NOMEM, "out of memory");
        for (int i = 0; i < nin && !st; i++) {
            ws[i] = fr[i].wcs;
            wd[i] = fr[i].im.width;
            wd[nin + i] = fr[i].im.height;
        }
        if (!st)
            st = tide_reproject_northup(ws, wd, wd + nin, nin, &ow, &ow_w, &ow_h);
        free(ws);
        free(wd);
    }
    if (com.json && !st)
        printf("{\n  \"width\": %lld,\n  \"height\": %lld,\n  \"frames\": [\n", (long long)ow_w,
               (long long)ow_h);
    for (int i = 0; i < nin && !st; i++) {
        char opath[4200], cpath[4300];
        if (dir_mode)
            dir_output(outs[0], ins[i], opath, sizeof opath);
        else
            snprintf(opath, sizeof opath, "%s", outs[i]);
        coverage_path(opath, cpath, sizeof cpath);
        tide_reproject_plan *pl = NULL;
        tide_image out, cov;
        memset(&out, 0, sizeof out);
        memset(&cov, 0, sizeof cov);
        tide_reproject_info inf;
        const double t0 = tide_now();
        st = tide_reproject_plan_create(ctx, fr[i].wcs, fr[i].im.width, fr[i].im.height, ow, ow_w,
                                        ow_h, &p, &pl);
        const double t1 = tide_now();
        if (!st) {
            tide_reproject_plan_info(pl, &inf);
            st = tide_reproject_execute(ctx, pl, &fr[i].im, &out, write_cov ? &cov : NULL);
        }
        const double t2 = tide_now();
        tide_reproject_plan_free(ctx, pl);
        tide_header h;
        tide_header_init(&h);
        if (!st)
            st = out_header(&fr[i], ow, &p, &inf, &h);
        if (!st)
            st = tide_fits_write_image(opath, &out, &h);
        if (!st && write_cov) {
            tide_header_set_str(&h, "BUNIT", "", "coverage: valid kernel weight fraction");
            st = tide_fits_write_image(cpath, &cov, &h);
        }
        tide_header_free(&h);
        tide_image_free(ctx, &out);
        tide_image_free(ctx, &cov);
        if (st) {
            st = tide_error_prefix(st, "%s: ", ins[i]);
            break;
        }
        if (!inf.converged)
            fprintf(stderr,
                    "tide reproject: warning: %s: the mapping grid reached %.3g px "
                    "error at its finest step (bound %.3g px)\n",
                    ins[i], inf.map_err_px, p.grid_tol);
        if (com.json) {
            printf("    {\"input\": ");
            tide_cli_json_string(stdout, ins[i]);
            printf(", \"output\": ");
            tide_cli_json_string(stdout, opath);
            if (write_cov) {
                printf(", \"coverage\": ");
                tide_cli_json_string(stdout, cpath);
            }
            printf(", \"map\": \"%s\", \"grid_step\": %g, \"map_err_px\": %.3e, "
                   "\"jac_err_rel\": %.3e, \"plan_ms\": %.3f, \"resample_ms\": %.3f}%s\n",
                   inf.exact ? "exact" : "grid", inf.grid_step, inf.map_err_px, inf.jac_err_rel,
                   (t1 - t0) * 1e3, (t2 - t1) * 1e3, i + 1 < nin ? "," : "");
        } else {
            printf("%s -> %s: %lldx%lld, %s, %s mapping (grid step %g px, measured error "
                   "%.2g px, Jacobian %.2g), plan %.1f ms, resample %.1f ms\n",
                   ins[i], opath, (long long)ow_w, (long long)ow_h, tide_resample_name(p.kernel),
                   inf.exact ? "exact" : "grid", inf.grid_step, inf.map_err_px, inf.jac_err_rel,
                   (t1 - t0) * 1e3, (t2 - t1) * 1e3);
        }
    }
    if (com.json && !st)
        printf("  ]\n}\n");
    rc = st ? tide_cli_fail(cmd, st) : 0;
    for (int i = 0; fr && i < nin; i++) {
        tide_image_free(ctx, &fr[i].im);
        tide_header_free(&fr[i].hdr);
        tide_wcs_free(fr[i].wcs);
    }
    free(fr);
    tide_wcs_free(ow);
    tide_ctx_destroy(ctx);
out:
    tide_config_free(cfg);
    tide_cli_config_free(&cc);
    free(ins);
    free(outs);
    return rc;
#undef USAGE
}
