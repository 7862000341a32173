/* xray.h — time-domain X-ray detector cubes (issue 20): laser-on/laser-off HDF5 pairs of a
 * pump-probe delay scan, their traces (monitor-normalised on/off ratio per tile of pixels), and
 * batched LPSVD fits of damped oscillations (coherent phonons) into detector-wide maps.
 *
 * Inputs are cuPhoton's two layouts (datasets by name, every one checked):
 *   cropped-cube  imgs (frame, y, x), scan_var (frame), bin_count (frame), i0 (frame),
 *                 i0_ipm3 (frame), ROI (4: x0, y0, width, height of the crop on the detector)
 *   legate-cube   jungfrau1M_data (frame, y, x), binVar_bins (frame), nEntries (frame), and a
 *                 monitor pair ipm3__sum/ipm2__sum or ipm5__sum/ipm4__sum (frame)
 * The first monitor (i0, ipm3__sum or ipm5__sum) normalises each frame.
 *
 * The model of a trace s(t), t from the zero delay: sum_k A_k e^(-b_k t) cos(ω_k t + φ_k) + c,
 * with ω in radians per delay unit (FREQ maps hold ω / 2π, cycles per delay unit) and b >= 0. */
#ifndef TIDE_XRAY_H
#define TIDE_XRAY_H
#include "tide/export.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tide_ctx;

/** Most singular values (model order) and modes of one trace. */
#define TIDE_XRAY_MAX_COMPONENTS 32

/** Fit status of a trace (cuPhoton's fit_status codes). */
enum {
    TIDE_XRAY_UNPROCESSED = 0, /**< not fitted (outside the ROI's whole tiles) */
    TIDE_XRAY_OK = 1,          /**< fitted */
    TIDE_XRAY_SKIPPED = 2,     /**< not fitted: no usable data (reason says which) */
    TIDE_XRAY_FAILED = 3       /**< the fit broke down (reason says where) */
};

/** Why a trace was skipped or failed. */
enum {
    TIDE_XRAY_R_NONE = 0,      /**< ok */
    TIDE_XRAY_R_SHORT = 1,     /**< too few samples after the zero delay */
    TIDE_XRAY_R_NONFINITE = 2, /**< a sample (or a result) is NaN or infinite */
    TIDE_XRAY_R_ZERO = 3,      /**< the trace is identically zero */
    TIDE_XRAY_R_SVD = 4,       /**< the Hankel SVD did not converge or has rank 0 */
    TIDE_XRAY_R_ROOTS = 5,     /**< the prediction polynomial's roots did not converge */
    TIDE_XRAY_R_LSQ = 6,       /**< the amplitude least squares did not converge */
    TIDE_XRAY_R_NOMODE = 7,    /**< no root is a damped mode (all inside the unit circle) */
    TIDE_XRAY_R_NOLIGHT = 8    /**< the off signal or a monitor is <= 0 in some frame */
};

/** Short name of a reason code ("ok", "short", "non-finite"...); never NULL. */
TIDE_API const char *tide_xray_reason_name(int reason);

/** One trace's fit. Modes are ordered by decreasing amplitude. */
typedef struct tide_xray_lp_result {
    int status;      /**< TIDE_XRAY_OK, _SKIPPED or _FAILED */
    int reason;      /**< TIDE_XRAY_R_* */
    int order;       /**< singular values kept */
    int nmodes;      /**< modes found */
    int refine_iter; /**< Levenberg–Marquardt iterations (0: not refined) */
    double constant; /**< c */
    double chi2;     /**< mean squared residual */
    double omega[TIDE_XRAY_MAX_COMPONENTS]; /**< ω_k, radians per delay unit */
    double decay[TIDE_XRAY_MAX_COMPONENTS]; /**< b_k >= 0, per delay unit */
    double amp[TIDE_XRAY_MAX_COMPONENTS];   /**< A_k >= 0 */
    double phase[TIDE_XRAY_MAX_COMPONENTS]; /**< φ_k, radians in (-π, π] */
} tide_xray_lp_result;

/** LPSVD fits of @p ntr traces of @p n samples each (trace i at traces + i*n, time 0 at its
 *  first sample, spacing @p dt) with at most @p components singular values, into
 *  results[0..ntr); with @p refine, each fit is then refined by variable projection
 *  (Levenberg–Marquardt in every mode's frequency and decay at once, the amplitudes, phases
 *  and constant by linear least squares at each step; up to 8 modes; kept only when it
 *  lowers χ²). On the CPU: OpenMP over traces. TIDE_E_INVAL for bad sizes. */
