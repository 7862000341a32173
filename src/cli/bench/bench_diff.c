/* bench_diff.c — `tide bench --diff`: the difference pipeline of issue 5 in one warm process
 * on a simulated pair (epoch 1 the template, epoch 2 the science frame with transients and
 * variable stars, tide_sim_*), each figure the median of --repeats runs after --warmup:
 *   a. the whole tide_diff_run (host frames in, results on the host), end to end and per
 *      stage (the context timers the pipeline records), with the FITS read of both frames
 *      and tide_diff_write of the results around it timed separately (page cache warm);
 *   b. the reprojection of the prepared science frame onto the template's grid (where the
 *      context computes: device-resident on CUDA), in one call as the pipeline makes it and
 *      with the plan reused;
 *   c. the subtraction of the pipeline's inputs, constant and spatial degree 2 kernels;
 *   d. batched dipole fits of simulated 21×21 stamps (difference/dipole/dipole_sim.h),
 * device-resident. Each figure stands beside its target, a floor where one means something (bytes
 * moved over the copy bandwidth measured in the same run; the FFTs of the subtraction's
 * convolution) and the published anchors. Printing is in bench_diff_out.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tide/outfile.h"
#include "bench_diff.h"
#include "bench_diff_int.h"
#include "bench_util.h"
#include "cli/cli.h"
#include "pipeline/diff_internal.h"
#include "tide/sim.h"

static const char *help =
    "usage: tide bench --diff [OPTIONS]\n"
    "\n"
    "Time the difference pipeline (tide diff) of issue 5 in one warm process on a simulated\n"
    "pair: the whole run per stage and end to end (with the FITS read and write around it\n"
    "timed separately), the reprojection and the subtraction (constant and spatial degree 2\n"
    "kernels) alone where the context computes, and batched dipole fits of 21x21 stamps;\n"
    "each beside its target, its floor and the published anchors.\n"
    "\n"
    "options:\n"
    "  --size WxH          frame size [4096x4096]\n"
    "  --repeats N         timed runs per figure; the median is reported [5]\n"
    "  --warmup N          untimed runs first [1]\n"
    "  --transients N      new transients in the science frame [1500 on 4096x4096, scaled\n"
    "                      with the area, at least 10]; a quarter as many variable stars,\n"
    "                      three times as many galaxies to host them\n"
    "  --stamps N          dipole stamps per fit batch [100000]\n"
    "  --no-disk           skip the FITS read and write around the run\n"
    "  --workdir DIR       where the frames and outputs go [a new /tmp directory]\n"
    "  --json FILE         also write the results as JSON to FILE ('-' = standard output)\n"
    "Targets (issue 5, one H200, 4096x4096): reprojection <= 5 ms; subtraction <= 10 ms\n"
    "(constant kernel), <= 30 ms (spatially varying, with the solve); tide diff with 1000\n"
    "candidates fitted <= 60 ms; dipole fits >= 1,000,000 21x21 stamps/s. Anchors: HOTPANTS\n"
    "~17 s and SWarp ~2 s on a 4096x4096 frame (CPU), SFFT ~1.4 s on an A100.\n";

/* ---- timing helpers --------------------------------------------------------------------- */

int tide_bd_time_median(tide_ctx *ctx, const bd_opts *o, tide_bench_fn fn, void *arg, double *ms) {
    return tide_bench_time(ctx, o->repeats, o->warmup, "bench.diff", fn, arg, ms);
}

/* ---- the host link ---------------------------------------------------------------------- */

typedef struct copy_arg {
    void *dst;
    const void *src;
    size_t bytes;
} copy_arg;

static int do_d2h(tide_ctx *ctx, void *p) {
    copy_arg *a = p;
    return tide_memcpy(ctx, a->dst, 0, a->src, 1, a->bytes);
}

/* Device-to-pinned-host bandwidth over what tide diff brings back (difference pix, var, mask
 * and the matched image: 14 B/px), the floor of its download. CUDA only. */
