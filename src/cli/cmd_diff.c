/* cmd_diff.c — `tide diff SCIENCE.fits TEMPLATE.fits -o DIR`: the difference path
 * (diff.h): reprojection onto one grid, PSF-matched subtraction, candidates and dipole
 * fits, written as FITS files and PNG pictures into DIR, all or nothing. With --template,
 * one template prepared once and any number of science frames, each into DIR/STEM. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_config.h"
#include "progress.h"
#include "tide/diff.h"
#include "tide/diff_job.h"
#include "tide/task.h"

static const char *help =
    "usage: tide diff SCIENCE.fits TEMPLATE.fits -o DIR [OPTIONS]\n"
    "       tide diff --template TEMPLATE.fits SCIENCE.fits... -o DIR [OPTIONS]\n"
    "\n"
    "Difference imaging: put the science frame on the template's pixel grid (Lanczos-3,\n"
    "flux-conserving, through both frames' WCS), measure both PSF FWHMs, match the PSFs\n"
    "with an Alard-Lupton kernel (spatially varying, degree 2), subtract, detect positive and\n"
    "negative changes on the difference S/N map, and fit every candidate with a Gaussian\n"
    "dipole and a point source. The difference is always science minus template.\n"
    "\n"
    "outputs (in DIR, written all at once; nothing is left behind on failure):\n"
    "  difference.fits   difference, MASK and VAR HDUs, with the output grid's WCS\n"
    "  candidates.fits   candidates: X_IMAGE, Y_IMAGE (FITS 1-based, output grid), SNR, FLUX,\n"
    "                    DIP_XPOS, DIP_YPOS, DIP_XNEG, DIP_YNEG, DIP_FLUX and their errors,\n"
    "                    DIP_CHI2, PS_CHI2, FIT_STATUS, ...\n"
    "  kernel.fits       the kernel at the frame centre, and a 3x3 grid (HDU KGRID)\n"
    "  kernel.png, matched.png, difference.png, candidates.png (stamp, model, residual of\n"
    "                    the top candidates)\n"
    "\n"
    "With --template, the template is prepared once (cosmetics, background, variance, FWHM,\n"
    "stars) and every science frame is differenced against it on the template's grid, each\n"
    "into DIR/STEM (STEM: the frame's file name without .fits/.fit/.fz); a frame that fails\n"
    "is reported and the others go on (exit code 1 if any failed).\n"
    "\n"
    "A mosaic SCIENCE exposure (an empty primary and two or more image HDUs) is differenced\n"
    "CCD by CCD against a TEMPLATE mosaic: each CCD against the template's CCD of the same\n"
    "EXTNAME (else CCDNUM), exactly as SCIENCE[N] TEMPLATE[M] would be, into DIR/EXTNAME; a\n"
    "CCD the template lacks is reported and skipped; a CCD that fails is reported and the\n"
    "others go on (exit code 1 if any failed).\n"
    "\n"
    "options:\n"
    "  -o, --output DIR         output directory [required]; an existing DIR is replaced\n"
    "                           only when it holds nothing but a previous run's files\n"
    "  --template FILE          the template of every SCIENCE frame given (see above)\n"
    "  --grid template|science|north-up\n"
    "                           pixel grid of the difference [template]\n"
    "  --fwhm-sci PX, --fwhm-tmpl PX\n"
    "                           PSF FWHMs in the frames' own pixels [measured]\n"
    "  --resample lanczos3|bilinear|nearest   reprojection kernel [lanczos3]\n"
    "  --convolve auto|template|science       frame to convolve [auto: the sharper one]\n"
    "  --spatial-degree N       kernel variation degree; 0 = constant kernel [2; lowered\n"
    "                           with few stars: npoly + 2 usable stamps per degree]\n"
    "  --bg-degree N            differential background degree [1; lowered likewise]\n"
    "  --basis D1,D2,...        one Gaussian per degree, widths from the FWHMs [6,4,2]\n"
    "  --no-cosmetics           do not flag cosmic rays, hot pixels, bleed trails [flag]\n"
    "  --decorrelate            whiten the difference noise (Reiss & Lupton 2016) [off]\n"
    "  --thresh SNR             detection threshold on the difference S/N [5]\n"
    "  --stamp N                fit stamp side, odd pixels [21]\n"
    "  --max-fit N              most candidates fitted, highest S/N first [100000]\n"
    "  --top N                  candidates drawn in candidates.png [16]\n"
    "  --compress none|rice     difference.fits RICE_1 tile-compressed, floats quantized as\n"
    "                           fpack -q 4 (funpack restores the plain layout)\n"
    "                           [output.compress: none]\n"
    "  --progress, --no-progress  with --template and many frames: a progress line on\n"
    "                           standard error [on a terminal; never with --json]\n"
    "  --store URI              also write the difference, its candidates with their\n"
    "                           cutouts, and their objects into a store (sqlite:PATH,\n"
    "                           PATH.db, postgresql://... or pg:CONNINFO; tide query\n"
    "                           candidates / object reads them); re-running a pair\n"
    "                           replaces its rows [none]\n"
    "  --object-radius ARCSEC   a candidate this close to a stored object is another\n"
    "                           detection of it [store.object_radius_arcsec: 1.0]\n"
    "  --cutout-px N            side of the stored cutouts, odd [store.cutout_px: 63]\n"
    "  --rb-model MODEL.json    score the candidates with a real/bogus model (tide rb train):\n"
    "                           column RB_SCORE, 0 bogus .. 1 real [none]\n"
    "  --timings                print the time of every stage [off]\n";

static const char *help_notes =
    "\n"
    "Each frame's gain, read noise and saturation come from its header through the\n"
    "configuration's keyword map (camera.* defaults when a keyword is missing), as for tide\n"
    "reduce; an unknown gain means no Poisson term. The processing.* keys are tide reduce's:\n"
    "they do not change a difference.\n"
    "Exit codes: 0 success, 1 the frames could not be differenced or written, 2 usage error.\n";

static int parse_num(const char *s, double lo, double hi, double *v) {
    char *end;
    const double x = strtod(s, &end);
    if (end == s || *end || !isfinite(x) || x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

static void print_summary(const tide_cli_common *com, tide_ctx *ctx, const char *sci,
                          const char *tmpl, const char *dir, const tide_diff_report *rep,
                          int timings) {
    const tide_diff_result *r = &rep->res;
    FILE *f = stdout;
    const int nt = tide_timer_count(ctx);
    if (com->json) {
        fprintf(f, "{\n  \"science\": ");
        tide_cli_json_string(f, sci);
        fprintf(f, ",\n  \"template\": ");
        tide_cli_json_string(f, tmpl);
        fprintf(f, ",\n  \"output\": ");
        tide_cli_json_string(f, dir);
        fprintf(f, ",\n  \"backend\": \"%s\",\n  \"device\": ", tide_backend_name(ctx->backend));
        tide_cli_json_string(f, ctx->device_name);
        fprintf(f, ",\n  \"width\": %lld,\n  \"height\": %lld,\n", (long long)r->diff.width,
                (long long)r->diff.height);
        fprintf(f, "  \"fwhm_sci\": %.6g,\n  \"fwhm_tmpl\": %.6g,\n", r->fwhm_sci, r->fwhm_tmpl);
        fprintf(f, "  \"kernel_sum\": %.8g,\n  \"kernel_chi2\": %.6g,\n", r->kernel_sum,
                isfinite(r->chi2) ? r->chi2 : -1.0);
        fprintf(f, "  \"convolved\": \"%s\",\n", r->convolved == 2 ? "science" : "template");
        fprintf(f, "  \"n_candidates\": %lld,\n  \"n_fitted\": %lld,\n", (long long)r->cands.nrows,
                (long long)r->nfitted);
        if (rep->diff_id >= 0)
            fprintf(f, "  \"diff_id\": %lld,\n  \"ms_store\": %.3f,\n", (long long)rep->diff_id,
                    rep->ms_store);
        fprintf(f, "  \"device_peak_bytes\": %zu,\n  \"ms_total\": %.3f,\n  \"timings_ms\": {",
                r->device_peak, r->ms_total);
        for (int i = 0; i < nt; i++) {
            const char *name;
            double ms;
            int calls;
            if (tide_timer_get(ctx, i, &name, &ms, &calls))
                continue;
            fprintf(f, "%s\n    ", i ? "," : "");
            tide_cli_json_string(f, name);
            fprintf(f, ": %.3f", ms);
        }
        fprintf(f, "\n  }\n}\n");
        return;
    }
    fprintf(f, "%s - %s: %lldx%lld, %lld candidates (%lld fitted) -> %s\n", sci, tmpl,
            (long long)r->diff.width, (long long)r->diff.height, (long long)r->cands.nrows,
            (long long)r->nfitted, dir);
    fprintf(f, "  FWHM science %.3f px, template %.3f px; %s convolved; kernel sum %.5f\n",
            r->fwhm_sci, r->fwhm_tmpl, r->convolved == 2 ? "science" : "template", r->kernel_sum);
    fprintf(f, "  %s backend (%s), %.1f ms", tide_backend_name(ctx->backend), ctx->device_name,
            r->ms_total);
    if (ctx->backend == TIDE_BACKEND_CUDA)
        fprintf(f, ", peak device memory %.1f MiB", (double)r->device_peak / (1024.0 * 1024.0));
    fprintf(f, "\n");
    if (rep->diff_id >= 0)
        fprintf(f, "  stored as difference %lld (%.1f ms)\n", (long long)rep->diff_id,
                rep->ms_store);
    for (int i = 0; timings && i < nt; i++) {
        const char *name;
        double ms;
        int calls;
        if (!tide_timer_get(ctx, i, &name, &ms, &calls))
            fprintf(f, "  %-20s %10.3f ms  (%d call%s)\n", name, ms, calls, calls == 1 ? "" : "s");
    }
}

/* The output directory of science frame @p path in batch mode: DIR/STEM, the stem as the
 * task runner derives it (task.h). */
