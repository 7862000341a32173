/* fits_read_stack.c — tide_fits_read_stack: many image specs read in one call (issue 19).
 *
 * Why: a job that needs several frames (a science frame and its template, the CCDs of an
 * exposure, a stack to co-add) read them one after the other, each read using the cores for
 * its own decode but leaving the disk idle while it converts and the link idle while it reads.
 * Here a pool of reader threads (POSIX threads, each with its share of the cores for the
 * single-image reader's OpenMP loops) takes the specs in list order; each reader runs the
 * single-image reader itself, so pixels, masks, headers and error messages are those of
 * tide_fits_read_image by construction. For a device stack the calling thread, the only one
 * that touches the context, moves each image to the device as soon as its reader is done —
 * an upload from the host planes (page-locked by the block cache after their first copy), the
 * GPU's tile decoder, or cuFile for a plain data unit — while the readers go on with the next
 * specs; a reader waits when two images per reader are decoded and not yet moved, so the
 * host memory held stays bounded whatever n is. */
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fits_stack.h"
#include "tide/fits.h"
#include "tide/log.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"

/* One spec's progress. */
typedef struct stack_item {
    int st;            /* its status */
    char detail[1024]; /* the failing call's detail, recorded on the thread that failed */
    int route;         /* TIDE_ROUTE_*: where its read goes */
    int cufile;        /* cuFile may read it (the call's setting when it was taken) */
    tide_fits_plain_unit unit;
    tide_image host; /* decoded on the host, waiting for its upload */
    int ready;       /* its reader is done with it */
    int moved;       /* the calling thread is done with it */
} stack_item;

typedef struct stack_job {
    tide_ctx *ctx;
    const char *const *specs;
    tide_location where;
    int want_hdr;
    int cufile; /* cuFile may read the plain data units (off after a file it refused) */
    int gpu;    /* a CUDA context: its tile decoder takes RICE_1 and GZIP images, host stacks too */
    tide_fits_stack *out;
    stack_item *items;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int next;      /* the next spec to take */
    int ahead;     /* specs taken and not yet done with by the calling thread */
    int max_ahead; /* the bound on them */
    int readers;   /* reader threads still running */
    int stop;      /* a spec failed: no new one is taken */
    int omp_threads;
} stack_job;

const char *tide_fits_path_name(tide_fits_path path) {
    switch (path) {
    case TIDE_FITS_PATH_PINNED: return "pinned";
    case TIDE_FITS_PATH_CUFILE: return "cufile";
    case TIDE_FITS_PATH_GPU_DECODE: return "gpu-decode";
    default: return "host";
    }
}

static void fail(stack_item *it, int st) {
    it->st = st;
    snprintf(it->detail, sizeof it->detail, "%s", tide_error_detail());
}

/* A reader's work on spec @p i: where its read goes (on a CUDA context), and the read itself
 * when the host decodes it. No device call is made here: the context is the calling
 * thread's. */
static void read_one(stack_job *j, int i) {
    stack_item *it = &j->items[i];
    tide_header *hdr = j->want_hdr ? &j->out->hdr[i] : NULL;
    int st;
    if (j->where == TIDE_HOST) {
        st = j->gpu ? tide_fits_device_route(j->specs[i], &it->unit, NULL) : TIDE_ROUTE_HOST;
        if (st >= 0) {
            it->route = st == TIDE_ROUTE_DECODE ? st : TIDE_ROUTE_HOST;
            st = 0;
        }
        if (!st && it->route == TIDE_ROUTE_HOST)
            st = tide_fits_read_image(NULL, j->specs[i], &j->out->im[i], hdr);
    } else {
        st = tide_fits_device_route(j->specs[i], &it->unit, it->cufile ? hdr : NULL);
        if (st >= 0) {
            it->route = st == TIDE_ROUTE_PLAIN && !it->cufile ? TIDE_ROUTE_HOST : st;
#ifdef TIDE_HAVE_CUDA
            if (it->route == TIDE_ROUTE_PLAIN && tide_fits_cufile_refused(it->unit.path)) {
                it->route = TIDE_ROUTE_HOST; /* its file system refused cuFile before */
                if (hdr)
                    tide_header_free(hdr); /* the route's; the host read reads it again */
            }
#endif
            st = 0;
        }
        if (!st && it->route == TIDE_ROUTE_HOST)
            st = tide_fits_read_image(NULL, j->specs[i], &it->host, hdr);
    }
    if (st)
        fail(it, st);
}

