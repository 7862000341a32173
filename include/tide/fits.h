/* fits.h — FITS images and binary tables through cfitsio.
 *
 * A frame is named by a cfitsio "spec": FILE, FILE[N] (HDU number, 0 = primary), FILE[EXTNAME],
 * optionally followed by an image section, FILE[1][1:512,1:512] (FITS 1-based, inclusive; the
 * header's CRPIX then refers to the section). Without an HDU selector the first HDU that holds
 * an image is used: an empty primary (NAXIS = 0) is skipped, and a tile-compressed image (a
 * BINTABLE with ZIMAGE = T, as fpack writes) counts as an image.
 *
 * HDU numbers in messages and in tide_fits_hdu.index are 0-based, as in the FILE[N] syntax.
 * Every error detail names the file and, when one is involved, the HDU.
 *
 * Writes are atomic: the file is written in a private directory beside the target (outfile.h)
 * and renamed over the target only when complete; on any failure the temporary file is removed
 * and the target is untouched. */
#ifndef TIDE_FITS_H
#define TIDE_FITS_H
#include "tide/export.h"
#include <stdint.h>

#include "tide/ctx.h"
#include "tide/header.h"
#include "tide/image.h"
#include "tide/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Allow input names in cfitsio's whole extended syntax (URLs, stdin, mem://, row and pixel
 *  filters, binning, output files in the name) for this process. Off by default: a name is
 *  then a local file, FILE, FILE[N], FILE[EXTNAME], FILE+N, with an optional image section,
 *  and anything else is refused with TIDE_E_INVAL, so that a name taken from someone else
 *  cannot make tide fetch, evaluate or write anything. The CLI's --cfitsio-names sets it. */
TIDE_API void tide_fits_set_extended_names(int allow);

/** Check that @p spec is a name tide reads (see tide_fits_set_extended_names) and that every
 *  header of its file holds to the FITS standard where cfitsio interprets it: ASCII text,
 *  typed values of the structural, table, scaling and tile-compression keywords, BITPIX,
 *  NAXIS and data sizes without overflow, every data unit inside the file, a finite non-zero
 *  BSCALE, tile-compressed tables consistent with the bytes they hold. Every reader of tide
 *  does this before cfitsio opens a file; commands that open FITS files with cfitsio
 *  themselves call it first.
 *  @return 0; TIDE_E_INVAL (name), TIDE_E_NOTFOUND, TIDE_E_IO, TIDE_E_FORMAT (the detail
 *          names the file, HDU and header card), TIDE_E_UNSUPPORTED (compress/bzip2 files) */
TIDE_API int tide_fits_check_input(const char *spec);

/** Read a 2-D image HDU into a new host image with a mask plane.
 *
 *  Every BITPIX (8, 16, 32, 64, -32, -64) is read, with BSCALE/BZERO applied, into float32
 *  (values are converted once, from the stored type, with cfitsio's double-precision scaling).
 *  Pixels equal to BLANK (ZBLANK for compressed images), NaN or ±Inf become NaN and get
 *  TIDE_MASK_NODATA; all other mask bits are 0. Tile-compressed images (RICE_1, GZIP_1,
 *  GZIP_2, HCOMPRESS_1, PLIO_1, and quantized floats with NO_DITHER, SUBTRACTIVE_DITHER_1 or
 *  _2) decode as cfitsio's funpack does, bit for bit (integer HCOMPRESS with a lossy SCALE is
 *  clipped to the BITPIX range before BLANK and scaling, as funpack's BITPIX-typed output is;
 *  where funpack 4.2 mis-places tiles of quantized floats that span several rows and hold a
 *  null, tide gives the correct pixels). Gzip-compressed files (.fits.gz) are read too.
 *  Extra axes of length 1 are allowed (NAXIS3 = 1). The whole file is checked for truncation
 *  (any HDU whose data or header is cut short is an error, naming that HDU), so a damaged
 *  transfer is never read as good data.
 *  When the primary HDU of a file written by tide_fits_write_image is read (no section), or
 *  HDU 1 of one written compressed (tide_fits_write_image_as), its MASK bits and VAR plane are
 *  read back too (keywords TIDEMASK / TIDEVAR count the HDUs from the image's to theirs).
 *
 *  @param ctx   context (may be NULL: only host memory is used)
 *  @param spec  FILE, FILE[N], FILE[EXTNAME], each optionally with a [x1:x2,y1:y2] section
 *  @param im    receives the image (overwritten; free with tide_image_free)
 *  @param hdr   if non-NULL, receives the HDU's header (overwritten, not freed first; free with
 *               tide_header_free). For a compressed image it is the uncompressed image's header.
 *  @return 0; TIDE_E_NOTFOUND (no such file, HDU or no image HDU), TIDE_E_FORMAT (not FITS,
 *          truncated, a table where an image is expected), TIDE_E_EMPTY (NAXIS = 0 or a zero
 *          axis), TIDE_E_UNSUPPORTED (1-D image, cube with more than one plane), TIDE_E_IO,
 *          TIDE_E_NOMEM. On failure *im is zeroed and *hdr is empty. */
