/* tile_decode_gpu.c — tide_tile_decode_cuda: the host side of the GPU tile decoder. The
 * table's descriptors are read and checked here (tide_tile_descriptor, as the CPU twin does),
 * each tile's conversion is worked out once (tide_tile_conv_for), the tiles are cut into
 * chunks in file order (rice_plan_chunks), and tide_rice_run_cuda (tile_decode_cuda.cu) moves
 * the data unit up chunk by chunk — from memory, or read from the file on the context's
 * threads while the chunks before it decode — one tile per thread, then converts one pixel per
 * thread. The image comes back (tide_tile_decode_cuda) or stays on the device, its mask made
 * in the same pass (tide_tile_rice_to_device, tide_tile_rice_file_to_device). Any wrong tile
 * is handed to the CPU twin, which names the first one exactly as a CPU read would. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fits_tile_read.h"
#include "tide/memory.h"
#include "tide/status.h"
#include "tide/timer.h"
#include "tile_decode.h"
#include "tile_decode_kernels.h"

#ifdef TIDE_HAVE_CUDA
int tide_tile_rice_on_device(const tide_tile_image *ti) {
    return ti->lay.codec == CODEC_RICE && !ti->lossless && ti->lay.ntiles <= INT32_MAX;
}

/* TIDE_GPU_RICE_CHUNKS=N (1..TIDE_RICE_MAX_CHUNKS) fixes the chunk count (tests use it to put
 * chunk boundaries anywhere); otherwise 0: one chunk. One thread decodes a whole tile, so a
 * chunk's decode lasts as long as its longest tile however few tiles it holds, and chunks
 * only add their launches: on the H200 a 4096² int16 frame read file to device took 3.80 ms
 * in chunks of 1.5 MB (8) and 3.27 ms in one. */
static int chunks_asked(void) {
    const char *v = getenv("TIDE_GPU_RICE_CHUNKS");
    const int n = v ? atoi(v) : 0;
    return n >= 1 && n <= TIDE_RICE_MAX_CHUNKS ? n : 0;
}

/* Cut the tiles into p->nchunks runs of about equal count; chunk c needs the unit's bytes up
 * to the furthest stream end of its tiles and of all tiles before (heaps are written in tile
 * order, so this is the chunk's own streams; an unordered heap only makes early chunks
 * larger). */
static void rice_plan_chunks(tide_rice_plan *p, int64_t heap_lo) {
    const tide_tile_job *j = p->jobs;
    int n = chunks_asked();
    if (!n)
        n = 1;
    if (n > p->ntiles)
        n = (int)p->ntiles;
    p->nchunks = n;
    p->tile0[0] = 0;
    p->byte0[0] = heap_lo;
    int64_t end = heap_lo, k = 0;
    for (int c = 0; c < n; c++) {
        const int64_t t1 = p->ntiles * (c + 1) / n;
        for (; k < t1; k++)
            if (j[k].stream_off + j[k].stream_len > end)
                end = j[k].stream_off + j[k].stream_len;
        p->tile0[c + 1] = t1;
        p->byte0[c + 1] = end;
    }
}

/* The jobs, conversions and chunks of @p ti's tiles, whose table rows are @p table (the unit's
 * first naxis1 * naxis2 bytes): 0, 2 (a bad descriptor or a fallback tile: the CPU twin), or
 * a negative TIDE_E_*. */
static int rice_plan_make(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *table,
                          tide_rice_plan *p) {
    const tide_tile_layout *t = &ti->lay;
    tide_tile_job *jobs;
    tide_tile_conv *conv;
    int st = tide_rice_host_tables(ctx, t->ntiles, &jobs, &conv);
    if (st)
        return st;
    *p = (tide_rice_plan){.ntiles = t->ntiles,
                          .unit_bytes = t->data_end,
                          .bytepix = t->rice_bytepix,
                          .blocksize = t->rice_block,
                          .width = t->znaxis[0],
                          .height = t->ndim > 1 ? t->znaxis[1] : 1,
                          .ztile1 = t->ztile[0],
                          .ztile2 = t->ndim > 1 ? t->ztile[1] : 1,
                          .ntile1 = t->ntile[0],
                          .jobs = jobs,
                          .conv = conv};
    const int64_t n0 = t->ntile[0];
    int64_t total = 0, heap_lo = t->data_end;
    for (int64_t k = 0; k < t->ntiles; k++) {
        const uint8_t *row = table + k * t->naxis1;
        int64_t nelem, off, tw, th, npix;
        if (tide_tile_descriptor(t, &t->cmp, row, k, &nelem, &off) || nelem == 0)
            return 2;
        tide_tile_shape(t, k, &tw, &th, &npix);
        jobs[k] = (tide_tile_job){t->theap + off,
                                  nelem,
                                  total,
                                  npix,
                                  (k % n0) * t->ztile[0],
                                  t->ndim > 1 ? ((k / n0) % t->ntile[1]) * t->ztile[1] : 0,
                                  tw};
        total += npix;
        if (t->theap + off < heap_lo)
            heap_lo = t->theap + off;
        tide_tile_conv_for(ti, k, row, t->rice_bytepix, &conv[k]);
    }
    p->scratch_ints = total;
    rice_plan_chunks(p, heap_lo);
    return 0;
}

