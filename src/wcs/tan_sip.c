/* tan_sip.c — the compact TAN/TAN-SIP evaluator: extraction from a tide_wcs and the
 * backend-agnostic entry points (DESIGN §3). The math is in tan_sip_math.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <wcslib/dis.h>
#include "tide/status.h"
#include "tan_sip_kernels.h"
#include "tan_sip_math.h"
#include "wcs_internal.h"
#include "core/ctx_internal.h"

/* Copy the SIP coefficients out of wcslib's parsed "SIP" prior distortion, whose records read
 * DPj.SIP.FWD.p_q (A for j = 1, B for j = 2) and DPj.SIP.REV.p_q (AP, BP). */
static int extract_sip(const struct disprm *d, const double crpix[2], const char *source,
                       tide_wcs_tansip *t) {
    for (int i = 0; i < d->ndp; i++) {
        const struct dpkey *k = &d->dp[i];
        const char *f = strchr(k->field, '.'); /* skip "DPj" */
        if (!f)
            continue;
        f++;
        int p, q, rev;
        char tail;
        if (sscanf(f, "SIP.FWD.%d_%d%c", &p, &q, &tail) == 2)
            rev = 0;
        else if (sscanf(f, "SIP.REV.%d_%d%c", &p, &q, &tail) == 2)
            rev = 1;
        else {
            double off;
            int ax;
            /* SIP's polynomial variables are offsets from CRPIX; wcspih records that as
             * OFFSET.jhat = CRPIXj, and the kernels assume it. */
            if (sscanf(f, "OFFSET.%d%c", &ax, &tail) == 1 && ax >= 1 && ax <= 2) {
                off = dpkeyd(k);
                if (off != crpix[ax - 1])
                    return tide_error(TIDE_E_UNSUPPORTED,
                                      "%s: SIP offset %g differs from CRPIX%d = %g", source, off,
                                      ax, crpix[ax - 1]);
            }
            continue;
        }
        if (k->j < 1 || k->j > 2 || p < 0 || q < 0)
            continue;
        if (p + q > TIDE_WCS_SIP_MAX_ORDER)
            return tide_error(TIDE_E_UNSUPPORTED, "%s: SIP term %s_%d_%d has order %d > %d", source,
                              k->j == 1 ? (rev ? "AP" : "A") : (rev ? "BP" : "B"), p, q, p + q,
                              TIDE_WCS_SIP_MAX_ORDER);
        const int which = (rev ? 2 : 0) + (k->j - 1);
        const int d2 = p + q;
        t->sip[which][d2 * (d2 + 1) / 2 + q] = dpkeyd(k);
        if (d2 > t->order[which])
            t->order[which] = d2;
    }
    return 0;
}

int tide_wcs_tansip_from_wcs(const tide_wcs *w, tide_wcs_tansip *t) {
    if (!w || !t)
        return tide_error(TIDE_E_INVAL, "tide_wcs_tansip_from_wcs: NULL argument");
    memset(t, 0, sizeof *t);
    struct wcsprm *p;
    int slot = tide_wcs_acquire(w, &p);
    if (slot < 0)
        return slot;
    int st = 0;
    const struct disprm *pre = p->lin.dispre;
    if (p->naxis != 2 || strcmp(p->cel.prj.code, "TAN") != 0 || p->lin.disseq) {
        st = tide_error(TIDE_E_UNSUPPORTED,
                        "%s: CTYPE1 = '%s': the device evaluator handles TAN and TAN-SIP only",
                        w->source, w->ctype[0]);
        goto done;
    }
    if (pre && (strcmp(pre->dtype[0], "SIP") != 0 || strcmp(pre->dtype[1], "SIP") != 0)) {
        st = tide_error(TIDE_E_UNSUPPORTED,
                        "%s: distortion '%s' is not SIP; the device evaluator handles TAN and "
                        "TAN-SIP only",
                        w->source, pre->dtype[0]);
        goto done;
    }
    if (p->cel.offset) {
        st = tide_error(TIDE_E_UNSUPPORTED,
                        "%s: a TAN with an offset fiducial point (PVi_1, PVi_2) is not handled "
                        "by the device evaluator",
                        w->source);
        goto done;
    }
    const int lng = p->lng, lat = p->lat;
    t->crpix[0] = p->crpix[0];
    t->crpix[1] = p->crpix[1];
    t->crval[0] = p->cel.ref[0];
    t->crval[1] = p->cel.ref[1];
    /* Fold the native longitude of the pole into CD: (phi - phi_p) enters the spherical
     * rotation only, and phi_p = 180 is the orientation of the closed form. */
    const double delta = (180.0 - p->cel.ref[2]) * TIDE_TANSIP_D2R;
    const double cr = cos(delta), sr = sin(delta);
    /* CD = diag(CDELT) PC, rows = world axes (wcsset has moved a CD matrix into PC with unit
     * CDELT, and converted celestial units to degrees). lin.piximg is not always filled. */
    const double *pc = p->lin.pc, *cdelt = p->lin.cdelt;
    for (int j = 0; j < 2; j++) {
        const double a = cdelt[lng] * pc[lng * 2 + j], b = cdelt[lat] * pc[lat * 2 + j];
        t->cd[0][j] = cr * a - sr * b;
        t->cd[1][j] = sr * a + cr * b;
    }
    const double det = t->cd[0][0] * t->cd[1][1] - t->cd[0][1] * t->cd[1][0];
    if (det == 0.0 || !isfinite(det)) {
        st = tide_error(TIDE_E_WCS, "%s: the CD matrix is singular", w->source);
        goto done;
    }
    t->cdinv[0][0] = t->cd[1][1] / det;
    t->cdinv[0][1] = -t->cd[0][1] / det;
    t->cdinv[1][0] = -t->cd[1][0] / det;
    t->cdinv[1][1] = t->cd[0][0] / det;
    t->sin_d0 = sin(t->crval[1] * TIDE_TANSIP_D2R);
    t->cos_d0 = cos(t->crval[1] * TIDE_TANSIP_D2R);
    if (pre)
        st = extract_sip(pre, t->crpix, w->source, t);
done:
    tide_wcs_release(w, slot);
    return st;
}

static int check_args(const char *fn, const tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n,
                      const void *a, const void *b, const void *c, const void *d) {
    if (!ctx || !t || n < 0 || (n > 0 && (!a || !b || !c || !d)))
        return tide_error(TIDE_E_INVAL, "%s: bad arguments", fn);
    return 0;
}

int tide_wcs_tansip_pix2sky(tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n, const double *x,
                            const double *y, double *ra, double *dec) {
    int st = check_args("tide_wcs_tansip_pix2sky", ctx, t, n, x, y, ra, dec);
    if (st || n == 0)
        return st;
    return TIDE_DISPATCH(ctx, tide_tansip_pix2sky, t, n, x, y, ra, dec);
}

int tide_wcs_tansip_sky2pix(tide_ctx *ctx, const tide_wcs_tansip *t, int64_t n, const double *ra,
                            const double *dec, double *x, double *y) {
    int st = check_args("tide_wcs_tansip_sky2pix", ctx, t, n, ra, dec, x, y);
    if (st || n == 0)
        return st;
    return TIDE_DISPATCH(ctx, tide_tansip_sky2pix, t, n, ra, dec, x, y);
}
