/* bench_xmatch.c — `tide bench --xmatch`: the crossmatch (crossmatch.h) timed on the CPU
 * (k-d tree, host arrays) and on the GPU (spatial hashing, device-resident arrays; and the
 * host-array path with its uploads), at n1 = n2 = N for each size, beside the floor of the
 * bytes it must move (read four coordinate arrays, write match and separation) over the
 * measured copy bandwidth, and where the GPU starts to win.
 *
 * The field: list 1 uniform in a cap of --field degrees; list 2 is 80% of list 1 moved by up
 * to 0.3 arcsec per axis (shuffled) and 20% unrelated positions. Timing is tide_timer (CUDA
 * events on the GPU, a monotonic clock on the CPU), median of --repeats after --warmup; a CPU
 * size whose warm-up run takes more than 10 s is timed once, so the largest sizes finish. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/outfile.h"
#include "bench_util.h"
#include "cli/cli.h"
#include "tide/crossmatch.h"

#define MAX_SIZES 16
#define MAX_REPEATS 64

static const char *help =
    "usage: tide bench --xmatch [OPTIONS]\n\n"
    "Time the crossmatch of two lists of N positions (n1 = n2 = N) on the CPU (k-d tree) and,\n"
    "when a GPU is usable, on the GPU (spatial hashing; device-resident arrays, and host\n"
    "arrays with their uploads), beside the floor of the bytes moved over the measured copy\n"
    "bandwidth; report where the GPU becomes faster.\n\n"
    "options:\n"
    "  --sizes N[,N...]   list sizes, e.g. 1e3,1e4 [1e3,1e4,1e5,1e6]\n"
    "  --radius R         match radius, arcsec [1.0]\n"
    "  --field DEG        radius of the sky cap holding the positions, degrees [1.0]\n"
    "  --mutual           mutual nearest neighbours only\n"
    "  --repeats N        timed runs per figure; the median is reported [5]\n"
    "  --warmup N         untimed runs first [1]\n"
    "  --json FILE        also write the results as JSON to FILE ('-' = stdout)\n"
    "  --backend B        cpu: the CPU only; auto or cuda: the CPU and the GPU [auto]\n";

typedef struct xb_opts {
    int64_t sizes[MAX_SIZES];
    int nsizes, repeats, warmup, mutual;
    double radius, field;
    const char *json_path;
} xb_opts;

typedef struct xb_res {
    int64_t n, nmatched;
    double cpu_ms; /* k-d tree, host arrays */
    int cpu_runs;
    double gpu_ms;      /* spatial hash, device arrays */
    double upload_ms;   /* the four coordinate arrays, host -> device */
    double gpu_host_ms; /* tide_crossmatch_host on the GPU: upload, match, download */
    double floor_ms;    /* bytes over the copy bandwidth of the GPU (CPU when no GPU) */
    int64_t diffs;      /* pairs where GPU and CPU differ (must be 0) */
} xb_res;

