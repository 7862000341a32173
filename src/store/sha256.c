/* sha256.c — SHA-256 (NIST FIPS 180-4, §6.2) and the stores' image key (store.h,
 * tide_store_file_checksum): the checksum of the FITS file identifies a frame, so re-processing
 * it replaces its rows.
 *
 * Speed: the compression runs on the x86 SHA extensions when the processor has them
 * (sha256_ni.c, ~1.5-2 GB/s per core), else in portable C (~0.2-0.3 GB/s). A file larger than
 * TIDE_STORE_CHECKSUM_CHUNK is hashed as a two-level tree — the SHA-256 of the concatenated
 * SHA-256 digests of its 8 MiB pieces — so the pieces are hashed on all cores at once
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
    s->blocks = tide_sha256_blocks_ni();
    if (!s->blocks)
        s->blocks = tide_sha256_blocks_portable;
}

static void update(sha256 *s, const unsigned char *p, size_t n) {
    s->len += n;
    if (s->nbuf) { /* complete the partial block first */
        size_t k = 64 - (size_t)s->nbuf < n ? 64 - (size_t)s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, k);
        s->nbuf += (int)k;
        p += k;
        n -= k;
        if (s->nbuf < 64)
            return;
        s->blocks(s->h, s->buf, 1);
        s->nbuf = 0;
    }
    if (n >= 64) { /* whole blocks straight from the caller's memory */
        s->blocks(s->h, p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    memcpy(s->buf, p, n);
    s->nbuf = (int)n;
}

static void final_bin(sha256 *s, unsigned char out[32]) {
    uint64_t bits = s->len * 8;
    unsigned char pad[72] = {0x80};
    size_t npad = (s->nbuf < 56 ? 56 : 120) - (size_t)s->nbuf;
    for (int i = 0; i < 8; i++)
        pad[npad + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    update(s, pad, npad + 8);
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++)
            out[4 * i + b] = (unsigned char)(s->h[i] >> (24 - 8 * b));
}

static void to_hex(const unsigned char d[32], char *out) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[64] = 0;
}

void tide_store_sha256_hex(const void *data, int64_t n, char *out_hex) {
    sha256 s;
    unsigned char d[32];
    init(&s);
    update(&s, data, (size_t)n);
    final_bin(&s, d);
    to_hex(d, out_hex);
}

/* Per-thread read buffer: large reads (few system calls), small enough to stay in L2. */
enum { READ_BUF = 512 << 10 };

/* SHA-256 of bytes [off, off + n) of @p fd into @p out; 0, or -errno (a short file: -EIO). */
static int hash_range(int fd, int64_t off, int64_t n, unsigned char *buf, unsigned char out[32]) {
    sha256 s;
    init(&s);
    while (n > 0) {
        size_t want = n < READ_BUF ? (size_t)n : READ_BUF;
        ssize_t got = pread(fd, buf, want, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        if (got == 0)
            return -EIO; /* the file shrank while being read */
        update(&s, buf, (size_t)got);
        off += got;
        n -= got;
    }
    final_bin(&s, out);
    return 0;
}

int tide_store_file_checksum(const char *path, char *out_hex) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return tide_error(TIDE_E_IO, "%s: cannot open for its checksum", path);
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tide_error(TIDE_E_IO, "%s: not a regular file (checksum)", path);
    }
    const int64_t size = sb.st_size, chunk = TIDE_STORE_CHECKSUM_CHUNK;
    const int64_t npiece = size <= chunk ? 1 : (size + chunk - 1) / chunk;
    unsigned char *dig = malloc((size_t)npiece * 32);
    if (!dig) {
        close(fd);
        return tide_error(TIDE_E_NOMEM, "%s: checksum digests", path);
    }
    int err = 0;
    int nthreads = 1;
#ifdef _OPENMP
    nthreads = omp_get_max_threads();
    if (nthreads > npiece)
        nthreads = (int)npiece;
#endif
    (void)nthreads;
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
        unsigned char *buf = malloc(READ_BUF);
        if (!buf) {
#pragma omp atomic write
            err = -ENOMEM;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t k = 0; k < npiece; k++) {
            if (!buf)
                continue;
            int64_t off = k * chunk, n = size - off < chunk ? size - off : chunk;
            int e = hash_range(fd, off, npiece == 1 ? size : n, buf, dig + 32 * k);
            if (e) {
#pragma omp atomic write
                err = e;
            }
        }
        free(buf);
    }
    close(fd);
    if (!err) {
        unsigned char d[32];
        if (npiece == 1) {
            memcpy(d, dig, 32);
        } else { /* the tree's root: SHA-256 of the pieces' digests in file order */
            sha256 s;
            init(&s);
            update(&s, dig, (size_t)npiece * 32);
            final_bin(&s, d);
        }
        to_hex(d, out_hex);
    }
    free(dig);
    if (err == -ENOMEM)
        return tide_error(TIDE_E_NOMEM, "%s: checksum buffers", path);
    if (err)
        return tide_error(TIDE_E_IO, "%s: read error while computing its checksum: %s", path,
                          strerror(-err));
    return TIDE_OK;
}
