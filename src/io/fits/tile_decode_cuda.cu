/* tile_decode_cuda.cu — the CUDA twin of tide's RICE_1 tile decoder: one thread per tile
 * decodes its stream (a tile's blocks follow each other in the bitstream, so a tile is
 * sequential; images have thousands of tiles), with the checks of rice_decode.c: every byte
 * read is inside the tile's stream, a block code above FSMAX + 1 or a difference wider than
 * 32 bits stops the tile with a status. A second kernel converts one pixel per thread with
 * tile_quant_math.h, finding its place in the dither sequence from its index in the tile.
 *
 * tide_rice_run_cuda moves the data unit up in chunks of whole tiles on a copy stream while
 * the host reads the next chunk, and decodes each chunk on a stream of its own as soon as its
 * bytes are up: the read, the copy and the decoding overlap instead of following each other.
 * Streams, events, the page-locked ring and the dither table are made once and kept (on the
 * context, TIDE_EXT_RICE; the table per device), so a warm call allocates nothing but pool
 * memory and waits for the device once, at its end. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx_internal.h"
#include "core/gpu/cuda_check.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "tile_decode_kernels.h"

/* ---- the bit reader ---------------------------------------------------------------------- */

/* The unread bits are the top n bits of buf, the bits below them zero. */
struct dev_bits {
    const uint8_t *p, *end;
    uint64_t buf;
    int n;
};

/* The 4 bytes at p, big-endian, from the two aligned words that hold them (the GPU has no
 * unaligned loads). The second word may reach up to 4 bytes past p + 3: the device copy of
 * the data unit is padded (RICE_UNIT_PAD), and those bytes are shifted out unused. */
__device__ static inline uint32_t db_load_be32(const uint8_t *p) {
    const uintptr_t a = (uintptr_t)p;
    const uint32_t *w = (const uint32_t *)(a & ~(uintptr_t)3);
    const uint32_t v = __funnelshift_r(__ldg(w), __ldg(w + 1), 8u * (unsigned)(a & 3));
    return __byte_perm(v, 0, 0x0123);
}

/* Top up the held bits: 32 at once while 4 bytes of the stream remain (one refill in place of
 * four single-byte loads), then byte by byte up to the stream's end, never past it. Called
 * with n <= 32 (every request is at most 32 bits). */
__device__ static inline void db_refill(dev_bits *r) {
    if (r->n <= 32 && r->end - r->p >= 4) {
        r->buf |= (uint64_t)db_load_be32(r->p) << (32 - r->n);
        r->p += 4;
        r->n += 32;
        return;
    }
    while (r->n < 56 && r->p < r->end) {
        r->buf |= (uint64_t)*r->p++ << (56 - r->n);
        r->n += 8;
    }
}

/* Hold at least k (<= 32) bits; -1 when the stream ends first. */
__device__ static inline int db_fill(dev_bits *r, int k) {
    if (r->n < k)
        db_refill(r);
    return r->n < k ? -1 : 0;
}

/* The next k (1..32) bits, after db_fill(r, k). */
__device__ static inline uint32_t db_take(dev_bits *r, int k) {
    uint32_t v = (uint32_t)(r->buf >> (64 - k));
    r->buf <<= k;
    r->n -= k;
    return v;
}

/* The zeros before the next one bit (consumed too); -1 when the stream ends first. */
__device__ static inline int db_unary(dev_bits *r, uint64_t *zeros) {
    uint64_t z = 0;
    for (;;) {
        int lz = r->buf ? __clzll((long long)r->buf) : 64;
        if (lz < r->n) {
            z += (uint64_t)lz;
            r->buf <<= lz;
            r->buf <<= 1;
            r->n -= lz + 1;
            *zeros = z;
            return 0;
        }
        z += (uint64_t)r->n; /* every held bit is a zero */
        r->buf = 0;
        r->n = 0;
        if (r->p == r->end)
            return -1;
        db_refill(r);
    }
}

/* ---- the kernels --------------------------------------------------------------------------- */

/* The dither sequence, set once per device (dither_table_ready). */
__device__ float g_rice_rand[TIDE_TILE_NRANDOM];

template <int BP> __device__ static inline int32_t widen(uint32_t v) {
    return BP == 1 ? (int32_t)(uint8_t)v : BP == 2 ? (int32_t)(int16_t)(uint16_t)v : (int32_t)v;
}

