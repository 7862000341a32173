/* fft_cuda.cu — cuFFT behind the plan cache: in-place 2-D real plans on ctx->stream, made
 * without their own workspace so the cache can hand all plans one shared buffer from the
 * context's pool (cufftSetAutoAllocation(0) + cufftSetWorkArea). 64-bit plan sizes, so a
 * 24k x 24k frame plans as readily as a small one. */
#include <cuda_runtime.h>
#include <cufft.h>
#include <stdint.h>

#include "fft_kernels.h"
#include "tide/status.h"

static const char *cufft_name(cufftResult r) {
    switch (r) {
    case CUFFT_SUCCESS: return "success";
    case CUFFT_INVALID_PLAN: return "invalid plan";
    case CUFFT_ALLOC_FAILED: return "allocation failed";
    case CUFFT_INVALID_VALUE: return "invalid value";
    case CUFFT_INTERNAL_ERROR: return "internal error";
    case CUFFT_EXEC_FAILED: return "execution failed";
    case CUFFT_SETUP_FAILED: return "setup failed";
    case CUFFT_INVALID_SIZE: return "invalid size";
    default: return "cuFFT error";
    }
}

#define CUFFT_TRY(call)                                                                            \
    do {                                                                                           \
        cufftResult r_ = (call);                                                                   \
        if (r_ != CUFFT_SUCCESS)                                                                   \
            return tide_error(r_ == CUFFT_ALLOC_FAILED ? TIDE_E_NOMEM : TIDE_E_FFT,                \
                              "%s failed at %s:%d: %s (%d)", #call, __FILE__, __LINE__,            \
                              cufft_name(r_), (int)r_);                                            \
    } while (0)

/* The handle is stored plus one so that a valid handle 0 never reads as "no plan". */
static cufftHandle handle_of(const struct tide_fft_plan *p) {
    return (cufftHandle)((intptr_t)p->handle - 1);
}

extern "C" int tide_fft_plan_make_cuda(tide_ctx *ctx, struct tide_fft_plan *p) {
    long long cw = p->nx / 2 + 1, pitch = 2 * cw;
    long long n[2] = {(long long)p->ny, (long long)p->nx};
    long long rembed[2] = {(long long)p->ny, pitch};
    long long cembed[2] = {(long long)p->ny, cw};
    long long rdist = p->ny * pitch, cdist = p->ny * cw;
    cufftHandle h;
    CUFFT_TRY(cufftCreate(&h));
    size_t work = 0;
    cufftResult r = cufftSetAutoAllocation(h, 0);
    if (r == CUFFT_SUCCESS) {
        if (p->dir == TIDE_FFT_R2C)
            r = cufftMakePlanMany64(h, 2, n, rembed, 1, rdist, cembed, 1, cdist, CUFFT_R2C,
                                    p->batch, &work);
        else
            r = cufftMakePlanMany64(h, 2, n, cembed, 1, cdist, rembed, 1, rdist, CUFFT_C2R,
                                    p->batch, &work);
    }
    if (r == CUFFT_SUCCESS)
        r = cufftSetStream(h, (cudaStream_t)ctx->stream);
    if (r != CUFFT_SUCCESS) {
        cufftDestroy(h);
        return tide_error(r == CUFFT_ALLOC_FAILED ? TIDE_E_NOMEM : TIDE_E_FFT,
                          "cuFFT could not plan a %s transform of %lld x %lld (batch %d): %s",
                          p->dir == TIDE_FFT_R2C ? "R2C" : "C2R", (long long)p->nx,
                          (long long)p->ny, p->batch, cufft_name(r));
    }
    p->handle = (void *)((intptr_t)h + 1);
    p->work_bytes = work;
    return TIDE_OK;
}

extern "C" int tide_fft_plan_set_work_cuda(tide_ctx *ctx, struct tide_fft_plan *p, void *work) {
    (void)ctx;
    CUFFT_TRY(cufftSetWorkArea(handle_of(p), work));
    return TIDE_OK;
}

extern "C" int tide_fft_exec_cuda(tide_ctx *ctx, struct tide_fft_plan *p, float *data) {
    (void)ctx;
    if (p->dir == TIDE_FFT_R2C)
        CUFFT_TRY(cufftExecR2C(handle_of(p), (cufftReal *)data, (cufftComplex *)data));
    else
        CUFFT_TRY(cufftExecC2R(handle_of(p), (cufftComplex *)data, (cufftReal *)data));
    return TIDE_OK;
}

extern "C" void tide_fft_plan_destroy_cuda(tide_ctx *ctx, struct tide_fft_plan *p) {
    (void)ctx;
    if (p->handle)
        cufftDestroy(handle_of(p));
    p->handle = NULL;
}
