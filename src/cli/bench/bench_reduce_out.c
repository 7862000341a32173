/* bench_reduce_out.c — the reports of `tide bench --reduce`: a text table per frame and a
 * summary for people, the same figures as one JSON document for scripts (bench/compare.py).
 * Every figure stands beside its floor and, where issue 3 sets one, its target. */
#include <math.h>
#include <string.h>

#include "bench_reduce.h"
#include "bench_util.h"
#include "cli/cli.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static double stage_floor(const tide_br_stage *s) {
    if (s->bytes_floor_ms < 0 && s->fft_floor_ms < 0)
        return -1.0;
    return (s->bytes_floor_ms > 0 ? s->bytes_floor_ms : 0.0) +
           (s->fft_floor_ms > 0 ? s->fft_floor_ms : 0.0);
}

static const tide_br_stage *find_stage(const tide_br_run *r, const char *name) {
    for (int k = 0; k < r->nstages; k++)
        if (!strcmp(r->stages[k].name, name))
            return &r->stages[k];
    return NULL;
}

/* "12.345" or "-" in a field of @p w characters. */
static void fnum(FILE *f, int w, double v, int prec) {
    if (v < 0 || !isfinite(v))
        fprintf(f, " %*s", w, "-");
    else
        fprintf(f, " %*.*f", w, prec, v);
}

/* Targets are for one H200: judged on the CUDA backend only. */
static const char *verdict(const tide_ctx *ctx, double v, double target) {
    if (ctx->backend != TIDE_BACKEND_CUDA)
        return "(GPU target)";
    return v <= target ? "met" : "NOT met";
}

static void print_run(FILE *f, const tide_ctx *ctx, const tide_br_opts *o, const tide_br_run *r) {
    const int cuda = ctx->backend == TIDE_BACKEND_CUDA;
    double t_ms, t_gib;
    tide_br_targets(r, &t_ms, &t_gib);
    fprintf(f,
            "\n%lldx%lld %s: %lld stars simulated (seed %llu, %lld galaxies, %.0f ms), %lld "
            "sources (first pass %lld), FWHM %.3f px%s\n",
            (long long)r->w, (long long)r->h, r->dense ? "dense" : "sparse", (long long)r->nstars,
            (unsigned long long)o->seed, (long long)r->ngalaxies, r->sim_ms,
            (long long)r->n_sources, (long long)r->n_first, r->fwhm,
            r->psf_fallback ? " (Gaussian PSF fallback)" : "");
    fprintf(f, "  %-24s %10s %5s %10s %10s %10s %8s\n", "stage", "ms", "calls", "floor ms",
            "bytes fl.", "FFT fl.", "x floor");
    for (int k = 0; k < r->nstages; k++) {
        const tide_br_stage *s = &r->stages[k];
        const int top = !strncmp(s->name, "reduce.", 7);
        const double fl = stage_floor(s);
        fprintf(f, "  %s%-*s %10.3f %5d", top ? "" : "  ", top ? 24 : 22, s->name, s->ms, s->calls);
        fnum(f, 10, fl, 3);
        fnum(f, 10, s->bytes_floor_ms, 3);
        fnum(f, 10, s->fft_floor_ms, 3);
        fnum(f, 8, fl > 0 ? s->ms / fl : -1.0, 1);
        fputc('\n', f);
    }
    fprintf(f, "  %-24s %10.3f %5s", "stages (sum)", r->stage_sum_ms, "");
    fputc('\n', f);
    fprintf(f, "  %-24s %10.3f %5s", "end to end", r->e2e_ms, "");
    fnum(f, 10, r->e2e_floor_ms, 3);
    fprintf(f, " %10s %10s", "", "");
    fnum(f, 8, r->e2e_floor_ms > 0 ? r->e2e_ms / r->e2e_floor_ms : -1.0, 1);
    fprintf(f, "   (min %.3f, max %.3f)", r->e2e_min_ms, r->e2e_max_ms);
    if (t_ms > 0)
        fprintf(f, "   target <= %.0f ms: %s", t_ms, verdict(ctx, r->e2e_ms, t_ms));
    fputc('\n', f);
    for (int p = 0; p < 2; p++) {
        const tide_br_fft *x = &r->fft[p];
        fprintf(f,
                "  matched filter pass %d: %lldx%lld kernel%s, padded %lldx%lld: R2C %.3f + %d x "
                "C2R %.3f = %.3f ms; correlator setup %.3f ms\n",
                p + 1, (long long)x->ksize, (long long)x->ksize, x->nk > 1 ? "s" : "",
                (long long)x->px, (long long)x->py, x->r2c_ms, x->nk, x->c2r_ms, x->floor_ms,
                x->setup_ms);
    }
    if (cuda) {
        fprintf(f, "  peak device memory %.3f GiB (of which the resident input frame %.3f GiB)",
                (double)r->peak_bytes / GIB, (double)r->input_bytes / GIB);
        if (t_gib > 0)
            fprintf(f, "   target <= %.0f GiB: %s", t_gib,
                    verdict(ctx, (double)r->peak_bytes / GIB, t_gib));
        fputc('\n', f);
    } else {
        fprintf(f, "  peak device memory: n/a (CPU backend)\n");
    }
}