TIDE_API int tide_fits_read_image(tide_ctx *ctx, const char *spec, tide_image *im,
                                  tide_header *hdr);

/** tide_fits_read_image into host or device memory (@p where; TIDE_DEVICE needs a CUDA
 *  context, else TIDE_E_INVAL). On the device, a RICE_1 image is decoded there by tide's GPU
 *  decoder with its no-data mask made in the same pass, so the pixels never cross the host
 *  (a 151 Mpix frame reaches the device without 0.9 GB of host planes); any other image is
 *  read on the host and uploaded. Same pixels, mask, variance, header and errors as
 *  tide_fits_read_image, which is this function with TIDE_HOST. */
TIDE_API int tide_fits_read_image_at(tide_ctx *ctx, const char *spec, tide_image *im,
                                     tide_header *hdr, tide_location where);

/** How one image of a stack read reached its memory (tide_fits_read_stack). */
typedef enum {
    TIDE_FITS_PATH_HOST = 0,      /**< read and decoded on the host, left there */
    TIDE_FITS_PATH_PINNED = 1,    /**< read and decoded on the host, then copied to the device */
    TIDE_FITS_PATH_CUFILE = 2,    /**< raw data unit read by cuFile (GPUDirect Storage) straight
                                       into device memory and converted there */
    TIDE_FITS_PATH_GPU_DECODE = 3 /**< RICE_1 tiles decoded on the device (read_image_at) */
} tide_fits_path;

/** "host", "pinned", "cufile", "gpu-decode". */
TIDE_API const char *tide_fits_path_name(tide_fits_path path);

/** tide_fits_read_stack flags. */
enum {
    /** Also read each image's header into tide_fits_stack.hdr. */
    TIDE_FITS_STACK_HEADERS = 1,
    /** When every image has the same size and the same planes, gather them into one
     *  contiguous block per plane, n x height x width (image i at offset i x height x width),
     *  the form a batched kernel takes: tide_fits_stack.pix / .mask / .var then hold the
     *  blocks and the images are views into them (owns = 0). Otherwise the images stay
     *  separate and tide_fits_stack.pix is NULL. */
    TIDE_FITS_STACK_CONTIGUOUS = 2
};

/** The result of tide_fits_read_stack. Free with tide_fits_stack_free. */
typedef struct tide_fits_stack {
    int n;                 /**< images */
    tide_location where;   /**< where they are */
    tide_image *im;        /**< n images. Without a contiguous block each owns its planes: a
                                caller may move one out (copy the struct, zero the slot) */
    tide_header *hdr;      /**< n headers with TIDE_FITS_STACK_HEADERS, else NULL (movable too) */
    tide_fits_path *path;  /**< n: how each image was read */
    float *pix;            /**< contiguous: the n x height x width pixel block, else NULL */
    uint16_t *mask;        /**< contiguous: the mask block (NULL when the images have none) */
    float *var;            /**< contiguous: the variance block (NULL when they have none) */
    int64_t width, height; /**< contiguous: the images' size, else 0 */
    int threads;           /**< reader threads used */
    double ms;             /**< wall time of the call */
} tide_fits_stack;

