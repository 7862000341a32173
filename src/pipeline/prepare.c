/* prepare.c — one frame's preparation (prepare.h), the first stages of both tide reduce and
 * tide diff: working copy, cosmetics, background and its subtraction, first detection, FWHM. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compute/select_f64.h"
#include "difference/noise/noise_ops.h"
#include "prepare.h"
#include "core/ctx_internal.h"
#include "reduction/maps/map_ops.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"

/* Run @p call timed as @p name (NULL: untimed); a timer that cannot start is the error. */
#define TIMED(ctx, name, call)                                                                     \
    do {                                                                                           \
        if (!(name)) {                                                                             \
            st = (call);                                                                           \
            break;                                                                                 \
        }                                                                                          \
        tide_timer tm_;                                                                            \
        int ts_ = tide_timer_start((ctx), &tm_, (name));                                           \
        st = ts_ ? ts_ : (call);                                                                   \
        if (!ts_) {                                                                                \
            int te_ = tide_timer_stop((ctx), &tm_, NULL);                                          \
            if (!st)                                                                               \
                st = te_;                                                                          \
        }                                                                                          \
    } while (0)

void tide_prep_frame_free(tide_ctx *ctx, tide_prepared *f) {
    if (!f)
        return;
    tide_image_free(ctx, &f->work);
    tide_image_free(ctx, &f->bkg);
    tide_image_free(ctx, &f->rms);
}

/* The working copy where the context computes: the input's pixels and mask; its own
 * variance, if any, is replaced by the pipeline's. */
static int working_copy(tide_ctx *ctx, const tide_image *frame, int planes, tide_image *work) {
    const tide_location where = ctx->backend == TIDE_BACKEND_CUDA ? TIDE_DEVICE : TIDE_HOST;
    int st = tide_image_alloc(ctx, work, frame->width, frame->height, where, planes);
    if (!st) {
        tide_image src = *frame;
        src.var = NULL;
        st = tide_image_copy(ctx, work, &src);
    }
    return st;
}

/* The cosmetics stage; with @p guard, a pass that flags more than 1% of the frame is undone. */
static int cosmetics(tide_ctx *ctx, tide_image *work, const tide_cosmetics_params *cp, int guard,
                     const char *name, tide_cosmetics_report *cr, int *dropped) {
    if (!guard)
        return tide_cosmetics_apply(ctx, work, cp, cr);
    /* The mask before, to undo a pass whose noise model does not fit the frame. */
    const size_t mbytes = (size_t)(work->stride * work->height) * sizeof(uint16_t);
    const int dev = work->location == TIDE_DEVICE;
    void *saved = NULL;
    int st = dev ? tide_device_alloc(ctx, mbytes, &saved)
                 : ((saved = malloc(mbytes)) ? 0 : tide_error(TIDE_E_NOMEM, "out of memory"));
    if (!st)
        st = tide_memcpy(ctx, saved, dev, work->mask, dev, mbytes);
    if (!st)
        st = tide_cosmetics_apply(ctx, work, cp, cr);
    /* L.A.Cosmic's noise model needs the sky still in the frame: on a sky-subtracted frame
     * (DECam community pipeline cutouts) it sees noise everywhere and flags a third of the
     * pixels. More than 1% of the frame flagged means the model does not fit: the flags are
     * dropped and the run says so. */
    const int64_t npix = work->width * work->height;
    const int64_t nflag = st ? 0 : cr->n_cosmic + cr->n_hot + cr->n_cold;
    if (!st && nflag > npix / 100) {
        st = tide_memcpy(ctx, work->mask, dev, saved, dev, mbytes);
        *dropped = 1;
        tide_log(&ctx->log, TIDE_LOG_WARN, "diff",
                 "%s: cosmetics flagged %lld of %lld pixels (is the sky subtracted? the "
                 "noise model needs it): flags dropped",
                 name, (long long)nflag, (long long)npix);
    }
    if (dev)
        tide_device_free(ctx, saved);
    else
        free(saved);
    return st ? tide_error_prefix(st, "%s: cosmetics: ", name) : 0;
}

