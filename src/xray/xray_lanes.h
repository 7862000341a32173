/* xray_lanes.h — the lane form of tide xray's per-trace code (xray_lm.h, xray_svd_lanes.h): one
 * trace per warp on the GPU, the same code with its lanes run in turn on the CPU. Code in lane
 * form is a sequence of phases; between phases every lane computes the same values from the
 * same shared data, so the control flow stays uniform across the warp. */
#ifndef TIDE_XRAY_LANES_H
#define TIDE_XRAY_LANES_H

/** Lanes that share one trace: a warp. */
#define XRAY_LANES 32

/* XRAY_PHASE(body): every lane runs body once with its own int `lane`. Within a phase no lane
 * reads what another writes, so the CPU may run the lanes in turn; on the GPU the warp syncs
 * before (the redundant reads every lane made are done) and after (the writes are visible). */
#ifdef __CUDA_ARCH__
#define XRAY_PHASE(...)                                                                            \
    do {                                                                                           \
        __syncwarp();                                                                              \
        const int lane = (int)(threadIdx.x & (XRAY_LANES - 1));                                    \
        __VA_ARGS__;                                                                               \
        __syncwarp();                                                                              \
    } while (0)
#else
/* XRAY_LANES_REVERSED runs the lanes of each phase last to first: a test's check that no lane
 * depends on another's writes within a phase (the GPU runs them in no order). */
#ifndef XRAY_LANES_REVERSED
#define XRAY_LANES_REVERSED 0
#endif
#define XRAY_PHASE(...)                                                                            \
    do {                                                                                           \
        for (int lane_ = 0; lane_ < XRAY_LANES; lane_++) {                                         \
            const int lane = XRAY_LANES_REVERSED ? XRAY_LANES - 1 - lane_ : lane_;                 \
            __VA_ARGS__;                                                                           \
        }                                                                                          \
    } while (0)
#endif

#endif