/** Read @p n images in one call: the same pixels, masks, variances, headers and errors as
 *  @p n calls of tide_fits_read_image_at(ctx, specs[i], ..., @p where), specs in any form
 *  those accept (FILE, FILE[N], FILE[EXTNAME], sections; HDUs of one file too).
 *
 *  The specs are read and decoded by a pool of threads, at most one per core and one per
 *  spec, sharing the context's cores; on a CUDA context the calling thread decodes the
 *  RICE_1 images on the GPU meanwhile, as tide_fits_read_image does there. For a device
 *  stack (a CUDA context, @p where TIDE_DEVICE) the calling thread moves each image there as
 *  soon as a reader finishes it, while the readers go on with the next ones, so reading
 *  overlaps the transfers: a RICE_1 image is decoded on the GPU (TIDE_FITS_PATH_GPU_DECODE);
 *  a plain data unit of BITPIX 8, 16, 32 or unscaled -32 is read by cuFile straight into
 *  device memory and converted there when GPUDirect Storage is usable
 *  (TIDE_FITS_PATH_CUFILE; libcufile is loaded at run time, the environment's TIDE_CUFILE=0
 *  turns it off, 1 or auto [auto] tries it, and any refusal falls back silently but for a
 *  debug line on the context's log, and a file it refuses turning it off for the specs
 *  after); anything else is decoded on the host and copied up by DMA from page-locked
 *  memory (TIDE_FITS_PATH_PINNED: the host planes, locked on their first copy, or the
 *  context's pinned staging ring). The readers stay at most two images per thread ahead of
 *  the calling thread, bounding the host memory held. Returns when every image is in place.
 *  A contiguous stack is gathered after the reads, so it briefly needs twice its memory.
 *
 *  @param ctx   context (may be NULL for TIDE_HOST: all cores)
 *  @param specs @p n image specs (n >= 1)
 *  @param where TIDE_HOST or TIDE_DEVICE (which needs a CUDA context, else TIDE_E_INVAL)
 *  @param flags TIDE_FITS_STACK_HEADERS | TIDE_FITS_STACK_CONTIGUOUS
 *  @param out   receives the stack (overwritten; free with tide_fits_stack_free)
 *  @return 0, or the error of the first spec in list order that fails, its detail naming
 *          that spec's file and HDU as tide_fits_read_image's does; then *out is zeroed and
 *          nothing is left allocated. */
TIDE_API int tide_fits_read_stack(tide_ctx *ctx, const char *const *specs, int n,
                                  tide_location where, int flags, tide_fits_stack *out);

/** Release every image, header and block of @p s and zero it. NULL is a no-op. */
TIDE_API void tide_fits_stack_free(tide_ctx *ctx, tide_fits_stack *s);

/** Locate the image HDU tide_fits_read_image would read and return its header without reading
 *  pixels. Same rules and errors as tide_fits_read_image.
 *  @param hdr    if non-NULL, receives the header (overwritten; free with tide_header_free)
 *  @param hdu    if non-NULL, receives the 0-based HDU number
 *  @param width  if non-NULL, receives NAXIS1 (of the section, if any)
 *  @param height if non-NULL, receives NAXIS2 */
TIDE_API int tide_fits_read_image_header(const char *spec, tide_header *hdr, int *hdu,
                                         int64_t *width, int64_t *height);