/* Where tide_rice_run_cuda's chunks come from: the unit in host memory, or the file. */
typedef struct {
    const uint8_t *mem; /* the whole unit, or NULL: read from fd */
    int fd;
    int64_t file_off; /* the unit's first byte in the file */
    int threads;
    const char *path;
    int hdu;
} unit_source;

/* tide_rice_fill: unit bytes [lo, hi) into dst, in slices on the context's threads (one thread
 * copies out of the page cache at a fraction of what the memory system gives). */
static int fill_unit(void *arg, uint8_t *dst, int64_t lo, int64_t hi) {
    const unit_source *s = arg;
    const int64_t slice = (int64_t)1 << 17, n = hi - lo, ns = (n + slice - 1) / slice;
    int failed = 0;
#pragma omp parallel for num_threads(s->threads > 1 ? s->threads : 1) schedule(static)             \
    reduction(|                                                                                    \
              : failed) if (ns > 1)
    for (int64_t i = 0; i < ns; i++) {
        const int64_t o = i * slice, m = n - o < slice ? n - o : slice;
        if (s->mem)
            memcpy(dst + o, s->mem + lo + o, (size_t)m);
        else
            failed |= tide_fits_pread_full(s->fd, dst + o, (size_t)m, s->file_off + lo + o) != 0;
    }
    return failed ? tide_error(TIDE_E_IO, "%s[HDU %d]: cannot read the tiles", s->path, s->hdu) : 0;
}

/* The pieces of one device decode as stage timers (rice.*), when tide_fits_times_on. */
static void add_times(tide_ctx *ctx, double prep_ms, const tide_rice_times *t) {
    if (!tide_fits_times_on())
        return;
    const struct {
        const char *stage;
        double ms;
    } piece[] = {{"rice.prep", prep_ms},     {"rice.fill", t->fill}, {"rice.h2d", t->h2d},
                 {"rice.decode", t->decode}, {"rice.tail", t->tail}, {"rice.convert", t->convert},
                 {"rice.wait", t->wait},     {"rice.run", t->total}};
    for (size_t i = 0; i < sizeof piece / sizeof *piece; i++)
        tide_timer_add(ctx, piece[i].stage, piece[i].ms);
}

/* The device decode of @p ti with its table rows at @p table and its unit from @p src. */
static int rice_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *table,
                       unit_source *src, float *d_out, uint16_t *d_mask) {
    if (!tide_tile_rice_on_device(ti))
        return 1;
    const double t0 = tide_now();
    tide_rice_plan p;
    int st = rice_plan_make(ctx, ti, table, &p);
    if (st)
        return st;
    const double prep_ms = 1e3 * (tide_now() - t0);
    src->threads = ctx->threads;
    src->path = ti->lay.path;
    src->hdu = ti->lay.hdu;
    int bad = 0;
    tide_rice_times tm;
    st = tide_rice_run_cuda(ctx, &p, src->mem, fill_unit, src, d_out, d_mask, &bad, &tm);
    if (!st)
        add_times(ctx, prep_ms, &tm);
    return st ? st : bad ? 2 : 0;
}

int tide_tile_rice_to_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                             float *d_out, uint16_t *d_mask) {
    unit_source src = {.mem = data, .fd = -1};
    return rice_device(ctx, ti, data, &src, d_out, d_mask);
}

int tide_tile_rice_file_to_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *table,
                                  float *d_out, uint16_t *d_mask) {
    unit_source src = {.mem = NULL, .fd = ti->lay.fd, .file_off = ti->lay.data_start};
    return rice_device(ctx, ti, table, &src, d_out, d_mask);
}

int tide_tile_decode_through_device(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                                    float *out, tide_tile_to_device_fn fn) {
    const tide_tile_layout *t = &ti->lay;
    const size_t bytes = sizeof(float) * (size_t)(t->znaxis[0] * (t->ndim > 1 ? t->znaxis[1] : 1));
    void *d_out = NULL;
    int st = tide_device_alloc(ctx, bytes, &d_out);
    if (!st)
        st = fn(ctx, ti, data, d_out, NULL);
    if (!st)
        st = tide_memcpy(ctx, out, 0, d_out, 1, bytes);
    tide_device_free(ctx, d_out);
    return st;
}

int tide_tile_decode_cuda(tide_ctx *ctx, const tide_tile_image *ti, const uint8_t *data,
                          float *out) {
    const tide_tile_layout *t = &ti->lay;
    if (t->codec == CODEC_GZIP1 || t->codec == CODEC_GZIP2) {
        /* GZIP on the device as RICE_1 (test_gpu_tile_inflate passes on the H200, clean
         * under memcheck on a sample of its images; TIDE_GPU_TILE_DECODE=0 keeps the host) */
        return tide_tile_inflate_cuda(ctx, ti, data, out);
    }
    if (!tide_tile_rice_on_device(ti))
        return 1;
    int st = tide_tile_decode_through_device(ctx, ti, data, out, tide_tile_rice_to_device);
    if (st == 2) /* the CPU twin names the first wrong tile (or decodes a fallback tile) */
        st = tide_tile_decode_cpu(ti, data, out, ctx->threads);
    return st;
}
#endif
