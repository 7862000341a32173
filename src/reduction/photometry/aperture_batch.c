/* aperture_batch.c — per-call buffers of the photometry stages (aperture_internal.h): on a
 * CUDA context each per-source array goes to the device in one copy, and results come back
 * in one copy per array; on the CPU nothing is copied. */
#include <stdlib.h>
#include <string.h>
#include "aperture_internal.h"
#include "tide/memory.h"
#include "tide/status.h"

void tide_phot_mem_init(tide_phot_mem *m, tide_ctx *ctx) {
    memset(m, 0, sizeof *m);
    m->ctx = ctx;
    m->dev = ctx->backend == TIDE_BACKEND_CUDA;
}

void tide_phot_mem_free(tide_phot_mem *m) {
    for (int i = 0; i < m->nbuf; i++) {
        if (m->buf_dev[i])
            tide_device_free(m->ctx, m->buf[i]);
        else
            free(m->buf[i]);
    }
    for (int i = 0; i < m->nimg; i++)
        tide_image_free(m->ctx, &m->img[i]);
    m->nbuf = m->nimg = 0;
}

static int keep(tide_phot_mem *m, void *p, int dev) {
    if (m->nbuf >= TIDE_PHOT_MAXBUF) {
        if (dev)
            tide_device_free(m->ctx, p);
        else
            free(p);
        return tide_error(TIDE_E_INTERNAL, "photometry: too many buffers in one call");
    }
    m->buf[m->nbuf] = p;
    m->buf_dev[m->nbuf++] = dev;
    return 0;
}

int tide_phot_mem_in(tide_phot_mem *m, const void *host, size_t bytes, const void **kptr) {
    *kptr = host;
    if (!host || !m->dev || bytes == 0)
        return 0;
    void *d = NULL;
    int st = tide_device_alloc(m->ctx, bytes, &d);
    if (st)
        return st;
    if ((st = keep(m, d, 1)))
        return st;
    st = tide_memcpy(m->ctx, d, 1, host, 0, bytes);
    *kptr = d;
    return st;
}

int tide_phot_mem_out(tide_phot_mem *m, void *host_target, size_t bytes, void **kptr) {
    *kptr = NULL;
    if (bytes == 0)
        bytes = 8;
    if (!m->dev) {
        if (host_target) {
            memset(host_target, 0, bytes);
            *kptr = host_target;
            return 0;
        }
        void *p = calloc(1, bytes);
        if (!p)
            return tide_error(TIDE_E_NOMEM, "photometry: out of host memory (%zu bytes)", bytes);
        *kptr = p;
        return keep(m, p, 0);
    }
    void *d = NULL;
    int st = tide_device_alloc(m->ctx, bytes, &d);
    if (st)
        return st;
    if ((st = keep(m, d, 1)))
        return st;
    *kptr = d;
    return tide_memzero(m->ctx, d, 1, bytes);
}

int tide_phot_mem_fetch(tide_phot_mem *m, void *host_target, const void *kptr, size_t bytes) {
    if (!host_target || host_target == kptr || bytes == 0)
        return 0;
    if (!m->dev) {
        memcpy(host_target, kptr, bytes);
        return 0;
    }
    return tide_memcpy(m->ctx, host_target, 0, kptr, 1, bytes);
}

static int resident(tide_phot_mem *m, const char *who, const tide_image *im,
                    const tide_image **out) {
    *out = im;
    if (!m->dev) {
        if (im->location != TIDE_HOST)
            return tide_error(TIDE_E_INVAL, "%s: a CPU context needs host images", who);
        return 0;
    }
    if (im->location == TIDE_DEVICE)
        return 0;
    if (m->nimg >= 2)
        return tide_error(TIDE_E_INTERNAL, "%s: too many image uploads", who);
    int st = tide_image_clone(m->ctx, &m->img[m->nimg], im, TIDE_DEVICE);
    if (st)
        return tide_error_prefix(st, "%s: uploading an image: ", who);
    *out = &m->img[m->nimg++];
    return 0;
}

int tide_phot_planes(tide_phot_mem *m, const char *who, const tide_image *sub,
                     const tide_image *var, uint16_t mask_bits, tide_ap_planes *pl) {
    memset(pl, 0, sizeof *pl);
    const tide_image *s = NULL, *v = NULL;
    int st = resident(m, who, sub, &s);
    if (st)
        return st;
    pl->pix = s->pix;
    pl->mask = s->mask;
    pl->width = s->width;
    pl->height = s->height;
    pl->stride = s->stride;
    pl->mask_bits = mask_bits;
    if (var) {
        if (var->width != sub->width || var->height != sub->height)
            return tide_error(TIDE_E_INVAL, "%s: variance image is %lld x %lld, image %lld x %lld",
                              who, (long long)var->width, (long long)var->height,
                              (long long)sub->width, (long long)sub->height);
        if ((st = resident(m, who, var, &v)))
            return st;
        pl->var = v->pix;
        pl->var_stride = v->stride;
    } else if (s->var) {
        pl->var = s->var;
        pl->var_stride = s->stride;
    }
    return 0;
}

int tide_phot_check_common(const char *who, tide_ctx *ctx, const tide_image *sub, int64_t n,
                           const double *x, const double *y) {
    if (!ctx || !sub)
        return tide_error(TIDE_E_INVAL, "%s: NULL context or image", who);
    if (n < 0)
        return tide_error(TIDE_E_INVAL, "%s: n = %lld < 0", who, (long long)n);
    if (n > 0 && (!x || !y))
        return tide_error(TIDE_E_INVAL, "%s: NULL positions", who);
    if (!sub->pix || sub->width <= 0 || sub->height <= 0)
        return tide_error(TIDE_E_INVAL, "%s: empty image", who);
    return 0;
}
