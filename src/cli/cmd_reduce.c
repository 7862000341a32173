/* cmd_reduce.c — `tide reduce FRAME -o CATALOG.fits`: one calibrated frame to a source
 * catalog (cosmetics, background, PSF model, detection, photometry; reduce.h), then, with a
 * reference catalog, astrometry and photometric calibration (calibrate.h), written as a FITS
 * table, FITS-LDAC or CSV and into a catalog store (store.h). Parameters come from the
 * instrument configuration with command-line overrides. The job itself is the library's
 * (job.h, tide_reduce_job_run); this file parses the options and prints the summary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_config.h"
#include "reduce_calib.h"
#include "tide/job.h"
#include "tide/redact.h"

static const char *help =
    "usage: tide reduce FRAME -o CATALOG.fits [OPTIONS]\n"
    "       tide reduce EXPOSURE.fits -o CATALOG.fits [OPTIONS]   (a mosaic)\n"
    "\n"
    "Reduce one calibrated frame to an instrumental source catalog: cosmetics (saturation,\n"
    "bleed trails, hot pixels, cosmic rays), background and noise maps, a first detection\n"
    "with a Gaussian of the FWHM guess, a PSF model from isolated bright stars (Gaussian\n"
    "fallback when there are too few), detection with the local PSF, and photometry:\n"
    "apertures, Kron (AUTO), PSF fit, aperture corrections and S/N-optimal radius.\n"
    "With a reference catalog (--refcat or refcat.* in the configuration), then calibrate:\n"
    "verify the header's WCS or plate-solve the field (astrometry.net, hinted, then blind),\n"
    "refine a TAN-SIP WCS on the reference stars, add ALPHA_J2000/DELTA_J2000, match every\n"
    "source (REF_* columns; FLAGS_TIDE bit 65536 = no counterpart), fit the zero point and\n"
    "write MAG_*/MAGERR_* for every flux, limiting magnitudes, airmass, Sun and Moon.\n"
    "Columns use Source Extractor's names and FITS 1-based pixel coordinates (README,\n"
    "\"Catalog columns\"). A frame without sources gives an empty catalog (exit 0).\n"
    "\n"
    "A mosaic exposure (an empty primary and two or more image HDUs, as DECam and LSSTCam\n"
    "write one; FILE[N] reduces one CCD) is one job: every CCD is reduced as FILE[N] alone\n"
    "would be, and -o gets one table per CCD (EXTNAME the CCD's, with CCDNUM, DETSEC...\n"
    "and CCDSTAT); --csv, --back and --rms are written per CCD as NAME.EXTNAME.ext; the\n"
    "store gets each CCD as an image of its own (FILE[N]). A CCD that cannot be reduced\n"
    "(empty, broken) is flagged CCDSTAT = 'FAILED' and the others are written (exit 3).\n"
    "HDUs that are not CCDs (tables, cubes) are skipped and logged (--log-level info).\n"
    "\n"
    "outputs:\n"
    "  -o, --output FILE        the catalog (FITS binary table in HDU 1) [required unless\n"
    "                           --csv is given]\n"
    "  --ldac                   write -o as FITS-LDAC (LDAC_IMHEAD + LDAC_OBJECTS) for SCAMP\n"
    "                           and PSFEx [off]\n"
    "  --csv FILE               also write the catalog as CSV (- = standard output) [none]\n"
    "  --back FILE              also write the background map (FITS image) [none]\n"
    "  --rms FILE               also write the background RMS map (FITS image) [none]\n"
    "  --compress none|rice     --back and --rms maps RICE_1 tile-compressed, quantized as\n"
    "                           fpack -q 4 [output.compress: none]\n"
    "  --store URI              also put the catalog into a store, one transaction that\n"
    "                           replaces an earlier run of the same file: sqlite:PATH or\n"
    "                           PATH.db, postgresql://... or pg:CONNINFO [store.uri, else\n"
    "                           $TIDE_STORE, else none]\n"
    "\n"
    "calibration:\n"
    "  --refcat FILE|URI        reference catalog: FITS or CSV (RA, DEC, MAG, optional\n"
    "                           MAGERR, COLOR; refcat.*_column rename them) or a PostgreSQL\n"
    "                           URI with --refcat-table [refcat.path]\n"
    "  --refcat-table NAME      the Q3C-indexed table of a PostgreSQL reference catalog\n"
    "  --index-dir DIR          astrometry.net index files [astrometry.index_dir, else\n"
    "                           $TIDE_INDEX_DIR, else /usr/share/astrometry]; giving it\n"
    "                           asks for a solve as --solve does\n"
    "  --solve                  plate-solve even without a reference catalog, the\n"
    "                           header WCS only hinting (hinted, then blind) [off]\n"
    "  --no-astrometry          keep the header's WCS as it is [off]\n"
    "\n"
    "parameters (from the configuration unless given here):\n"
    "  --config FILE            instrument configuration (JSON) [none]\n"
    "  --default FILE|none      default.json to use [searched, as tide config]\n"
    "  --set SECTION.KEY=VAL    override a configuration key; repeatable; a KEY without a\n"
    "                           section means processing.KEY (tide config --keys lists them)\n"
    "  --aper-radii R1,R2,...   aperture radii, pixels [processing.aper_radii: 3,5,8]\n"
    "  --bias ADU               zero level still in the frame (e.g. SIMBIAS) [0]\n"
    "  --noise measured|model   sky variance of the flux errors: the RMS map, or the model\n"
    "                           from gain, read noise and the background [measured]\n"
    "                           Without GAIN in the header or camera.gain the gain is\n"
    "                           unknown: the noise comes from the frame, with no Poisson\n"
    "                           term (Source Extractor's GAIN 0), and model is refused\n"
    "  --no-cosmetics           skip the cosmetics stage [off]\n"
    "  --no-psf                 no PSF model: a Gaussian of the FWHM guess [off]\n"
    "  --psf-fit-background     fit a constant local background with each PSF flux [off]\n"
    "  --timings                print the time of every stage [off]\n"
    "\n"
    "Gain, read noise, saturation and NCOMBINE come from the frame's header through the\n"
    "configuration's keyword map (camera.* defaults when a keyword is missing).\n"
    "Exit codes: 0 success, 1 the frame could not be reduced or written (nothing is\n"
    "written), 2 usage error, 3 the catalog was written but the calibration asked for could\n"
    "not be made: the field did not solve (no sky columns; ASTRSTAT = 'FAILED' and ASTRMSG\n"
    "in the header say why) or no zero point could be measured (PHOTSTAT = 'FAILED').\n";

