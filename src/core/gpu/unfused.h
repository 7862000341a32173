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

/* ---- float --------------------------------------------------------------------------- */

TIDE_HD static inline float tide_fadd(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

TIDE_HD static inline float tide_fsub(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

TIDE_HD static inline float tide_fmul(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

TIDE_HD static inline float tide_fdiv(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

TIDE_HD static inline float tide_fsqrt(float a) {
#ifdef __CUDA_ARCH__
    return __fsqrt_rn(a);
#else
    return sqrtf(a);
#endif
}

/* ---- double -------------------------------------------------------------------------- */

TIDE_HD static inline double tide_dadd(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

TIDE_HD static inline double tide_dsub(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}

TIDE_HD static inline double tide_dmul(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

TIDE_HD static inline double tide_ddiv(double a, double b) {
#ifdef __CUDA_ARCH__
    return __ddiv_rn(a, b);
#else
    return a / b;
#endif
}

TIDE_HD static inline double tide_dsqrt(double a) {
#ifdef __CUDA_ARCH__
    return __dsqrt_rn(a);
#else
    return sqrt(a);
#endif
}

#endif