TIDE_API int tide_xray_lpsvd_batch(struct tide_ctx *ctx, const double *traces, int64_t ntr, int n,
                                   double dt, int components, int refine,
                                   tide_xray_lp_result *results);

/** Cramér–Rao bounds of the parameters of the model @p truth (its nmodes modes and constant)
 *  sampled at t = 0, dt, ..., (n-1) dt with white noise of standard deviation @p sigma:
 *  crb[4k + 0..3] = σ of ω_k, b_k, A_k, φ_k, and crb[4 nmodes] = σ of c, from the inverse of
 *  JᵀJ/σ². TIDE_E_RANGE when the Fisher matrix is singular. */
TIDE_API int tide_xray_crb(const tide_xray_lp_result *truth, int n, double dt, double sigma,
                           double *crb);

/** Input layouts. */
typedef enum { TIDE_XRAY_CROPPED = 0, TIDE_XRAY_LEGATE = 1 } tide_xray_layout;

/** What tide_xray_probe_file found in one file. */
typedef struct tide_xray_info {
    tide_xray_layout layout;
    char cube[32];        /**< the cube's dataset name */
    char monitor[32];     /**< the normalising monitor's dataset name */
    char monitor2[32];    /**< the other monitor's dataset name */
    char delays_name[32]; /**< the delays' dataset name */
    char counts_name[32]; /**< the per-bin event counts' dataset name */
    char dtype[16];       /**< the cube's element type ("float32", "float64", "int32"...) */
    int64_t nframes, ny, nx;
    int64_t chunk[3];   /**< the cube's chunk shape (0 when contiguous) */
    int64_t roi[4];     /**< cropped-cube ROI (x0, y0, width, height); -1 when absent */
    double *delays;     /**< nframes delays (owned) */
    double *mon;        /**< nframes values of the normalising monitor (owned) */
    int64_t empty_bins; /**< frames whose event count is 0 */
    int uniform;        /**< 1 when the delays are equally spaced (within 1e-6 of a step) */
    double dt;          /**< the mean delay step */
} tide_xray_info;

/** Classify and check one file: the layout, every required dataset with its rank and shape
 *  (delays, counts and monitors of length nframes), the delays finite and strictly monotonic.
 *  Errors name the file and the dataset: TIDE_E_IO (cannot open), TIDE_E_NOTFOUND (a dataset
 *  missing), TIDE_E_FORMAT (wrong rank, shape or type, NaN delays). */
TIDE_API int tide_xray_probe_file(const char *path, tide_xray_info *info);

/** Probe both files of a pair and check they match: same layout, cube shape and delays
 *  (within 1e-9 of the step). TIDE_E_FORMAT names both files when they do not. */
TIDE_API int tide_xray_probe_pair(const char *on, const char *off, tide_xray_info *ion,
                                  tide_xray_info *ioff);

/** Release what tide_xray_probe_file allocated (safe on a zeroed info). */
TIDE_API void tide_xray_info_free(tide_xray_info *info);

/** What tide xray sim writes. tide_xray_sim_defaults gives the values in brackets. */
typedef struct tide_xray_sim_params {
    tide_xray_layout layout; /**< [cropped-cube] */
    int64_t nframes, ny, nx; /**< cube shape [100, 1024, 1024] */
    int64_t active[4];       /**< x0, y0, width, height of the region with light; elsewhere the
                                  cube's chunks are never written and read as 0 [whole cube] */
    int nmodes;              /**< 1 or 2 [2] */
    double omega[2], decay[2], amp[2], phase[2]; /**< cuPhoton's validation pair, amplitudes
                                  scaled by amp_scale: (1.25, 0.09, 2.4, 0.30), (0.45, 0.03,
                                  0.9, -0.75) */
    double constant;                             /**< [0.15], scaled by amp_scale */
    double amp_scale;   /**< [0.25] (keeps 1 + signal > 0: counts stay positive) */
    double dt;          /**< delay step [0.1] (96 samples over 9.5 units) */
    int zero_index;     /**< frame of zero delay [4] */
    double zero_offset; /**< the delay reading at zero delay [0.37] */
    double counts;      /**< mean counts per pixel per frame at monitor 1 [1000] */
    double read_noise;  /**< Gaussian read noise per pixel [0]; shot noise is sqrt(counts) */
    int noise;          /**< 0: no noise at all [1] */
    int tile;           /**< modes are constant over tile × tile pixels [16] and vary
                             across the detector: ω_k (1 + 0.2 u), A_k (1 + 0.4 v) with u,
                             v in [-1/2, 1/2] the tile centre's x and y over the cube */
    double chirp;       /**< distortion: each mode's frequency ω (1 + chirp t), t from zero
                             delay, in the on file [0] (truth: the ω at t = 0) */
    double glitch_frac; /**< distortion: this fraction of (pixel, frame) samples of both files
                             times 1 + U(0, 4), a glitch [0] */
    double clip;        /**< distortion: samples clipped at this many counts, 0 = none [0] */
    uint64_t seed;      /**< [1] */
} tide_xray_sim_params;

