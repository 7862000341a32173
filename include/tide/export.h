/* export.h — TIDE_API, the mark of a function that libtide.so exports.
 *
 * The library is compiled with hidden symbol visibility, so only the declarations of
 * include/tide/ that carry TIDE_API are part of the shared library's interface; everything
 * else (the CPU and CUDA twins, the modules' internal links) stays inside it and may change
 * freely. A program or a binding (ctypes) can call exactly what these headers declare. The
 * same mark serves the build and its users: on ELF, default visibility on a declaration both
 * exports a definition and lets a caller bind to it. */
#ifndef TIDE_EXPORT_H
#define TIDE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TIDE_API __attribute__((visibility("default")))
#else
#define TIDE_API
#endif

#endif