/* One tile's stream into its scratch values; its status (TIDE_TILE_*). BP is the pixel size,
 * so that each size gets its own loop with the bit widths as constants (as rice_decode.c). */
template <int BP>
__device__ static int decode_tile(const uint8_t *in, int64_t nin, int64_t npix, int blocksize,
                                  int32_t *out) {
    const int fsbits = BP == 1 ? 3 : BP == 2 ? 4 : 5;
    const int fsmax = BP == 1 ? 6 : BP == 2 ? 14 : 25;
    const int bbits = 8 * BP;
    if (nin < BP)
        return TIDE_TILE_SHORT;
    uint32_t last = 0;
    for (int b = 0; b < BP; b++)
        last = (last << 8) | in[b];
    dev_bits r = {in + BP, in + nin, 0, 0};
    db_refill(&r);
    int64_t i = 0;
    while (i < npix) {
        const int64_t imax = npix - i > blocksize ? i + blocksize : npix;
        if (db_fill(&r, fsbits))
            return TIDE_TILE_SHORT;
        const int fs = (int)db_take(&r, fsbits) - 1;
        if (fs < 0) { /* a block of zero differences */
            for (; i < imax; i++)
                out[i] = widen<BP>(last);
        } else if (fs == fsmax) { /* differences stored verbatim */
            for (; i < imax; i++) {
                if (db_fill(&r, bbits))
                    return TIDE_TILE_SHORT;
                uint32_t d = db_take(&r, bbits);
                d = (d & 1) ? ~(d >> 1) : d >> 1;
                last += d;
                out[i] = widen<BP>(last);
            }
        } else if (fs > fsmax) {
            return TIDE_TILE_BADCODE;
        } else { /* Rice codes: a unary high part and fs low bits */
            const uint64_t zmax = 0xffffffffull >> fs;
            for (; i < imax; i++) {
                uint64_t z;
                if (r.n < 32)
                    db_refill(&r);
                if (db_unary(&r, &z))
                    return TIDE_TILE_SHORT;
                if (z > zmax)
                    return TIDE_TILE_WIDE;
                uint32_t d = (uint32_t)(z << fs);
                if (fs) {
                    if (db_fill(&r, fs))
                        return TIDE_TILE_SHORT;
                    d |= db_take(&r, fs);
                }
                d = (d & 1) ? ~(d >> 1) : d >> 1;
                last += d;
                out[i] = widen<BP>(last);
            }
        }
    }
    return TIDE_TILE_OK;
}

/* Tiles [t0, t1), one a thread; any wrong one sets *bad (all write the same 1). */
template <int BP>
__global__ void tile_rice_kernel(const uint8_t *unit, const tide_tile_job *jobs, int64_t t0,
                                 int64_t t1, int blocksize, int32_t *scratch, int32_t *bad) {
    const int64_t k = t0 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= t1)
        return;
    const tide_tile_job j = jobs[k];
    if (decode_tile<BP>(unit + j.stream_off, j.stream_len, j.npix, blocksize,
                        scratch + j.scratch_off) != TIDE_TILE_OK)
        *bad = 1;
}

__global__ void tile_convert_kernel(const int32_t *scratch, const tide_tile_job *jobs,
                                    const tide_tile_conv *conv, int64_t width, int64_t height,
                                    int64_t zt1, int64_t zt2, int64_t n1, float *out,
                                    uint16_t *mask) {
    const int64_t n = width * height;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t x = i % width, y = i / width;
        const int64_t k = (y / zt2) * n1 + x / zt1;
        const int64_t p = (y - jobs[k].y0) * jobs[k].tw + (x - jobs[k].x0);
        const tide_tile_conv c = conv[k];
        const float rv = c.dither ? tide_tile_dither_at(g_rice_rand, c.first_rand, p) : 0.0f;
        const float v = tide_tile_value(&c, scratch[jobs[k].scratch_off + p], rv);
        if (mask) { /* the reader's marking, fused (tide_fits_read_image_at) */
            const int isbad = !isfinite(v);
            out[i] = isbad ? NAN : v;
            mask[i] = isbad ? (uint16_t)TIDE_MASK_NODATA : (uint16_t)0;
        } else {
            out[i] = v; /* the decoder's twin: tide_tile_decode_cpu's bits */
        }
    }
}