/** Fill @p p with the defaults in brackets. */
TIDE_API void tide_xray_sim_defaults(tide_xray_sim_params *p);

/** Write DIR/on.h5, DIR/off.h5 (the layout of @p p), DIR/truth.h5 (per tile: omega, decay,
 *  amp, phase as (mode, tile y, tile x), constant (tile y, tile x)) and DIR/truth.json (the
 *  parameters and the variation rule). Deterministic in the seed. */
TIDE_API int tide_xray_sim(const tide_xray_sim_params *p, const char *dir);

/** How traces are made. tide_xray_trace_defaults gives the values in brackets. */
typedef struct tide_xray_trace_params {
    int64_t roi[4];    /**< x0, y0, width, height on the cube; width <= 0: the whole cube */
    int tile_x;        /**< columns summed per trace [16] */
    int tile_y;        /**< rows per trace [1] */
    int integrate;     /**< ± neighbouring rows added (clipped at the cube) [3] */
    int savgol_window; /**< odd; 0 or 1 = no smoothing [5] */
    int savgol_order;  /**< [3] */
    int zero_index;    /**< the zero-delay frame; -1: from the data [-1] */
    double zero_delay; /**< or the delay of zero (nearest frame), when zero_index < 0 and
                            finite [NaN] */
    int drop_leading;  /**< frames never fitted at the start [1] */
    int drop_trailing; /**< frames never fitted at the end [1] */
    int block_rows;    /**< detector rows read per HDF5 hyperslab (at least one trace row) [64] */
} tide_xray_trace_params;

/** Fill @p p with the defaults in brackets. */
TIDE_API void tide_xray_trace_defaults(tide_xray_trace_params *p);

/** What tide_xray_fit_pair fits and writes. */
typedef struct tide_xray_fit_params {
    int components;   /**< singular values kept (model order) [5] */
    int modes;        /**< modes written per trace [2] */
    int refine;       /**< 1: refinement of each LPSVD fit (variable projection) [1] */
    int write_traces; /**< 1: also DIR/traces.h5 [0] */
    int png;          /**< 1: PNG maps [1] */
} tide_xray_fit_params;

/** Fill @p p with the defaults in brackets. */
TIDE_API void tide_xray_fit_defaults(tide_xray_fit_params *p);

/** Totals of a tide_xray_fit_pair run. */
typedef struct tide_xray_fit_stats {
    int64_t ntraces, ty, tx; /**< traces, and the trace grid (rows, columns) */
    int64_t nok, nskipped, nfailed;
    int zero_index;                         /**< the zero-delay frame used */
    int zero_from_data;                     /**< 1 when found in the data */
    int fit_start, fit_len;                 /**< first frame fitted and samples per fit */
    double read_s, trace_s, fit_s, write_s; /**< wall seconds of each step */
} tide_xray_fit_stats;

/** The whole `tide xray fit`: probe the pair, stream its traces by row blocks, fit them and
 *  write DIR/maps.fits (image HDUs FREQ, DAMP, AMP, PHASE: mode × y × x float32 on the trace
 *  grid, modes by amplitude, NaN where none; FFT: bin × y × x |DFT|/n; STATUS: y × x), DIR/maps.h5
 *  (the same datasets plus fft_freq, reason, constant, chi2), PNG maps (p->png) and
 *  DIR/summary.json (inputs with their SHA-256, parameters, device, totals). With
 *  p->write_traces also DIR/traces.h5. @p fp NULL: only traces.h5 is written (tide xray
 *  traces). Everything is staged and published together (outfile.h). */
TIDE_API int tide_xray_fit_pair(struct tide_ctx *ctx, const char *on, const char *off,
                                const tide_xray_trace_params *tp, const tide_xray_fit_params *fp,
                                const char *dir, tide_xray_fit_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