static void batch_dir(const char *dir, const char *path, char *out, size_t cap) {
    char stem[1024];
    tide_task_stem(path, stem, sizeof stem);
    snprintf(out, cap, "%s/%s", dir, stem);
}

/* Where the differences' rows go (--store, --object-radius, --cutout-px). */
typedef struct diff_store_args {
    const char *uri; /* NULL: no store */
    double radius;   /* 0: the configuration's */
    int cutout_px;   /* 0: the configuration's */
} diff_store_args;

/* The command line of tide diff. */
typedef struct diff_args {
    const char **pos; /* the frames, argc entries of room */
    int npos, timings;
    const char *outp, *tpath;
    int64_t ntop;
    tide_cli_config cfg;   /* --config, --default, --set */
    diff_store_args store; /* --store, --object-radius, --cutout-px */
    int progress;          /* --progress 1, --no-progress 0, else -1: on a terminal */
    const char *rb_model;  /* --rb-model */
} diff_args;

/* The request of one difference, SCIENCE against TEMPLATE into @p outdir, with what the
 * command line asked for every pair; no output may replace one of the @p ncfg files @p cfgs. */
static void request_for(tide_diff_request *rq, const diff_args *d, const tide_diff_params *p,
                        const char *const *cfgs, int ncfg, const char *science, const char *tmpl,
                        const char *outdir) {
    tide_diff_request_init(rq);
    rq->science = science;
    rq->tmpl = tmpl;
    rq->outdir = outdir;
    rq->params = p;
    rq->ntop = d->ntop;
    rq->inputs = cfgs;
    rq->ninputs = ncfg;
    rq->store = d->store.uri;
    rq->object_radius_arcsec = d->store.radius;
    rq->cutout_px = d->store.cutout_px;
    rq->rb_model = d->rb_model;
}