static double rnd(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* Uniform positions in a cap of @p cap degrees around (ra, dec) = (150, 2). */
static void cap_point(uint64_t *sd, double cap, double *ra, double *dec) {
    const double d2r = 0.017453292519943295, ra0 = 150.0 * d2r, th = 88.0 * d2r;
    const double cmin = cos(cap * d2r);
    const double z = cmin + (1 - cmin) * rnd(sd), phi = 6.283185307179586 * rnd(sd);
    const double rr = sqrt(fmax(0.0, 1 - z * z)), v0 = rr * cos(phi), v1 = rr * sin(phi);
    const double x = v0 * cos(th) + z * sin(th), zz = -v0 * sin(th) + z * cos(th);
    double a = atan2(x * sin(ra0) + v1 * cos(ra0), x * cos(ra0) - v1 * sin(ra0)) / d2r;
    *ra = a < 0 ? a + 360.0 : a;
    *dec = asin(fmax(-1.0, fmin(1.0, zz))) / d2r;
}

/* ra1, dec1, ra2, dec2 of n each, in one block of 4 n doubles. */
static double *make_field(int64_t n, double cap) {
    double *b = malloc(sizeof(double) * 4 * (size_t)n);
    if (!b)
        return NULL;
    double *ra1 = b, *de1 = b + n, *ra2 = b + 2 * n, *de2 = b + 3 * n;
    uint64_t sd = 12345u + (uint64_t)n;
    for (int64_t i = 0; i < n; i++)
        cap_point(&sd, cap, &ra1[i], &de1[i]);
    const int64_t nm = n * 4 / 5;
    for (int64_t j = 0; j < nm; j++) {
        de2[j] = de1[j] + 0.3 * (2 * rnd(&sd) - 1) / 3600.0;
        ra2[j] = ra1[j] + 0.3 * (2 * rnd(&sd) - 1) / 3600.0 / cos(de1[j] * 0.017453292519943295);
    }
    for (int64_t j = nm - 1; j > 0; j--) {
        const int64_t k = (int64_t)(rnd(&sd) * (double)(j + 1));
        double t = ra2[j];
        ra2[j] = ra2[k];
        ra2[k] = t;
        t = de2[j];
        de2[j] = de2[k];
        de2[k] = t;
    }
    for (int64_t j = nm; j < n; j++)
        cap_point(&sd, cap, &ra2[j], &de2[j]);
    return b;
}

/* What one timed call does. */
typedef struct xb_call {
    int kind; /* 0 crossmatch (ctx side), 1 crossmatch_host, 2 upload */
    const double *a[4];
    double *dev[4];
    int64_t n;
    const tide_xmatch_params *p;
    int64_t *match;
    double *sep;
    int64_t *nmatched;
} xb_call;

static int do_call(tide_ctx *ctx, const xb_call *c) {
    if (c->kind == 2) {
        int st = TIDE_OK;
        for (int k = 0; k < 4 && !st; k++)
            st = tide_memcpy(ctx, c->dev[k], 1, c->a[k], 0, sizeof(double) * (size_t)c->n);
        return st;
    }
    if (c->kind == 1)
        return tide_crossmatch_host(ctx, c->a[0], c->a[1], c->n, c->a[2], c->a[3], c->n, c->p,
                                    c->match, c->sep, c->nmatched);
    return tide_crossmatch(ctx, c->a[0], c->a[1], c->n, c->a[2], c->a[3], c->n, c->p, c->match,
                           c->sep, c->nmatched);
}

/* Median ms of the timed runs after the warm-up; *runs gets their number (1 when a warm-up
 * run took longer than @p slow_ms). */
static int time_call(tide_ctx *ctx, const xb_opts *o, const xb_call *c, double slow_ms, double *ms,
                     int *runs) {
    double t[MAX_REPEATS];
    int n = o->repeats, st = TIDE_OK;
    for (int i = 0; i < o->warmup && !st; i++) {
        const double t0 = tide_now();
        st = do_call(ctx, c);
        if (!st)
            st = tide_sync(ctx);
        if ((tide_now() - t0) * 1e3 > slow_ms)
            n = 1;
    }
    for (int i = 0; i < n && !st; i++) {
        tide_timer tm;
        st = tide_timer_start(ctx, &tm, "bench.xmatch");
        if (!st)
            st = do_call(ctx, c);
        if (!st)
            st = tide_timer_stop(ctx, &tm, &t[i]);
        if (!st && t[i] > slow_ms)
            n = i + 1;
    }
    if (!st) {
        *ms = tide_bench_median(t, n);
        if (runs)
            *runs = n;
    }
    return st;
}

/* Copy bandwidth (bytes read + written per ms) on the context's side: device-to-device on a
 * CUDA context, host memcpy on the CPU (one thread: the CPU match is not bandwidth-bound). */
static int bandwidth(tide_ctx *ctx, double *bpms) {
    const int dev = ctx->backend == TIDE_BACKEND_CUDA;
    const size_t bytes = (size_t)(dev ? 256 : 64) << 20;
    void *a = NULL, *b = NULL;
    int st = dev ? tide_device_alloc(ctx, bytes, &a) : tide_host_pinned_alloc(ctx, bytes, &a);
    if (!st)
        st = dev ? tide_device_alloc(ctx, bytes, &b) : tide_host_pinned_alloc(ctx, bytes, &b);
    if (!st && !dev) {
        memset(a, 1, bytes);
        memset(b, 0, bytes);
    }
    double t[5];
    for (int i = 0; i < 6 && !st; i++) {
        tide_timer tm;
        st = tide_timer_start(ctx, &tm, "bench.memcpy");
        if (!st)
            st = tide_memcpy(ctx, b, dev, a, dev, bytes);
        if (!st)
            st = tide_timer_stop(ctx, &tm, i ? &t[i - 1] : NULL);
    }
    if (!st)
        *bpms = 2.0 * (double)bytes / fmax(tide_bench_median(t, 5), 1e-6);
    if (dev) {
        tide_device_free(ctx, a);
        tide_device_free(ctx, b);
    } else {
        tide_host_pinned_free(ctx, a);
        tide_host_pinned_free(ctx, b);
    }
    return st;
}

static int bench_gpu(tide_ctx *gpu, const xb_opts *o, const double *f, const int64_t *cpu_match,
                     xb_res *r) {
    const int64_t n = r->n;
    const size_t b = sizeof(double) * (size_t)n;
    tide_xmatch_params p = {o->radius, o->mutual};
    void *d[6] = {NULL};
    int64_t *hm = malloc(sizeof(int64_t) * (size_t)n);
    double *hs = malloc(b);
    int st = hm && hs ? TIDE_OK : tide_error(TIDE_E_NOMEM, "bench: host buffers");
    for (int k = 0; k < 6 && !st; k++)
        st = tide_device_alloc(gpu, k == 4 ? sizeof(int64_t) * (size_t)n : b, &d[k]);
    xb_call up = {
        2, {f, f + n, f + 2 * n, f + 3 * n}, {d[0], d[1], d[2], d[3]}, n, &p, NULL, NULL, NULL};
    if (!st)
        st = time_call(gpu, o, &up, 1e9, &r->upload_ms, NULL);
    xb_call dev = {0, {d[0], d[1], d[2], d[3]}, {NULL}, n, &p, d[4], d[5], NULL};
    if (!st)
        st = time_call(gpu, o, &dev, 1e9, &r->gpu_ms, NULL);
    xb_call host = {1, {f, f + n, f + 2 * n, f + 3 * n}, {NULL}, n, &p, hm, hs, NULL};
    if (!st)
        st = time_call(gpu, o, &host, 1e9, &r->gpu_host_ms, NULL);
    /* The device-resident result against the CPU's. */
    if (!st)
        st = tide_memcpy(gpu, hm, 0, d[4], 1, sizeof(int64_t) * (size_t)n);
    r->diffs = 0;
    for (int64_t i = 0; i < n && !st; i++)
        r->diffs += hm[i] != cpu_match[i];
    for (int k = 0; k < 6; k++)
        tide_device_free(gpu, d[k]);
    free(hm);
    free(hs);
    return st;
}

static int bench_size(tide_ctx *cpu, tide_ctx *gpu, const xb_opts *o, double bpms, xb_res *r) {
    const int64_t n = r->n;
    double *f = make_field(n, o->field);
    int64_t *m = malloc(sizeof(int64_t) * (size_t)n);
    double *s = malloc(sizeof(double) * (size_t)n);
    int st =
        f && m && s ? TIDE_OK : tide_error(TIDE_E_NOMEM, "bench: %lld positions", (long long)n);
    tide_xmatch_params p = {o->radius, o->mutual};
    xb_call c = {0, {f, f + n, f + 2 * n, f + 3 * n}, {NULL}, n, &p, m, s, &r->nmatched};
    if (!st)
        st = time_call(cpu, o, &c, 10e3, &r->cpu_ms, &r->cpu_runs);
    /* read 4 coordinate arrays, write match (int64) and separation (double) */
    r->floor_ms = 6.0 * 8.0 * (double)n / bpms;
    if (!st && gpu)
        st = bench_gpu(gpu, o, f, m, r);
    free(f);
    free(m);
    free(s);
    return st;
}

/* ---- output ----------------------------------------------------------------------------- */

/* Smallest benchmarked N from which the GPU figure stays below the CPU's; -1 if none. */
static int64_t crossover(const xb_res *r, int n, int with_upload) {
    int64_t x = -1;
    for (int i = n - 1; i >= 0; i--) {
        const double g = with_upload ? r[i].gpu_host_ms : r[i].gpu_ms;
        if (g < r[i].cpu_ms)
            x = r[i].n;
        else
            break;
    }
    return x;
}

static void print_text(FILE *f, const tide_ctx *cpu, const tide_ctx *gpu, const xb_opts *o,
                       double bpms, const xb_res *r, int n) {
    fprintf(f,
            "tide bench --xmatch: radius %g\", field %g deg, %s; median of %d after %d "
            "warm-up\nCPU: %s; GPU: %s\n",
            o->radius, o->field, o->mutual ? "mutual" : "nearest", o->repeats, o->warmup,
            cpu->device_name, gpu ? gpu->device_name : "none");
    fprintf(f, "copy bandwidth %.1f GB/s (read + write, %s)\n\n", bpms * 1e-6,
            gpu ? "device" : "host");
    fprintf(f, "%9s %9s | %10s", "N", "matched", "CPU ms");
    if (gpu)
        fprintf(f, " | %9s %9s %9s %9s %8s %6s", "GPU ms", "upload", "GPU+io", "floor", "speedup",
                "diffs");
    else
        fprintf(f, " | %9s", "floor");
    fputc('\n', f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%9lld %9lld | %10.3f", (long long)r[i].n, (long long)r[i].nmatched,
                r[i].cpu_ms);
        if (gpu)
            fprintf(f, " | %9.3f %9.3f %9.3f %9.4f %7.1fx %6lld", r[i].gpu_ms, r[i].upload_ms,
                    r[i].gpu_host_ms, r[i].floor_ms, r[i].cpu_ms / fmax(r[i].gpu_ms, 1e-9),
                    (long long)r[i].diffs);
        else
            fprintf(f, " | %9.4f", r[i].floor_ms);
        fputc('\n', f);
    }
    if (!gpu)
        return;
    const int64_t x0 = crossover(r, n, 0), x1 = crossover(r, n, 1);
    fputc('\n', f);
    fprintf(f, "GPU faster than the CPU (device-resident): %s", x0 < 0 ? "at no size here\n" : "");
    if (x0 >= 0)
        fprintf(f, "from N = %lld (n1 n2 = %.3g)\n", (long long)x0, (double)x0 * (double)x0);
    fprintf(f, "GPU faster than the CPU (host arrays, with transfers): %s",
            x1 < 0 ? "at no size here\n" : "");
    if (x1 >= 0)
        fprintf(f, "from N = %lld (n1 n2 = %.3g; TIDE_XMATCH_GPU_MIN_WORK = %.3g)\n", (long long)x1,
                (double)x1 * (double)x1, TIDE_XMATCH_GPU_MIN_WORK);
}

