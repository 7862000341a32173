/* diff_write.c — tide_diff_write: the difference pipeline's outputs in one directory, all or
 * nothing (DESIGN §6): written into a fresh hidden directory beside the target (staged), the
 * files side by side, renamed into place when every file is complete (placed), removed on any
 * failure; a replaced previous run is removed afterwards, beside the caller. The diff job puts
 * the store's rows between the two steps, as the reduce job does. */
#include <dirent.h>
#include <errno.h>
#include <fitsio.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diff_internal.h"
#include "tide/fits.h"
#include "tide/outfile.h"
#include "tide/png.h"
#include "tide/status.h"
#include "tide/timer.h"

/* Every file a run writes; an existing directory holding anything else is not replaced. */
static const char *const known[] = {"difference.fits", "candidates.fits", "kernel.fits",
                                    "kernel.png",      "matched.png",     "difference.png",
                                    "candidates.png"};
enum { NKNOWN = sizeof known / sizeof known[0] };

static int is_known(const char *name) {
    for (int i = 0; i < NKNOWN; i++)
        if (!strcmp(name, known[i]))
            return 1;
    return 0;
}

/* 1 when @p dir holds nothing but a previous run's files (or nothing). */
static int replaceable(const char *dir, char *bad, size_t nbad) {
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(bad, nbad, "cannot be read: %s", strerror(errno));
        return 0;
    }
    struct dirent *e;
    int ok = 1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !is_known(e->d_name)) {
            snprintf(bad, nbad, "holds '%s', which tide diff did not write", e->d_name);
            ok = 0;
            break;
        }
    closedir(d);
    return ok;
}

/* kernel.fits: the centre kernel in the primary HDU, the 3 × 3 grid as one mosaic image in
 * HDU "KGRID" (kernels side by side, one row of the mosaic per grid row, y upwards). */
static int write_kernel(const char *path, const tide_diff_result *r) {
    const int kw = r->kernel_w;
    tide_image k = {0};
    k.width = k.height = k.stride = kw;
    k.pix = r->kernel;
    k.location = TIDE_HOST;
    tide_header h;
    tide_header_init(&h);
    int st = 0;
    /* The kernel has no sky coordinates: only the run's summary goes with it. */
    static const char *keys[] = {"KSUM",   "KCHI2",   "KNFIT",    "KCOND",   "KCONV",   "KHALF",
                                 "KSPDEG", "FWHMSCI", "FWHMTMPL", "DIFFSCI", "DIFFTMPL"};
    for (size_t i = 0; !st && i < sizeof keys / sizeof keys[0]; i++) {
        const int at = tide_header_find(&r->header, keys[i]);
        if (at >= 0)
            st = tide_header_append_card(&h, r->header.cards[at]);
    }
    if (!st)
        st = tide_header_add_text(&h, "COMMENT",
                                  "PSF-matching kernel at the frame centre (correlation "
                                  "convention); HDU KGRID: 3x3 grid");
    if (!st)
        st = tide_fits_write_image(path, &k, &h);
    tide_header_free(&h);
    if (st || !r->kernel_grid)
        return st;
    fitsfile *f = NULL;
    int cst = 0;
    long naxes[2] = {3L * kw, 3L * kw};
    float *mos = malloc((size_t)9 * kw * kw * sizeof(float));
    if (!mos)
        return tide_error(TIDE_E_NOMEM, "%s: out of memory", path);
    for (int gj = 0; gj < 3; gj++)
        for (int gi = 0; gi < 3; gi++)
            for (int v = 0; v < kw; v++)
                memcpy(mos + ((size_t)(gj * kw + v) * 3 * kw + (size_t)gi * kw),
                       r->kernel_grid + ((size_t)(gj * 3 + gi) * kw + v) * kw,
                       (size_t)kw * sizeof(float));
    fits_open_diskfile(&f, path, READWRITE, &cst);
    fits_create_img(f, FLOAT_IMG, 2, naxes, &cst);
    fits_write_key_str(f, "EXTNAME", "KGRID", "kernels at 10, 50, 90% of width and height", &cst);
    fits_write_img_flt(f, 1, 1, (LONGLONG)9 * kw * kw, mos, &cst);
    fits_close_file(f, &cst);
    free(mos);
    if (cst) {
        char msg[FLEN_STATUS];
        fits_get_errstatus(cst, msg);
        fits_clear_errmsg();
        return tide_error(TIDE_E_IO, "%s: cannot write the kernel grid: %s", path, msg);
    }
    return 0;
}