/** Write a host image atomically: primary HDU float32 (BITPIX = -32) with the cards of @p hdr
 *  (structural and compression keywords of @p hdr are dropped and rewritten), then, when the
 *  image has them, extension "MASK" (uint16 bits: BITPIX 16, BZERO 32768; BITn keywords name
 *  the bits) and extension "VAR" (float32 variance). The primary gets TIDEMASK / TIDEVAR
 *  naming those HDUs. An existing @p path is replaced.
 *  @param path plain file name (no cfitsio syntax; "!" is not needed)
 *  @param hdr  may be NULL
 *  @return 0; TIDE_E_INVAL (device image, no pixels), TIDE_E_IO (cannot create, write or
 *          rename; detail names the path) */
TIDE_API int tide_fits_write_image(const char *path, const tide_image *im, const tide_header *hdr);

struct tide_outfile;
/** tide_fits_write_image into the staged output @p of (outfile.h) of an output set: the
 *  file is complete and on disk on success, and appears under its name when the set is
 *  committed; on failure its temporary is removed. */
TIDE_API int tide_fits_write_image_to(struct tide_outfile *of, const tide_image *im,
                                      const tide_header *hdr);

/** How tide_fits_write_image_as stores an image's planes. */
typedef enum {
    TIDE_FITS_PLAIN = 0, /**< uncompressed, as tide_fits_write_image */
    /** RICE_1 tile-compressed, one tile per row, as fpack writes by default: an empty primary
     *  HDU, then the pixels in HDU 1 (ZSIMPLE = T, EXTNAME COMPRESSED_IMAGE), "MASK" and "VAR"
     *  in HDUs 2 and 3. Floats are quantized as fpack -q 4 (SUBTRACTIVE_DITHER_1, ZDITHER0 from
     *  the first row's bits so a file is the same on every run; NaN as ZBLANK), the mask is
     *  lossless. funpack turns the file into tide_fits_write_image's layout, and
     *  tide_fits_read_image reads it, MASK and VAR included (TIDEMASK / TIDEVAR count HDUs
     *  from the image's). */
    TIDE_FITS_RICE = 1
} tide_fits_compress;

/** Parse an output compression name: "none" (TIDE_FITS_PLAIN) or "rice" (TIDE_FITS_RICE).
 *  @return 0; TIDE_E_INVAL naming the word and the choices */
TIDE_API int tide_fits_compress_parse(const char *name, tide_fits_compress *how);

struct tide_config;
/** The configuration's output.compress as a tide_fits_compress (@p cfg NULL, or the key
 *  unset: TIDE_FITS_PLAIN).
 *  @return 0; TIDE_E_INVAL naming the key and the word */
TIDE_API int tide_fits_compress_config(const struct tide_config *cfg, tide_fits_compress *how);

/** tide_fits_write_image, with the planes stored as @p how says. */
TIDE_API int tide_fits_write_image_as(const char *path, const tide_image *im,
                                      const tide_header *hdr, tide_fits_compress how);

/** tide_fits_write_image_to, with the planes stored as @p how says. */
TIDE_API int tide_fits_write_image_to_as(struct tide_outfile *of, const tide_image *im,
                                         const tide_header *hdr, tide_fits_compress how);

/** Write a table atomically: an empty primary HDU, then a BINTABLE in HDU 1 with one column per
 *  table column (TTYPE with the column's comment, TFORM, TUNIT, TDISP when set). Types map
 *  F64→D, F32→E, I64→K, I32→J, I16→I, U8→B, STR→A (repeat = string width); repeat > 1 makes a
 *  vector column (e.g. 8D). The cards of @p hdr (may be NULL) go into the table HDU's header,
 *  minus structural and column keywords.
 *  @param extname EXTNAME of the table HDU; NULL or "" = none */
TIDE_API int tide_fits_write_table(const char *path, const tide_table *t, const tide_header *hdr,
                                   const char *extname);

/** tide_fits_write_table into the staged output @p of (as tide_fits_write_image_to). */
TIDE_API int tide_fits_write_table_to(struct tide_outfile *of, const tide_table *t,
                                      const tide_header *hdr, const char *extname);