static int bench_link(tide_ctx *ctx, const bd_opts *o, bd_result *r) {
    if (ctx->backend != TIDE_BACKEND_CUDA)
        return 0;
    copy_arg a = {NULL, NULL, (size_t)(14.0 * (double)o->w * (double)o->h)};
    void *dev = NULL;
    int st = tide_device_alloc(ctx, a.bytes, &dev);
    if (!st)
        st = tide_memzero(ctx, dev, 1, a.bytes);
    if (!st)
        st = tide_host_pinned_alloc(ctx, a.bytes, &a.dst);
    a.src = dev;
    double ms = 0;
    if (!st)
        st = tide_bd_time_median(ctx, o, do_d2h, &a, &ms);
    if (!st)
        r->d2h_gbps = (double)a.bytes / (ms > 0 ? ms : 1e-9) * 1e-6;
    tide_host_pinned_free(ctx, a.dst);
    tide_device_free(ctx, dev);
    return st;
}

/* ---- the simulated pair ----------------------------------------------------------------- */

typedef struct bd_pair {
    tide_sim_frame sci, tmpl;
    char sci_path[1200], tmpl_path[1200], out_dir[1200];
} bd_pair;

static int make_pair(tide_ctx *ctx, const bd_opts *o, bd_pair *pr, bd_result *r) {
    tide_sim_params sp;
    tide_sim_params_default(&sp);
    sp.width = o->w;
    sp.height = o->h;
    const double area = (double)o->w * (double)o->h;
    sp.nstars = (int64_t)fmax(200.0, 2000.0 * area / (2048.0 * 2048.0));
    sp.e2_ntransient =
        o->transients >= 0 ? o->transients : (int64_t)fmax(10.0, 1500.0 * area / (4096.0 * 4096.0));
    sp.e2_nvariable = sp.e2_ntransient / 4;
    /* Transients sit on randomly picked galaxies: three galaxies per transient keep most of
     * them on galaxies of their own (separate candidates). */
    sp.ngalaxies =
        (int64_t)fmax(fmax(20.0, 100.0 * area / (2048.0 * 2048.0)), 3.0 * (double)sp.e2_ntransient);
    r->nstars = sp.nstars;
    r->ntransient = sp.e2_ntransient;
    r->nvariable = sp.e2_nvariable;
    tide_sim_sky *sky = NULL;
    const double t0 = tide_now();
    int st = tide_sim_sky_make(ctx, &sp, &sky);
    if (!st)
        st = tide_sim_epoch(ctx, sky, 1, &pr->tmpl);
    if (!st)
        st = tide_sim_epoch(ctx, sky, 2, &pr->sci);
    tide_sim_sky_free(sky);
    r->sim_ms = 1e3 * (tide_now() - t0);
    if (st || !o->disk)
        return st;
    snprintf(pr->sci_path, sizeof pr->sci_path, "%s/science.fits", o->workdir);
    snprintf(pr->tmpl_path, sizeof pr->tmpl_path, "%s/template.fits", o->workdir);
    snprintf(pr->out_dir, sizeof pr->out_dir, "%s/diff", o->workdir);
    st = tide_fits_write_image(pr->sci_path, &pr->sci.image, &pr->sci.header);
    if (!st)
        st = tide_fits_write_image(pr->tmpl_path, &pr->tmpl.image, &pr->tmpl.header);
    return st;
}

/* ---- a. the whole run ------------------------------------------------------------------- */

/* One tide diff: read both frames (from disk, or the simulated frames as they are), run,
 * write. Parts in ms[0..2] (read, run, write); the result's counts into r. */