/* --template: prepare the template once, then difference each science frame against it, with
 * a progress line on a terminal. */
static int run_batch(const tide_cli_common *com, tide_ctx *ctx, const diff_args *d,
                     tide_diff_params *p, const char *const *cfgs, int ncfg) {
    const char *cmd = "diff";
    const char *tpath = d->tpath, *dir = d->outp;
    const char *const *sci = d->pos;
    const int nsci = d->npos;
    char(*outs)[4096] = malloc(sizeof *outs * (size_t)nsci);
    if (!outs)
        return tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"));
    for (int i = 0; i < nsci; i++) {
        batch_dir(dir, sci[i], outs[i], sizeof outs[i]);
        /* no science frame, the template or a configuration file may be a file the outputs
         * would replace */
        for (int j = 0; j <= nsci + ncfg; j++) {
            const char *in = j < nsci ? sci[j] : (j == nsci ? tpath : cfgs[j - nsci - 1]);
            const int st = tide_diff_check_outputs(outs[i], &in, 1);
            if (st) {
                free(outs);
                return tide_cli_fail(cmd, st);
            }
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(outs[i], outs[j])) {
                /* the message names an entry of outs: print it before the list is freed */
                int rc = tide_cli_usage_error(cmd, "%s and %s would both write %s", sci[j], sci[i],
                                              outs[i]);
                free(outs);
                return rc;
            }
    }
    tide_diff_job *job = NULL;
    double ms = 0;
    int st = tide_diff_job_create(ctx, p->config, &job);
    if (!st)
        st = tide_diff_job_prepare(job, tpath, p, &ms);
    if (st) {
        tide_diff_job_destroy(job);
        free(outs);
        return tide_cli_fail(cmd, st);
    }
    if (!com->json)
        printf("template %s prepared in %.1f ms\n", tpath, ms);
    else
        printf("[\n");
    int failed = 0;
    tide_progress pg;
    tide_progress_start(&pg, nsci, "frames", d->progress, com->json);
    for (int i = 0; i < nsci; i++) {
        tide_timer_clear(ctx);
        tide_diff_request rq;
        request_for(&rq, d, p, cfgs, ncfg, sci[i], tpath, outs[i]);
        rq.make_dir = dir; /* only once there is work to put in it */
        rq.warm = 1;
        tide_diff_report rep;
        tide_progress_clear(&pg); /* the job's log lines and the summary start lines of their own */
        st = tide_diff_job_run(job, &rq, &rep);
        if (st) {
            tide_cli_fail(cmd, st);
            failed++;
        } else {
            if (com->json && i > 0 && failed < i)
                printf(",\n");
            print_summary(com, ctx, sci[i], tpath, outs[i], &rep, d->timings);
            fflush(stdout);
        }
        tide_diff_report_free(&rep);
        tide_progress_step(&pg, st != TIDE_OK);
    }
    tide_progress_end(&pg);
    if (com->json)
        printf("]\n");
    tide_diff_job_destroy(job);
    free(outs);
    if (failed && !com->json)
        fprintf(stderr, "tide diff: %d of %d science frames failed\n", failed, nsci);
    return failed ? 1 : 0;
}