void tide_br_print_text(FILE *f, const tide_ctx *ctx, const tide_br_opts *o, double bpms,
                        const tide_br_run *r, int n) {
    const int cuda = ctx->backend == TIDE_BACKEND_CUDA;
    fprintf(f,
            "tide bench --reduce: %s on %s; median of %d after %d warm-up; copy bandwidth "
            "%.1f GB/s (read + write)\n",
            tide_backend_name(ctx->backend), ctx->device_name, o->repeats, o->warmup, bpms * 1e-6);
    fprintf(f, "targets (issue 3, one H200): 14200x10650 dense <= 300 ms end to end, 2048x2048 "
               "<= 15 ms, peak device memory of the 151 MP frame <= 6 GiB\n");
    fprintf(f, "floors: bytes each stage must move over the copy bandwidth, plus the matched "
               "filter's FFTs (1 R2C + nk C2R of the padded shape), measured in this run;\n"
               "indented sub-stages total all their calls (detect.* = both detection passes)\n");
    for (int i = 0; i < n; i++)
        print_run(f, ctx, o, &r[i]);
    fprintf(f, "\nsummary\n%-12s %-7s %8s %8s %10s %9s %8s %10s %10s %9s  %s\n", "frame", "density",
            "stars", "sources", "e2e ms", "floor ms", "x floor", "detect ms", "filter ms",
            "peak GiB", "targets");
    for (int i = 0; i < n; i++) {
        const tide_br_run *x = &r[i];
        char a[32];
        snprintf(a, sizeof a, "%lldx%lld", (long long)x->w, (long long)x->h);
        const tide_br_stage *d1 = find_stage(x, "reduce.detect1");
        const tide_br_stage *d2 = find_stage(x, "reduce.detect2");
        const tide_br_stage *fl = find_stage(x, "detect.filter");
        double t_ms, t_gib;
        tide_br_targets(x, &t_ms, &t_gib);
        fprintf(f, "%-12s %-7s %8lld %8lld %10.3f %9.3f %8.1f", a, x->dense ? "dense" : "sparse",
                (long long)x->nstars, (long long)x->n_sources, x->e2e_ms, x->e2e_floor_ms,
                x->e2e_floor_ms > 0 ? x->e2e_ms / x->e2e_floor_ms : 0.0);
        fnum(f, 10, (d1 ? d1->ms : 0.0) + (d2 ? d2->ms : 0.0), 3);
        fnum(f, 10, fl ? fl->ms : -1.0, 3);
        fnum(f, 9, cuda ? (double)x->peak_bytes / GIB : -1.0, 3);
        fputs("  ", f);
        if (t_ms > 0)
            fprintf(f, "e2e <= %.0f ms %s ", t_ms, verdict(ctx, x->e2e_ms, t_ms));
        if (t_gib > 0)
            fprintf(f, "peak <= %.0f GiB %s", t_gib,
                    cuda ? verdict(ctx, (double)x->peak_bytes / GIB, t_gib) : "n/a (CPU)");
        fputc('\n', f);
    }
}

/* A number, or null when it is not finite or (with @p neg_null) negative. */
static void jnum(FILE *f, double v, int neg_null) {
    if (!isfinite(v) || (neg_null && v < 0))
        fputs("null", f);
    else
        fprintf(f, "%.6g", v);
}

