/* cosmetics_lacosmic.c — cosmic rays by Laplacian edge detection, L.A.Cosmic
 * (P. G. van Dokkum 2001, PASP 113, 1420), once for both backends.
 *
 * Per iteration, on a working copy W of the frame (masked pixels already replaced by local
 * medians so they cannot mimic edges):
 *   N  = (1/g) sqrt(g·med5(W) + σ_rn²)                 noise model, eq. 10 (bias removed)
 *   L⁺ = block-average of max(∇²(W subsampled 2×), 0)  eqs. 2–5: subsampling keeps the
 *        Laplacian of a sharp one-pixel hit positive at the hit itself and lets clipping
 *        remove the negative ring around it
 *   S  = L⁺ / (2N)                                     eq. 9 (factor 2 from the subsampling)
 *   S' = S − med5(S)                                   eq. 12: removes the smooth response of
 *                                                      extended, well-sampled objects
 *   F  = med3(W) − med7(med3(W))                       eq. 11: fine structure (stars, not CRs)
 *   hit:     S' > σ_lim and S' / max(F/N, 0.01) > f_lim  (eq. 13, in lacosmic.cl's form,
 *            which compares S' with the noise-normalised F)
 *   grow 1:  3×3 neighbours of hits with S' > σ_lim
 *   grow 2:  3×3 neighbours of those with S' > sigfrac·σ_lim
 * The new hits are flagged, replaced in W by the median of their unflagged 5×5 neighbours,
 * and the next iteration looks again (faint pixels of a track hidden by bright ones show
 * up); it stops after `niter` iterations or when one finds nothing new.
 *
 * An iteration after the first recomputes its planes only on the tiles near the previous
 * iteration's new hits (cosmetics_region.h): elsewhere no plane can change, so the masks are
 * those of full-frame iterations. The CPU lists those tiles on the host; the CUDA twin keeps
 * a per-tile dirty flag on the device and its kernels skip clean tiles. */
#include <math.h>
#include <stdlib.h>

#include "cosmetics_internal.h"
#include "cosmetics_kernels.h"
#include "cosmetics_region.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "core/ctx_internal.h"

int tide_cos_lacosmic(tide_ctx *ctx, tide_image *im, const tide_cos_geom *g,
                      const tide_cosmetics_params *p, tide_cos_work *wk, float fallback,
                      tide_cosmetics_report *r) {
    return tide_cos_lacosmic_ex(ctx, im, g, p, wk, fallback, r, 1);
}