/* Parse argv into @p com, @p p and @p d: 0, 2 on a usage error (printed), -1 after --help. */
static int parse_args(int argc, char **argv, tide_cli_common *com, tide_diff_params *p,
                      diff_args *d) {
    const char *cmd = "diff";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s%s%s\n%s", help, tide_cli_config_help, help_notes, tide_cli_common_help);
            return -1;
        }
        const int c = tide_cli_common_option(com, cmd, argc, argv, &i);
        if (c < 0)
            return 2;
        if (c > 0)
            continue;
        const int k = tide_cli_config_option(&d->cfg, cmd, argc, argv, &i);
        if (k < 0)
            return 2;
        if (k > 0)
            continue;
        if (!strcmp(a, "--timings")) {
            d->timings = 1;
            continue;
        }
        if (!strcmp(a, "--progress") || !strcmp(a, "--no-progress")) {
            d->progress = !strcmp(a, "--progress");
            continue;
        }
        if (!strcmp(a, "--no-cosmetics")) {
            p->cosmetics = 0;
            continue;
        }
        if (!strcmp(a, "--decorrelate")) {
            p->sub.decorrelate = 1;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            if (i + 1 >= argc)
                return tide_cli_usage_error(cmd, "option %s needs a value", a);
            const char *v = argv[++i];
            double x = 0;
            if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
                d->outp = v;
            } else if (!strcmp(a, "--template")) {
                d->tpath = v;
            } else if (!strcmp(a, "--store")) {
                d->store.uri = v;
            } else if (!strcmp(a, "--compress")) {
                char **s = realloc(d->cfg.sets, sizeof *s * (size_t)(d->cfg.nsets + 1));
                if (!s)
                    return tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"));
                d->cfg.sets = s;
                if (tide_cli_compress_option(cmd, v, d->cfg.sets, &d->cfg.nsets))
                    return 2;
            } else if (!strcmp(a, "--object-radius")) {
                if (parse_num(v, 1e-3, 3600, &x))
                    return tide_cli_usage_error(
                        cmd, "--object-radius needs arcseconds in [0.001, 3600] (got '%s')", v);
                d->store.radius = x;
            } else if (!strcmp(a, "--cutout-px")) {
                if (parse_num(v, 5, 255, &x) || x != floor(x) || !((int)x & 1))
                    return tide_cli_usage_error(
                        cmd, "--cutout-px needs an odd side 5..255 (got '%s')", v);
                d->store.cutout_px = (int)x;
            } else if (!strcmp(a, "--rb-model")) {
                d->rb_model = v;
            } else if (!strcmp(a, "--grid")) {
                if (!strcmp(v, "template"))
                    p->grid = TIDE_DIFF_GRID_TEMPLATE;
                else if (!strcmp(v, "science"))
                    p->grid = TIDE_DIFF_GRID_SCIENCE;
                else if (!strcmp(v, "north-up") || !strcmp(v, "northup"))
                    p->grid = TIDE_DIFF_GRID_NORTHUP;
                else
                    return tide_cli_usage_error(
                        cmd, "--grid takes template, science or north-up (got '%s')", v);
            } else if (!strcmp(a, "--fwhm-sci") || !strcmp(a, "--fwhm-tmpl")) {
                if (parse_num(v, 0.3, 100, &x))
                    return tide_cli_usage_error(cmd, "%s needs a FWHM in (0.3, 100] px (got '%s')",
                                                a, v);
                *(!strcmp(a, "--fwhm-sci") ? &p->fwhm_sci : &p->fwhm_tmpl) = x;
            } else if (!strcmp(a, "--resample")) {
                if (tide_resample_parse(v, &p->reproj.kernel))
                    return tide_cli_usage_error(
                        cmd, "--resample takes lanczos3, bilinear or nearest (got '%s')", v);
            } else if (!strcmp(a, "--convolve")) {
                if (!strcmp(v, "auto"))
                    p->sub.convolve = TIDE_SUB_AUTO;
                else if (!strcmp(v, "template"))
                    p->sub.convolve = TIDE_SUB_CONVOLVE_TEMPLATE;
                else if (!strcmp(v, "science"))
                    p->sub.convolve = TIDE_SUB_CONVOLVE_SCIENCE;
                else
                    return tide_cli_usage_error(
                        cmd, "--convolve takes auto, template or science (got '%s')", v);
            } else if (!strcmp(a, "--spatial-degree") || !strcmp(a, "--bg-degree")) {
                if (parse_num(v, 0, 6, &x) || x != floor(x))
                    return tide_cli_usage_error(cmd, "%s needs an integer 0..6 (got '%s')", a, v);
                *(!strcmp(a, "--bg-degree") ? &p->sub.bg_degree : &p->sub.spatial_degree) = (int)x;
            } else if (!strcmp(a, "--basis")) {
                int d[4], k = 0;
                const char *q = v;
                while (*q && k < 4) {
                    char *end;
                    const long x2 = strtol(q, &end, 10);
                    if (end == q || x2 < 0 || x2 > 8)
                        break;
                    d[k++] = (int)x2;
                    q = *end == ',' ? end + 1 : end;
                    if (end[0] != ',' && end[0])
                        break;
                }
                if (*q || k < 1)
                    return tide_cli_usage_error(
                        cmd, "--basis needs 1 to 4 polynomial degrees 0..8, e.g. 6,4,2 (got '%s')",
                        v);
                p->sub.ngauss = k;
                for (int j = 0; j < k; j++)
                    p->sub.degrees[j] = d[j], p->sub.sigmas[j] = 0;
            } else if (!strcmp(a, "--thresh")) {
                if (parse_num(v, 0.5, 1e6, &x))
                    return tide_cli_usage_error(cmd, "--thresh needs an S/N >= 0.5 (got '%s')", v);
                p->cand.det.thresh = x;
            } else if (!strcmp(a, "--stamp")) {
                if (parse_num(v, 5, 255, &x) || x != floor(x) || !((int)x & 1))
                    return tide_cli_usage_error(cmd, "--stamp needs an odd side 5..255 (got '%s')",
                                                v);
                p->stamp = (int)x;
            } else if (!strcmp(a, "--max-fit") || !strcmp(a, "--top")) {
                if (parse_num(v, 0, 1e9, &x) || x != floor(x))
                    return tide_cli_usage_error(cmd, "%s needs a count >= 0 (got '%s')", a, v);
                if (!strcmp(a, "--top"))
                    d->ntop = (int64_t)x;
                else
                    p->max_fit = (int64_t)x;
            } else {
                return tide_cli_usage_error(cmd, "unknown option %s", a);
            }
            continue;
        }
        d->pos[d->npos++] = a;
    }
    return 0;
}