/* ---- what is kept between calls --------------------------------------------------------- */

#define RICE_NSTREAMS 8 /* decode streams: chunks past this share them in turn */
#define RICE_NRING 3    /* page-locked buffers the host reads chunks into */
#define RICE_UNIT_PAD 8 /* bytes past the unit on the device (db_load_be32's second word) */

enum { EV_H2D0, EV_H2D1, EV_DEC0, EV_DEC1, EV_PER_CHUNK };

typedef struct rice_dev {
    cudaStream_t copy, dec[RICE_NSTREAMS];
    cudaEvent_t ready, conv0, conv1, ev[EV_PER_CHUNK][TIDE_RICE_MAX_CHUNKS];
    uint8_t *ring[RICE_NRING];
    size_t ring_bytes;
    void *tables; /* page-locked: the jobs, then the conversions */
    size_t tables_bytes;
    int32_t *bad; /* page-locked: the decoder's verdict comes back here */
} rice_dev;

static void rice_dev_destroy(tide_ctx *ctx, void *data) {
    (void)ctx;
    rice_dev *s = (rice_dev *)data;
    if (s->copy)
        cudaStreamSynchronize(s->copy);
    for (int i = 0; i < RICE_NSTREAMS; i++)
        if (s->dec[i]) {
            cudaStreamSynchronize(s->dec[i]);
            cudaStreamDestroy(s->dec[i]);
        }
    if (s->copy)
        cudaStreamDestroy(s->copy);
    cudaEvent_t one[] = {s->ready, s->conv0, s->conv1};
    for (int i = 0; i < 3; i++)
        if (one[i])
            cudaEventDestroy(one[i]);
    for (int e = 0; e < EV_PER_CHUNK; e++)
        for (int c = 0; c < TIDE_RICE_MAX_CHUNKS; c++)
            if (s->ev[e][c])
                cudaEventDestroy(s->ev[e][c]);
    for (int i = 0; i < RICE_NRING; i++)
        if (s->ring[i])
            cudaFreeHost(s->ring[i]);
    if (s->tables)
        cudaFreeHost(s->tables);
    if (s->bad)
        cudaFreeHost(s->bad);
    free(s);
}

static int rice_dev_make(rice_dev *s) {
    TIDE_CUDA_TRY(cudaStreamCreateWithFlags(&s->copy, cudaStreamNonBlocking));
    for (int i = 0; i < RICE_NSTREAMS; i++)
        TIDE_CUDA_TRY(cudaStreamCreateWithFlags(&s->dec[i], cudaStreamNonBlocking));
    cudaEvent_t *one[] = {&s->ready, &s->conv0, &s->conv1};
    for (int i = 0; i < 3; i++)
        TIDE_CUDA_TRY(cudaEventCreate(one[i]));
    for (int e = 0; e < EV_PER_CHUNK; e++)
        for (int c = 0; c < TIDE_RICE_MAX_CHUNKS; c++)
            TIDE_CUDA_TRY(cudaEventCreate(&s->ev[e][c]));
    TIDE_CUDA_TRY(cudaMallocHost((void **)&s->bad, sizeof *s->bad));
    return TIDE_OK;
}

/* The context's streams, events and page-locked room, made whole on first use. */
static int rice_dev_get(tide_ctx *ctx, rice_dev **out) {
    rice_dev *s = (rice_dev *)ctx->ext[TIDE_EXT_RICE].data;
    if (!s) {
        if (!(s = (rice_dev *)calloc(1, sizeof *s)))
            return tide_error(TIDE_E_NOMEM, "RICE decoder state");
        int st = rice_dev_make(s);
        if (st) {
            rice_dev_destroy(ctx, s);
            return st;
        }
        ctx->ext[TIDE_EXT_RICE].data = s;
        ctx->ext[TIDE_EXT_RICE].destroy = rice_dev_destroy;
    }
    *out = s;
    return TIDE_OK;
}

/* The ring's buffers hold at least @p bytes each (the largest chunk). */
static int ring_reserve(rice_dev *s, size_t bytes) {
    if (bytes <= s->ring_bytes)
        return TIDE_OK;
    for (int i = 0; i < RICE_NRING; i++) {
        if (s->ring[i])
            cudaFreeHost(s->ring[i]);
        s->ring[i] = NULL;
    }
    s->ring_bytes = 0;
    for (int i = 0; i < RICE_NRING; i++)
        TIDE_CUDA_TRY(cudaMallocHost((void **)&s->ring[i], bytes));
    s->ring_bytes = bytes;
    return TIDE_OK;
}

