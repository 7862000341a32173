/* status.h — status codes and the thread-local error detail.
 *
 * Every fallible tide function returns an int: 0 (TIDE_OK) on success, a negative TIDE_E_*
 * code on failure. The function that fails first records a human-readable detail (what and
 * where: file, HDU, key, line) with tide_error(); callers read it with tide_error_detail().
 * The library never prints and never exits; the CLI turns a status into a message. */
#ifndef TIDE_STATUS_H
#define TIDE_STATUS_H
#include "tide/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes. 0 is success; every failure is negative. */
enum {
    TIDE_OK = 0,
    TIDE_E_INVAL = -1,       /**< invalid argument (a caller's bug or a bad option) */
    TIDE_E_NOMEM = -2,       /**< host or device allocation failed */
    TIDE_E_IO = -3,          /**< a file could not be opened, read, written or renamed */
    TIDE_E_FORMAT = -4,      /**< a file is malformed: not FITS, truncated, wrong HDU type */
    TIDE_E_NOTFOUND = -5,    /**< a key, column, HDU or file does not exist */
    TIDE_E_UNSUPPORTED = -6, /**< valid input that tide does not handle (e.g. TNX WCS) */
    TIDE_E_CUDA = -7,        /**< a CUDA runtime or library call failed */
    TIDE_E_NODEVICE = -8,    /**< the CUDA backend was asked for but no GPU is usable */
    TIDE_E_CONFIG = -9,      /**< a configuration is malformed or has an unknown key */
    TIDE_E_WCS = -10,        /**< a WCS could not be built or evaluated */
    TIDE_E_FFT = -11,        /**< an FFT plan could not be made or executed */
    TIDE_E_RANGE = -12,      /**< a value or size out of its valid range */
    TIDE_E_EMPTY = -13,      /**< no valid data (all pixels NaN or masked, empty HDU) */
    TIDE_E_INTERNAL = -14,   /**< a bug in tide */
    TIDE_E_NOSOLVE = -15,    /**< a field could not be plate-solved (no match, or time ran out) */
    TIDE_E_DB = -16,         /**< a catalog store failed: unreachable, refused, or a query error */
    TIDE_E_TIMEOUT = -17     /**< an operation ran past its wall-clock limit */
};

/** Short name of a status code ("invalid argument", "no GPU"...); never NULL. */
TIDE_API const char *tide_strerror(int status);

/** Record a printf-style detail for the current thread and return @p status unchanged, so a
 *  failure reads `return tide_error(TIDE_E_FORMAT, "%s: HDU %d is a table", path, hdu);`.
 *  The detail is replaced by the next call. */
TIDE_API int tide_error(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Prefix the current detail with more context ("reading FRAME.fits: "), keep the status. */
TIDE_API int tide_error_prefix(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** The detail recorded by the last failing call on this thread ("" if none). */
TIDE_API const char *tide_error_detail(void);

/** Forget the current thread's detail. */
TIDE_API void tide_error_clear(void);

#ifdef __cplusplus
}
#endif
#endif
