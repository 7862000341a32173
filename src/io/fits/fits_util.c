/* fits_util.c — opening a spec with errors that say what is wrong with the file, cfitsio status
 * mapping, and header transfer between cfitsio and tide_header. */
#include <ctype.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fits_internal.h"
#include "fits_tile_header.h"
#include "tide/status.h"

int tide_fits_cur_hdu(fitsfile *f) {
    int n = 1;
    fits_get_hdu_num(f, &n);
    return n - 1;
}

/* cfitsio's own words for a failure: its status text, then the oldest stacked messages (which
 * say what it was doing). The stack is cleared so the next failure starts fresh. */
static void cfitsio_words(int cfst, char *out, size_t n) {
    char text[FLEN_STATUS] = "", msg[FLEN_ERRMSG];
    fits_get_errstatus(cfst, text);
    size_t len = (size_t)snprintf(out, n, "cfitsio %d: %s", cfst, text);
    int kept = 0;
    while (fits_read_errmsg(msg)) {
        size_t m = strlen(msg);
        while (m && isspace((unsigned char)msg[m - 1]))
            msg[--m] = 0;
        if (kept < 2 && m && len < n) {
            len += (size_t)snprintf(out + len, n - len, "; %s", msg);
            kept++;
        }
    }
    fits_clear_errmsg();
}

int tide_fits_status(int cfst, const char *path, int hdu, const char *what) {
    int st;
    switch (cfst) {
    case MEMORY_ALLOCATION: st = TIDE_E_NOMEM; break;
    case BAD_HDU_NUM: st = TIDE_E_NOTFOUND; break;
    case END_OF_FILE: st = TIDE_E_FORMAT; break;
    case FILE_NOT_OPENED:
    case FILE_NOT_CREATED:
    case WRITE_ERROR:
    case READ_ERROR:
    case FILE_NOT_CLOSED:
    case READONLY_FILE:
    case BAD_FILEPTR: st = TIDE_E_IO; break;
    default: st = (cfst >= 200 && cfst < 500) ? TIDE_E_FORMAT : TIDE_E_IO; break;
    }
    char words[512];
    cfitsio_words(cfst, words, sizeof words);
    if (hdu >= 0)
        return tide_error(st, "%s[HDU %d]: %s (%s)", path, hdu, what, words);
    return tide_error(st, "%s: %s (%s)", path, what, words);
}

/* Input names are local files unless the user asked for more: cfitsio would otherwise fetch
 * URLs, read stdin or shared memory, evaluate row and pixel filters and write output files
 * named in the input name. A service that takes names from other people must not. */
static atomic_int extended_names;

void tide_fits_set_extended_names(int allow) {
    atomic_store(&extended_names, allow ? 1 : 0);
}

/* Does @p s hold only the characters of an image section ([1:512,*,-*,1:100:2])? */
static int section_text(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789*:,- ", s[i]))
            return 0;
    return n > 0;
}

/* Does @p s name an HDU: a number, or EXTNAME with an optional ,EXTVER? */
static int hdu_text(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("_-,. ", s[i]))
            return 0;
    return n > 0;
}

/* Refuse a spec that is more than FILE, FILE[HDU], FILE+N and an optional image section, or
 * that names anything but a local file, unless extended names are allowed. */
static int check_name(const char *spec, const char *urltype, const char *infile,
                      const char *outfile, const char *binspec, const char *colspec) {
    if (atomic_load(&extended_names))
        return TIDE_OK;
    const char *p = spec;
    if (!strncmp(p, "file://", 7))
        p += 7;
    size_t len = strlen(infile);
    int ok = !strcmp(urltype, "file://") && !outfile[0] && !binspec[0] && !colspec[0] && len > 0 &&
             !strncmp(p, infile, len);
    const char *t = p + len;
    if (ok && *t == '+') { /* FILE+N */
        t++;
        if (!isdigit((unsigned char)*t))
            ok = 0;
        while (isdigit((unsigned char)*t))
            t++;
    }
    for (int group = 0; ok && *t; group++) {
        const char *close = *t == '[' ? strchr(t, ']') : NULL;
        if (!close || group > 1) {
            ok = 0;
            break;
        }
        size_t n = (size_t)(close - t - 1);
        ok = section_text(t + 1, n) || (group == 0 && hdu_text(t + 1, n));
        t = close + 1;
    }
    if (ok)
        return TIDE_OK;
    return tide_error(TIDE_E_INVAL,
                      "%s: not a local FITS file name: tide reads FILE, FILE[HDU] or FILE+N with "
                      "an optional image section [x1:x2,y1:y2]; cfitsio's URLs, stdin, mem://, "
                      "filters, binning and output files need --cfitsio-names",
                      spec);
}