static int diff_once(tide_ctx *ctx, const bd_opts *o, const bd_pair *pr, bd_result *r, double *ms) {
    tide_image si = {0}, ti = {0};
    tide_header sh, th;
    tide_header_init(&sh);
    tide_header_init(&th);
    const tide_image *s = &pr->sci.image, *t = &pr->tmpl.image;
    const tide_header *shp = &pr->sci.header, *thp = &pr->tmpl.header;
    int st = tide_sync(ctx);
    const double t0 = tide_now();
    if (!st && o->disk) { /* both frames in one call, as the diff job reads them */
        const char *specs[2] = {pr->sci_path, pr->tmpl_path};
        tide_fits_stack stk;
        st = tide_fits_read_stack(ctx, specs, 2, TIDE_HOST, TIDE_FITS_STACK_HEADERS, &stk);
        if (!st) {
            si = stk.im[0], ti = stk.im[1], sh = stk.hdr[0], th = stk.hdr[1];
            memset(stk.im, 0, 2 * sizeof *stk.im);
            tide_header_init(&stk.hdr[0]);
            tide_header_init(&stk.hdr[1]);
            tide_fits_stack_free(ctx, &stk);
        }
        s = &si, t = &ti, shp = &sh, thp = &th;
    }
    const double t1 = tide_now();
    tide_diff_params p;
    tide_diff_params_default(&p);
    snprintf(p.sci_name, sizeof p.sci_name, "science");
    snprintf(p.tmpl_name, sizeof p.tmpl_name, "template");
    tide_diff_result res;
    memset(&res, 0, sizeof res);
    if (!st)
        st = tide_diff_run(ctx, s, shp, t, thp, &p, &res);
    const double t2 = tide_now();
    if (!st && o->disk)
        st = tide_diff_write(pr->out_dir, &res, 0);
    const double t3 = tide_now();
    if (!st) {
        ms[0] = 1e3 * (t1 - t0);
        ms[1] = 1e3 * (t2 - t1);
        ms[2] = 1e3 * (t3 - t2);
        r->ncand = res.cands.nrows;
        r->nfitted = res.nfitted;
        r->fwhm_sci = res.fwhm_sci;
        r->fwhm_tmpl = res.fwhm_tmpl;
        r->kernel_w = res.kernel_w;
        int64_t deg = -1;
        if (tide_header_get_int(&res.header, "KSPDEG", &deg))
            tide_error_clear();
        r->spatial_degree = (int)deg;
        if (res.device_peak > r->peak_bytes)
            r->peak_bytes = res.device_peak;
    }
    tide_diff_result_free(&res);
    tide_image_free(ctx, &si);
    tide_image_free(ctx, &ti);
    tide_header_free(&sh);
    tide_header_free(&th);
    return st;
}

static int bench_whole(tide_ctx *ctx, const bd_opts *o, const bd_pair *pr, bd_result *r) {
    double ms[3], samples[3][BD_MAX_REPEATS];
    int st = 0;
    for (int i = 0; i < o->warmup && !st; i++)
        st = diff_once(ctx, o, pr, r, ms);
    r->nstages = 0;
    for (int k = 0; k < o->repeats && !st; k++) {
        tide_timer_clear(ctx);
        st = diff_once(ctx, o, pr, r, ms);
        for (int j = 0; j < 3 && !st; j++)
            samples[j][k] = ms[j];
        if (!st)
            tide_bench_collect_stages(ctx, r->stages, &r->nstages, BD_MAX_STAGES, k);
    }
    if (st)
        return tide_error_prefix(st, "tide diff: ");
    tide_bench_range(samples[1], o->repeats, &r->run_min_ms, &r->run_max_ms);
    r->read_ms = tide_bench_median(samples[0], o->repeats);
    r->run_ms = tide_bench_median(samples[1], o->repeats);
    r->write_ms = tide_bench_median(samples[2], o->repeats);
    for (int k = 0; k < r->nstages; k++)
        r->stage_ms[k] = tide_bench_median(r->stages[k].samples, o->repeats);
    return 0;
}

/* ---- a2. per exposure against a prepared template ---------------------------------------- */

typedef struct tmpl_arg {
    const bd_pair *pr;
    const tide_diff_template *t;
} tmpl_arg;

static int do_run_template(tide_ctx *ctx, void *p) {
    const tmpl_arg *a = p;
    tide_diff_params dp;
    tide_diff_params_default(&dp);
    snprintf(dp.sci_name, sizeof dp.sci_name, "science");
    tide_diff_result res;
    memset(&res, 0, sizeof res);
    int st = tide_diff_run_template(ctx, &a->pr->sci.image, &a->pr->sci.header, a->t, &dp, &res);
    tide_diff_result_free(&res);
    return st;
}

/* The survey's case: the template prepared once (timed once), then exposure after exposure
 * against it, host frames in and results on the host as in part a. */
