/* host_blocks.c — a process-wide cache of large host blocks for image planes (core_internal.h).
 *
 * Why: a warm process reduces frame after frame of the same shape, and each frame's host
 * planes (the frame read from disk, the difference and its planes downloaded from the GPU)
 * are hundreds of megabytes. Fresh memory from the system costs a page fault per 4 KiB page
 * on first touch: on the GPU machine 605 MB took 88 ms to download into fresh memory against
 * 21 ms into touched memory. Freed planes of TIDE_HOST_BLOCK_MIN bytes or more are therefore
 * kept here (up to a cap) and handed out again, so steady state touches no fresh page. On a
 * CUDA build the blocks are also page-locked on their first host<->device copy
 * (tide_host_block_pin), so later copies run by DMA at the link's speed instead of through the
 * staging ring.
 *
 * It is process-wide, not per context, because planes outlive contexts and are freed without
 * one (tide_image_free(NULL, ...)), like malloc's own arenas; one mutex guards it. Pointers it
 * did not hand out are not its business: tide_host_block_free says so and the caller frees
 * them. The cap on the memory kept while unused is TIDE_HOST_CACHE_MB from the environment
 * [4096]; 0 turns the cache off. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef TIDE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "core_internal.h"
#include "tide/memory.h"

#define HB_MAX 256 /* blocks tracked at once; beyond that plain calloc/free */

typedef struct host_block {
    unsigned char *p;
    size_t size;
    int in_use;
    int pinned;     /* page-locked with cudaHostRegister */
    int pin_failed; /* registration refused: do not try again */
    uint64_t freed; /* tick of the last release, for eviction */
} host_block;

static struct {
    pthread_mutex_t mu;
    host_block b[HB_MAX];
    int n;
    size_t idle_bytes; /* bytes in blocks not in use */
    size_t cap;
    int cap_read;
    uint64_t tick;
} g_hb = {.mu = PTHREAD_MUTEX_INITIALIZER};

static size_t cap_bytes(void) {
    if (!g_hb.cap_read) {
        const char *e = getenv("TIDE_HOST_CACHE_MB");
        long long mb = 4096;
        if (e && *e) {
            char *end = NULL;
            const long long v = strtoll(e, &end, 10);
            if (end && !*end && v >= 0)
                mb = v;
        }
        g_hb.cap = (size_t)mb << 20;
        g_hb.cap_read = 1;
    }
    return g_hb.cap;
}

static void release(host_block *b) {
#ifdef TIDE_HAVE_CUDA
    if (b->pinned && cudaHostUnregister(b->p) != cudaSuccess)
        cudaGetLastError(); /* the context may be gone; the memory is freed all the same */
#endif
    free(b->p);
}

/* Zero @p n bytes with the calling thread's OpenMP team (a reused 605 MB plane is ~40 ms for
 * one core); the whole team, never part of it (psf_lanczos.c's note). */
static void zero_parallel(unsigned char *p, size_t n) {
    const size_t slice = (size_t)8 << 20;
    const int64_t ns = (int64_t)((n + slice - 1) / slice);
#pragma omp parallel for schedule(static) if (ns >= 8)
    for (int64_t k = 0; k < ns; k++) {
        const size_t o = (size_t)k * slice;
        memset(p + o, 0, n - o < slice ? n - o : slice);
    }
}

void *tide_host_block_alloc(size_t bytes, int zero) {
    if (bytes < TIDE_HOST_BLOCK_MIN)
        return zero ? calloc(1, bytes ? bytes : 1) : malloc(bytes ? bytes : 1);
    pthread_mutex_lock(&g_hb.mu);
    /* best fit among the idle blocks, wasting at most half the request */
    int best = -1;
    for (int i = 0; i < g_hb.n; i++) {
        const host_block *b = &g_hb.b[i];
        if (!b->in_use && b->size >= bytes && b->size - bytes <= bytes / 2 &&
            (best < 0 || b->size < g_hb.b[best].size))
            best = i;
    }
    unsigned char *p = NULL;
    if (best >= 0) {
        host_block *b = &g_hb.b[best];
        b->in_use = 1;
        g_hb.idle_bytes -= b->size;
        p = b->p;
    }
    pthread_mutex_unlock(&g_hb.mu);
    if (p) {
        if (zero)
            zero_parallel(p, bytes);
        return p;
    }
    /* fresh zero pages from the system either way (calloc of this size maps them) */
    p = calloc(1, bytes);
    if (!p || cap_bytes() == 0)
        return p;
    pthread_mutex_lock(&g_hb.mu);
    if (g_hb.n < HB_MAX)
        g_hb.b[g_hb.n++] = (host_block){.p = p, .size = bytes, .in_use = 1};
    pthread_mutex_unlock(&g_hb.mu);
    return p;
}

