/* sha256.c — the stores' image key (store.h, tide_store_file_checksum) and plain SHA-256,
 * both through libcrypto's EVP interface: the checksum of the FITS file identifies a frame, so
 * re-processing it replaces its rows.
 *
 * Why libcrypto: tide links it already (through libpq), it picks the fastest compression the
 * processor has (the x86 SHA extensions among them), and it replaced a hand-written SHA-256
 * with its own SHA-NI path at the same speed and with the same digests (CHANGES.md, issue 16).
 * A file larger than TIDE_STORE_CHECKSUM_CHUNK is hashed as a two-level tree — the SHA-256 of
 * the concatenated SHA-256 digests of its 8 MiB pieces — so the pieces are hashed on all cores
 * at once (OpenMP), each thread reading its piece with large pread()s into its own buffer
 * (kept small enough to stay in the core's L2 cache between the copy and the hash). */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tide/status.h"
#include "tide/store.h"

static void to_hex(const unsigned char d[32], char *out) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[64] = 0;
}

/* SHA-256 of @p n bytes at @p p into @p out; 0, or -ENOMEM when libcrypto cannot allocate. */
static int digest(const void *p, size_t n, unsigned char out[32]) {
    unsigned int len = 0;
    return EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) == 1 && len == 32 ? 0 : -ENOMEM;
}

void tide_store_sha256_hex(const void *data, int64_t n, char *out_hex) {
    unsigned char d[32];
    if (digest(data, (size_t)n, d) != 0) {
        out_hex[0] = 0; /* no digest is empty: the key matches nothing */
        return;
    }
    to_hex(d, out_hex);
}

/* Per-thread read buffer: large reads (few system calls), small enough to stay in L2. */
enum { READ_BUF = 512 << 10 };

/* SHA-256 of bytes [off, off + n) of @p fd into @p out; 0, or -errno (a short file: -EIO). */
static int hash_range(int fd, int64_t off, int64_t n, unsigned char *buf, unsigned char out[32]) {
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return -ENOMEM;
    }
    int err = 0;
    while (n > 0 && !err) {
        size_t want = n < READ_BUF ? (size_t)n : READ_BUF;
        ssize_t got = pread(fd, buf, want, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            err = -errno;
        else if (got == 0)
            err = -EIO; /* the file shrank while being read */
        else if (EVP_DigestUpdate(md, buf, (size_t)got) != 1)
            err = -ENOMEM;
        else {
            off += got;
            n -= got;
        }
    }
    unsigned int len = 0;
    if (!err && (EVP_DigestFinal_ex(md, out, &len) != 1 || len != 32))
        err = -ENOMEM;
    EVP_MD_CTX_free(md);
    return err;
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
        if (npiece == 1)
            memcpy(d, dig, 32);
        else /* the tree's root: SHA-256 of the pieces' digests in file order */
            err = digest(dig, (size_t)npiece * 32, d);
        if (!err)
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