/* The difference of one pair: SCIENCE TEMPLATE into d->outp; no output may replace one of
 * the @p ncfg configuration files @p cfgs. */
static int run_one(const tide_cli_common *com, tide_ctx *ctx, const char *const pos[2],
                   const diff_args *d, const tide_diff_params *p, const char *const *cfgs,
                   int ncfg) {
    const char *cmd = "diff";
    tide_diff_job *job = NULL;
    tide_diff_report rep;
    memset(&rep, 0, sizeof rep);
    int st = tide_diff_job_create(ctx, p->config, &job);
    if (!st) {
        tide_diff_request rq;
        request_for(&rq, d, p, cfgs, ncfg, pos[0], pos[1], d->outp);
        st = tide_diff_job_run(job, &rq, &rep);
    }
    int rc = 0;
    if (st)
        rc = tide_cli_fail(cmd, st);
    else
        print_summary(com, ctx, pos[0], pos[1], d->outp, &rep, d->timings);
    tide_diff_report_free(&rep);
    tide_diff_job_destroy(job);
    return rc;
}

/* A mosaic science exposure against a template mosaic: CCD by CCD, each science CCD against
 * the template's of the same EXTNAME (else CCDNUM), into DIR/EXTNAME; a CCD the template lacks
 * is reported and skipped, a CCD that fails is reported and the others go on (exit 1). */