int tide_cos_lacosmic_ex(tide_ctx *ctx, tide_image *im, const tide_cos_geom *g,
                         const tide_cosmetics_params *p, tide_cos_work *wk, float fallback,
                         tide_cosmetics_report *r, int incremental) {
    const int64_t w = g->w;
    const uint16_t defects = TIDE_MASK_HOT | TIDE_MASK_COLD | TIDE_MASK_COSMIC | TIDE_MASK_NODATA;
    const tide_cos_noise nm = tide_cos_noise_of(p);
    tide_cos_lacos lp;
    lp.sigclip = (float)p->sigclip;
    lp.objlim = (float)p->objlim;
    lp.excl = (uint16_t)(p->skip_bits | TIDE_MASK_NODATA | TIDE_MASK_SATURATED | TIDE_MASK_BLEED |
                         TIDE_MASK_HOT | TIDE_MASK_COLD);
    lp.protect = p->sat_protect;
    lp.psf = tide_cos_psf_of(p);
    const float low = (float)(p->sigclip * p->sigfrac);

    /* CPU tile updates: the tiles holding each iteration's new hits, and those near them */
    const int64_t ntx = tide_cos_ntiles(g->w), nty = tide_cos_ntiles(g->h);
    uint8_t *mark = NULL;
    int64_t *list = NULL, nlist = -1; /* -1: no list yet */
    if (incremental && ctx->backend != TIDE_BACKEND_CUDA && p->niter > 1) {
        mark = malloc((size_t)(ntx * nty));
        list = malloc(sizeof(int64_t) * (size_t)(ntx * nty));
    }
#ifdef TIDE_HAVE_CUDA
    /* CUDA: device mark and dirty tile flags (ntx·nty bytes each) */
    uint8_t *dmark = NULL;
    int have_dirty = 0;
    if (incremental && ctx->backend == TIDE_BACKEND_CUDA && p->niter > 1 && ntx * nty > 0 &&
        tide_device_alloc(ctx, (size_t)(2 * ntx * nty), (void **)&dmark) != 0) {
        tide_error_clear(); /* no room: full-frame iterations give the same masks */
        dmark = NULL;
    }
#endif

    /* W: the frame with skipped, missing and already-flagged pixels replaced. */
    const uint16_t repl = (uint16_t)(p->skip_bits | defects);
    int st = TIDE_DISPATCH(ctx, tide_cos_fill, g, im->pix, im->stride, im->mask, wk->W, w, repl,
                           repl, 1, 1, fallback, (uint8_t *)NULL);
    r->cosmic_iterations = 0;
    for (int it = 0; !st && it < p->niter; it++) {
        int64_t nnew = 0;
        if (nlist >= 0 && 2 * nlist <= ntx * nty) {
            st = tide_cos_update_cpu(ctx, g, wk->W, &nm, im->mask, &lp, low, wk->N, wk->S, wk->SP,
                                     wk->flag3, wk->flag2, wk->flag, list, nlist);
#ifdef TIDE_HAVE_CUDA
        } else if (have_dirty) {
            st = tide_cos_update_cuda(ctx, g, wk->W, &nm, im->mask, &lp, low, wk->N, wk->S, wk->SP,
                                      wk->flag3, wk->flag2, wk->flag, dmark + ntx * nty);
#endif
        } else {
            st = TIDE_DISPATCH(ctx, tide_cos_noise, g, wk->W, &nm, wk->N);
            if (!st)
                st = TIDE_DISPATCH(ctx, tide_cos_laplace, g, wk->W, wk->N, wk->S, wk->SP, low);
            if (!st)
                st = TIDE_DISPATCH(ctx, tide_cos_candidates, g, wk->W, wk->N, wk->SP, im->mask, &lp,
                                   wk->flag3);
            if (!st)
                st = TIDE_DISPATCH(ctx, tide_cos_grow, g, wk->W, wk->flag3, wk->SP, im->mask, &lp,
                                   lp.sigclip, wk->flag2);
            if (!st)
                st = TIDE_DISPATCH(ctx, tide_cos_grow, g, wk->W, wk->flag2, wk->SP, im->mask, &lp,
                                   low, wk->flag);
        }
        if (!st && mark && list) {
            st = tide_cos_mark_new_cpu(ctx, g, wk->flag, im->mask, mark);
            nlist = tide_cos_tile_list(mark, ntx, nty, list);
        }
#ifdef TIDE_HAVE_CUDA
        if (!st && dmark) {
            st = tide_cos_mark_new_cuda(ctx, g, wk->flag, im->mask, dmark, dmark + ntx * nty);
            have_dirty = 1;
        }
#endif
        if (!st)
            st = TIDE_DISPATCH(ctx, tide_cos_apply, g, wk->flag, im->mask,
                               (uint16_t)TIDE_MASK_COSMIC, (uint16_t)0, &nnew);
        if (st)
            break;
        r->cosmic_per_iter[it] = nnew;
        r->cosmic_iterations = it + 1;
        if (nnew == 0)
            break;
        /* Clean the new hits in W (in place: only COSMIC pixels are written, and they are
         * never read as neighbours). Pixels with no clean neighbour keep their value. */
        const uint16_t ex = (uint16_t)(repl | TIDE_MASK_SATURATED | TIDE_MASK_BLEED);
        if (it + 1 < p->niter)
            st = TIDE_DISPATCH(ctx, tide_cos_fill, g, wk->W, w, im->mask, wk->W, w,
                               (uint16_t)TIDE_MASK_COSMIC, ex, 0, 0, 0.0f, (uint8_t *)NULL);
    }
    free(mark);
    free(list);
#ifdef TIDE_HAVE_CUDA
    tide_device_free(ctx, dmark);
#endif
    return st;
}