extern "C" int tide_rice_host_tables(tide_ctx *ctx, int64_t ntiles, tide_tile_job **jobs,
                                     tide_tile_conv **conv) {
    rice_dev *s;
    int st = rice_dev_get(ctx, &s);
    if (st)
        return st;
    const size_t nj = sizeof(tide_tile_job) * (size_t)ntiles;
    const size_t need = nj + sizeof(tide_tile_conv) * (size_t)ntiles;
    if (need > s->tables_bytes) {
        if (s->tables)
            cudaFreeHost(s->tables);
        s->tables = NULL;
        s->tables_bytes = 0;
        TIDE_CUDA_TRY(cudaMallocHost(&s->tables, need + need / 2));
        s->tables_bytes = need + need / 2;
    }
    *jobs = (tide_tile_job *)s->tables;
    *conv = (tide_tile_conv *)((uint8_t *)s->tables + nj); /* nj is a multiple of 8 */
    return TIDE_OK;
}

/* The dither sequence on the context's device, uploaded once per device and process: it
 * never changes, and a call should not move 40 KB it already moved. */
static int dither_table_ready(tide_ctx *ctx) {
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static unsigned char done[256];
    int dev = 0;
    TIDE_CUDA_TRY(cudaGetDevice(&dev));
    if (dev < 0 || dev >= 256)
        return tide_error(TIDE_E_CUDA, "device %d", dev);
    pthread_mutex_lock(&mu);
    int st = TIDE_OK;
    if (!done[dev]) {
        static float host[TIDE_TILE_NRANDOM];
        tide_tile_randoms(host);
        cudaError_t e = cudaMemcpyToSymbolAsync(g_rice_rand, host, sizeof host, 0,
                                                cudaMemcpyHostToDevice, (cudaStream_t)ctx->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize((cudaStream_t)ctx->stream);
        if (e == cudaSuccess)
            done[dev] = 1;
        else
            st = tide_error(TIDE_E_CUDA, "dither table: %s", cudaGetErrorString(e));
    }
    pthread_mutex_unlock(&mu);
    return st;
}

/* ---- one run ----------------------------------------------------------------------------- */

static float ev_ms(cudaEvent_t a, cudaEvent_t b) {
    float f = 0;
    return cudaEventElapsedTime(&f, a, b) == cudaSuccess ? f : 0.0f;
}

/* The device's share of @p t, from the run's events (all complete). */
static void event_times(const rice_dev *s, int nchunks, tide_rice_times *t) {
    float h2d = 0, last = 0, tail = 0;
    for (int c = 0; c < nchunks; c++) {
        h2d += ev_ms(s->ev[EV_H2D0][c], s->ev[EV_H2D1][c]);
        const float e = ev_ms(s->ev[EV_DEC0][0], s->ev[EV_DEC1][c]);
        const float f = ev_ms(s->ev[EV_H2D1][nchunks - 1], s->ev[EV_DEC1][c]);
        last = e > last ? e : last;
        tail = f > tail ? f : tail;
    }
    t->h2d = h2d;
    t->decode = last;
    t->tail = tail;
    t->convert = ev_ms(s->conv0, s->conv1);
}

static int launch_decode(const tide_rice_plan *p, int c, cudaStream_t st, const uint8_t *d_unit,
                         const tide_tile_job *d_jobs, int32_t *d_scr, int32_t *d_bad) {
    const int64_t t0 = p->tile0[c], t1 = p->tile0[c + 1];
    if (t1 <= t0)
        return TIDE_OK;
    const int block = 32; /* one tile a thread: one warp a block spreads tiles over the SMs */
    const unsigned grid = (unsigned)((t1 - t0 + block - 1) / block);
    if (p->bytepix == 1)
        tile_rice_kernel<1>
            <<<grid, block, 0, st>>>(d_unit, d_jobs, t0, t1, p->blocksize, d_scr, d_bad);
    else if (p->bytepix == 2)
        tile_rice_kernel<2>
            <<<grid, block, 0, st>>>(d_unit, d_jobs, t0, t1, p->blocksize, d_scr, d_bad);
    else
        tile_rice_kernel<4>
            <<<grid, block, 0, st>>>(d_unit, d_jobs, t0, t1, p->blocksize, d_scr, d_bad);
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK;
}

/* Chunk c: its bytes up on the copy stream (from the caller's page-locked unit, or read by
 * the host into the ring first), then its tiles on their decode stream once they are there;
 * the context's stream waits for that decode before the conversion. */
static int run_chunk(tide_ctx *ctx, rice_dev *s, const tide_rice_plan *p, int c,
                     const uint8_t *direct, tide_rice_fill fill, void *arg, uint8_t *d_unit,
                     const tide_tile_job *d_jobs, int32_t *d_scr, int32_t *d_bad, double *fill_ms) {
    const int64_t lo = p->byte0[c], hi = p->byte0[c + 1];
    const uint8_t *src = direct ? direct + lo : NULL;
    if (!direct && hi > lo) {
        const int b = c % RICE_NRING;
        if (c >= RICE_NRING) /* that buffer's previous copy must be over */
            TIDE_CUDA_TRY(cudaEventSynchronize(s->ev[EV_H2D1][c - RICE_NRING]));
        const double h0 = tide_now();
        int st = fill(arg, s->ring[b], lo, hi);
        *fill_ms += 1e3 * (tide_now() - h0);
        if (st)
            return st;
        src = s->ring[b];
    }
    TIDE_CUDA_TRY(cudaEventRecord(s->ev[EV_H2D0][c], s->copy));
    if (hi > lo)
        TIDE_CUDA_TRY(
            cudaMemcpyAsync(d_unit + lo, src, (size_t)(hi - lo), cudaMemcpyHostToDevice, s->copy));
    TIDE_CUDA_TRY(cudaEventRecord(s->ev[EV_H2D1][c], s->copy));
    cudaStream_t ds = s->dec[c % RICE_NSTREAMS];
    TIDE_CUDA_TRY(cudaStreamWaitEvent(ds, s->ev[EV_H2D1][c], 0));
    TIDE_CUDA_TRY(cudaEventRecord(s->ev[EV_DEC0][c], ds));
    int st = launch_decode(p, c, ds, d_unit, d_jobs, d_scr, d_bad);
    if (st)
        return st;
    TIDE_CUDA_TRY(cudaEventRecord(s->ev[EV_DEC1][c], ds));
    TIDE_CUDA_TRY(cudaStreamWaitEvent((cudaStream_t)ctx->stream, s->ev[EV_DEC1][c], 0));
    return TIDE_OK;
}

/* 1 when @p p is page-locked (or registered) host memory the copy engine reads directly. */
static int host_pinned(const void *p) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeHost;
}