int tide_host_block_free(void *ptr) {
    if (!ptr)
        return 1;
    pthread_mutex_lock(&g_hb.mu);
    int k = -1;
    for (int i = 0; i < g_hb.n; i++)
        if (g_hb.b[i].p == ptr && g_hb.b[i].in_use) {
            k = i;
            break;
        }
    if (k < 0) {
        pthread_mutex_unlock(&g_hb.mu);
        return 0;
    }
    host_block *b = &g_hb.b[k];
    b->in_use = 0;
    b->freed = ++g_hb.tick;
    g_hb.idle_bytes += b->size;
    /* over the cap: release the idle blocks freed longest ago */
    const size_t cap = cap_bytes();
    host_block evict[HB_MAX];
    int ne = 0;
    while (g_hb.idle_bytes > cap) {
        int old = -1;
        for (int i = 0; i < g_hb.n; i++)
            if (!g_hb.b[i].in_use && (old < 0 || g_hb.b[i].freed < g_hb.b[old].freed))
                old = i;
        if (old < 0)
            break;
        evict[ne++] = g_hb.b[old];
        g_hb.idle_bytes -= g_hb.b[old].size;
        g_hb.b[old] = g_hb.b[--g_hb.n];
    }
    pthread_mutex_unlock(&g_hb.mu);
    for (int i = 0; i < ne; i++) /* outside the lock: unregistering can take a while */
        release(&evict[i]);
    return 1;
}

void tide_host_block_trim(void) {
    host_block evict[HB_MAX];
    int ne = 0;
    pthread_mutex_lock(&g_hb.mu);
    for (int i = 0; i < g_hb.n;)
        if (!g_hb.b[i].in_use) {
            evict[ne++] = g_hb.b[i];
            g_hb.idle_bytes -= g_hb.b[i].size;
            g_hb.b[i] = g_hb.b[--g_hb.n];
        } else {
            i++;
        }
    pthread_mutex_unlock(&g_hb.mu);
    for (int i = 0; i < ne; i++)
        release(&evict[i]);
}

size_t tide_host_block_idle_bytes(void) {
    pthread_mutex_lock(&g_hb.mu);
    const size_t n = g_hb.idle_bytes;
    pthread_mutex_unlock(&g_hb.mu);
    return n;
}

int tide_host_block_pin(const void *ptr, size_t bytes) {
#ifdef TIDE_HAVE_CUDA
    const unsigned char *q = ptr;
    pthread_mutex_lock(&g_hb.mu);
    int k = -1;
    for (int i = 0; i < g_hb.n; i++) {
        const host_block *b = &g_hb.b[i];
        if (b->in_use && q >= b->p && q + bytes <= b->p + b->size) {
            k = i;
            break;
        }
    }
    int pinned = 0;
    if (k >= 0 && !g_hb.b[k].pinned && !g_hb.b[k].pin_failed) {
        /* Portable: page-locked for every device and context of the process. Held under
         * the lock so that a concurrent free cannot release the block meanwhile. */
        if (cudaHostRegister(g_hb.b[k].p, g_hb.b[k].size, cudaHostRegisterPortable) ==
            cudaSuccess) {
            g_hb.b[k].pinned = 1;
        } else {
            cudaGetLastError();
            g_hb.b[k].pin_failed = 1;
        }
    }
    if (k >= 0)
        pinned = g_hb.b[k].pinned;
    pthread_mutex_unlock(&g_hb.mu);
    return pinned;
#else
    (void)ptr;
    (void)bytes;
    return 0;
#endif
}

void *tide_host_alloc(size_t bytes) {
    return tide_host_block_alloc(bytes, 0);
}

void tide_host_free(void *ptr) {
    if (!tide_host_block_free(ptr))
        free(ptr);
}