/* The background subtracted from the working copy (and, with p->variance, the variance and
 * the saturation flags made from the maps). */
static int subtract(tide_ctx *ctx, const tide_prep_params *p, tide_prepared *f) {
    tide_image *w = &f->work;
    if (!p->variance)
        return TIDE_DISPATCH(ctx, tide_pipe_map, TIDE_PIPE_SUB, w->width, w->height, w->pix,
                             w->stride, f->bkg.pix, f->bkg.stride, 0.0f);
    if (f->bkg.stride != w->width || f->rms.stride != w->width)
        return tide_error(TIDE_E_INTERNAL, "%s: background maps with a row stride", p->name);
    /* Saturation is judged on the raw value, so the level is the header's ADU. */
    return TIDE_DISPATCH(ctx, tide_diffp_prepare, w->width, w->height, w->stride, w->pix, w->mask,
                         w->var, f->bkg.pix, f->rms.pix, (float)p->gain,
                         isfinite(p->saturate) ? (float)p->saturate : NAN);
}

int tide_prep_frame(tide_ctx *ctx, const tide_image *frame, const tide_prep_params *p,
                    tide_prepared *out) {
    memset(out, 0, sizeof *out);
    const char *name = p->name && *p->name ? p->name : "frame";
    const int planes = TIDE_IMAGE_MASK | (p->variance ? TIDE_IMAGE_VAR : 0);
    int st = 0;
    TIMED(ctx, p->timers.upload, working_copy(ctx, frame, planes, &out->work));
    if (!st && p->cos)
        TIMED(ctx, p->timers.cosmetics,
              cosmetics(ctx, &out->work, p->cos, p->cos_guard, name, &out->cr, &out->cos_dropped));
    if (!st)
        TIMED(ctx, p->timers.background,
              tide_background_estimate(ctx, &out->work, p->bkg, &out->bkg, &out->rms, &out->bkgs));
    if (st == TIDE_E_EMPTY)
        tide_error_prefix(st, "%s: no valid pixel: ", name);
    if (!st)
        TIMED(ctx, p->timers.background, subtract(ctx, p, out));
    if (st)
        tide_prep_frame_free(ctx, out);
    return st;
}

int tide_prep_first_pass(tide_ctx *ctx, const tide_image *work, const tide_image *rms,
                         const tide_detect_params *dp, const char *timer, tide_table *out) {
    int st = 0;
    TIMED(ctx, timer, tide_detect(ctx, work, rms, NULL, dp, out));
    return st;
}

double tide_prep_fwhm(const tide_table *t, const tide_prep_fwhm_rule *rule, int64_t *nused) {
    const double *fw = tide_table_f64(t, "FWHM"), *snr = tide_table_f64(t, "SNR");
    const int32_t *fl = tide_table_i32(t, "FLAGS");
    if (nused)
        *nused = 0;
    const int64_t need = rule->min_stars > 1 ? rule->min_stars : 1;
    if (!fw || !snr || !fl || t->nrows < need)
        return 0;
    double *v = malloc(sizeof(double) * (size_t)t->nrows);
    if (!v)
        return 0;
    int64_t m = 0;
    for (int64_t i = 0; i < t->nrows; i++)
        if (fl[i] == 0 && snr[i] >= 20 && isfinite(fw[i]) && fw[i] > 0.5 && fw[i] < rule->max_fwhm)
            v[m++] = fw[i];
    double med = 0;
    if (m >= need) {
        med = tide_median_f64(v, m);
        if (rule->clip > 0) {
            int64_t k = 0;
            for (int64_t i = 0; i < m; i++)
                if (fabs(v[i] - med) <= rule->clip * med)
                    v[k++] = v[i];
            if (k >= need) {
                med = tide_median_f64(v, k);
                m = k;
            }
        }
        if (nused)
            *nused = m;
    }
    free(v);
    return med;
}