static int run_mosaic(const tide_cli_common *com, tide_ctx *ctx, const char *const pos[2],
                      const tide_fits_mosaic_plan *sci, const diff_args *d,
                      const tide_diff_params *p, const char *const *cfgs, int ncfg) {
    const char *cmd = "diff", *outp = d->outp;
    tide_fits_mosaic_plan tpl;
    int st = tide_fits_mosaic_plan_make(pos[1], &tpl);
    if (!st && tpl.nccd == 0)
        st = tide_error(TIDE_E_INVAL, "%s is a mosaic of %d CCDs but the template %s is not",
                        pos[0], sci->nccd, pos[1]);
    tide_diff_job *job = NULL;
    if (!st)
        st = tide_diff_job_create(ctx, p->config, &job);
    if (st) {
        tide_fits_mosaic_plan_free(&tpl);
        return tide_cli_fail(cmd, st);
    }
    int failed = 0, missing = 0, done = 0;
    for (int k = 0; k < sci->nccd; k++) {
        const tide_fits_mosaic_ccd *c = &sci->ccd[k];
        const int t = tide_fits_mosaic_find(&tpl, c->extname, c->ccdnum);
        char sspec[4200], tspec[4200], dir[4200];
        snprintf(sspec, sizeof sspec, "%s[%d]", pos[0], c->hdu);
        if (t < 0) {
            fprintf(stderr, "tide diff: %s (%s): no such CCD in the template %s: skipped\n", sspec,
                    c->extname, pos[1]);
            missing++;
            continue;
        }
        snprintf(tspec, sizeof tspec, "%s[%d]", pos[1], tpl.ccd[t].hdu);
        if (c->extname[0])
            snprintf(dir, sizeof dir, "%s/%s", outp, c->extname);
        else
            snprintf(dir, sizeof dir, "%s/hdu%d", outp, c->hdu);
        tide_timer_clear(ctx);
        tide_diff_request rq;
        request_for(&rq, d, p, cfgs, ncfg, sspec, tspec, dir);
        rq.make_dir = outp; /* made once there is a CCD to put in it */
        tide_diff_report rep;
        memset(&rep, 0, sizeof rep);
        const int rs = tide_diff_job_run(job, &rq, &rep);
        if (rs) {
            fprintf(stderr, "tide diff: %s: %s: %s\n", sspec, tide_strerror(rs),
                    tide_error_detail());
            failed++;
        } else {
            print_summary(com, ctx, sspec, tspec, dir, &rep, d->timings);
            done++;
        }
        tide_diff_report_free(&rep);
    }
    if (!com->json)
        printf("%s: %d CCDs differenced, %d missing from the template, %d failed\n", pos[0], done,
               missing, failed);
    tide_diff_job_destroy(job);
    tide_fits_mosaic_plan_free(&tpl);
    return failed || !done ? 1 : 0;
}

