/* xray_pack.h — tide xray's fit results packed for the copy back from the GPU (TIDE_HD): a
 * tide_xray_lp_result holds room for TIDE_XRAY_MAX_COMPONENTS modes (1,064 bytes), a fit
 * with k components at most k, so the device packs the used part (5 ints and 2 + 4k
 * doubles: 220 bytes for 5 components) and the host unpacks it: a per-pixel map copies 0.23
 * GB instead of 1.1 GB. */
#ifndef TIDE_XRAY_PACK_H
#define TIDE_XRAY_PACK_H
#include <stdint.h>

#include "core/gpu/hd.h"
#include "tide/xray.h"

/** Ints of one packed result. */
#define XRAY_PACK_INTS 5

/** Doubles of one packed result with at most @p k modes. */
TIDE_HD static inline int64_t xray_pack_doubles(int k) {
    return 2 + 4 * (int64_t)k;
}

/** Pack @p r (its first @p k modes: k >= r->nmodes) into @p pi (XRAY_PACK_INTS) and @p pd
 *  (xray_pack_doubles(k)). */
TIDE_HD static inline void xray_pack(const tide_xray_lp_result *r, int k, int *pi, double *pd) {
    pi[0] = r->status;
    pi[1] = r->reason;
    pi[2] = r->order;
    pi[3] = r->nmodes;
    pi[4] = r->refine_iter;
    pd[0] = r->constant;
    pd[1] = r->chi2;
    for (int q = 0; q < k; q++) {
        pd[2 + q] = r->omega[q];
        pd[2 + k + q] = r->decay[q];
        pd[2 + 2 * k + q] = r->amp[q];
        pd[2 + 3 * k + q] = r->phase[q];
    }
}

/** Unpack into @p r what xray_pack packed (modes beyond k are left as they were). */
TIDE_HD static inline void xray_unpack(const int *pi, const double *pd, int k,
                                       tide_xray_lp_result *r) {
    r->status = pi[0];
    r->reason = pi[1];
    r->order = pi[2];
    r->nmodes = pi[3];
    r->refine_iter = pi[4];
    r->constant = pd[0];
    r->chi2 = pd[1];
    for (int q = 0; q < k; q++) {
        r->omega[q] = pd[2 + q];
        r->decay[q] = pd[2 + k + q];
        r->amp[q] = pd[2 + 2 * k + q];
        r->phase[q] = pd[2 + 3 * k + q];
    }
}

#endif