static void *reader(void *arg) {
    stack_job *j = arg;
    omp_set_num_threads(j->omp_threads); /* this thread's share of the cores */
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (j->ahead >= j->max_ahead && !j->stop)
            pthread_cond_wait(&j->cv, &j->mu);
        if (j->stop || j->next >= j->out->n)
            break;
        const int i = j->next++;
        j->ahead++;
        j->items[i].cufile = j->cufile;
        pthread_mutex_unlock(&j->mu);
        read_one(j, i);
        pthread_mutex_lock(&j->mu);
        j->items[i].ready = 1;
        j->stop |= j->items[i].st != 0;
        pthread_cond_broadcast(&j->cv);
    }
    j->readers--;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* The calling thread's part of spec @p i: the image onto the device, or a RICE_1 or GZIP image
 * through the context's GPU decoder. */
static int move_one(stack_job *j, int i) {
    stack_item *it = &j->items[i];
    tide_fits_stack *s = j->out;
    tide_header *hdr = j->want_hdr ? &s->hdr[i] : NULL;
    int st = 0;
    if (it->route == TIDE_ROUTE_DECODE) { /* to the host or left on the device */
        s->path[i] = TIDE_FITS_PATH_GPU_DECODE;
        st = tide_fits_read_image_at(j->ctx, j->specs[i], &s->im[i], hdr, j->where);
    } else if (j->where == TIDE_HOST) {
        return 0; /* its reader read it */
    } else if (it->route == TIDE_ROUTE_HOST) {
        s->path[i] = TIDE_FITS_PATH_PINNED;
        st = tide_image_clone(j->ctx, &s->im[i], &it->host, TIDE_DEVICE);
        tide_image_free(NULL, &it->host);
    } else {
#ifdef TIDE_HAVE_CUDA
        s->path[i] = TIDE_FITS_PATH_CUFILE;
        st = tide_fits_cufile_read(j->ctx, &it->unit, &s->im[i]);
#else
        st = 1;
#endif
        if (st == 1) { /* cuFile declined this file: the pinned path (the header is read) */
            pthread_mutex_lock(&j->mu); /* and for the specs not yet taken: the file system */
            j->cufile = 0;              /* that refused one likely refuses them all */
            pthread_mutex_unlock(&j->mu);
            s->path[i] = TIDE_FITS_PATH_PINNED;
            st = tide_fits_read_image_at(j->ctx, j->specs[i], &s->im[i], NULL, TIDE_DEVICE);
        }
    }
    tide_log(&j->ctx->log, TIDE_LOG_DEBUG, "fits", "%s: read to the device by the %s path",
             j->specs[i], tide_fits_path_name(s->path[i]));
    return st;
}

/* The calling thread: take each spec as its reader finishes it, lowest index first among
 * those ready — onto the device for a device stack, through the GPU's tile decoder for a
 * RICE_1 or GZIP image on a CUDA context — until the readers are done and nothing is left. */
static void move_all(stack_job *j) {
    pthread_mutex_lock(&j->mu);
    for (;;) {
        int i = -1;
        for (int k = 0; k < j->next && i < 0; k++)
            if (j->items[k].ready && !j->items[k].moved)
                i = k;
        if (i < 0) {
            if (!j->readers)
                break;
            pthread_cond_wait(&j->cv, &j->mu);
            continue;
        }
        j->items[i].moved = 1;
        const int stopped = j->stop;
        pthread_mutex_unlock(&j->mu);
        int st = j->items[i].st;
        if (!st && !stopped && (st = move_one(j, i)))
            fail(&j->items[i], st);
        tide_image_free(NULL, &j->items[i].host);
        pthread_mutex_lock(&j->mu);
        j->ahead--;
        j->stop |= st != 0;
        pthread_cond_broadcast(&j->cv);
    }
    pthread_mutex_unlock(&j->mu);
}