/* kernel.png: the centre kernel, magnified to ~256 pixels. */
static int write_kernel_png(const char *dir, const tide_diff_result *r) {
    char p[4400];
    tide_png_stretch s;
    tide_png_stretch_default(&s);
    s.limits = TIDE_LIMITS_MINMAX;
    s.scale = r->kernel_w > 0 ? (r->kernel_w < 64 ? 256 / r->kernel_w : 1) : 1;
    snprintf(p, sizeof p, "%s/kernel.png", dir);
    return tide_png_write_image(p, r->kernel, r->kernel_w, r->kernel_w, r->kernel_w, &s);
}

/* matched.png (@p k 0: asinh between percentiles) or difference.png (1: symmetric zscale). */
static int write_frame_png(const char *dir, const tide_diff_result *r, int k) {
    char pk[4400];
    tide_png_stretch sk;
    tide_png_stretch_default(&sk);
    const tide_image *im = k == 0 ? &r->matched : &r->diff;
    if (k == 0) {
        sk.kind = TIDE_STRETCH_ASINH;
        sk.limits = TIDE_LIMITS_PERCENTILE;
        sk.lo_pct = 1.0;
        sk.hi_pct = 99.9;
        sk.softening = 0.02;
    } else {
        sk.limits = TIDE_LIMITS_SYMMETRIC;
    }
    snprintf(pk, sizeof pk, "%s/%s.png", dir, k == 0 ? "matched" : "difference");
    return tide_png_write_image(pk, im->pix, im->width, im->height, im->stride, &sk);
}

/* candidates.png: stamp, model and residual of the first @p ntop candidates (all kept ones
 * for 0, none for < 0). */
static int write_candidates_png(const char *dir, const tide_diff_result *r, int64_t ntop) {
    const int64_t n = ntop < 0 ? 0 : ntop > 0 && ntop < r->nstamps ? ntop : r->nstamps;
    if (n < 1)
        return 0;
    const size_t s2 = (size_t)r->stamp * (size_t)r->stamp;
    float *resid = malloc((size_t)n * s2 * sizeof(float));
    const float **tiles = malloc((size_t)n * 3 * sizeof *tiles);
    if (!resid || !tiles) {
        free(resid);
        free(tiles);
        return tide_error(TIDE_E_NOMEM, "diff: out of memory for the candidate pictures");
    }
    for (int64_t i = 0; i < n; i++) {
        const float *a = r->stamps + (size_t)i * s2, *m = r->models + (size_t)i * s2;
        for (size_t k = 0; k < s2; k++)
            resid[(size_t)i * s2 + k] = a[k] - m[k];
        tiles[3 * i] = a;
        tiles[3 * i + 1] = m;
        tiles[3 * i + 2] = resid + (size_t)i * s2;
    }
    /* Symmetric limits per row from the stamp's brightest pixels, asinh: lobes of either sign
     * and the faint residual around them on one scale. */
    tide_png_stretch s;
    tide_png_stamp_stretch(&s); /* the review page's too */
    s.scale = 6;
    char p[4400];
    snprintf(p, sizeof p, "%s/candidates.png", dir);
    const int st = tide_png_write_mosaic(p, n, 3, r->stamp, tiles, &s);
    free(resid);
    free(tiles);
    return st;
}

/* candidates.fits: the table with the run's summary cards. */
static int write_candidates(const char *dir, const tide_diff_result *r) {
    tide_header th;
    tide_header_init(&th);
    static const char *keys[] = {"DIFFSCI", "DIFFTMPL", "DIFFGRID", "FWHMSCI", "FWHMTMPL",
                                 "KSUM",    "NCAND",    "NFIT",     "RBMODEL"};
    int st = 0;
    for (size_t i = 0; !st && i < sizeof keys / sizeof keys[0]; i++) {
        const int at = tide_header_find(&r->header, keys[i]);
        if (at >= 0)
            st = tide_header_append_card(&th, r->header.cards[at]);
    }
    char p[4400];
    snprintf(p, sizeof p, "%s/candidates.fits", dir);
    if (!st)
        st = tide_fits_write_table(p, &r->cands, &th, "CANDIDATES");
    tide_header_free(&th);
    return st;
}

/* The files of a run, in four groups written side by side: the difference FITS (its writes
 * and its flush to disk are I/O, its conversion is cheap), each frame-sized picture
 * (stretch and deflate: CPU), and the small files. One after the other they took the sum of
 * the four, ~600 ms for 4096² on 2 cores; side by side the longest, the cores shared. */
enum { G_DIFF, G_MATCHED, G_DIFFPNG, G_SMALL, NGROUPS };

typedef struct write_group {
    int which;                 /* G_* */
    const char *dir;           /* the staging directory */
    const tide_diff_result *r; /* the run */
    int64_t ntop;              /* candidates drawn (write_candidates_png) */
    tide_fits_compress how;    /* difference.fits */
    int threads;               /* OpenMP threads of this group */
    pthread_t th;              /* its thread (when started) */
    int started;               /* 1: th runs it */
    int status;                /* its result */
    char err[1024];            /* its error detail (thread-local where it was raised) */
    double ms;                 /* its wall time */
} write_group;

