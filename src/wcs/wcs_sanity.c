/* wcs_sanity.c — refuse a header whose WCS wcslib would accept only by inventing part of it.
 *
 * wcslib's defaults and fixes are right for a header that leaves something out on purpose,
 * and wrong for one that is broken: cdfix replaces an all-zero CD matrix by the identity
 * (1 degree per pixel), absent CDi_j and CDELTi default to 1 degree per pixel, and a singular
 * matrix gives a scale of 0"/px that the summary then prints. A frame with such a WCS is
 * treated as having no usable WCS (the callers say so and go on without sky positions). */
#include <math.h>
#include <stdio.h>

#include "tide/status.h"
#include "wcs_internal.h"

/* The value of @p key as a number: 1 when present and numeric, 0 when absent, -1 when present
 * but not a finite number. */
static int number(const tide_header *h, const char *key, double *v) {
    if (tide_header_find(h, key) < 0)
        return 0;
    int st = tide_header_get_dbl(h, key, v);
    tide_error_clear();
    return st || !isfinite(*v) ? -1 : 1;
}

/* Read the 2x2 matrix STEMi_j (CD or PC) over @p m, leaving absent elements as they are;
 * *any tells whether one was present. TIDE_E_WCS for a non-numeric or non-finite element. */
static int matrix(const tide_header *h, const char *stem, const char *source, double m[2][2],
                  int *any) {
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            char key[16];
            snprintf(key, sizeof key, "%s%d_%d", stem, i + 1, j + 1);
            int r = number(h, key, &m[i][j]);
            if (r < 0)
                return tide_error(TIDE_E_WCS, "%s: %s is not a finite number", source, key);
            *any |= r;
        }
    return TIDE_OK;
}

int tide_wcs_check_header(const tide_header *h, const char *source) {
    if (tide_header_find(h, "CTYPE1") < 0 && tide_header_find(h, "CTYPE2") < 0)
        return TIDE_OK; /* no primary WCS on axes 1-2: nothing to check here */
    double m[2][2] = {{0, 0}, {0, 0}}, cdelt[2] = {1, 1};
    int has_cd = 0, has_pc = 0, has_cdelt = 0, has_crota = 0;
    int st = matrix(h, "CD", source, m, &has_cd);
    if (st)
        return st;
    if (has_cd) {
        double det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
        if (!(fabs(det) > 0) || !isfinite(det))
            return tide_error(TIDE_E_WCS,
                              "%s: the CD matrix [[%g, %g], [%g, %g]] is singular (determinant "
                              "%g): no pixel scale",
                              source, m[0][0], m[0][1], m[1][0], m[1][1], det);
        return TIDE_OK;
    }
    for (int i = 0; i < 2; i++) {
        char key[16];
        snprintf(key, sizeof key, "CDELT%d", i + 1);
        int r = number(h, key, &cdelt[i]);
        if (r < 0 || (r > 0 && cdelt[i] == 0))
            return tide_error(TIDE_E_WCS, "%s: %s must be a finite, non-zero number", source, key);
        has_cdelt |= r;
        double rot;
        snprintf(key, sizeof key, "CROTA%d", i + 1);
        if (number(h, key, &rot) < 0)
            return tide_error(TIDE_E_WCS, "%s: %s is not a finite number", source, key);
        has_crota |= tide_header_find(h, key) >= 0;
    }
    double pc[2][2] = {{1, 0}, {0, 1}};
    st = matrix(h, "PC", source, pc, &has_pc);
    if (st)
        return st;
    if (has_pc && !(fabs(pc[0][0] * pc[1][1] - pc[0][1] * pc[1][0]) > 0))
        return tide_error(TIDE_E_WCS, "%s: the PC matrix is singular: no pixel scale", source);
    if (!has_cdelt && !has_pc && !has_crota)
        return tide_error(TIDE_E_WCS,
                          "%s: the WCS has no pixel scale (no CDi_j, CDELTi or PCi_j); wcslib "
                          "would assume 1 degree per pixel",
                          source);
    return TIDE_OK;
}

int tide_wcs_check_sip_orders(const tide_header *h, const char *source) {
    static const char *keys[] = {"A_ORDER", "B_ORDER", "AP_ORDER", "BP_ORDER"};
    for (int k = 0; k < 4; k++) {
        if (tide_header_find(h, keys[k]) < 0)
            continue;
        int64_t order = 0;
        int st = tide_header_get_int(h, keys[k], &order);
        tide_error_clear();
        if (st || order < 0 || order > TIDE_WCS_SIP_MAX_ORDER)
            return tide_error(TIDE_E_WCS,
                              "%s: %s must be an integer from 0 to %d (SIP "
                              "distortion)",
                              source, keys[k], TIDE_WCS_SIP_MAX_ORDER);
    }
    return TIDE_OK;
}