/* What the first bytes of a file say: 1 = a FITS primary header, 2 = gzip/compress/bzip2
 * (cfitsio uncompresses those in memory), 0 = something else, -1 = unreadable. */
static int sniff(const char *path, int64_t *size, int *gzip) {
    struct stat sb;
    *size = -1;
    *gzip = 0;
    if (stat(path, &sb) != 0)
        return -1;
    *size = (int64_t)sb.st_size;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    unsigned char b[9] = {0};
    size_t n = fread(b, 1, sizeof b, fp);
    fclose(fp);
    if (n == 9 && !memcmp(b, "SIMPLE  =", 9))
        return 1;
    *gzip = n >= 2 && b[0] == 0x1f && b[1] == 0x8b;
    if (n >= 2 &&
        ((b[0] == 0x1f && (b[1] == 0x8b || b[1] == 0x9d)) || (b[0] == 'B' && b[1] == 'Z')))
        return 2;
    return 0;
}

/* Count the HDUs of @p root, checking that each data unit is complete; used to explain why an
 * HDU named in a spec could not be reached. */
static int count_hdus(tide_fits_src *probe, const char *root, int *count) {
    int cst = 0;
    *count = 0;
    if (fits_open_diskfile(&probe->f, root, READONLY, &cst)) {
        fits_clear_errmsg();
        return TIDE_OK;
    }
    for (int i = 1;; i++) {
        int type;
        if (fits_movabs_hdu(probe->f, i, &type, &cst))
            break;
        int st = tide_fits_check_extent(probe, i - 1, NULL);
        if (st)
            return st;
        *count = i;
    }
    fits_clear_errmsg();
    return TIDE_OK;
}

/* cfitsio picks the decompressor of a compressed file by looking for ".Z" and ".bz2" anywhere in
 * the name it was given (drvrmem.c, mem_uncompress2mem), not by the file's magic bytes: a
 * gzip file under a directory such as /data/obs.Zwicky/ (or mktemp's /tmp/tmp.Z...) goes to the
 * LZW decoder and fails ("input .Z file is in unrecognized compression format"). Such a file is
 * handed to cfitsio as /proc/self/fd/N, a name with neither, followed by the spec's selector. */