static int parse_radii(const char *s, double *r, int *n) {
    int k = 0;
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v > 0) || !isfinite(v) || k >= TIDE_PIPELINE_MAX_APER)
            return -1;
        r[k++] = v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    *n = k;
    return k > 0 ? 0 : -1;
}

/* FITS outputs are written under a temporary name and renamed into place: a target that
 * exists and is not a regular file (a device such as /dev/stdout, a pipe) would be replaced,
 * so it is refused. */
static int special_file(const char *path) {
    struct stat sb;
    return path && stat(path, &sb) == 0 && !S_ISREG(sb.st_mode);
}

static void json_num(FILE *f, const char *key, double v, const char *tail) {
    if (isfinite(v))
        fprintf(f, "  \"%s\": %.10g%s\n", key, v, tail);
    else
        fprintf(f, "  \"%s\": null%s\n", key, tail);
}

/* Print the summary: text for people, JSON for scripts. */
static void print_summary(const tide_cli_common *com, tide_ctx *ctx, const char *spec,
                          const char *outp, int64_t width, int64_t height,
                          const tide_pipeline_result *r, const tide_calib_result *cal, int timings,
                          FILE *f) {
    const tide_psf_model *m = &r->psf;
    int nt = tide_timer_count(ctx);
    if (com->json) {
        fprintf(f, "{\n  \"frame\": ");
        tide_cli_json_string(f, spec);
        fprintf(f, ",\n  \"catalog\": ");
        tide_cli_json_string(f, outp ? outp : "");
        fprintf(f, ",\n  \"backend\": \"%s\",\n  \"device\": ", tide_backend_name(ctx->backend));
        tide_cli_json_string(f, ctx->device_name);
        fprintf(f, ",\n  \"width\": %lld,\n  \"height\": %lld,\n", (long long)width,
                (long long)height);
        fprintf(f, "  \"n_sources\": %lld,\n  \"n_first\": %lld,\n", (long long)r->n_sources,
                (long long)r->n_first);
        json_num(f, "fwhm", m->fwhm, ",");
        fprintf(f, "  \"fwhm_corners\": [");
        for (int k = 0; k < 4; k++) {
            if (isfinite(m->fwhm_corner[k]))
                fprintf(f, "%s%.6g", k ? ", " : "", m->fwhm_corner[k]);
            else
                fprintf(f, "%snull", k ? ", " : "");
        }
        fprintf(f, "],\n");
        json_num(f, "psf_beta", m->beta, ",");
        json_num(f, "psf_ellipticity", m->ellipticity, ",");
        fprintf(f, "  \"psf_model\": \"%s\",\n  \"psf_stars\": %d,\n",
                r->psf_fallback ? "GAUSSIAN" : "PCA", m->nstars);
        json_num(f, "sky", r->bkg.global_back, ",");
        json_num(f, "sky_rms", r->bkg.global_rms, ",");
        fprintf(f, "  \"apcorr\": %s,\n", r->has_apcorr ? "true" : "false");
        fprintf(f, "  \"cosmic_pixels\": %lld,\n  \"saturated_pixels\": %lld,\n",
                (long long)r->cos.n_cosmic, (long long)r->cos.n_saturated);
        fprintf(f, "  \"device_peak_bytes\": %zu,\n", r->device_peak);
        fprintf(f, "  \"ms_total\": %.3f,\n  \"timings_ms\": {", r->ms_total);
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
        fprintf(f, "\n  }");
        if (cal)
            tide_reduce_calib_print(f, cal, 1);
        fprintf(f, "\n}\n");
        return;
    }
    fprintf(f, "%s: %lldx%lld, %lld sources (first pass %lld) -> %s\n", spec, (long long)width,
            (long long)height, (long long)r->n_sources, (long long)r->n_first,
            outp ? outp : "(no FITS output)");
    fprintf(f,
            "  sky %.6g ADU, rms %.6g ADU; PSF %s from %d stars: FWHM %.3f px (corners %.3f "
            "%.3f %.3f %.3f), beta %.2f, ellipticity %.3f\n",
            r->bkg.global_back, r->bkg.global_rms, r->psf_fallback ? "Gaussian" : "PCA", m->nstars,
            m->fwhm, m->fwhm_corner[0], m->fwhm_corner[1], m->fwhm_corner[2], m->fwhm_corner[3],
            m->beta, m->ellipticity);
    if (r->has_apcorr)
        fprintf(f,
                "  aperture corrections from %d stars; optimal radius at S/N 10/100/1000: "
                "%.2f %.2f %.2f px\n",
                r->apcorr.nstars_corr, tide_apcorr_radius(&r->apcorr, 10),
                tide_apcorr_radius(&r->apcorr, 100), tide_apcorr_radius(&r->apcorr, 1000));
    else
        fprintf(f, "  no aperture corrections (too few isolated stars): FLUX_OPT is NaN\n");
    fprintf(f, "  %s backend (%s), %.1f ms", tide_backend_name(ctx->backend), ctx->device_name,
            r->ms_total);
    if (ctx->backend == TIDE_BACKEND_CUDA)
        fprintf(f, ", peak device memory %.1f MiB", (double)r->device_peak / (1024.0 * 1024.0));
    fprintf(f, "\n");
    if (cal)
        tide_reduce_calib_print(f, cal, 0);
    if (timings) {
        for (int i = 0; i < nt; i++) {
            const char *name;
            double ms;
            int calls;
            if (!tide_timer_get(ctx, i, &name, &ms, &calls))
                fprintf(f, "  %-20s %10.3f ms  (%d call%s)\n", name, ms, calls,
                        calls == 1 ? "" : "s");
        }
    }
}