static int bench_template(tide_ctx *ctx, const bd_opts *o, const bd_pair *pr, bd_result *r) {
    tide_diff_params dp;
    tide_diff_params_default(&dp);
    snprintf(dp.tmpl_name, sizeof dp.tmpl_name, "template");
    tide_diff_template *t = NULL;
    int st = tide_sync(ctx);
    const double t0 = tide_now();
    if (!st)
        st = tide_diff_template_prepare(ctx, &pr->tmpl.image, &pr->tmpl.header, &dp, &t);
    if (!st)
        st = tide_sync(ctx);
    r->tmpl_prep_ms = 1e3 * (tide_now() - t0);
    double samples[BD_MAX_REPEATS];
    tmpl_arg a = {pr, t};
    for (int i = 0; i < o->warmup && !st; i++)
        st = do_run_template(ctx, &a);
    for (int k = 0; k < o->repeats && !st; k++) {
        const double t1 = tide_now();
        st = do_run_template(ctx, &a);
        samples[k] = 1e3 * (tide_now() - t1);
    }
    tide_diff_template_free(ctx, t);
    if (st)
        return tide_error_prefix(st, "tide diff against a prepared template: ");
    r->run_tmpl_ms = tide_bench_median(samples, o->repeats);
    tide_bench_range(samples, o->repeats, &r->run_tmpl_min_ms, &r->run_tmpl_max_ms);
    return 0;
}

/* ---- b, c. reprojection and subtraction alone -------------------------------------------- */

typedef struct reproj_arg {
    const tide_diffp_frame *in;
    const tide_wcs *out_wcs;
    int64_t w, h;
    tide_reproject_plan *plan; /* NULL: plan, execute and free in one call */
    tide_image out;
} reproj_arg;

static int do_reproject(tide_ctx *ctx, void *p) {
    reproj_arg *a = p;
    tide_image_free(ctx, &a->out);
    if (a->plan)
        return tide_reproject_execute(ctx, a->plan, &a->in->work, &a->out, NULL);
    tide_reproject_params rp;
    tide_reproject_params_default(&rp);
    return tide_reproject(ctx, &a->in->work, a->in->wcs, a->out_wcs, a->w, a->h, &rp, &a->out,
                          NULL);
}

typedef struct sub_arg {
    const tide_image *sci, *tmpl;
    double fwhm_sci, fwhm_tmpl;
    tide_subtract_params p;
    tide_subtract_result r;
    int have;
} sub_arg;

static int do_subtract(tide_ctx *ctx, void *p) {
    sub_arg *a = p;
    if (a->have)
        tide_subtract_result_free(ctx, &a->r);
    a->have = 0;
    const int st = tide_subtract(ctx, a->sci, a->tmpl, a->fwhm_sci, a->fwhm_tmpl, &a->p, &a->r);
    a->have = !st;
    return st;
}