static void print_json(FILE *f, const tide_ctx *cpu, const tide_ctx *gpu, const xb_opts *o,
                       double bpms, const xb_res *r, int n) {
    char date[32];
    tide_bench_utc_now(date);
    fprintf(f,
            "{\n  \"tide_version\": \"%s\",\n  \"date\": \"%s\",\n  \"benchmark\": \"xmatch\",\n"
            "  \"cpu\": ",
            TIDE_VERSION_STRING, date);
    tide_cli_json_string(f, cpu->device_name);
    fputs(",\n  \"gpu\": ", f);
    if (gpu)
        tide_cli_json_string(f, gpu->device_name);
    else
        fputs("null", f);
    fprintf(f,
            ",\n  \"threads\": %d,\n  \"radius_arcsec\": %.6g,\n  \"field_deg\": %.6g,\n"
            "  \"mutual\": %s,\n  \"repeats\": %d,\n  \"warmup\": %d,\n"
            "  \"copy_bandwidth_GBps\": %.6g,\n  \"crossover_n_device\": %lld,\n"
            "  \"crossover_n_host\": %lld,\n  \"sizes\": [",
            cpu->threads, o->radius, o->field, o->mutual ? "true" : "false", o->repeats, o->warmup,
            bpms * 1e-6, (long long)(gpu ? crossover(r, n, 0) : -1),
            (long long)(gpu ? crossover(r, n, 1) : -1));
    for (int i = 0; i < n; i++) {
        fprintf(f,
                "%s\n    {\"n\": %lld, \"matched\": %lld, \"cpu_ms\": %.6g, \"cpu_runs\": %d, "
                "\"floor_ms\": %.6g",
                i ? "," : "", (long long)r[i].n, (long long)r[i].nmatched, r[i].cpu_ms,
                r[i].cpu_runs, r[i].floor_ms);
        if (gpu)
            fprintf(f,
                    ", \"gpu_ms\": %.6g, \"upload_ms\": %.6g, \"gpu_host_ms\": %.6g, "
                    "\"gpu_cpu_pair_diffs\": %lld",
                    r[i].gpu_ms, r[i].upload_ms, r[i].gpu_host_ms, (long long)r[i].diffs);
        fputc('}', f);
    }
    fputs("\n  ]\n}\n", f);
}