/* The command line's checks beyond parsing: 0 to go on, else the exit code (printed). */
static int check_args(const tide_diff_params *p, const diff_args *d) {
    const char *cmd = "diff";
    if (!d->outp)
        return tide_cli_usage_error(cmd, "needs -o DIR");
    if (d->tpath && d->npos < 1)
        return tide_cli_usage_error(cmd, "--template needs one or more SCIENCE.fits frames");
    if (d->tpath && p->grid != TIDE_DIFF_GRID_TEMPLATE)
        return tide_cli_usage_error(cmd, "--template works on the template's grid (no --grid)");
    if (!d->tpath && d->npos != 2)
        return tide_cli_usage_error(cmd, d->npos < 2
                                             ? "needs two frames: SCIENCE.fits TEMPLATE.fits"
                                             : "too many frames: give SCIENCE TEMPLATE, or "
                                               "--template TEMPLATE and the SCIENCE frames");
    return 0;
}

int tide_cmd_diff(int argc, char **argv) {
    const char *cmd = "diff";
    tide_cli_common com;
    tide_cli_common_init(&com);
    tide_diff_params p;
    tide_diff_params_default(&p);
    diff_args d;
    memset(&d, 0, sizeof d);
    d.pos = calloc((size_t)argc, sizeof(const char *));
    d.ntop = 16;
    d.progress = -1;
    if (!d.pos)
        return tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"));
    int rc = parse_args(argc, argv, &com, &p, &d);
    const int go = rc == 0 && (rc = check_args(&p, &d)) == 0;
    if (rc < 0) /* --help */
        rc = 0;
    tide_config *cfg = NULL;
    tide_ctx *ctx = NULL;
    const char *ins[3];
    int nin = 0;
    if (!go)
        goto out;
    /* Each frame's instrument values through the configuration, as tide reduce does. */
    const int cst = tide_cli_config_load(&d.cfg, &cfg);
    if (cst) {
        rc = tide_cli_fail(cmd, cst);
        goto out;
    }
    p.config = cfg;
    p.keep_stamps = d.ntop;
    /* the configuration files are inputs too: no output may replace them */
    if (d.cfg.instrument)
        ins[nin++] = d.cfg.instrument;
    if (d.cfg.def && *d.cfg.def)
        ins[nin++] = d.cfg.def;
    if (d.rb_model) /* the model too */
        ins[nin++] = d.rb_model;
    ctx = tide_cli_make_ctx(&com, cmd);
    if (!ctx) {
        rc = 1;
        goto out;
    }
    if (d.tpath) {
        rc = run_batch(&com, ctx, &d, &p, ins, nin);
    } else {
        const char *pos[2] = {d.pos[0], d.pos[1]};
        tide_fits_mosaic_plan plan;
        const int pst = tide_fits_mosaic_plan_make(pos[0], &plan);
        if (pst)
            rc = tide_cli_fail(cmd, pst);
        else if (plan.nccd > 0)
            rc = run_mosaic(&com, ctx, pos, &plan, &d, &p, ins, nin);
        else
            rc = run_one(&com, ctx, pos, &d, &p, ins, nin);
        tide_fits_mosaic_plan_free(&plan);
    }
out:
    if (ctx)
        tide_ctx_destroy(ctx);
    tide_config_free(cfg);
    tide_cli_config_free(&d.cfg);
    free(d.pos);
    return rc;
}