/** One CCD of a mosaic exposure: an image HDU of the file. */
typedef struct tide_fits_mosaic_ccd {
    int hdu;               /**< 0-based HDU number (read it as FILE[hdu]) */
    char extname[72];      /**< EXTNAME or "" */
    int64_t ccdnum;        /**< CCDNUM, or -1 when the header has none */
    int64_t width, height; /**< NAXIS1, NAXIS2 */
} tide_fits_mosaic_ccd;

/** An HDU of a mosaic exposure that is not a CCD, and why. */
typedef struct tide_fits_mosaic_skip {
    int hdu;       /**< 0-based HDU number */
    char what[96]; /**< its kind and EXTNAME ("bintable 'OBJECTS'") */
    char why[64];  /**< "the empty primary", "a table", "not a 2-D image", ... */
} tide_fits_mosaic_skip;

/** The CCDs of a mosaic exposure, in file order. */
typedef struct tide_fits_mosaic_plan {
    int nccd;                       /**< CCDs (0: the file is not a mosaic) */
    tide_fits_mosaic_ccd *ccd;      /**< nccd of them */
    int nskipped;                   /**< HDUs that are not CCDs */
    tide_fits_mosaic_skip *skipped; /**< nskipped of them */
} tide_fits_mosaic_plan;

/** Find the CCDs of the file @p spec names. A mosaic is an empty primary HDU followed by two
 *  or more 2-D image HDUs (plain or tile-compressed; extra axes of length 1 allowed), as
 *  DECam and LSSTCam write an exposure; the MASK and VAR planes an image's TIDEMASK and
 *  TIDEVAR name, tables, cubes and empty HDUs are not CCDs and are listed in skipped. A file
 *  that is not a mosaic (a frame in the primary, one image extension, or a spec that selects
 *  one HDU, FILE[N] or FILE[EXTNAME]) gives nccd = 0 and status 0. Free with
 *  tide_fits_mosaic_plan_free. Errors: those of tide_fits_inventory. */
TIDE_API int tide_fits_mosaic_plan_make(const char *spec, tide_fits_mosaic_plan *out);

/** Release a plan and zero it. NULL is a no-op. */
TIDE_API void tide_fits_mosaic_plan_free(tide_fits_mosaic_plan *p);

/** The index in @p p of the CCD named @p extname (when non-empty), else of CCD number
 *  @p ccdnum; -1 when there is none. How a science CCD finds its template's. */
TIDE_API int tide_fits_mosaic_find(const tide_fits_mosaic_plan *p, const char *extname,
                                   int64_t ccdnum);

/** A multi-extension FITS file being written HDU after HDU (opaque): an empty primary HDU
 *  with the exposure's cards, then image and table extensions in the order they are added,
 *  so a mosaic of many CCDs is written one CCD at a time. The file is staged as every output
 *  is (outfile.h) and appears complete under its name on tide_fits_mef_commit, or not at
 *  all. */
typedef struct tide_fits_mef tide_fits_mef;

/** Begin a multi-extension file at @p path, or into the staged output @p of of an output set
 *  when non-NULL (it then appears when the set is committed), its primary HDU carrying the
 *  cards of @p primary (may be NULL; structural and EXTNAME cards are not copied). */
TIDE_API int tide_fits_mef_begin(const char *path, struct tide_outfile *of,
                                 const tide_header *primary, tide_fits_mef **out);

/** Append host image @p im as a float32 image extension named @p extname with the cards of
 *  @p hdr (may be NULL). Its pixels only: a mask or variance plane is not written. */
TIDE_API int tide_fits_mef_add_image(tide_fits_mef *m, const tide_image *im, const tide_header *hdr,
                                     const char *extname);

/** Append table @p t as a BINTABLE named @p extname with the cards of @p hdr (may be NULL),
 *  columns as tide_fits_write_table writes them. */
TIDE_API int tide_fits_mef_add_table(tide_fits_mef *m, const tide_table *t, const tide_header *hdr,
                                     const char *extname);

