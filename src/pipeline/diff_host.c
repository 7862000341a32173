/* diff_host.c — the host memory of the difference pipeline's results, made ready while the
 * device computes.
 *
 * Why: the results come back into fresh host memory (the caller owns and frees it). A fresh
 * 4096² difference with its planes plus the matched image is 235 MB, i.e. ~57,000 pages of
 * 4 KiB that the kernel must fault in and zero on first touch; done inside the copy, that is
 * what made diff.download cost ~190 ms on the GPU machine (page faults under the driver's
 * pageable copy). Here the pages are touched by a helper thread (and one more plain thread,
 * no OpenMP: an OpenMP team here would compete with the stages' own teams, whose barriers
 * an oversubscribed host punishes — it made the subtraction's fit 30x slower) that runs
 * while the GPU reprojects and subtracts, so by the download the memory is
 * resident and the copy runs at the link's speed. The thread owns no context and calls no
 * CUDA: it only allocates and touches host memory. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipeline/diff_internal.h"
#include "tide/status.h"

/* Write one byte per page (the kernel zeroes the page on the fault; calloc's memory is
 * zero already, so the contents stay zero). */
static void touch(void *p, size_t bytes, size_t page) {
    unsigned char *c = p;
    for (size_t o = 0; o < bytes; o += page)
        c[o] = 0;
}

typedef struct touch_job {
    void *a, *b;
    size_t abytes, bbytes, page;
} touch_job;

static void *touch_main(void *arg) {
    touch_job *j = arg;
    touch(j->a, j->abytes, j->page);
    touch(j->b, j->bbytes, j->page);
    return NULL;
}

static void *prefault_main(void *arg) {
    tide_diffp_prefault *pf = arg;
    const long ps = sysconf(_SC_PAGESIZE);
    const size_t page = ps > 0 ? (size_t)ps : 4096;
    const size_t n = (size_t)pf->width * (size_t)pf->height;
    pf->status = tide_image_alloc(NULL, &pf->diff, pf->width, pf->height, TIDE_HOST,
                                  TIDE_IMAGE_MASK | TIDE_IMAGE_VAR);
    if (!pf->status)
        pf->status = tide_image_alloc(NULL, &pf->matched, pf->width, pf->height, TIDE_HOST, 0);
    if (pf->status) {
        tide_error_clear(); /* thread-local: the caller falls back to plain allocation */
        return NULL;
    }
    /* two threads, ~half of the pages each */
    touch_job j = {pf->diff.var, pf->diff.mask, n * sizeof(float), n * sizeof(uint16_t), page};
    pthread_t other;
    const int two = pf->threads > 1 && pthread_create(&other, NULL, touch_main, &j) == 0;
    touch(pf->diff.pix, n * sizeof(float), page);
    touch(pf->matched.pix, n * sizeof(float), page);
    if (two)
        pthread_join(other, NULL);
    else
        touch_main(&j);
    return NULL;
}

void tide_diffp_prefault_start(tide_diffp_prefault *pf, int64_t width, int64_t height,
                               int threads) {
    memset(pf, 0, sizeof *pf);
    pf->width = width;
    pf->height = height;
    pf->threads = threads < 2 ? 1 : 2;
    pf->started = pthread_create(&pf->thread, NULL, prefault_main, pf) == 0;
}

/* Take image @p src (moved out of the helper) if it has exactly the planes of @p like. */
static int take(tide_image *dst, tide_image *src, const tide_image *like) {
    if (!src->pix || src->width != like->width || src->height != like->height ||
        !like->pix || like->stride != like->width || !src->mask != !like->mask ||
        !src->var != !like->var)
        return 0;
    *dst = *src;
    memset(src, 0, sizeof *src);
    return 1;
}

int tide_diffp_prefault_take(tide_diffp_prefault *pf, tide_image *diff, const tide_image *dlike,
                             tide_image *matched, const tide_image *mlike) {
    if (pf->started) {
        pthread_join(pf->thread, NULL);
        pf->started = 0;
    }
    int got = 0;
    if (!pf->status) {
        got = take(diff, &pf->diff, dlike);
        got = (got & take(matched, &pf->matched, mlike)) ? 1 : 0;
        if (!got) { /* a shape we did not foresee: the caller allocates */
            tide_image_free(NULL, diff);
            tide_image_free(NULL, matched);
        }
    }
    tide_diffp_prefault_cancel(pf);
    return got;
}

void tide_diffp_prefault_cancel(tide_diffp_prefault *pf) {
    if (pf->started) {
        pthread_join(pf->thread, NULL);
        pf->started = 0;
    }
    tide_image_free(NULL, &pf->diff);
    tide_image_free(NULL, &pf->matched);
}
