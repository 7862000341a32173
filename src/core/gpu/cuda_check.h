/* cuda_check.h — turn a failing CUDA runtime or cuFFT call into a tide status with a detail
 * naming the call, file and line. Include only from .cu files or *_cudaonly.c files. */
#ifndef TIDE_CUDA_CHECK_H
#define TIDE_CUDA_CHECK_H
#include <cuda_runtime.h>
#include "tide/status.h"

#define TIDE_CUDA_TRY(call)                                                                        \
    do {                                                                                           \
        cudaError_t tide_ce_ = (call);                                                             \
        if (tide_ce_ != cudaSuccess)                                                               \
            return tide_error(tide_ce_ == cudaErrorMemoryAllocation ? TIDE_E_NOMEM : TIDE_E_CUDA,  \
                              "%s failed at %s:%d: %s", #call, __FILE__, __LINE__,                 \
                              cudaGetErrorString(tide_ce_));                                       \
    } while (0)

/** Check the last kernel launch. */
#define TIDE_CUDA_LAUNCHED() TIDE_CUDA_TRY(cudaGetLastError())

#endif