/* Run @p nt readers, and the calling thread's part (move_all). */
static int run_readers(stack_job *j, int nt) {
    pthread_t *tid = calloc((size_t)nt, sizeof *tid);
    if (!tid)
        return tide_error(TIDE_E_NOMEM, "tide_fits_read_stack: out of memory");
    int started = 0;
    pthread_mutex_lock(&j->mu);
    for (; started < nt; started++) {
        if (pthread_create(&tid[started], NULL, reader, j))
            break;
        j->readers++;
    }
    pthread_mutex_unlock(&j->mu);
    int st = started ? 0 : tide_error(TIDE_E_INTERNAL, "tide_fits_read_stack: no reader thread");
    if (!st)
        move_all(j);
    for (int k = 0; k < started; k++)
        pthread_join(tid[k], NULL);
    free(tid);
    return st;
}

/* Gather same-sized images into one block per plane (TIDE_FITS_STACK_CONTIGUOUS). */
static int gather(tide_ctx *ctx, tide_fits_stack *s) {
    const tide_image *a = &s->im[0];
    for (int i = 1; i < s->n; i++) {
        const tide_image *b = &s->im[i];
        if (b->width != a->width || b->height != a->height || !b->mask != !a->mask ||
            !b->var != !a->var)
            return 0; /* not one shape: the images stay separate */
    }
    const int dev = s->where == TIDE_DEVICE;
    const size_t npix = (size_t)(a->width * a->height), n = (size_t)s->n;
    void *blk[3] = {NULL, NULL, NULL};
    const size_t esz[3] = {sizeof(float), sizeof(uint16_t), sizeof(float)};
    const int has[3] = {1, a->mask != NULL, a->var != NULL};
    int st = 0;
    for (int p = 0; p < 3 && !st; p++) {
        if (!has[p])
            continue;
        if (dev)
            st = tide_device_alloc(ctx, n * npix * esz[p], &blk[p]);
        else if (!(blk[p] = tide_host_alloc(n * npix * esz[p])))
            st = tide_error(TIDE_E_NOMEM,
                            "tide_fits_read_stack: no memory for a %zu x %lld x "
                            "%lld stack",
                            n, (long long)a->height, (long long)a->width);
    }
    for (int i = 0; i < s->n && !st; i++) {
        const void *src[3] = {s->im[i].pix, s->im[i].mask, s->im[i].var};
        for (int p = 0; p < 3 && !st; p++)
            if (has[p])
                st = tide_memcpy(ctx, (char *)blk[p] + i * npix * esz[p], dev, src[p], dev,
                                 npix * esz[p]);
    }
    if (!st && dev)
        st = tide_sync(ctx); /* the copies are done before their sources go back to the pool */
    for (int p = 0; p < 3 && st; p++) {
        if (dev)
            tide_device_free(ctx, blk[p]);
        else
            tide_host_free(blk[p]);
    }
    if (st)
        return st;
    s->pix = blk[0];
    s->mask = blk[1];
    s->var = blk[2];
    s->width = a->width; /* a is freed below */
    s->height = a->height;
    for (int i = 0; i < s->n; i++) {
        tide_image_free(ctx, &s->im[i]);
        s->im[i] = (tide_image){s->width,
                                s->height,
                                s->width,
                                s->pix + i * npix,
                                s->mask ? s->mask + i * npix : NULL,
                                s->var ? s->var + i * npix : NULL,
                                s->where,
                                0};
    }
    return 0;
}

