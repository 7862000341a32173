/* reduce_calib.c — what `tide reduce` prints about the calibration (the job itself is the
 * library's, job.h). */
#include <math.h>
#include <stdio.h>

#include "cli.h"
#include "reduce_calib.h"

static void jnum(FILE *f, const char *key, double v) {
    if (isfinite(v))
        fprintf(f, ",\n  \"%s\": %.10g", key, v);
    else
        fprintf(f, ",\n  \"%s\": null", key);
}

void tide_reduce_calib_print(FILE *f, const tide_calib_result *c, int json) {
    const tide_refine_info *r = &c->refine;
    if (json) {
        fprintf(f, ",\n  \"astrometry\": ");
        tide_cli_json_string(f, c->astrstat);
        fprintf(f, ",\n  \"astrometry_message\": ");
        tide_cli_json_string(f, c->astrmsg);
        fprintf(f, ",\n  \"solved\": %s,\n  \"solve_blind\": %s", c->solved ? "true" : "false",
                c->solved && c->solve.blind ? "true" : "false");
        fprintf(f, ",\n  \"solve_index\": ");
        tide_cli_json_string(f, c->solved ? c->solve.index_name : "");
        jnum(f, "astrometric_rms_ra_arcsec", c->refined ? r->rms_ra_arcsec : NAN);
        jnum(f, "astrometric_rms_dec_arcsec", c->refined ? r->rms_dec_arcsec : NAN);
        jnum(f, "astrometric_rms_px", c->refined ? r->rms_px : NAN);
        fprintf(f, ",\n  \"astrometric_nstars\": %lld", (long long)(c->refined ? r->nstars : 0));
        fprintf(f, ",\n  \"reference_stars\": %lld,\n  \"reference_matched\": %lld",
                (long long)c->nref, (long long)c->nref_matched);
        jnum(f, "zp", c->zp_ok ? c->zp.zp : NAN);
        jnum(f, "ezp", c->zp_ok ? c->zp.ezp : NAN);
        fprintf(f, ",\n  \"zp_nstars\": %lld", (long long)(c->zp_ok ? c->zp.nstars : 0));
        jnum(f, "maglim5", c->lim.nused ? c->lim.mag5 : NAN);
        jnum(f, "maglim3", c->lim.nused ? c->lim.mag3 : NAN);
        jnum(f, "ms_refcat", c->ms_refcat);
        jnum(f, "ms_solve", c->ms_solve);
        jnum(f, "ms_refine", c->ms_refine);
        jnum(f, "ms_match", c->ms_match);
        jnum(f, "ms_photcal", c->ms_photcal);
        jnum(f, "ms_calibrate", c->ms_total);
        return;
    }
    fprintf(f, "  astrometry %s", c->astrstat);
    if (c->solved)
        fprintf(f, " (%s solve with %s, %.1f ms)", c->solve.blind ? "blind" : "hinted",
                c->solve.index_name, c->ms_solve);
    else if (c->verify.good)
        fprintf(f, " (header WCS verified: %lld matches)", (long long)c->verify.nmatched);
    if (c->refined)
        fprintf(f, "; TAN-SIP order %d from %lld stars, RMS %.3f\" RA %.3f\" Dec (%.3f px)",
                r->sip_order_used, (long long)r->nstars, r->rms_ra_arcsec, r->rms_dec_arcsec,
                r->rms_px);
    if (c->astrmsg[0])
        fprintf(f, "; %s", c->astrmsg);
    fprintf(f, "\n");
    if (c->nref)
        fprintf(f, "  reference stars %lld around the field, %lld sources matched\n",
                (long long)c->nref, (long long)c->nref_matched);
    if (c->zp_ok) {
        fprintf(f, "  zero point %.4f +- %.4f mag from %lld stars (scatter %.3f, slope %.3f)",
                c->zp.zp, c->zp.ezp, (long long)c->zp.nstars, c->zp.scatter, c->zp.slope);
        if (c->lim.nused)
            fprintf(f, "; limiting magnitude %.2f (5 sigma), %.2f (3 sigma)", c->lim.mag5,
                    c->lim.mag3);
        fprintf(f, "\n");
    } else if (c->zpmsg[0]) {
        fprintf(f, "  no zero point: %s\n", c->zpmsg);
    }
    fprintf(f,
            "  calibration %.1f ms (reference stars %.1f, solve %.1f, refine %.1f, match %.1f, "
            "zero point %.1f)\n",
            c->ms_total, c->ms_refcat, c->ms_solve, c->ms_refine, c->ms_match, c->ms_photcal);
}