static void *write_group_run(void *arg) {
    write_group *g = arg;
    const double t0 = tide_now();
    omp_set_num_threads(g->threads); /* this thread's share of the cores */
    char p[4400];
    int st = 0;
    switch (g->which) {
    case G_DIFF:
        snprintf(p, sizeof p, "%s/difference.fits", g->dir);
        st = tide_fits_write_image_as(p, &g->r->diff, &g->r->header, g->how);
        break;
    case G_MATCHED: st = write_frame_png(g->dir, g->r, 0); break;
    case G_DIFFPNG: st = write_frame_png(g->dir, g->r, 1); break;
    default:
        st = write_candidates(g->dir, g->r);
        if (!st) {
            snprintf(p, sizeof p, "%s/kernel.fits", g->dir);
            st = write_kernel(p, g->r);
        }
        if (!st)
            st = write_kernel_png(g->dir, g->r);
        if (!st)
            st = write_candidates_png(g->dir, g->r, g->ntop);
        break;
    }
    g->status = st;
    if (st)
        snprintf(g->err, sizeof g->err, "%s", tide_error_detail());
    g->ms = 1e3 * (tide_now() - t0);
    return NULL;
}

/* TIDE_DIFF_WRITE_TIMES=1: each group's wall time on stderr (tide bench --diff sets it), to
 * show which of the side-by-side groups sets the write's length. */
static void report_times(const write_group *g, double total_ms) {
    const char *v = getenv("TIDE_DIFF_WRITE_TIMES");
    if (!v || strcmp(v, "1"))
        return;
    fprintf(stderr,
            "tide_diff_write: %.1f ms: difference.fits %.1f, matched.png %.1f, difference.png "
            "%.1f, candidates, kernel and their pictures %.1f (side by side)\n",
            total_ms, g[G_DIFF].ms, g[G_MATCHED].ms, g[G_DIFFPNG].ms, g[G_SMALL].ms);
}

/* Every file of the run into @p dir, the groups on threads of their own (the caller's runs
 * the last); the first failure in file order is the result, raised on the caller's thread. */
static int write_files(const char *dir, const tide_diff_result *r, int64_t ntop,
                       tide_fits_compress how) {
    /* The cores: an eighth to the difference FITS (byte swaps of 8 MiB between writes of as
     * much, which take ten times longer), the rest shared by the two pictures; the small
     * files take one. */
    const int nt = omp_get_max_threads();
    const int nfits = nt / 8 > 1 ? nt / 8 : 1;
    const int npng = (nt - nfits) / 2 > 1 ? (nt - nfits) / 2 : 1;
    const double t0 = tide_now();
    write_group g[NGROUPS];
    for (int i = 0; i < NGROUPS; i++) {
        memset(&g[i], 0, sizeof g[i]);
        g[i].which = i;
        g[i].dir = dir;
        g[i].r = r;
        g[i].ntop = ntop;
        g[i].how = how;
        g[i].threads = i == G_DIFF ? nfits : (i == G_SMALL ? 1 : npng);
    }
    for (int i = 0; i < NGROUPS - 1; i++)
        g[i].started = !pthread_create(&g[i].th, NULL, write_group_run, &g[i]);
    const int mine = omp_get_max_threads();
    write_group_run(&g[NGROUPS - 1]);
    omp_set_num_threads(mine);
    for (int i = 0; i < NGROUPS - 1; i++)
        if (g[i].started)
            pthread_join(g[i].th, NULL);
        else
            write_group_run(&g[i]); /* no thread: here, after the others */
    omp_set_num_threads(mine);
    report_times(g, 1e3 * (tide_now() - t0));
    for (int i = 0; i < NGROUPS; i++)
        if (g[i].status)
            return tide_error(g[i].status, "%s", g[i].err);
    return 0;
}

/* The removal of a replaced run (~40 ms of unlinking 190 MB for 4096², after the new run is
 * in place) on a thread of its own, so that it overlaps the caller's next work (the next
 * frame's reading and subtraction) instead of delaying the return. One at a time, none beside
 * a run's writes (tide_diffp_write_stage waits), and none left at exit: a process killed
 * meanwhile leaves a private directory that the next writer beside it sweeps (outfile.h). */
static pthread_mutex_t rm_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t rm_once = PTHREAD_ONCE_INIT;
static pthread_t rm_thread;
static int rm_running;
static char rm_dir[4500];

static void *rm_run(void *arg) {
    tide_outfile_remove_tree(arg);
    return NULL;
}

static void rm_join_locked(void) {
    if (rm_running)
        pthread_join(rm_thread, NULL);
    rm_running = 0;
}

void tide_diffp_remove_wait(void) {
    pthread_mutex_lock(&rm_mu);
    rm_join_locked();
    pthread_mutex_unlock(&rm_mu);
}