static int open_gzip_by_fd(fitsfile **f, const char *spec, const char *root, int *cst) {
#ifdef __linux__
    size_t nroot = strlen(root);
    if ((!strstr(root, ".Z") && !strstr(root, ".bz2")) || strncmp(spec, root, nroot) != 0)
        return fits_open_file(f, spec, READONLY, cst);
    int fd = open(root, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fits_open_file(f, spec, READONLY, cst);
    char byfd[FLEN_FILENAME];
    int n = snprintf(byfd, sizeof byfd, "/proc/self/fd/%d%s", fd, spec + nroot);
    /* cfitsio inflates the whole file into memory while opening it, so the descriptor is no
     * longer needed once fits_open_file returns */
    int r = n > 0 && (size_t)n < sizeof byfd ? fits_open_file(f, byfd, READONLY, cst)
                                             : fits_open_file(f, spec, READONLY, cst);
    close(fd);
    return r;
#else
    (void)root;
    return fits_open_file(f, spec, READONLY, cst);
#endif
}

int tide_fits_open(const char *spec, tide_fits_src *src) {
    memset(src, 0, sizeof *src);
    src->file_size = -1;
    if (!spec || !*spec)
        return tide_error(TIDE_E_INVAL, "no FITS file name given");
    char urltype[FLEN_FILENAME], infile[FLEN_FILENAME], outfile[FLEN_FILENAME];
    char extspec[FLEN_FILENAME], filter[FLEN_FILENAME], binspec[FLEN_FILENAME],
        colspec[FLEN_FILENAME];
    int cst = 0;
    if (strlen(spec) >= FLEN_FILENAME)
        return tide_error(TIDE_E_INVAL, "%.80s...: file name too long", spec);
    if (fits_parse_input_url((char *)spec, urltype, infile, outfile, extspec, filter, binspec,
                             colspec, &cst) ||
        fits_parse_rootname((char *)spec, src->root, &cst))
        return tide_fits_status(cst, spec, -1, "cannot parse the file name");
    int st = check_name(spec, urltype, infile, outfile, binspec, colspec);
    if (st)
        return st;
    src->explicit_hdu = extspec[0] != 0;
    src->section = filter[0] != 0 || binspec[0] != 0 || colspec[0] != 0;
    const char *root = src->root;

    int64_t size;
    int gzip = 0;
    int kind = sniff(root, &size, &gzip);
    if (kind == 2 && !gzip && !atomic_load(&extended_names))
        return tide_error(TIDE_E_UNSUPPORTED,
                          "%s: compressed with compress or bzip2: tide reads plain and "
                          "gzip-compressed FITS files; decompress it first",
                          root);
    if (kind < 0 && !atomic_load(&extended_names)) {
        /* cfitsio would go on to try FILE.gz, FILE.Z...: name the file that was asked for */
        if (errno == ENOENT)
            return tide_error(TIDE_E_NOTFOUND, "%s: no such file", root);
        return tide_error(TIDE_E_IO, "%s: cannot open: %s", root, strerror(errno));
    }
    if (kind == 0 && !atomic_load(&extended_names)) {
        /* cfitsio accepts more than the standard's fixed format (a SIMPLE card with its '='
         * elsewhere...) and would then parse headers the scan below never saw */
        struct stat sb;
        if (stat(root, &sb) == 0 && S_ISDIR(sb.st_mode))
            return tide_error(TIDE_E_IO, "%s: is a directory, not a FITS file", root);
        if (size == 0)
            return tide_error(TIDE_E_FORMAT, "%s: empty file (0 bytes), not a FITS file", root);
        return tide_error(TIDE_E_FORMAT, "%s: not a FITS file (it does not start with SIMPLE  =)",
                          root);
    }
    if (kind == 1 && size < 2880 && !atomic_load(&extended_names))
        return tide_error(TIDE_E_FORMAT,
                          "%s: truncated: %lld bytes, less than one 2880-byte FITS header block",
                          root, (long long)size);
    /* Every header is held to the standard before cfitsio parses it (fits_scan.c). */
    if (kind == 1 || gzip) {
        st = tide_fits_scan_file(root, gzip, src->section); /* cfitsio decodes a section */
        if (st)
            return st;
    }
    if (gzip ? open_gzip_by_fd(&src->f, spec, root, &cst)
             : fits_open_file(&src->f, spec, READONLY, &cst)) {
        src->f = NULL;
        struct stat sb;
        if (stat(root, &sb) != 0) {
            int e = errno;
            fits_clear_errmsg();
            if (e == ENOENT)
                return tide_error(TIDE_E_NOTFOUND, "%s: no such file", root);
            return tide_error(TIDE_E_IO, "%s: cannot open: %s", root, strerror(e));
        }
        if (S_ISDIR(sb.st_mode)) {
            fits_clear_errmsg();
            return tide_error(TIDE_E_IO, "%s: is a directory, not a FITS file", root);
        }
        if (kind < 0) {
            fits_clear_errmsg();
            return tide_error(TIDE_E_IO, "%s: cannot read: %s", root, strerror(errno));
        }
        if (size == 0) {
            fits_clear_errmsg();
            return tide_error(TIDE_E_FORMAT, "%s: empty file (0 bytes), not a FITS file", root);
        }
        if (kind == 0) {
            fits_clear_errmsg();
            return tide_error(TIDE_E_FORMAT,
                              "%s: not a FITS file (it does not start with SIMPLE  =)", root);
        }
        if (kind == 1 && size < 2880) {
            fits_clear_errmsg();
            return tide_error(TIDE_E_FORMAT,
                              "%s: truncated: %lld bytes, less than one 2880-byte FITS header "
                              "block",
                              root, (long long)size);
        }
        if (src->explicit_hdu && (cst == END_OF_FILE || cst == BAD_HDU_NUM) && kind == 1) {
            fits_clear_errmsg();
            tide_fits_src probe;
            memset(&probe, 0, sizeof probe);
            probe.file_size = size;
            snprintf(probe.root, sizeof probe.root, "%s", root);
            int n = 0;
            int st = count_hdus(&probe, root, &n);
            if (probe.f) {
                int s2 = 0;
                fits_close_file(probe.f, &s2);
            }
            if (st)
                return st;
            return tide_error(TIDE_E_NOTFOUND, "%s: no HDU [%s] (the file has %d HDU%s, 0..%d)",
                              root, extspec, n, n == 1 ? "" : "s", n - 1);
        }
        return tide_fits_status(cst, root, -1, "cannot open as FITS (malformed or truncated)");
    }
    if (kind == 1 && !src->section)
        src->file_size = size;
    return TIDE_OK;
}

int tide_fits_check_input(const char *spec) {
    tide_fits_src src;
    int st = tide_fits_open(spec, &src);
    tide_fits_close(&src);
    return st;
}

void tide_fits_close(tide_fits_src *src) {
    if (src && src->f) {
        int cst = 0;
        fits_close_file(src->f, &cst);
        fits_clear_errmsg();
        src->f = NULL;
    }
}

int tide_fits_check_extent(const tide_fits_src *src, int hdu, int64_t *data_bytes) {
    fitsfile *f = src->f;
    int cst = 0;
    LONGLONG headstart, datastart, dataend;
    if (fits_get_hduaddrll(f, &headstart, &datastart, &dataend, &cst))
        return tide_fits_status(cst, src->root, hdu, "cannot locate the HDU");
    /* The data size from the stored (raw) header: |BITPIX|/8 * GCOUNT * (PCOUNT + prod NAXISn)
     * (FITS standard 4.0, eq. 2). For a compressed image these are the BINTABLE's keys. */
    LONGLONG bitpix = 8, naxis = 0, pcount = 0, gcount = 1;
    fits_read_key_lnglng(f, "BITPIX", &bitpix, NULL, &cst);
    fits_read_key_lnglng(f, "NAXIS", &naxis, NULL, &cst);
    if (cst)
        return tide_fits_status(cst, src->root, hdu, "header lacks BITPIX or NAXIS");
    int s2 = 0;
    if (fits_read_key_lnglng(f, "PCOUNT", &pcount, NULL, &s2))
        pcount = 0;
    s2 = 0;
    if (fits_read_key_lnglng(f, "GCOUNT", &gcount, NULL, &s2))
        gcount = 1;
    fits_clear_errmsg();
    double prod = naxis > 0 ? 1.0 : 0.0;
    for (int i = 1; i <= naxis && i <= 999; i++) {
        char key[16];
        LONGLONG n = 0;
        snprintf(key, sizeof key, "NAXIS%d", i);
        s2 = 0;
        if (fits_read_key_lnglng(f, key, &n, NULL, &s2)) {
            fits_clear_errmsg();
            return tide_error(TIDE_E_FORMAT, "%s[HDU %d]: header lacks %s", src->root, hdu, key);
        }
        if (i == 1 && n == 0 && naxis > 1) /* random groups: NAXIS1 = 0 does not count */
            continue;
        prod *= (double)n;
    }
    double bytes = (double)(bitpix < 0 ? -bitpix : bitpix) / 8.0 * (double)gcount *
                   ((naxis > 0 ? prod : 0.0) + (double)pcount);
    if (naxis == 0 && pcount == 0)
        bytes = 0;
    if (data_bytes)
        *data_bytes = (int64_t)bytes;
    if (src->file_size < 0 && bytes > 0) {
        /* A file cfitsio holds in memory (gzip, section): ask it for the data unit's last byte,
         * which fails when the (uncompressed) file ends before it. */
        LONGLONG last = datastart + (LONGLONG)bytes - 1;
        s2 = 0;
        if (ffmbyt(f, last, 0 /* REPORT_EOF */, &s2)) {
            fits_clear_errmsg();
            return tide_error(TIDE_E_FORMAT,
                              "%s[HDU %d]: truncated: the data unit needs %.0f bytes from byte "
                              "%lld but the file ends before",
                              src->root, hdu, bytes, (long long)datastart);
        }
    }
    if (src->file_size >= 0 && (double)datastart + bytes > (double)src->file_size)
        return tide_error(TIDE_E_FORMAT,
                          "%s[HDU %d]: truncated: the data unit needs %.0f bytes from byte %lld "
                          "but the file ends at byte %lld",
                          src->root, hdu, bytes, (long long)datastart, (long long)src->file_size);
    return TIDE_OK;
}

int tide_fits_check_file(const tide_fits_src *src) {
    if (src->file_size < 0)
        return TIDE_OK;
    fitsfile *f = src->f;
    int cur = tide_fits_cur_hdu(f), cst = 0, type = 0, st = TIDE_OK;
    LONGLONG end = 0;
    for (int i = 1; !st; i++) {
        if (fits_movabs_hdu(f, i, &type, &cst)) {
            cst = 0;
            break;
        }
        LONGLONG hs, ds, de;
        st = tide_fits_check_extent(src, i - 1, NULL);
        if (!st && !fits_get_hduaddrll(f, &hs, &ds, &de, &cst))
            end = de;
        cst = 0;
    }
    fits_clear_errmsg();
    /* Bytes after the last complete HDU that begin an extension header: its header was cut. */
    if (!st && src->file_size > (int64_t)end) {
        FILE *fp = fopen(src->root, "rb");
        char b[9] = {0};
        if (fp && fseeko(fp, (off_t)end, SEEK_SET) == 0 && fread(b, 1, 9, fp) == 9 &&
            !memcmp(b, "XTENSION=", 9))
            st = tide_error(TIDE_E_FORMAT,
                            "%s[HDU %d]: truncated: its header is cut off at byte %lld", src->root,
                            tide_fits_cur_hdu(f) + 1, (long long)src->file_size);
        if (fp)
            fclose(fp);
    }
    fits_movabs_hdu(f, cur + 1, &type, &cst);
    fits_clear_errmsg();
    return st;
}

/* The raw cards of the current HDU (for a compressed image, the table's own) converted by
 * tide_fits_tile_header. */
static int tide_fits_tile_header_of(fitsfile *f, const char *path, int hdu, tide_header *hdr) {
    int nkeys = 0, more = 0, cst = 0;
    if (fits_get_hdrspace(f, &nkeys, &more, &cst))
        return tide_fits_status(cst, path, hdu, "cannot read the header");
    tide_header raw;
    tide_header_init(&raw);
    int st = 0;
    for (int i = 1; !st && i <= nkeys; i++) {
        char card[FLEN_CARD];
        if (fits_read_record(f, i, card, &cst))
            st = tide_fits_status(cst, path, hdu, "cannot read the header");
        else
            st = tide_header_append_card(&raw, card);
    }
    if (!st)
        st = tide_fits_tile_header(&raw, path, hdu, hdr);
    tide_header_free(&raw);
    return st;
}

int tide_fits_header_by_cfitsio(fitsfile *f, const char *path, int hdu, tide_header *hdr) {
    char *str = NULL;
    int nk = 0, cst = 0;
    tide_header_init(hdr);
    /* fits_convert_hdr2str gives the uncompressed image's header for a compressed image. */
    if (fits_convert_hdr2str(f, 0, NULL, 0, &str, &nk, &cst)) {
        int fst = 0;
        if (str) /* cfitsio may fail after allocating the string */
            fits_free_memory(str, &fst);
        return tide_fits_status(cst, path, hdu, "cannot read the header");
    }
    int st = tide_header_parse(hdr, str, nk);
    fits_free_memory(str, &cst);
    if (st) {
        tide_header_free(hdr);
        return tide_error_prefix(st, "%s[HDU %d]: ", path, hdu);
    }
    return TIDE_OK;
}

int tide_fits_get_header(fitsfile *f, const char *path, int hdu, tide_header *hdr) {
    int zst = 0;
    if (!fits_is_compressed_image(f, &zst)) {
        fits_clear_errmsg();
        return tide_fits_header_by_cfitsio(f, path, hdu, hdr);
    }
    /* A compressed image's header is converted by tide: cfitsio's conversion builds the
     * uncompressed HDU in a memory file whose data unit it fills, 25 ms for a 16.8 Mpix
     * image here (more than the decode on 16 threads), and it refuses some files astropy
     * writes. cfitsio's is kept for a header tide's conversion refuses. */
    int st = tide_fits_tile_header_of(f, path, hdu, hdr);
    if (!st)
        return TIDE_OK;
    tide_header_free(hdr);
    char why[512];
    snprintf(why, sizeof why, "%s", tide_error_detail());
    if (!tide_fits_header_by_cfitsio(f, path, hdu, hdr))
        return TIDE_OK;
    return tide_error(st, "%s", why);
}

/* Keywords that describe a data unit's layout, compression or checksum: the writer sets its
 * own, so copies from a source header must not be written. */
static int structural_key(const char *k, int skip_extname) {
    static const char *exact[] = {
        "SIMPLE",  "BITPIX",  "NAXIS",    "EXTEND",   "XTENSION", "PCOUNT",   "GCOUNT",
        "BSCALE",  "BZERO",   "BLANK",    "END",      "TFIELDS",  "THEAP",    "CHECKSUM",
        "DATASUM", "GROUPS",  "ZIMAGE",   "ZSIMPLE",  "ZEXTEND",  "ZBLOCKED", "ZTENSION",
        "ZPCOUNT", "ZGCOUNT", "ZCMPTYPE", "ZBITPIX",  "ZNAXIS",   "ZQUANTIZ", "ZDITHER0",
        "ZBLANK",  "ZSCALE",  "ZZERO",    "ZHECKSUM", "ZDATASUM", "ZMASKCMP", "TIDEMASK",
        "TIDEVAR", "INHERIT"};
    static const char *indexed[] = {"NAXIS", "ZNAXIS", "ZTILE", "ZNAME", "ZVAL",  "TTYPE", "TFORM",
                                    "TUNIT", "TDISP",  "TNULL", "TSCAL", "TZERO", "TDIM",  "TBCOL"};
    if (skip_extname && (!strcmp(k, "EXTNAME") || !strcmp(k, "EXTVER")))
        return 1;
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        if (!strcmp(k, exact[i]))
            return 1;
    for (size_t i = 0; i < sizeof indexed / sizeof *indexed; i++) {
        size_t n = strlen(indexed[i]);
        if (!strncmp(k, indexed[i], n) && k[n]) {
            const char *d = k + n;
            while (*d && isdigit((unsigned char)*d))
                d++;
            if (!*d)
                return 1;
        }
    }
    return 0;
}

int tide_fits_put_cards(fitsfile *f, const tide_header *hdr, int skip_extname, const char *path) {
    if (!hdr)
        return TIDE_OK;
    for (int i = 0; i < hdr->ncards; i++) {
        char card[81], key[9];
        memcpy(card, hdr->cards[i], 80);
        card[80] = 0;
        for (int c = 0; c < 80; c++)
            if (!card[c]) { /* short card: pad */
                memset(card + c, ' ', (size_t)(80 - c));
                break;
            }
        for (int c = 0; c < 80; c++)
            if ((unsigned char)card[c] < 32 || (unsigned char)card[c] > 126)
                card[c] = ' ';
        memcpy(key, card, 8);
        key[8] = 0;
        for (int c = 7; c >= 0 && key[c] == ' '; c--)
            key[c] = 0;
        if (structural_key(key, skip_extname))
            continue;
        int cst = 0;
        if (fits_write_record(f, card, &cst)) {
            char what[128];
            snprintf(what, sizeof what, "cannot write header card '%.8s'", key);
            return tide_fits_status(cst, path, tide_fits_cur_hdu(f), what);
        }
    }
    return TIDE_OK;
}
