/* unfused.h — arithmetic that rounds every operation on its own, the same on the CPU and the
 * GPU: the one set of helpers that the *_math.h headers use where a CUDA kernel must give its
 * CPU twin's bits.
 *
 * Why. nvcc contracts a * b + c into one fused multiply-add (one rounding instead of two), so
 * a formula compiled for the device differs from the same formula on the host in the last
 * bit. The _rn intrinsics (__fmul_rn, __dadd_rn, ...) are never contracted nor approximated;
 * on the host the plain operators are already rounded one by one (tide is built as ISO C11,
 * where gcc and clang default to -ffp-contract=off, and x86-64's baseline ISA has no FMA).
 * Division and sqrt are correctly rounded on both sides; they are here so that a formula can
 * be written in one style.
 *
 * The functions convert their arguments to their own type (float or double) as an assignment
 * would, and return that type: tide_fmul(a, b) is (float)a * (float)b, tide_dadd(a, b) is
 * (double)a + (double)b. Keep the operations and their order as in the formula being
 * reproduced: the results on both backends are part of tide's bit-for-bit outputs. */
#ifndef TIDE_GPU_UNFUSED_H
#define TIDE_GPU_UNFUSED_H
#include <math.h>

#include "core/gpu/hd.h"

/* TIDE_UNFUSED_OP(name, T, op, rn): T name(T a, T b), that is a op b rounded on its own (the
 * intrinsic rn on the device, the operator on the host); TIDE_UNFUSED_SQRT(name, T, host, rn):
 * T name(T a), the correctly rounded square root on both sides. One line per operation. */
#ifdef __CUDA_ARCH__
#define TIDE_UNFUSED_OP(name, T, op, rn)                                                           \
    TIDE_HD static inline T name(T a, T b) {                                                       \
        return rn(a, b);                                                                           \
    }
#define TIDE_UNFUSED_SQRT(name, T, host, rn)                                                       \
    TIDE_HD static inline T name(T a) {                                                            \
        return rn(a);                                                                              \
    }
#else
#define TIDE_UNFUSED_OP(name, T, op, rn)                                                           \
    TIDE_HD static inline T name(T a, T b) {                                                       \
        return a op b;                                                                             \
    }
#define TIDE_UNFUSED_SQRT(name, T, host, rn)                                                       \
    TIDE_HD static inline T name(T a) {                                                            \
        return host(a);                                                                            \
    }
#endif

TIDE_UNFUSED_OP(tide_fadd, float, +, __fadd_rn)
TIDE_UNFUSED_OP(tide_fsub, float, -, __fsub_rn)
TIDE_UNFUSED_OP(tide_fmul, float, *, __fmul_rn)
TIDE_UNFUSED_OP(tide_fdiv, float, /, __fdiv_rn)
TIDE_UNFUSED_SQRT(tide_fsqrt, float, sqrtf, __fsqrt_rn)
TIDE_UNFUSED_OP(tide_dadd, double, +, __dadd_rn)
TIDE_UNFUSED_OP(tide_dsub, double, -, __dsub_rn)
TIDE_UNFUSED_OP(tide_dmul, double, *, __dmul_rn)
TIDE_UNFUSED_OP(tide_ddiv, double, /, __ddiv_rn)
TIDE_UNFUSED_SQRT(tide_dsqrt, double, sqrt, __dsqrt_rn)

#endif