void tide_fits_stack_free(tide_ctx *ctx, tide_fits_stack *s) {
    if (!s)
        return;
    for (int i = 0; s->im && i < s->n; i++)
        tide_image_free(ctx, &s->im[i]);
    for (int i = 0; s->hdr && i < s->n; i++)
        tide_header_free(&s->hdr[i]);
    void *blk[3] = {s->pix, s->mask, s->var};
    for (int p = 0; p < 3; p++) {
        if (s->where == TIDE_DEVICE)
            tide_device_free(ctx, blk[p]);
        else
            tide_host_free(blk[p]);
    }
    free(s->im);
    free(s->hdr);
    free(s->path);
    memset(s, 0, sizeof *s);
}

/* Reader threads: one per spec, at most one per core of the context (all cores without
 * one); each reader's OpenMP loops get an equal share of those cores. */
static void reader_threads(const tide_ctx *ctx, int n, int *readers, int *omp_threads) {
    const int cores = ctx && ctx->threads > 0 ? ctx->threads : omp_get_num_procs();
    *readers = n < cores ? n : cores;
    *omp_threads = cores / *readers > 1 ? cores / *readers : 1;
}

int tide_fits_read_stack(tide_ctx *ctx, const char *const *specs, int n, tide_location where,
                         int flags, tide_fits_stack *out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "tide_fits_read_stack: NULL output");
    memset(out, 0, sizeof *out);
    if (n < 1 || !specs)
        return tide_error(TIDE_E_INVAL, "tide_fits_read_stack: no specs (n = %d)", n);
    for (int i = 0; i < n; i++)
        if (!specs[i])
            return tide_error(TIDE_E_INVAL, "tide_fits_read_stack: spec %d is NULL", i);
    if (where == TIDE_DEVICE && (!ctx || ctx->backend != TIDE_BACKEND_CUDA))
        return tide_error(TIDE_E_INVAL, "%s: a device stack needs a CUDA context", specs[0]);
    const double t0 = tide_now();
    stack_job j = {.ctx = ctx, .specs = specs, .where = where, .out = out};
    j.want_hdr = (flags & TIDE_FITS_STACK_HEADERS) != 0;
#ifdef TIDE_HAVE_CUDA
    j.cufile = where == TIDE_DEVICE && tide_fits_cufile_wanted() && tide_fits_cufile_usable(ctx);
#endif
    j.gpu = ctx && ctx->backend == TIDE_BACKEND_CUDA;
    out->n = n;
    out->where = where;
    out->im = calloc((size_t)n, sizeof *out->im);
    out->path = calloc((size_t)n, sizeof *out->path);
    out->hdr = j.want_hdr ? calloc((size_t)n, sizeof *out->hdr) : NULL;
    j.items = calloc((size_t)n, sizeof *j.items);
    int st = out->im && out->path && j.items && (out->hdr || !j.want_hdr)
                 ? 0
                 : tide_error(TIDE_E_NOMEM, "tide_fits_read_stack: out of memory for %d specs", n);
    for (int i = 0; !st && j.want_hdr && i < n; i++)
        tide_header_init(&out->hdr[i]);
    if (!st) {
        reader_threads(ctx, n, &out->threads, &j.omp_threads);
        j.max_ahead = 2 * out->threads;
        pthread_mutex_init(&j.mu, NULL);
        pthread_cond_init(&j.cv, NULL);
        st = run_readers(&j, out->threads);
        pthread_cond_destroy(&j.cv);
        pthread_mutex_destroy(&j.mu);
    }
    if (!st && where == TIDE_DEVICE)
        st = tide_sync(ctx);           /* every image is on the device on return */
    for (int i = 0; !st && i < n; i++) /* the first failure in list order */
        if (j.items[i].st)
            st = tide_error(j.items[i].st, "%s", j.items[i].detail);
    for (int i = 0; j.items && i < n; i++)
        tide_image_free(NULL, &j.items[i].host);
    free(j.items);
    if (!st && (flags & TIDE_FITS_STACK_CONTIGUOUS))
        st = gather(ctx, out);
    if (st) {
        tide_fits_stack_free(ctx, out);
        return st;
    }
    out->ms = (tide_now() - t0) * 1e3;
    return 0;
}