/* The summary of a mosaic exposure: one line (or JSON object) per CCD. */
static void print_mosaic(const tide_cli_common *com, tide_ctx *ctx, const tide_reduce_request *rq,
                         const tide_reduce_mosaic_report *m) {
    if (com->json) {
        printf("{\n  \"frame\": ");
        tide_cli_json_string(stdout, rq->frame);
        printf(",\n  \"backend\": \"%s\",\n  \"ccds\": %d,\n  \"failed\": %d,\n"
               "  \"ms_total\": %.3f,\n  \"ccd\": [",
               tide_backend_name(ctx->backend), m->nccd, m->nfailed, m->ms_total);
        for (int k = 0; k < m->nccd; k++) {
            const tide_reduce_ccd *c = &m->ccd[k];
            printf("%s\n    {\"hdu\": %d, \"extname\": ", k ? "," : "", c->where.hdu);
            tide_cli_json_string(stdout, c->where.extname);
            printf(", \"ccdnum\": %lld, \"n_sources\": %lld, \"failed\": %s, \"error\": ",
                   (long long)c->where.ccdnum, (long long)c->rep.res.n_sources,
                   c->failed ? "true" : "false");
            tide_cli_json_string(stdout, c->error);
            printf(", \"ms_reduce\": %.3f}", c->rep.ms_reduce);
        }
        printf("\n  ]\n}\n");
        return;
    }
    long long nsrc = 0;
    for (int k = 0; k < m->nccd; k++) {
        const tide_reduce_ccd *c = &m->ccd[k];
        nsrc += (long long)c->rep.res.n_sources;
        if (c->failed)
            printf("%s (%s): FAILED, flagged in its HDU: %s\n", c->spec, c->where.extname,
                   c->error);
        else
            printf("%s (%s): %lldx%lld, %lld sources, %.1f ms\n", c->spec, c->where.extname,
                   (long long)c->rep.width, (long long)c->rep.height,
                   (long long)c->rep.res.n_sources, c->rep.ms_reduce);
    }
    printf("%s: %d CCDs (%d failed), %lld sources -> %s; %s backend (%s), %.1f ms\n", rq->frame,
           m->nccd, m->nfailed, nsrc, rq->catalog ? rq->catalog : "(no FITS output)",
           tide_backend_name(ctx->backend), ctx->device_name, m->ms_total);
}