static int bench_parts(tide_ctx *ctx, const bd_opts *o, const bd_pair *pr, double bpms,
                       bd_result *r) {
    /* The pipeline's own inputs: both frames prepared (cosmetics, background, variance,
     * FWHM) where the context computes. */
    tide_diff_params dp;
    tide_diff_params_default(&dp);
    tide_diffp_frame sci, tmpl;
    memset(&sci, 0, sizeof sci);
    memset(&tmpl, 0, sizeof tmpl);
    int st = tide_diffp_prepare_frame(ctx, &pr->sci.image, &pr->sci.header, NULL, "science", 0, NAN,
                                      0, dp.fwhm_guess, &dp.bkg, &dp.cos, NULL, &sci);
    if (!st)
        st = tide_diffp_prepare_frame(ctx, &pr->tmpl.image, &pr->tmpl.header, NULL, "template", 0,
                                      NAN, 0, dp.fwhm_guess, &dp.bkg, &dp.cos, NULL, &tmpl);
    const double npx = (double)o->w * (double)o->h;
    /* b. science onto the template's grid. Bytes: pix, var, mask in (10 B/px) and out. */
    reproj_arg ra;
    memset(&ra, 0, sizeof ra);
    ra.in = &sci;
    ra.out_wcs = tmpl.wcs;
    ra.w = o->w;
    ra.h = o->h;
    if (!st)
        st = tide_bd_time_median(ctx, o, do_reproject, &ra, &r->reproj_call_ms);
    tide_reproject_params rp;
    tide_reproject_params_default(&rp);
    double t0 = tide_now();
    if (!st)
        st = tide_reproject_plan_create(ctx, sci.wcs, o->w, o->h, tmpl.wcs, o->w, o->h, &rp,
                                        &ra.plan);
    if (!st)
        st = tide_sync(ctx);
    r->reproj_plan_ms = 1e3 * (tide_now() - t0);
    if (!st) {
        tide_reproject_info inf;
        tide_reproject_plan_info(ra.plan, &inf);
        r->reproj_exact = inf.exact;
        st = tide_bd_time_median(ctx, o, do_reproject, &ra, &r->reproj_exec_ms);
    }
    r->reproj_floor_ms = 20.0 * npx / bpms;
    tide_reproject_plan_free(ctx, ra.plan);
    /* c. the reprojected science minus the template, as the pipeline subtracts them. */
    const double fs = sci.fwhm * (tmpl.scale > 0 ? sci.scale / tmpl.scale : 1.0);
    for (int k = 0; k < 2 && !st; k++) {
        sub_arg sa;
        memset(&sa, 0, sizeof sa);
        sa.sci = &ra.out;
        sa.tmpl = &tmpl.work;
        sa.fwhm_sci = fs;
        sa.fwhm_tmpl = tmpl.fwhm;
        sa.p = dp.sub;
        sa.p.spatial_degree = k ? 2 : 0;
        bd_sub *b = &r->sub[k];
        b->degree = sa.p.spatial_degree;
        st = tide_bd_time_median(ctx, o, do_subtract, &sa, &b->ms);
        if (!st) {
            b->kernel_w = sa.r.kernel_w;
            b->npoly = sa.r.npoly;
            b->nstamps = sa.r.nstamps;
            /* In: both frames' pix, var, mask; out: difference pix, var, mask + matched. */
            b->bytes_floor_ms = 34.0 * npx / bpms;
            st = tide_bench_fft_pair(ctx, tide_fft_good_size(o->w + sa.r.kernel_w - 1),
                                     tide_fft_good_size(o->h + sa.r.kernel_w - 1), o->repeats,
                                     o->warmup, &b->r2c_ms, &b->c2r_ms);
            b->fft_floor_ms = b->r2c_ms + (b->npoly > 0 ? b->npoly : 1) * b->c2r_ms;
        }
        if (sa.have)
            tide_subtract_result_free(ctx, &sa.r);
    }
    tide_image_free(ctx, &ra.out);
    tide_diffp_frame_free(ctx, &sci);
    tide_diffp_frame_free(ctx, &tmpl);
    tide_fft_cache_clear(ctx);
    return st ? tide_error_prefix(st, "reprojection / subtraction alone: ") : 0;
}

