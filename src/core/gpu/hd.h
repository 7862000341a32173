/* hd.h — TIDE_HD marks per-element math shared by the CPU and CUDA twins of a kernel
 * (DESIGN §3): `TIDE_HD static inline` functions in *_math.h headers are compiled for both. */
#ifndef TIDE_HD_H
#define TIDE_HD_H
#ifdef __CUDACC__
#define TIDE_HD __host__ __device__
#else
#define TIDE_HD
#endif
#endif