/* `tide reduce EXPOSURE.fits` of a mosaic: every CCD on one job (job.h). */
static int reduce_mosaic(const tide_cli_common *com, tide_ctx *ctx, tide_reduce_job *job,
                         const tide_reduce_request *rq) {
    tide_reduce_mosaic_report m;
    int st = tide_reduce_job_run_mosaic(job, rq, &m);
    if (st)
        return tide_cli_fail("reduce", st);
    print_mosaic(com, ctx, rq, &m);
    char shown[1300];
    if (m.store[0] && !com->json)
        printf("  stored as %d images in %s\n", m.nccd - m.nfailed,
               tide_redact_uri(m.store, shown, sizeof shown));
    const int rc = m.nfailed || m.nincomplete ? 3 : 0;
    if (rc)
        fprintf(stderr, "tide reduce: warning: %d CCD(s) failed, %d incomplete: %s\n", m.nfailed,
                m.nincomplete, m.warning);
    tide_reduce_mosaic_report_free(&m);
    return rc;
}

int tide_cmd_reduce(int argc, char **argv) {
    const char *cmd = "reduce";
    tide_cli_common com;
    tide_cli_common_init(&com);
    const char *instrument = NULL, *def = NULL;
    tide_reduce_request rq;
    tide_reduce_request_init(&rq);
    tide_reduce_calib_opts *co = &rq.cal;
    int timings = 0;
    char **sets = calloc((size_t)argc + 1, sizeof *sets);
    int nsets = 0, rc = 2;
    if (!sets)
        return tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\n%s", help, tide_cli_common_help);
            rc = 0;
            goto out;
        }
        const int c = tide_cli_common_option(&com, cmd, argc, argv, &i);
        if (c < 0)
            goto out;
        if (c > 0)
            continue;
        const int needs = !strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--csv") ||
                          !strcmp(a, "--config") || !strcmp(a, "--default") ||
                          !strcmp(a, "--set") || !strcmp(a, "--aper-radii") ||
                          !strcmp(a, "--bias") || !strcmp(a, "--noise") || !strcmp(a, "--back") ||
                          !strcmp(a, "--rms") || !strcmp(a, "--refcat") ||
                          !strcmp(a, "--refcat-table") || !strcmp(a, "--index-dir") ||
                          !strcmp(a, "--store") || !strcmp(a, "--compress");
        if (needs && i + 1 >= argc) {
            rc = tide_cli_usage_error(cmd, "option %s needs a value", a);
            goto out;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            rq.catalog = argv[++i];
        } else if (!strcmp(a, "--csv")) {
            rq.csv = argv[++i];
        } else if (!strcmp(a, "--back")) {
            rq.back = argv[++i];
        } else if (!strcmp(a, "--rms")) {
            rq.rms = argv[++i];
        } else if (!strcmp(a, "--compress")) {
            if (tide_cli_compress_option(cmd, argv[++i], sets, &nsets))
                goto out;
        } else if (!strcmp(a, "--refcat")) {
            co->refcat = argv[++i];
        } else if (!strcmp(a, "--refcat-table")) {
            co->refcat_table = argv[++i];
        } else if (!strcmp(a, "--index-dir")) {
            co->index_dir = argv[++i];
        } else if (!strcmp(a, "--store")) {
            co->store = argv[++i];
        } else if (!strcmp(a, "--solve")) {
            co->solve = 1;
        } else if (!strcmp(a, "--no-astrometry")) {
            co->no_astrometry = 1;
        } else if (!strcmp(a, "--config")) {
            instrument = argv[++i];
        } else if (!strcmp(a, "--default")) {
            def = argv[++i];
            if (!strcmp(def, "none"))
                def = "";
        } else if (!strcmp(a, "--set")) {
            const char *v = argv[++i];
            const char *eq = strchr(v, '='), *dot = strchr(v, '.');
            if (!eq) {
                rc = tide_cli_usage_error(cmd, "--set needs SECTION.KEY=VALUE (got '%s')", v);
                goto out;
            }
            if (!dot || dot > eq) { /* a bare key is a processing key */
                size_t n = strlen(v) + 16;
                sets[nsets] = malloc(n);
                if (!sets[nsets]) {
                    rc = tide_cli_fail(cmd, tide_error(TIDE_E_NOMEM, "out of memory"));
                    goto out;
                }
                snprintf(sets[nsets], n, "processing.%s", v);
            } else {
                sets[nsets] = strdup(v);
            }
            nsets++;
        } else if (!strcmp(a, "--aper-radii")) {
            if (parse_radii(argv[++i], rq.aper_radii, &rq.naper)) {
                rc = tide_cli_usage_error(cmd,
                                          "--aper-radii needs 1 to %d radii > 0 separated "
                                          "by commas (got '%s')",
                                          TIDE_PIPELINE_MAX_APER, argv[i]);
                goto out;
            }
        } else if (!strcmp(a, "--bias")) {
            char *end;
            rq.bias = strtod(argv[++i], &end);
            if (end == argv[i] || *end || !isfinite(rq.bias)) {
                rc = tide_cli_usage_error(cmd, "bad value '%s' for --bias", argv[i]);
                goto out;
            }
            rq.have_bias = 1;
        } else if (!strcmp(a, "--noise")) {
            const char *v = argv[++i];
            if (!strcmp(v, "measured"))
                rq.noise = TIDE_NOISE_MEASURED;
            else if (!strcmp(v, "model"))
                rq.noise = TIDE_NOISE_MODEL;
            else {
                rc = tide_cli_usage_error(cmd, "--noise is measured or model (got '%s')", v);
                goto out;
            }
        } else if (!strcmp(a, "--ldac")) {
            rq.ldac = 1;
        } else if (!strcmp(a, "--timings")) {
            timings = 1;
        } else if (!strcmp(a, "--no-cosmetics")) {
            rq.no_cosmetics = 1;
        } else if (!strcmp(a, "--no-psf")) {
            rq.no_psf = 1;
        } else if (!strcmp(a, "--psf-fit-background")) {
            rq.psf_fit_background = 1;
        } else if (a[0] == '-' && a[1]) {
            rc = tide_cli_usage_error(cmd, "unknown option %s", a);
            goto out;
        } else if (rq.frame) {
            rc = tide_cli_usage_error(cmd, "one FRAME only (got '%s' and '%s')", rq.frame, a);
            goto out;
        } else {
            rq.frame = a;
        }
    }
    if (!rq.frame) {
        rc = tide_cli_usage_error(cmd, "missing FRAME");
        goto out;
    }
    if (!rq.catalog && !rq.csv) {
        rc = tide_cli_usage_error(cmd, "no output: give -o CATALOG.fits (or --csv FILE)");
        goto out;
    }
    const char *outs[] = {rq.catalog, rq.back, rq.rms};
    for (int k = 0; k < 3; k++)
        if (special_file(outs[k])) {
            rc = tide_cli_usage_error(cmd,
                                      "%s exists and is not a regular file (FITS outputs "
                                      "are written to a new file and renamed into place)",
                                      outs[k]);
            goto out;
        }
    if (rq.ldac && !rq.catalog) {
        rc = tide_cli_usage_error(cmd, "--ldac writes the -o file: give -o");
        goto out;
    }
    rq.config_files[0] = instrument;
    rq.config_files[1] = def;
    const char *const all_outs[4] = {rq.catalog, rq.csv, rq.back, rq.rms};
    if (tide_reduce_check_outputs(rq.frame, rq.config_files, co->refcat, co->store, all_outs)) {
        rc = tide_cli_fail(cmd, TIDE_E_INVAL);
        goto out;
    }

    /* Configuration: errors name FILE:LINE:COLUMN or the --set assignment. */
    tide_config *cfg = NULL;
    tide_config_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.default_path = def;
    lo.instrument_path = instrument;
    lo.overrides = (const char *const *)sets;
    lo.noverrides = nsets;
    int st = tide_config_load(&cfg, &lo);
    if (st) {
        rc = tide_cli_fail(cmd, st);
        goto out;
    }
    tide_ctx *ctx = tide_cli_make_ctx(&com, cmd);
    if (!ctx) {
        tide_config_free(cfg);
        rc = 1;
        goto out;
    }
    tide_reduce_job *job = NULL;
    tide_reduce_report rep;
    memset(&rep, 0, sizeof rep);
    rc = 1;
    st = tide_reduce_job_create(ctx, cfg, &job);
    tide_fits_mosaic_plan plan;
    memset(&plan, 0, sizeof plan);
    if (!st)
        st = tide_fits_mosaic_plan_make(rq.frame, &plan);
    const int mosaic = plan.nccd > 0;
    tide_fits_mosaic_plan_free(&plan);
    if (!st && mosaic) {
        rc = reduce_mosaic(&com, ctx, job, &rq);
        goto done;
    }
    if (!st)
        st = tide_reduce_job_run(job, &rq, &rep);
    if (st) {
        rc = tide_cli_fail(cmd, st);
        goto done;
    }
    /* With the CSV on standard output, the summary goes to standard error. */
    FILE *sumf = rq.csv && !strcmp(rq.csv, "-") ? stderr : stdout;
    print_summary(&com, ctx, rq.frame, rq.catalog ? rq.catalog : rq.csv, rep.width, rep.height,
                  &rep.res, rep.calibrated ? &rep.cal : NULL, timings, sumf);
    char shown[1300];
    if (rep.store[0] && !com.json)
        fprintf(sumf, "  stored as image %lld in %s (%.1f ms)\n", (long long)rep.image_id,
                tide_redact_uri(rep.store, shown, sizeof shown), rep.ms_store);
    if (rep.incomplete) {
        fprintf(stderr, "tide reduce: warning: %s\n", rep.warning);
        rc = 3;
        goto done;
    }
    rc = 0;
done:
    tide_reduce_report_free(&rep);
    tide_reduce_job_destroy(job);
    tide_ctx_destroy(ctx);
    tide_config_free(cfg);
out:
    for (int i = 0; i < nsets; i++)
        free(sets[i]);
    free(sets);
    return rc;
}