static void json_run(FILE *f, const tide_ctx *ctx, const tide_br_opts *o, const tide_br_run *r) {
    const int cuda = ctx->backend == TIDE_BACKEND_CUDA;
    double t_ms, t_gib;
    tide_br_targets(r, &t_ms, &t_gib);
    fprintf(f,
            "    {\"width\": %lld, \"height\": %lld, \"megapixels\": %.4g, \"density\": \"%s\",\n",
            (long long)r->w, (long long)r->h, (double)(r->w * r->h) * 1e-6,
            r->dense ? "dense" : "sparse");
    fprintf(f,
            "     \"sim\": {\"seed\": %llu, \"width\": %lld, \"height\": %lld, \"nstars\": %lld, "
            "\"ngalaxies\": %lld, \"ms\": %.6g},\n",
            (unsigned long long)o->seed, (long long)r->w, (long long)r->h, (long long)r->nstars,
            (long long)r->ngalaxies, r->sim_ms);
    fprintf(f, "     \"n_sources\": %lld, \"n_first\": %lld, \"psf_fallback\": %s, \"fwhm\": ",
            (long long)r->n_sources, (long long)r->n_first, r->psf_fallback ? "true" : "false");
    jnum(f, r->fwhm, 0);
    fprintf(f,
            ",\n     \"e2e_ms\": %.6g, \"e2e_min_ms\": %.6g, \"e2e_max_ms\": %.6g, "
            "\"stage_sum_ms\": %.6g, \"e2e_floor_ms\": %.6g, \"ratio_to_floor\": ",
            r->e2e_ms, r->e2e_min_ms, r->e2e_max_ms, r->stage_sum_ms, r->e2e_floor_ms);
    jnum(f, r->e2e_floor_ms > 0 ? r->e2e_ms / r->e2e_floor_ms : NAN, 0);
    fputs(",\n     \"peak_device_bytes\": ", f);
    if (cuda)
        fprintf(f, "%zu, \"input_frame_bytes\": %zu", r->peak_bytes, r->input_bytes);
    else
        fputs("null, \"input_frame_bytes\": null", f);
    fputs(",\n     \"targets\": {\"e2e_ms\": ", f);
    jnum(f, t_ms, 1);
    fputs(", \"e2e_met\": ", f);
    fputs(t_ms > 0 && cuda ? (r->e2e_ms <= t_ms ? "true" : "false") : "null", f);
    fputs(", \"peak_device_GiB\": ", f);
    jnum(f, t_gib, 1);
    fputs(", \"peak_met\": ", f);
    fputs(t_gib > 0 && cuda ? ((double)r->peak_bytes / GIB <= t_gib ? "true" : "false") : "null",
          f);
    fputs("},\n     \"matched_filter_fft\": [", f);
    for (int p = 0; p < 2; p++) {
        const tide_br_fft *x = &r->fft[p];
        fprintf(f,
                "%s{\"pass\": %d, \"kernel\": %lld, \"kernels\": %d, \"padded\": [%lld, %lld], "
                "\"r2c_ms\": %.6g, \"c2r_ms\": %.6g, \"floor_ms\": %.6g, "
                "\"correlator_setup_ms\": %.6g}",
                p ? ",\n                            " : "", p + 1, (long long)x->ksize, x->nk,
                (long long)x->px, (long long)x->py, x->r2c_ms, x->c2r_ms, x->floor_ms, x->setup_ms);
    }
    fputs("],\n     \"stages\": [", f);
    for (int k = 0; k < r->nstages; k++) {
        const tide_br_stage *s = &r->stages[k];
        const double fl = stage_floor(s);
        fprintf(f, "%s\n       {\"name\": ", k ? "," : "");
        tide_cli_json_string(f, s->name);
        fprintf(f, ", \"top\": %s, \"ms\": %.6g, \"calls\": %d, \"bytes\": ",
                strncmp(s->name, "reduce.", 7) ? "false" : "true", s->ms, s->calls);
        jnum(f, s->bytes, 1);
        fputs(", \"bytes_floor_ms\": ", f);
        jnum(f, s->bytes_floor_ms, 1);
        fputs(", \"fft_floor_ms\": ", f);
        jnum(f, s->fft_floor_ms, 1);
        fputs(", \"floor_ms\": ", f);
        jnum(f, fl, 1);
        fputs(", \"ratio_to_floor\": ", f);
        jnum(f, fl > 0 ? s->ms / fl : NAN, 0);
        fputc('}', f);
    }
    fputs("]}", f);
}

void tide_br_print_json(FILE *f, const tide_ctx *ctx, const tide_br_opts *o, double bpms,
                        const tide_br_run *r, int n) {
    char date[32];
    tide_bench_utc_now(date);
    fprintf(f,
            "{\n  \"bench\": \"reduce\",\n  \"tide_version\": \"%s\",\n  \"date\": \"%s\",\n"
            "  \"backend\": \"%s\",\n  \"device\": ",
            TIDE_VERSION_STRING, date, tide_backend_name(ctx->backend));
    tide_cli_json_string(f, ctx->device_name);
    fprintf(f,
            ",\n  \"threads\": %d,\n  \"repeats\": %d,\n  \"warmup\": %d,\n  \"seed\": %llu,\n"
            "  \"stars_sparse\": %lld,\n  \"stars_dense_151mp\": %lld,\n"
            "  \"copy_bandwidth_GBps\": %.6g,\n",
            ctx->threads, o->repeats, o->warmup, (unsigned long long)o->seed,
            (long long)o->stars_sparse, (long long)o->stars_dense, bpms * 1e-6);
    fputs("  \"targets\": {\"e2e_ms_14200x10650_dense\": 300, \"e2e_ms_2048x2048\": 15, "
          "\"peak_device_GiB_14200x10650\": 6, \"detect_speedup_vs_sep_gpu\": 50},\n"
          "  \"runs\": [\n",
          f);
    for (int i = 0; i < n; i++) {
        json_run(f, ctx, o, &r[i]);
        fputs(i + 1 < n ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
}
