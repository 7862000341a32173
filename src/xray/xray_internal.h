/* xray_internal.h — what the files of src/xray/ share: the open HDF5 cube of one input file
 * and its row-block reader, small HDF5 writers, and the trace builder. */
#ifndef TIDE_XRAY_INTERNAL_H
#define TIDE_XRAY_INTERNAL_H
#include <hdf5.h>
#include <stdint.h>

#include "tide/xray.h"

/** How a cube stored without filters is read around libhdf5 (xray_h5_direct.c). */
typedef struct xray_direct {
    int ok;            /**< 1: row blocks are read by xray_direct_read */
    int fd;            /**< the file, opened for pread(2); -1 when none */
    int chunked;       /**< 1: chunked storage, 0: one contiguous run */
    int type, esize;   /**< the stored element type (xray_h5_direct.c's codes) and its bytes */
    hsize_t chunk[3];  /**< chunked: the chunk's frames, rows, columns */
    float fill;        /**< chunked: the value of a chunk never written */
    haddr_t base;      /**< contiguous: the data's offset in the file */
    int64_t userblock; /**< bytes before the superblock, from which chunk addresses count */
} xray_direct;

/** One input file opened for streaming. */
typedef struct xray_file {
    char path[4096];
    hid_t file, cube;
    tide_xray_info info;
    xray_direct direct;
} xray_file;

/** Probe @p path and keep its cube open. */
int xray_open(const char *path, xray_file *f);
/** Close (safe on a zeroed or closed one). */
void xray_close(xray_file *f);
/** Read frames × rows [y0, y1) × columns [x0, x1) of the cube as float32 into @p buf
 *  (frame-major: buf[(f*(y1-y0) + y)*(x1-x0) + x]), one hyperslab. */
int xray_read_block(xray_file *f, int64_t y0, int64_t y1, int64_t x0, int64_t x1, float *buf);

/** Decide whether the open cube of @p f can be read by xray_direct_read (no filters, no
 *  external or virtual storage, a little-endian float32 or integer type of at most 32 bits,
 *  a defined fill value) and open the file for it; TIDE_XRAY_DIRECT=0 keeps libhdf5's
 *  reader. Sets f->direct; never fails (not eligible: f->direct.ok = 0). */
void xray_direct_plan(xray_file *f);
/** Close what xray_direct_plan opened (safe when it opened nothing, or on a zeroed file). */
void xray_direct_close(xray_file *f);
/** xray_read_block's block read with pread(2) by an OpenMP team: the same floats libhdf5's
 *  hyperslab read converts to. Only when f->direct.ok. */
int xray_direct_read(xray_file *f, int64_t y0, int64_t y1, int64_t x0, int64_t x1, float *buf);

/** Silence libhdf5's own error printing (tide reports its errors itself). */
void xray_h5_quiet(void);

/** Write dataset @p name of @p rank dims @p dims from @p data of HDF5 memory type @p mtype,
 *  stored as @p ftype, into @p loc. */
int xray_h5_write(hid_t loc, const char *path, const char *name, int rank, const int64_t *dims,
                  hid_t mtype, hid_t ftype, const void *data);

/** The traces of a row block of the trace grid: rows [ty0, ty1) of ny_t, all nx_t columns,
 *  each trace n = nframes samples of the on/off ratio. */
typedef struct xray_trace_grid {
    int64_t ty, tx; /**< trace grid rows and columns over the ROI */
    int64_t roi[4]; /**< the ROI resolved (x0, y0, width, height) */
    int nframes;
} xray_trace_grid;

/** Resolve the ROI and the trace grid of @p tp on the cube of @p info. */
int xray_grid(const tide_xray_info *info, const tide_xray_trace_params *tp, const char *path,
              xray_trace_grid *g);

/** The buffers of a row block: both cubes' pixels and their per-tile column sums, made once
 *  for the largest block of a run (a detector-sized pair's per-pixel blocks are ~200 MB, and
 *  fresh pages for every block were a third of the read). */
typedef struct xray_rows_buf {
    float *bon, *boff;
    double *son;
} xray_rows_buf;

/** Allocate @p b for blocks of @p rows trace rows of grid @p g. */
int xray_rows_buf_alloc(const xray_file *on, const tide_xray_trace_params *tp,
                        const xray_trace_grid *g, int64_t rows, xray_rows_buf *b);
/** Release @p b (safe on a zeroed one). */
void xray_rows_buf_free(xray_rows_buf *b);

/** Traces of trace rows [ty0, ty1) (at most the rows @p b was made for): out[((ty - ty0) * tx +
 *  ix) * nframes + f] = on/off - 1 per frame (monitor-normalised, not smoothed: the fit smooths
 *  its own segment); reason[...] gets TIDE_XRAY_R_NOLIGHT when an off sum or monitor is <= 0
 *  (the trace is then zeros). */
int xray_traces_rows(xray_file *on, xray_file *off, const tide_xray_trace_params *tp,
                     const xray_trace_grid *g, int64_t ty0, int64_t ty1, xray_rows_buf *b,
                     double *out, uint8_t *reason);

/** The zero-delay frame of the mean trace @p s (n frames): the frame i maximising the step
 *  |mean(s[i..i+2]) - mean(s[i-3..i-1])|. */
int xray_zero_from_trace(const double *s, int n);

#endif
