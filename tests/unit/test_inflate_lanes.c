/* test_inflate_lanes.c — the warp-cooperative path of tide's inflate (io/fits/inflate_math.h)
 * run on the CPU: 32 host threads are the 32 lanes of a warp and TIDE_INFL_SYNC is a barrier
 * of the 32, so every table fill, stored-block copy and CRC-32 piece is shared between lanes
 * exactly as tile_inflate_cuda.cu shares them (a missing or misplaced sync shows as a wrong
 * byte, a status that differs between lanes, or a hang). On gzip members of libdeflate
 * (levels 0, 1, 6, 12) and zlib (flushes: empty stored and fixed blocks) over mixed data, every
 * lane must give libdeflate's bytes; on truncated and mutated members every lane the same
 * status, and an accepted member libdeflate's bytes. */
#define _GNU_SOURCE
#include <libdeflate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static pthread_barrier_t g_warp; /* the lanes' sync */
#define TIDE_INFL_SYNC() pthread_barrier_wait(&g_warp)
#include "io/fits/inflate_math.h"
#include "tide_test.h"

enum { LANES = 32 };

static pthread_barrier_t g_ctl; /* the lanes and the main thread: start and end of a stream */
static tide_inflate_state g_state;
static uint32_t g_crc[256];
static const uint8_t *g_in;
static size_t g_nin, g_cap;
static uint8_t *g_out;
static int g_quit, g_status[LANES];
static size_t g_got[LANES];

static void *lane_main(void *arg) {
    const int lane = (int)(intptr_t)arg;
    for (;;) {
        pthread_barrier_wait(&g_ctl);
        if (g_quit)
            return NULL;
        g_status[lane] = tide_inflate_gzip(&g_state, g_crc, g_in, g_nin, g_out, g_cap, &g_got[lane],
                                           lane, LANES);
        pthread_barrier_wait(&g_ctl);
    }
}

static uint64_t rng_state = 0xbb67ae8584caa73bull;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static struct libdeflate_decompressor *g_ld;
static int g_accepted, g_refused;

/* The 32 lanes on one member; @p must 1: valid, -1: wrong, 0: unknown. */
static void run(const char *what, const uint8_t *s, size_t ns, size_t cap, int must) {
    uint8_t *in = malloc(ns ? ns : 1), *ref = malloc(cap ? cap : 1);
    memcpy(in, s, ns);
    g_in = in;
    g_nin = ns;
    g_cap = cap;
    g_out = malloc(cap ? cap : 1);
    pthread_barrier_wait(&g_ctl); /* go */
    pthread_barrier_wait(&g_ctl); /* done */
    int same = 1;
    for (int l = 1; l < LANES; l++)
        same &= g_status[l] == g_status[0] && g_got[l] == g_got[0];
    if (!same)
        fprintf(stderr, "%s: the lanes disagree\n", what);
    CHECK(same);
    size_t rg = 0;
    enum libdeflate_result lr = libdeflate_gzip_decompress(g_ld, s, ns, ref, cap, &rg);
    if (!g_status[0]) {
        g_accepted++;
        int ok = lr == LIBDEFLATE_SUCCESS && rg == g_got[0] && !memcmp(ref, g_out, rg);
        if (!ok)
            fprintf(stderr, "%s: 32 lanes inflate %zu bytes, libdeflate %d with %zu\n", what,
                    g_got[0], (int)lr, rg);
        CHECK(ok);
    } else {
        g_refused++;
    }
    if (must > 0 && g_status[0])
        fprintf(stderr, "%s: valid member refused (%d)\n", what, g_status[0]);
    CHECK(must <= 0 || g_status[0] == 0);
    CHECK(must >= 0 || g_status[0] != 0);
    free(in);
    free(ref);
    free(g_out);
}

static void make(uint8_t *d, size_t n, int kind) {
    for (size_t i = 0; i < n; i++)
        d[i] = kind == 0   ? (uint8_t)rnd()
               : kind == 1 ? (uint8_t)(i / 4096 % 2 ? rnd() % 4 : 'a' + i % 13)
                           : (uint8_t)(rnd() % 9 == 0 ? rnd() : 0);
}

int main(void) {
    for (uint32_t i = 0; i < 256; i++)
        g_crc[i] = tide_infl_crc_entry(i);
    pthread_barrier_init(&g_warp, NULL, LANES);
    pthread_barrier_init(&g_ctl, NULL, LANES + 1);
    pthread_t th[LANES];
    for (int l = 0; l < LANES; l++)
        pthread_create(&th[l], NULL, lane_main, (void *)(intptr_t)l);
    g_ld = libdeflate_alloc_decompressor();
    char what[128];
    const size_t sizes[] = {0, 1, 31, 33, 1000, 65535, 65536, 70001, 200000};
    const int levels[] = {0, 1, 6, 12};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int kind = 0; kind < 3; kind++) {
            const size_t n = sizes[si];
            uint8_t *d = malloc(n + 1);
            make(d, n, kind);
            for (int li = 0; li < 4; li++) {
                struct libdeflate_compressor *c = libdeflate_alloc_compressor(levels[li]);
                size_t bound = libdeflate_gzip_compress_bound(c, n);
                uint8_t *z = malloc(bound);
                size_t len = libdeflate_gzip_compress(c, d, n, z, bound);
                snprintf(what, sizeof what, "level %d, data %d, %zu bytes", levels[li], kind, n);
                run(what, z, len, n, 1);
                if (n == 1000 && kind == 1) { /* every truncation, then mutants */
                    for (size_t cut = 0; cut < len; cut++)
                        run("truncated", z, cut, n, -1);
                    for (int t = 0; t < 400; t++) {
                        uint8_t *m = malloc(len);
                        memcpy(m, z, len);
                        m[10 + rnd() % (len - 18)] ^= (uint8_t)(1u << (rnd() % 8));
                        run("mutant", m, len, n + 16, 0);
                        free(m);
                    }
                }
                free(z);
                libdeflate_free_compressor(c);
            }
            /* zlib with sync and partial flushes: empty stored and fixed blocks between */
            z_stream zs;
            memset(&zs, 0, sizeof zs);
            deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
            size_t cap = deflateBound(&zs, n) + 256;
            uint8_t *z = malloc(cap);
            zs.next_out = z;
            zs.avail_out = (uInt)cap;
            for (size_t pos = 0; pos < n;) {
                size_t k = n - pos < 7000 ? n - pos : 7000;
                zs.next_in = d + pos;
                zs.avail_in = (uInt)k;
                pos += k;
                deflate(&zs, pos / 7000 % 2 ? Z_SYNC_FLUSH : Z_PARTIAL_FLUSH);
            }
            deflate(&zs, Z_FINISH);
            snprintf(what, sizeof what, "zlib flushes, data %d, %zu bytes", kind, n);
            run(what, z, zs.total_out, n, 1);
            deflateEnd(&zs);
            free(z);
            free(d);
        }
    g_quit = 1;
    pthread_barrier_wait(&g_ctl);
    for (int l = 0; l < LANES; l++)
        pthread_join(th[l], NULL);
    libdeflate_free_decompressor(g_ld);
    printf("32 lanes: %d members accepted, %d refused\n", g_accepted, g_refused);
    return TIDE_TEST_RESULT();
}