/* ---- the command ------------------------------------------------------------------------ */

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    const long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int tide_bench_diff(int argc, char **argv) {
    const char *cmd = "bench";
    tide_cli_common c;
    tide_cli_common_init(&c);
    bd_opts o;
    memset(&o, 0, sizeof o);
    o.w = o.h = 4096;
    o.repeats = 5, o.warmup = 1, o.stamps = 100000, o.transients = -1, o.disk = 1;
    setenv("TIDE_DIFF_WRITE_TIMES", "1", 0); /* the writer's groups on stderr (diff_write.c) */
    const char *workdir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int cm = tide_bench_common_arg(cmd, "--diff", help, &c, argc, argv, &i, &o.json_path);
        if (cm != TIDE_BENCH_ARG_OWN) {
            if (cm == TIDE_BENCH_ARG_TAKEN)
                continue;
            return cm == TIDE_BENCH_ARG_EXIT_OK ? 0 : 2;
        }
        const int takes = !strcmp(a, "--size") || !strcmp(a, "--repeats") ||
                          !strcmp(a, "--warmup") || !strcmp(a, "--transients") ||
                          !strcmp(a, "--stamps") || !strcmp(a, "--workdir");
        if (takes && i + 1 >= argc)
            return tide_cli_usage_error(cmd, "option %s needs a value", a);
        int64_t v = 0;
        if (!strcmp(a, "--size")) {
            int64_t sz[1][2];
            int n = 0;
            if (tide_bench_parse_sizes(argv[++i], sz, 1, 256, &n))
                return tide_cli_usage_error(cmd, "bad --size '%s' (WxH, each side >= 256)",
                                            argv[i]);
            o.w = sz[0][0], o.h = sz[0][1];
        } else if (!strcmp(a, "--repeats")) {
            if (parse_i64(argv[++i], 1, BD_MAX_REPEATS, &v))
                return tide_cli_usage_error(cmd, "bad --repeats '%s' (1..%d)", argv[i],
                                            BD_MAX_REPEATS);
            o.repeats = (int)v;
        } else if (!strcmp(a, "--warmup")) {
            if (parse_i64(argv[++i], 0, 100, &v))
                return tide_cli_usage_error(cmd, "bad --warmup '%s' (0..100)", argv[i]);
            o.warmup = (int)v;
        } else if (!strcmp(a, "--transients")) {
            if (parse_i64(argv[++i], 0, 50000, &o.transients))
                return tide_cli_usage_error(cmd, "bad --transients '%s' (0..50000)", argv[i]);
        } else if (!strcmp(a, "--stamps")) {
            if (parse_i64(argv[++i], 1, 10000000, &o.stamps))
                return tide_cli_usage_error(cmd, "bad --stamps '%s' (1..10000000)", argv[i]);
        } else if (!strcmp(a, "--workdir")) {
            workdir = argv[++i];
        } else if (!strcmp(a, "--no-disk")) {
            o.disk = 0;
        } else {
            return tide_cli_usage_error(cmd, "unknown option '%s' for --diff", a);
        }
    }
    o.json_stdout = c.json || (o.json_path && !strcmp(o.json_path, "-"));
    if (workdir) {
        snprintf(o.workdir, sizeof o.workdir, "%s", workdir);
    } else if (o.disk) {
        snprintf(o.workdir, sizeof o.workdir, "/tmp/tide-bench-diff.XXXXXX");
        if (!mkdtemp(o.workdir))
            return tide_cli_fail(cmd, tide_error(TIDE_E_IO, "cannot make a directory in /tmp"));
    }
    tide_ctx *ctx = tide_cli_make_ctx(&c, cmd);
    if (!ctx)
        return 1;
    bd_result *r = calloc(1, sizeof *r);
    bd_pair pr;
    memset(&pr, 0, sizeof pr);
    int st = r ? 0 : tide_error(TIDE_E_NOMEM, "bench: results");
    /* The copy bandwidth of the frame-sized working set, as tide bench measures it. */
    size_t bw = (size_t)(4.0 * (double)o.w * (double)o.h * sizeof(float));
    const size_t bw_lo = (size_t)64 << 20, bw_hi = (size_t)1 << 30;
    bw = bw < bw_lo ? bw_lo : (bw > bw_hi ? bw_hi : bw);
    double bpms = 0.0;
    if (!st)
        st = tide_bench_copy_bandwidth(ctx, o.repeats, o.warmup, bw, &bpms);
    if (!st)
        st = bench_link(ctx, &o, r);
    if (!st)
        st = make_pair(ctx, &o, &pr, r);
    if (!st)
        st = bench_whole(ctx, &o, &pr, r);
    if (!st)
        st = bench_template(ctx, &o, &pr, r);
    if (!st)
        st = bench_parts(ctx, &o, &pr, bpms, r);
    if (!st)
        st = tide_bd_dipoles(ctx, &o, r);
    if (!st) {
        r->bpms = bpms;
        if (!o.json_stdout)
            tide_bd_print_text(stdout, ctx, &o, r);
        if (o.json_path || o.json_stdout) {
            const int to_file = o.json_path && strcmp(o.json_path, "-");
            tide_outfile of;
            FILE *f = stdout;
            st = to_file ? tide_outfile_open(&of, o.json_path, &f) : 0;
            if (!st) {
                tide_bd_print_json(f, ctx, &o, r);
                if (to_file)
                    st = tide_outfile_close(&of, f);
            }
        }
    }
    tide_sim_frame_free(ctx, &pr.sci);
    tide_sim_frame_free(ctx, &pr.tmpl);
    free(r);
    tide_ctx_destroy(ctx);
    return st ? tide_cli_fail(cmd, st) : 0;
}
