/* fft_cpu.c — FFTW (single precision, threaded) behind the plan cache.
 *
 * FFTW's planner keeps process-wide state (its wisdom and the thread count set by
 * fftwf_plan_with_nthreads) and is not thread-safe; only fftwf_execute* is (FFTW manual §5.4,
 * "Thread safety"). So planning and plan destruction go through one process-wide mutex: the
 * single piece of global state in tide, owned by the FFTW library's own design. Plans are
 * made for the padded in-place layout and executed with the new-array interface
 * (fftwf_execute_dft_r2c/c2r) on any buffer from fftwf_malloc, which has the alignment the plan
 * was made for.
 *
 * FFTW's worker threads run on OpenMP's pool (fftwf_threads_set_callback, FFTW >= 3.3.9): with
 * FFTW's own pthreads beside libgomp's, the OpenMP threads of tide's loops, which spin for a
 * while after each parallel region, would compete with FFTW's workers for the same cores. */
#include <fftw3.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "fft_kernels.h"
#include "tide/status.h"

static void omp_parallel_loop(void *(*work)(char *), char *jobdata, size_t elsize, int njobs,
                              void *data) {
    (void)data;
#pragma omp parallel for num_threads(njobs) schedule(static, 1)
    for (int i = 0; i < njobs; i++)
        work(jobdata + elsize * (size_t)i);
}

static pthread_mutex_t fftw_planner_lock = PTHREAD_MUTEX_INITIALIZER;
static int fftw_threads_ready = 0; /* guarded by fftw_planner_lock */

int tide_fft_buffer_alloc_cpu(tide_ctx *ctx, int64_t floats, float **buf) {
    (void)ctx;
    size_t bytes = (size_t)(floats ? floats : 1) * sizeof(float);
    *buf = fftwf_malloc(bytes);
    return *buf ? TIDE_OK : tide_error(TIDE_E_NOMEM, "cannot allocate %zu bytes for an FFT", bytes);
}

void tide_fft_buffer_free_cpu(tide_ctx *ctx, float *buf) {
    (void)ctx;
    if (buf)
        fftwf_free(buf);
}

int tide_fft_plan_make_cpu(tide_ctx *ctx, struct tide_fft_plan *p) {
    int64_t cw = p->nx / 2 + 1, pitch = 2 * cw;
    int64_t real_dist = p->ny * pitch, cplx_dist = p->ny * cw;
    if (p->nx > INT_MAX || p->ny > INT_MAX || real_dist > INT_MAX)
        return tide_error(TIDE_E_RANGE, "FFT of %lld x %lld is too large for FFTW's int sizes",
                          (long long)p->nx, (long long)p->ny);
    /* The planner needs arrays of the right alignment; with FFTW_ESTIMATE it does not touch
     * them, so the pages of a large buffer are never even mapped. */
    float *tmp = fftwf_malloc((size_t)(real_dist * p->batch) * sizeof(float));
    if (!tmp)
        return tide_error(TIDE_E_NOMEM, "FFT planning buffer for %lld x %lld", (long long)p->nx,
                          (long long)p->ny);
    int n[2] = {(int)p->ny, (int)p->nx};
    int rembed[2] = {(int)p->ny, (int)pitch};
    int cembed[2] = {(int)p->ny, (int)cw};
    unsigned flags = p->effort == TIDE_FFT_MEASURE ? FFTW_MEASURE : FFTW_ESTIMATE;
    pthread_mutex_lock(&fftw_planner_lock);
    if (!fftw_threads_ready) {
        fftw_threads_ready = fftwf_init_threads() ? 1 : -1;
        if (fftw_threads_ready > 0)
            fftwf_threads_set_callback(omp_parallel_loop, NULL);
    }
    if (fftw_threads_ready > 0)
        fftwf_plan_with_nthreads(ctx->threads > 0 ? ctx->threads : 1);
    fftwf_plan plan;
    if (p->dir == TIDE_FFT_R2C)
        plan = fftwf_plan_many_dft_r2c(2, n, p->batch, tmp, rembed, 1, (int)real_dist,
                                       (fftwf_complex *)tmp, cembed, 1, (int)cplx_dist, flags);
    else
        plan = fftwf_plan_many_dft_c2r(2, n, p->batch, (fftwf_complex *)tmp, cembed, 1,
                                       (int)cplx_dist, tmp, rembed, 1, (int)real_dist, flags);
    pthread_mutex_unlock(&fftw_planner_lock);
    fftwf_free(tmp);
    if (!plan)
        return tide_error(TIDE_E_FFT, "FFTW could not plan a %s transform of %lld x %lld",
                          p->dir == TIDE_FFT_R2C ? "R2C" : "C2R", (long long)p->nx,
                          (long long)p->ny);
    p->handle = plan;
    p->work_bytes = 0;
    return TIDE_OK;
}

int tide_fft_exec_cpu(tide_ctx *ctx, struct tide_fft_plan *p, float *data) {
    (void)ctx;
    if (fftwf_alignment_of(data) != 0)
        return tide_error(TIDE_E_INVAL,
                          "FFT buffer %p is not SIMD-aligned (use "
                          "tide_fft_buffer_alloc)",
                          (void *)data);
    if (p->dir == TIDE_FFT_R2C)
        fftwf_execute_dft_r2c((fftwf_plan)p->handle, data, (fftwf_complex *)data);
    else
        fftwf_execute_dft_c2r((fftwf_plan)p->handle, (fftwf_complex *)data, data);
    return TIDE_OK;
}

void tide_fft_plan_destroy_cpu(tide_ctx *ctx, struct tide_fft_plan *p) {
    (void)ctx;
    if (!p->handle)
        return;
    pthread_mutex_lock(&fftw_planner_lock);
    fftwf_destroy_plan((fftwf_plan)p->handle);
    pthread_mutex_unlock(&fftw_planner_lock);
    p->handle = NULL;
}