static void rm_at_exit(void) {
    tide_diffp_remove_wait();
}

static void rm_register(void) {
    atexit(rm_at_exit);
}

/* Remove @p dir on the remover's thread (here, when no thread can be made). */
static void remove_later(const char *dir) {
    pthread_once(&rm_once, rm_register);
    pthread_mutex_lock(&rm_mu);
    rm_join_locked();
    snprintf(rm_dir, sizeof rm_dir, "%s", dir);
    rm_running = !pthread_create(&rm_thread, NULL, rm_run, rm_dir);
    if (!rm_running)
        tide_outfile_remove_tree(rm_dir);
    pthread_mutex_unlock(&rm_mu);
}

int tide_diffp_write_stage(const char *dir_in, const tide_diff_result *r, int64_t ntop,
                           tide_fits_compress how, tide_diffp_staged *sg) {
    memset(sg, 0, sizeof *sg);
    tide_diffp_remove_wait(); /* the last replaced run gone before this one writes */
    if (!dir_in || !*dir_in || !r)
        return tide_error(TIDE_E_INVAL, "diff: no output directory given");
    char *dir = sg->dir;
    snprintf(dir, sizeof sg->dir, "%s", dir_in);
    for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/'; l--)
        dir[l - 1] = 0;
    struct stat sb;
    if (lstat(dir, &sb) == 0) {
        char why[400];
        if (!S_ISDIR(sb.st_mode))
            return tide_error(TIDE_E_IO, "%s: exists and is not a directory", dir);
        if (!replaceable(dir, why, sizeof why))
            return tide_error(TIDE_E_IO, "%s: will not replace an existing directory that %s", dir,
                              why);
        sg->exists = 1;
    }
    /* The new run in a private directory beside the target (outfile.h), whose name lets a
     * later writer remove it should this process die. */
    char *tmp = sg->tmp;
    int st = tide_outfile_mkdtemp(dir, tmp, sizeof sg->tmp);
    if (st)
        return st;
    st = write_files(tmp, r, ntop, how);
    if (st) {
        tide_outfile_remove_tree(tmp);
        sg->tmp[0] = 0;
        return st;
    }
    { /* private (0700) while written; now the mode mkdir would give, as the umask decides */
        const mode_t um = umask(0);
        umask(um);
        chmod(tmp, 0777 & ~um);
    }
    return 0;
}

void tide_diffp_write_abort(tide_diffp_staged *sg) {
    if (sg->tmp[0])
        tide_outfile_remove_tree(sg->tmp);
    sg->tmp[0] = 0;
}

int tide_diffp_write_place(tide_diffp_staged *sg) {
    const char *dir = sg->dir, *tmp = sg->tmp;
    char old[4500];
    int st = 0;
    if (!tmp[0])
        return tide_error(TIDE_E_INVAL, "diff: %s: nothing staged", dir);
    if (sg->exists) { /* move the old run aside, put the new one in place, then drop the old */
        snprintf(old, sizeof old, "%s.old-XXXXXX", tmp);
        if (!mkdtemp(old) || rename(dir, old) != 0) {
            st = tide_error(TIDE_E_IO, "%s: cannot move the previous output aside: %s", dir,
                            strerror(errno));
            rmdir(old);
            tide_diffp_write_abort(sg);
            return st;
        }
    }
    if (rename(tmp, dir) != 0) {
        st = tide_error(TIDE_E_IO, "%s: cannot rename the finished output into place: %s", dir,
                        strerror(errno));
        if (sg->exists)
            rename(old, dir);
        tide_diffp_write_abort(sg);
        return st;
    }
    sg->tmp[0] = 0;
    if (sg->exists)
        remove_later(old);
    return 0;
}

int tide_diff_write(const char *dir, const tide_diff_result *r, int64_t ntop) {
    tide_diffp_staged sg;
    int st = tide_diffp_write_stage(dir, r, ntop > 0 ? ntop : 0, TIDE_FITS_PLAIN, &sg);
    if (st)
        return st;
    const double t0 = tide_now();
    st = tide_diffp_write_place(&sg);
    const char *v = getenv("TIDE_DIFF_WRITE_TIMES");
    if (v && !strcmp(v, "1"))
        fprintf(stderr, "tide_diff_write: placing the run %.1f ms\n", 1e3 * (tide_now() - t0));
    return st;
}

int tide_diff_check_outputs(const char *dir, const char *const *inputs, int nin) {
    const char *outs[NKNOWN];
    char names[NKNOWN][4200];
    for (int i = 0; i < NKNOWN; i++) {
        snprintf(names[i], sizeof names[i], "%s/%s", dir, known[i]);
        outs[i] = names[i];
    }
    return tide_outputs_check(inputs, nin, outs, NKNOWN);
}