static int convert(tide_ctx *ctx, rice_dev *s, const tide_rice_plan *p, const int32_t *d_scr,
                   const tide_tile_job *d_jobs, const tide_tile_conv *d_conv, float *d_out,
                   uint16_t *d_mask) {
    cudaStream_t st = (cudaStream_t)ctx->stream;
    const int64_t n = p->width * p->height;
    const int block = 256;
    const int64_t g = (n + block - 1) / block;
    const unsigned grid = (unsigned)(g > 65535 * 16 ? 65535 * 16 : g);
    TIDE_CUDA_TRY(cudaEventRecord(s->conv0, st));
    if (n > 0) {
        tile_convert_kernel<<<grid, block, 0, st>>>(d_scr, d_jobs, d_conv, p->width, p->height,
                                                    p->ztile1, p->ztile2, p->ntile1, d_out, d_mask);
        TIDE_CUDA_LAUNCHED();
    }
    TIDE_CUDA_TRY(cudaEventRecord(s->conv1, st));
    return TIDE_OK;
}

extern "C" int tide_rice_run_cuda(tide_ctx *ctx, const tide_rice_plan *p, const uint8_t *unit,
                                  tide_rice_fill fill, void *arg, float *d_out, uint16_t *d_mask,
                                  int *bad, tide_rice_times *t) {
    const double t_start = tide_now();
    *bad = 0;
    rice_dev *s;
    int st = rice_dev_get(ctx, &s);
    if (!st)
        st = dither_table_ready(ctx);
    if (st)
        return st;
    const uint8_t *direct = unit && host_pinned(unit) ? unit : NULL;
    int64_t most = 0; /* the largest chunk, for the ring */
    for (int c = 0; c < p->nchunks; c++)
        if (p->byte0[c + 1] - p->byte0[c] > most)
            most = p->byte0[c + 1] - p->byte0[c];
    if (!st && !direct)
        st = fill ? ring_reserve(s, (size_t)(most ? most : 1))
                  : tide_error(TIDE_E_INVAL, "RICE device decode: no source for the data unit");
    cudaStream_t cs = (cudaStream_t)ctx->stream;
    void *d_unit = NULL, *d_jobs = NULL, *d_conv = NULL, *d_scr = NULL, *d_bad = NULL;
    const size_t njobs = sizeof(tide_tile_job) * (size_t)p->ntiles;
    const size_t nconv = sizeof(tide_tile_conv) * (size_t)p->ntiles;
    if (!st)
        st = tide_device_alloc(ctx, (size_t)p->unit_bytes + RICE_UNIT_PAD, &d_unit);
    if (!st)
        st = tide_device_alloc(ctx, njobs, &d_jobs);
    if (!st)
        st = tide_device_alloc(ctx, nconv, &d_conv);
    if (!st)
        st = tide_device_alloc(
            ctx, sizeof(int32_t) * (size_t)(p->scratch_ints ? p->scratch_ints : 1), &d_scr);
    if (!st)
        st = tide_device_alloc(ctx, sizeof(int32_t), &d_bad);
    /* the tables from page-locked memory, not waited for; the copy stream starts after them */
    cudaError_t e = cudaSuccess;
    if (!st) {
        e = cudaMemcpyAsync(d_jobs, p->jobs, njobs, cudaMemcpyHostToDevice, cs);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(d_conv, p->conv, nconv, cudaMemcpyHostToDevice, cs);
        if (e == cudaSuccess)
            e = cudaMemsetAsync(d_bad, 0, sizeof(int32_t), cs);
        if (e == cudaSuccess)
            e = cudaEventRecord(s->ready, cs);
        if (e == cudaSuccess)
            e = cudaStreamWaitEvent(s->copy, s->ready, 0);
        if (e != cudaSuccess)
            st = tide_error(TIDE_E_CUDA, "RICE device decode: %s", cudaGetErrorString(e));
    }
    double fill_ms = 0;
    int queued = 0; /* chunks whose work reached the streams */
    for (int c = 0; !st && c < p->nchunks; c++, queued++)
        st = run_chunk(ctx, s, p, c, direct, fill, arg, (uint8_t *)d_unit,
                       (const tide_tile_job *)d_jobs, (int32_t *)d_scr, (int32_t *)d_bad, &fill_ms);
    if (st) { /* nothing may be freed that the other streams still use */
        cudaStreamSynchronize(s->copy);
        for (int i = 0; i < RICE_NSTREAMS && i < queued + 1; i++)
            cudaStreamSynchronize(s->dec[i]);
    }
    /* a wrong tile leaves garbage in its scratch values, converted all the same: the verdict
     * comes back with the image, in one wait, and the caller then throws the image away */
    if (!st)
        st = convert(ctx, s, p, (const int32_t *)d_scr, (const tide_tile_job *)d_jobs,
                     (const tide_tile_conv *)d_conv, d_out, d_mask);
    if (!st && (e = cudaMemcpyAsync(s->bad, d_bad, sizeof(int32_t), cudaMemcpyDeviceToHost, cs)) !=
                   cudaSuccess)
        st = tide_error(TIDE_E_CUDA, "RICE device decode: %s", cudaGetErrorString(e));
    void *dev[] = {d_unit, d_jobs, d_conv, d_scr, d_bad};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        tide_device_free(ctx, dev[i]);
    const double w0 = tide_now();
    e = cudaStreamSynchronize(cs);
    if (!st && e != cudaSuccess)
        st = tide_error(TIDE_E_CUDA, "RICE device decode: %s", cudaGetErrorString(e));
    if (!st)
        *bad = *s->bad != 0;
    if (t) {
        memset(t, 0, sizeof *t);
        t->wait = 1e3 * (tide_now() - w0);
        t->fill = fill_ms;
        if (!st)
            event_times(s, p->nchunks, t);
        t->total = 1e3 * (tide_now() - t_start);
    }
    return st;
}
