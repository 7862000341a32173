/* diff_template.c — a template prepared once for many differences (diff.h): stages 1-3
 * of tide_diff_run on the template, kept for tide_diff_run_template. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"
#include "tide/status.h"

void tide_diff_template_free(tide_ctx *ctx, tide_diff_template *t) {
    if (!t)
        return;
    tide_diffp_frame_free(ctx, &t->f);
    tide_header_free(&t->header);
    free(t);
}

int tide_diff_template_prepare(tide_ctx *ctx, const tide_image *tmpl, const tide_header *hdr,
                               const tide_diff_params *pp, tide_diff_template **out) {
    if (!out)
        return tide_error(TIDE_E_INVAL, "diff: NULL output template");
    *out = NULL;
    if (!ctx || !tmpl)
        return tide_error(TIDE_E_INVAL, "diff: NULL context or template");
    tide_diff_params p;
    if (pp)
        p = *pp;
    else
        tide_diff_params_default(&p);
    if (!(p.fwhm_tmpl <= 200))
        return tide_error(TIDE_E_INVAL, "diff: the template FWHM must be finite and < 200 px");
    tide_diff_template *t = calloc(1, sizeof *t);
    if (!t)
        return tide_error(TIDE_E_NOMEM, "diff: out of memory for a prepared template");
    snprintf(t->name, sizeof t->name, "%s", p.tmpl_name[0] ? p.tmpl_name : "template");
    tide_header_init(&t->header);
    t->width = tmpl->width;
    t->height = tmpl->height;
    t->fwhm_given = p.fwhm_tmpl > 0;
    int st = hdr ? tide_header_copy(&t->header, hdr) : 0;
    if (!st) { /* with the subtraction's sky noise: the template is every run's grid */
        const tide_diffp_input in = {tmpl,       hdr,         NULL,   t->name, p.gain_tmpl,
                                     p.sat_tmpl, p.fwhm_tmpl, &p.sub, p.config};
        st = tide_diffp_prepare_single(ctx, &in, p.fwhm_guess, &p.bkg, p.cosmetics ? &p.cos : NULL,
                                       &t->f);
    }
    if (!st) /* the template's grid is the output grid */
        t->f.fwhm_out = t->f.fwhm;
    if (st) {
        tide_diff_template_free(ctx, t);
        return st;
    }
    *out = t;
    return 0;
}
