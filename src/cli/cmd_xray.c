/* cmd_xray.c — `tide xray probe|sim|traces|fit`: X-ray detector delay scans (issue 20), the
 * command surface of src/xray/ (tide/xray.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tide/xray.h"

static const char *help =
    "usage: tide xray probe ON.h5 OFF.h5 [--json]\n"
    "       tide xray sim -o DIR [sim options]\n"
    "       tide xray traces ON.h5 OFF.h5 -o DIR [trace options]\n"
    "       tide xray fit ON.h5 OFF.h5 -o DIR [trace and fit options] [--bench]\n"
    "\n"
    "Pump-probe delay scans of an X-ray detector: a laser-on and a laser-off HDF5 file in the\n"
    "cropped-cube layout (imgs, scan_var, bin_count, i0, i0_ipm3, ROI) or the legate-cube one\n"
    "(jungfrau1M_data, binVar_bins, nEntries, ipm3__sum/ipm2__sum or ipm5__sum/ipm4__sum).\n"
    "A trace is the on/off ratio - 1 of a tile of pixels per frame (each frame's sums divided by\n"
    "its monitor); fit models its segment after the zero delay as damped cosines plus a constant\n"
    "by LPSVD (Kumaresan-Tufts backward linear prediction), and writes DIR/maps.fits (HDUs\n"
    "FREQ, DAMP, AMP, PHASE: mode x y x x, modes by amplitude; FFT; STATUS 0 unprocessed, 1 ok,\n"
    "2 skipped, 3 failed), DIR/maps.h5, PNG maps and DIR/summary.json. sim writes DIR/on.h5,\n"
    "DIR/off.h5, DIR/truth.h5 and DIR/truth.json.\n"
    "\n"
    "trace options:\n"
    "  --roi X,Y,W,H            region of the cube, 0-based [whole cube]\n"
    "  --tile-x N               columns summed per trace [16]\n"
    "  --tile-y N               rows per trace [1]\n"
    "  --integrate N            +- neighbouring rows added [3]\n"
    "  --savgol W,P             Savitzky-Golay window and order along the delay; 0,0 = off [5,3]\n"
    "  --zero-index I           frame of zero delay [found in the data: the largest step]\n"
    "  --zero-delay T           or the delay of zero (nearest frame)\n"
    "  --drop-leading N         frames never fitted at the start [1]\n"
    "  --drop-trailing N        frames never fitted at the end [1]\n"
    "  --block-rows N           detector rows per HDF5 read [64]\n"
    "fit options:\n"
    "  --components K           singular values kept: the model order (2 per mode, 1 for the\n"
    "                           constant) [5]\n"
    "  --modes M                modes written per trace [2]\n"
    "  --no-refine              LPSVD alone, without the refinement of all modes together\n"
    "                           (variable projection: Levenberg-Marquardt in frequencies and\n"
    "                           decays, amplitudes by least squares; cuPhoton's default)\n"
    "  --traces                 also write DIR/traces.h5\n"
    "  --no-png                 no PNG maps\n"
    "  --bench                  print the time of each step and per trace\n"
    "sim options:\n"
    "  --layout cropped|legate  [cropped]\n"
    "  --frames N --ny N --nx N cube shape [100, 1024, 1024]\n"
    "  --active X,Y,W,H         the lit region; the rest of the cube is never written [all]\n"
    "  --modes 1|2              cuPhoton's validation modes (1.25, 0.09, 2.4, 0.30) and\n"
    "                           (0.45, 0.03, 0.9, -0.75), constant 0.15 [2]\n"
    "  --amp-scale F            amplitudes and constant times F [0.25]\n"
    "  --dt T                   delay step [0.1]\n"
    "  --zero-index I           frame of zero delay [4]\n"
    "  --zero-offset T          delay reading at zero [0.37]\n"
    "  --counts C               counts per pixel per frame [1000]\n"
    "  --read-noise E           read noise per pixel [0]\n"
    "  --no-noise               noiseless\n"
    "  --tile N                 modes constant per N x N pixels [16]\n"
    "  --chirp C                distortion: frequencies w (1 + C t) in the on file [0]\n"
    "  --glitches F             distortion: a fraction F of samples times 1 + U(0,4) [0]\n"
    "  --clip C                 distortion: samples clipped at C counts [0: none]\n"
    "  --seed N                 [1]\n";

static int parse_list(const char *s, long long *v, int n) {
    char *end;
    for (int i = 0; i < n; i++) {
        v[i] = strtoll(s, &end, 10);
        if (end == s || (i < n - 1 && *end != ',') || (i == n - 1 && *end))
            return -1;
        s = end + 1;
    }
    return 0;
}

static int parse_int(const char *s, long long lo, long long hi, long long *v) {
    char *end;
    const long long x = strtoll(s, &end, 10);
    if (end == s || *end || x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

static void print_info(const char *path, const tide_xray_info *in, int json) {
    if (json) {
        printf("{\"path\": ");
        tide_cli_json_string(stdout, path);
        printf(", \"layout\": \"%s\", \"cube\": \"%s\", \"dtype\": \"%s\", \"shape\": [%lld, "
               "%lld, %lld], \"chunk\": [%lld, %lld, %lld], \"delays\": \"%s\", \"monitor\": "
               "\"%s\", \"monitor2\": \"%s\", \"counts\": \"%s\", \"empty_bins\": %lld, "
               "\"uniform\": %s, \"dt\": %.17g, \"first_delay\": %.17g, \"last_delay\": %.17g, "
               "\"roi\": [%lld, %lld, %lld, %lld]}",
               in->layout == TIDE_XRAY_LEGATE ? "legate-cube" : "cropped-cube", in->cube, in->dtype,
               (long long)in->nframes, (long long)in->ny, (long long)in->nx,
               (long long)in->chunk[0], (long long)in->chunk[1], (long long)in->chunk[2],
               in->delays_name, in->monitor, in->monitor2, in->counts_name,
               (long long)in->empty_bins, in->uniform ? "true" : "false", in->dt, in->delays[0],
               in->delays[in->nframes - 1], (long long)in->roi[0], (long long)in->roi[1],
               (long long)in->roi[2], (long long)in->roi[3]);
        return;
    }
    printf("%s: %s, %s %s %lld frames x %lld x %lld (chunks %lld x %lld x %lld)\n", path,
           in->layout == TIDE_XRAY_LEGATE ? "legate-cube" : "cropped-cube", in->cube, in->dtype,
           (long long)in->nframes, (long long)in->ny, (long long)in->nx, (long long)in->chunk[0],
           (long long)in->chunk[1], (long long)in->chunk[2]);
    printf("  delays %s: %.6g .. %.6g, step %.6g (%s); monitor %s (pair %s); %lld empty bins\n",
           in->delays_name, in->delays[0], in->delays[in->nframes - 1], in->dt,
           in->uniform ? "uniform" : "not uniform", in->monitor, in->monitor2,
           (long long)in->empty_bins);
    if (in->roi[0] >= 0)
        printf("  ROI %lld,%lld %lld x %lld\n", (long long)in->roi[0], (long long)in->roi[1],
               (long long)in->roi[2], (long long)in->roi[3]);
}

static int cmd_probe(int argc, char **argv) {
    const char *f[2] = {NULL, NULL};
    int nf = 0, json = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (argv[i][0] == '-')
            return tide_cli_usage_error("xray probe", "unknown option %s", argv[i]);
        else if (nf < 2)
            f[nf++] = argv[i];
        else
            return tide_cli_usage_error("xray probe", "too many files");
    }
    if (nf != 2)
        return tide_cli_usage_error("xray probe", "needs ON.h5 and OFF.h5");
    tide_xray_info a, b;
    const int st = tide_xray_probe_pair(f[0], f[1], &a, &b);
    if (st)
        return tide_cli_fail("xray probe", st);
    if (json)
        printf("{\"on\": ");
    print_info(f[0], &a, json);
    if (json)
        printf(", \"off\": ");
    print_info(f[1], &b, json);
    if (json)
        printf(", \"pair\": \"ok\"}\n");
    else
        printf("pair: consistent\n");
    tide_xray_info_free(&a);
    tide_xray_info_free(&b);
    return 0;
}

static int cmd_sim(int argc, char **argv) {
    tide_xray_sim_params p;
    tide_xray_sim_defaults(&p);
    const char *out = NULL, *cmd = "xray sim";
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        long long v;
        double d;
        long long l4[4];
        if (!strcmp(a, "--no-noise")) {
            p.noise = 0;
            continue;
        }
        if (i + 1 >= argc)
            return tide_cli_usage_error(cmd, "unknown option or missing value: %s", a);
        const char *val = argv[++i];
        if (!strcmp(a, "-o"))
            out = val;
        else if (!strcmp(a, "--layout")) {
            if (!strcmp(val, "cropped") || !strcmp(val, "cropped-cube"))
                p.layout = TIDE_XRAY_CROPPED;
            else if (!strcmp(val, "legate") || !strcmp(val, "legate-cube"))
                p.layout = TIDE_XRAY_LEGATE;
            else
                return tide_cli_usage_error(cmd, "--layout: cropped or legate, not %s", val);
        } else if (!strcmp(a, "--frames") && !parse_int(val, 8, 1 << 20, &v))
            p.nframes = v;
        else if (!strcmp(a, "--ny") && !parse_int(val, 1, 1 << 20, &v))
            p.ny = v;
        else if (!strcmp(a, "--nx") && !parse_int(val, 1, 1 << 20, &v))
            p.nx = v;
        else if (!strcmp(a, "--active") && !parse_list(val, l4, 4))
            for (int k = 0; k < 4; k++)
                p.active[k] = l4[k];
        else if (!strcmp(a, "--modes") && !parse_int(val, 1, 2, &v))
            p.nmodes = (int)v;
        else if (!strcmp(a, "--zero-index") && !parse_int(val, 0, 1 << 20, &v))
            p.zero_index = (int)v;
        else if (!strcmp(a, "--tile") && !parse_int(val, 1, 1 << 20, &v))
            p.tile = (int)v;
        else if (!strcmp(a, "--seed") && !parse_int(val, 0, (long long)(~0ULL >> 1), &v))
            p.seed = (uint64_t)v;
        else if (!strcmp(a, "--amp-scale") && !tide_cli_parse_number(val, &d))
            p.amp_scale = d;
        else if (!strcmp(a, "--dt") && !tide_cli_parse_number(val, &d))
            p.dt = d;
        else if (!strcmp(a, "--zero-offset") && !tide_cli_parse_number(val, &d))
            p.zero_offset = d;
        else if (!strcmp(a, "--counts") && !tide_cli_parse_number(val, &d))
            p.counts = d;
        else if (!strcmp(a, "--read-noise") && !tide_cli_parse_number(val, &d) && d >= 0)
            p.read_noise = d;
        else if (!strcmp(a, "--chirp") && !tide_cli_parse_number(val, &d))
            p.chirp = d;
        else if (!strcmp(a, "--glitches") && !tide_cli_parse_number(val, &d) && d >= 0 && d <= 1)
            p.glitch_frac = d;
        else if (!strcmp(a, "--clip") && !tide_cli_parse_number(val, &d) && d >= 0)
            p.clip = d;
        else
            return tide_cli_usage_error(cmd, "unknown option or bad value: %s %s", a, val);
    }
    if (!out)
        return tide_cli_usage_error(cmd, "-o DIR is required");
    const int st = tide_xray_sim(&p, out);
    if (st)
        return tide_cli_fail(cmd, st);
    printf("wrote %s/on.h5, %s/off.h5, %s/truth.h5, %s/truth.json\n", out, out, out, out);
    return 0;
}

static int cmd_fit(int argc, char **argv, int fit) {
    const char *cmd = fit ? "xray fit" : "xray traces";
    tide_cli_common c;
    tide_cli_common_init(&c);
    tide_xray_trace_params tp;
    tide_xray_trace_defaults(&tp);
    tide_xray_fit_params fp;
    tide_xray_fit_defaults(&fp);
    const char *f[2] = {NULL, NULL}, *out = NULL;
    int nf = 0, bench = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const int r = tide_cli_common_option(&c, cmd, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r > 0)
            continue;
        if (a[0] != '-') {
            if (nf >= 2)
                return tide_cli_usage_error(cmd, "too many files");
            f[nf++] = a;
            continue;
        }
        if (!strcmp(a, "--traces")) {
            fp.write_traces = 1;
            continue;
        }
        if (!strcmp(a, "--no-refine")) {
            fp.refine = 0;
            continue;
        }
        if (!strcmp(a, "--no-png")) {
            fp.png = 0;
            continue;
        }
        if (!strcmp(a, "--bench")) {
            bench = 1;
            continue;
        }
        if (i + 1 >= argc)
            return tide_cli_usage_error(cmd, "unknown option or missing value: %s", a);
        const char *val = argv[++i];
        long long v, l4[4];
        double d;
        if (!strcmp(a, "-o"))
            out = val;
        else if (!strcmp(a, "--roi") && !parse_list(val, l4, 4))
            for (int k = 0; k < 4; k++)
                tp.roi[k] = l4[k];
        else if (!strcmp(a, "--tile-x") && !parse_int(val, 1, 1 << 20, &v))
            tp.tile_x = (int)v;
        else if (!strcmp(a, "--tile-y") && !parse_int(val, 1, 1 << 20, &v))
            tp.tile_y = (int)v;
        else if (!strcmp(a, "--integrate") && !parse_int(val, 0, 1 << 20, &v))
            tp.integrate = (int)v;
        else if (!strcmp(a, "--savgol") && !parse_list(val, l4, 2)) {
            tp.savgol_window = (int)l4[0];
            tp.savgol_order = (int)l4[1];
        } else if (!strcmp(a, "--zero-index") && !parse_int(val, 0, 1 << 20, &v))
            tp.zero_index = (int)v;
        else if (!strcmp(a, "--zero-delay") && !tide_cli_parse_number(val, &d))
            tp.zero_delay = d;
        else if (!strcmp(a, "--drop-leading") && !parse_int(val, 0, 1 << 20, &v))
            tp.drop_leading = (int)v;
        else if (!strcmp(a, "--drop-trailing") && !parse_int(val, 0, 1 << 20, &v))
            tp.drop_trailing = (int)v;
        else if (!strcmp(a, "--block-rows") && !parse_int(val, 1, 1 << 20, &v))
            tp.block_rows = (int)v;
        else if (!strcmp(a, "--components") && !parse_int(val, 1, TIDE_XRAY_MAX_COMPONENTS, &v))
            fp.components = (int)v;
        else if (!strcmp(a, "--modes") && !parse_int(val, 1, TIDE_XRAY_MAX_COMPONENTS, &v))
            fp.modes = (int)v;
        else
            return tide_cli_usage_error(cmd, "unknown option or bad value: %s %s", a, val);
    }
    if (nf != 2)
        return tide_cli_usage_error(cmd, "needs ON.h5 and OFF.h5");
    if (!out)
        return tide_cli_usage_error(cmd, "-o DIR is required");
    tide_ctx *ctx = tide_cli_make_ctx(&c, cmd);
    if (!ctx)
        return 1;
    tide_xray_fit_stats S;
    const int st = tide_xray_fit_pair(ctx, f[0], f[1], &tp, fit ? &fp : NULL, out, &S);
    tide_ctx_destroy(ctx);
    if (st)
        return tide_cli_fail(cmd, st);
    if (c.json)
        printf("{\"traces\": %lld, \"grid\": [%lld, %lld], \"ok\": %lld, \"skipped\": %lld, "
               "\"failed\": %lld, \"zero_index\": %d, \"fit_start\": %d, \"fit_len\": %d, "
               "\"read_s\": %.6f, \"trace_s\": %.6f, \"fit_s\": %.6f, \"write_s\": %.6f}\n",
               (long long)S.ntraces, (long long)S.ty, (long long)S.tx, (long long)S.nok,
               (long long)S.nskipped, (long long)S.nfailed, S.zero_index, S.fit_start, S.fit_len,
               S.read_s, S.trace_s, S.fit_s, S.write_s);
    else
        printf("%lld traces (%lld x %lld): %lld ok, %lld skipped, %lld failed; zero delay at "
               "frame %d%s, %d samples fitted from frame %d\n",
               (long long)S.ntraces, (long long)S.ty, (long long)S.tx, (long long)S.nok,
               (long long)S.nskipped, (long long)S.nfailed, S.zero_index,
               S.zero_from_data ? " (from the data)" : "", S.fit_len, S.fit_start);
    if (bench)
        printf("bench: read %.3f s, traces %.3f s, fit %.3f s (%.3f us per trace), write %.3f s\n",
               S.read_s, S.trace_s, S.fit_s, S.ntraces ? 1e6 * S.fit_s / (double)S.ntraces : 0.0,
               S.write_s);
    return 0;
}

int tide_cmd_xray(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(help, argc < 2 ? stderr : stdout);
        fputs(tide_cli_common_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "probe"))
        return cmd_probe(argc, argv);
    if (!strcmp(argv[1], "sim"))
        return cmd_sim(argc, argv);
    if (!strcmp(argv[1], "traces"))
        return cmd_fit(argc, argv, 0);
    if (!strcmp(argv[1], "fit"))
        return cmd_fit(argc, argv, 1);
    return tide_cli_usage_error("xray", "unknown subcommand %s (probe, sim, traces, fit)", argv[1]);
}