/** Complete the file: renamed into place (or, when staged, left for its set to rename).
 *  Frees @p m; on failure the temporary is removed. */
TIDE_API int tide_fits_mef_commit(tide_fits_mef *m);

/** Give up the file: its temporary is removed and @p m freed. NULL is a no-op. */
TIDE_API void tide_fits_mef_abort(tide_fits_mef *m);

/** Read a binary (or ASCII) table HDU into a new table. Without an HDU selector the first table
 *  HDU that is not a compressed image is read. Column types follow the stored type with TZERO /
 *  TSCAL applied: B→U8, signed bytes and I→I16, unsigned 16-bit and J→I32, unsigned 32-bit and
 *  K→I64, E (or scaled 16-bit)→F32, D (or scaled 32/64-bit)→F64, A→STR, L→U8 (1 = true).
 *  Bit (X), complex and variable-length columns are TIDE_E_UNSUPPORTED, naming the column.
 *  @param t   receives the table (overwritten; free with tide_table_free)
 *  @param hdr if non-NULL, receives the table HDU's header (overwritten) */
TIDE_API int tide_fits_read_table(const char *spec, tide_table *t, tide_header *hdr);

/** Kinds of HDU in an inventory. */
typedef enum {
    TIDE_HDU_EMPTY = 0,      /**< image HDU with NAXIS = 0 (typically an empty primary) */
    TIDE_HDU_IMAGE = 1,      /**< image array */
    TIDE_HDU_COMPRESSED = 2, /**< tile-compressed image (a BINTABLE holding an image) */
    TIDE_HDU_BINTABLE = 3,   /**< binary table */
    TIDE_HDU_ASCIITABLE = 4  /**< ASCII table */
} tide_hdu_kind;

/** One HDU of a file, as `tide info` lists it. */
typedef struct tide_fits_hdu {
    int index; /**< 0-based HDU number (FILE[N]) */
    tide_hdu_kind kind;
    char extname[72]; /**< EXTNAME or "" */
    int extver;       /**< EXTVER [1] */
    int bitpix;       /**< image BITPIX (the original one for a compressed image); 8 for tables */
    int naxis;        /**< image axes (0 for tables) */
    int64_t naxes[9]; /**< image axis lengths, naxes[0] = NAXIS1 */
    int64_t nrows;    /**< tables: rows */
    int ncols;        /**< tables: columns */
    double bscale, bzero; /**< image scaling [1, 0] */
    int has_blank;        /**< image: BLANK (or ZBLANK) present */
    char compression[24]; /**< ZCMPTYPE ("RICE_1", ...) or "" */
    int64_t tile[9];      /**< compressed: ZTILEn */
    char quantize[24];  /**< compressed float: ZQUANTIZ ("NO_DITHER", "SUBTRACTIVE_DITHER_1"...) */
    int64_t data_bytes; /**< bytes of the data unit as stored (without padding) */
} tide_fits_hdu;

/** List every HDU of the file named by @p spec (any selector or section is ignored). A
 *  truncated file is an error (TIDE_E_FORMAT naming the HDU whose data run past the end).
 *  @param hdus receives a malloc'd array (caller frees with free())
 *  @param nhdu receives its length */
TIDE_API int tide_fits_inventory(const char *spec, tide_fits_hdu **hdus, int *nhdu);

/** The header of HDU @p hdu (0-based) of the file named by @p spec (its selector, if any, is
 *  ignored), whatever the HDU holds; the uncompressed view for a compressed image.
 *  @param hdr receives the header (overwritten; free with tide_header_free) */
TIDE_API int tide_fits_read_hdu_header(const char *spec, int hdu, tide_header *hdr);

/** "empty", "image", "compressed image", "bintable", "table". */
TIDE_API const char *tide_hdu_kind_name(tide_hdu_kind kind);

#ifdef __cplusplus
}
#endif
#endif