/* ---- the command ------------------------------------------------------------------------ */

static int parse_sizes(const char *s, xb_opts *o) {
    o->nsizes = 0;
    while (*s) {
        char *end;
        const double v = strtod(s, &end);
        if (end == s || !(v >= 1 && v <= 1e8) || o->nsizes == MAX_SIZES)
            return -1;
        o->sizes[o->nsizes++] = (int64_t)llround(v);
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return o->nsizes ? 0 : -1;
}

static int parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    const double v = strtod(s, &end);
    if (end == s || *end || !(v > lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

int tide_bench_xmatch(int argc, char **argv) {
    const char *cmd = "bench --xmatch";
    tide_cli_common c;
    tide_cli_common_init(&c);
    xb_opts o;
    memset(&o, 0, sizeof o);
    parse_sizes("1e3,1e4,1e5,1e6", &o);
    o.repeats = 5;
    o.warmup = 1;
    o.radius = 1.0;
    o.field = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int r =
            tide_bench_common_arg(cmd, "--xmatch", help, &c, argc, argv, &i, &o.json_path);
        if (r != TIDE_BENCH_ARG_OWN) {
            if (r == TIDE_BENCH_ARG_TAKEN)
                continue;
            return r == TIDE_BENCH_ARG_EXIT_OK ? 0 : 2;
        }
        if (!strcmp(a, "--mutual")) {
            o.mutual = 1;
            continue;
        }
        if (i + 1 >= argc)
            return tide_cli_usage_error(cmd, "unknown option '%s' or missing value", a);
        const char *v = argv[++i];
        double x;
        if (!strcmp(a, "--sizes")) {
            if (parse_sizes(v, &o))
                return tide_cli_usage_error(cmd,
                                            "bad --sizes '%s' (N[,N...], 1..1e8, at most "
                                            "%d)",
                                            v, MAX_SIZES);
        } else if (!strcmp(a, "--radius")) {
            if (parse_double(v, 0.0, 3600.0, &o.radius))
                return tide_cli_usage_error(cmd, "bad --radius '%s' (0 < R <= 3600)", v);
        } else if (!strcmp(a, "--field")) {
            if (parse_double(v, 0.0, 90.0, &o.field))
                return tide_cli_usage_error(cmd, "bad --field '%s' (0 < DEG <= 90)", v);
        } else if (!strcmp(a, "--repeats") || !strcmp(a, "--warmup")) {
            const int rep = !strcmp(a, "--repeats");
            if (parse_double(v, rep ? 0.5 : -0.5, rep ? MAX_REPEATS : 100, &x) || x != floor(x))
                return tide_cli_usage_error(cmd, "bad %s '%s'", a, v);
            *(rep ? &o.repeats : &o.warmup) = (int)x;
        } else {
            return tide_cli_usage_error(cmd, "unknown option '%s'", a);
        }
    }
    /* The CPU always (it is the reference); the GPU unless --backend cpu. */
    const tide_backend want = c.ctx_opt.backend;
    tide_cli_common cc = c;
    cc.ctx_opt.backend = TIDE_BACKEND_CPU;
    tide_ctx *cpu = tide_cli_make_ctx(&cc, cmd), *gpu = NULL;
    if (!cpu)
        return 1;
    if (want == TIDE_BACKEND_CUDA || (want == TIDE_BACKEND_AUTO && tide_cuda_available(NULL))) {
        cc.ctx_opt.backend = TIDE_BACKEND_CUDA;
        gpu = tide_cli_make_ctx(&cc, cmd);
        if (!gpu) {
            tide_ctx_destroy(cpu);
            return 1;
        }
    }
    double bpms = 0.0;
    int st = bandwidth(gpu ? gpu : cpu, &bpms);
    xb_res res[MAX_SIZES];
    memset(res, 0, sizeof res);
    int done = 0;
    for (int i = 0; i < o.nsizes && !st; i++, done++) {
        res[i].n = o.sizes[i];
        tide_log(&cpu->log, TIDE_LOG_INFO, "bench", "crossmatch N = %lld", (long long)res[i].n);
        st = bench_size(cpu, gpu, &o, bpms, &res[i]);
        if (st)
            tide_error_prefix(st, "N = %lld: ", (long long)res[i].n);
    }
    const int json_stdout = c.json || (o.json_path && !strcmp(o.json_path, "-"));
    if (!st && !json_stdout)
        print_text(stdout, cpu, gpu, &o, bpms, res, done);
    if (!st && json_stdout)
        print_json(stdout, cpu, gpu, &o, bpms, res, done);
    if (!st && o.json_path && strcmp(o.json_path, "-")) {
        tide_outfile of;
        FILE *f = NULL;
        st = tide_outfile_open(&of, o.json_path, &f);
        if (!st) {
            print_json(f, cpu, gpu, &o, bpms, res, done);
            st = tide_outfile_close(&of, f);
        }
    }
    int diffs = 0;
    for (int i = 0; i < done; i++)
        diffs |= res[i].diffs != 0;
    if (!st && diffs)
        st = tide_error(TIDE_E_INTERNAL, "the GPU and CPU crossmatch disagree (see 'diffs')");
    tide_ctx_destroy(gpu);
    tide_ctx_destroy(cpu);
    return st ? tide_cli_fail(cmd, st) : 0;
}
