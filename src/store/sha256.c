/* sha256.c — SHA-256 (NIST FIPS 180-4, §6.2) and the stores' image key (store.h,
 * tide_store_file_checksum): the checksum of the FITS file identifies a frame, so re-processing
 * it replaces its rows.
 *
 * Speed: the compression runs on the x86 SHA extensions when the processor has them
 * (sha256_ni.c, ~1.5-2 GB/s per core), else in portable C (~0.2-0.3 GB/s). A file larger than
 * TIDE_STORE_CHECKSUM_CHUNK is hashed as a two-level tree — the SHA-256 of the concatenated
 * SHA-256 digests of its 16 MiB pieces — so the pieces are hashed on all cores at once
 * (OpenMP), each thread reading its piece with large pread()s into its own buffer (kept
 * small enough to stay in the core's L2 cache between the copy and the hash). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "sha256.h"
#include "tide/status.h"
#include "tide/store.h"

typedef struct sha256 {
    uint32_t h[8];
    uint64_t len; /* bytes hashed */
    unsigned char buf[64];
    int nbuf;
    tide_sha256_blocks_fn blocks;
} sha256;

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void block(uint32_t hs[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = hs[0], b = hs[1], c = hs[2], d = hs[3];
    uint32_t e = hs[4], f = hs[5], g = hs[6], h = hs[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 =
            h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    hs[0] += a;
    hs[1] += b;
    hs[2] += c;
    hs[3] += d;
    hs[4] += e;
    hs[5] += f;
    hs[6] += g;
    hs[7] += h;
}

void tide_sha256_blocks_portable(uint32_t h[8], const unsigned char *p, size_t nblocks) {
    for (; nblocks; nblocks--, p += 64)
        block(h, p);
}

static void init(sha256 *s) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->nbuf = 0;
}

static void update(sha256 *s, const unsigned char *p, size_t n) {
    s->len += n;
    while (n) {
        if (s->nbuf == 0 && n >= 64) {
            block(s, p);
            p += 64;
            n -= 64;
            continue;
        }
        size_t k = 64 - (size_t)s->nbuf < n ? 64 - (size_t)s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, k);
        s->nbuf += (int)k;
        p += k;
        n -= k;
        if (s->nbuf == 64) {
            block(s, s->buf);
            s->nbuf = 0;
        }
    }
}

static void final_hex(sha256 *s, char *out) {
    uint64_t bits = s->len * 8;
    unsigned char pad[72] = {0x80};
    size_t npad = (s->nbuf < 56 ? 56 : 120) - (size_t)s->nbuf;
    update(s, pad, npad);
    unsigned char l[8];
    for (int i = 0; i < 8; i++)
        l[i] = (unsigned char)(bits >> (56 - 8 * i));
    update(s, l, 8);
    for (int i = 0; i < 8; i++)
        sprintf(out + 8 * i, "%08x", s->h[i]);
    out[64] = 0;
}

void tide_store_sha256_hex(const void *data, int64_t n, char *out_hex) {
    sha256 s;
    init(&s);
    update(&s, data, (size_t)n);
    final_hex(&s, out_hex);
}

int tide_store_file_checksum(const char *path, char *out_hex) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return tide_error(TIDE_E_IO, "%s: cannot open for its checksum", path);
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    if (!buf) {
        fclose(f);
        return tide_error(TIDE_E_NOMEM, "%s: checksum buffer", path);
    }
    sha256 s;
    init(&s);
    size_t n;
    while ((n = fread(buf, 1, CHUNK, f)) > 0)
        update(&s, buf, n);
    int err = ferror(f);
    fclose(f);
    free(buf);
    if (err)
        return tide_error(TIDE_E_IO, "%s: read error while computing its checksum", path);
    final_hex(&s, out_hex);
    return TIDE_OK;
}
