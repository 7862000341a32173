/* background_cuda.cu — CUDA twins of the background kernels.
 *
 * Mesh statistics: one block of TIDE_BKG_LANES threads per mesh. Thread t adds the mesh
 * pixels t, t + LANES, ... (row-major inside the mesh) and the block adds the lanes in the
 * pairwise tree of background_math.h: the CPU's order, so sums are bitwise equal. The
 * histogram (at most 4096 bins) lives in shared memory and is filled with integer atomics
 * (order-free), the block scans it into prefix sums, and one thread runs the mode estimate
 * (a few bisections per clipping pass). Interpolation: one thread per
 * pixel, each independent (the x-spline coefficients of every row are a fixed combination of
 * precomputed planes, see background_kernels.h). */
#include <cuda_runtime.h>
#include <math.h>
#include <math_constants.h>
#include <stdint.h>

#include "core/gpu/cuda_check.h"
#include "background_kernels.h"
#include "background_math.h"
#include "tide/memory.h"
#include "tide/status.h"

#define LANES TIDE_BKG_LANES

/* Static shared memory: lane sums and scan partials. The histogram and its prefix sums
 * (~98 KB for 4096 levels) live in dynamic shared memory, laid out by hist_layout(). */
struct bkg_shared {
    double s1[LANES], s2[LANES];
    long long sc[LANES];
    unsigned long long p0[LANES], p1[LANES], p2[LANES];
};

#define NL (TIDE_BKG_QMAXLEVELS + 1)
static const size_t HIST_BYTES = sizeof(uint64_t) * 2 * NL + sizeof(uint32_t) * 2 * NL;

struct hist_view {
    uint64_t *c1, *c2;
    uint32_t *c0, *hist;
};

__device__ static struct hist_view hist_layout(unsigned char *dyn) {
    struct hist_view v;
    v.c1 = (uint64_t *)dyn;
    v.c2 = v.c1 + NL;
    v.c0 = (uint32_t *)(v.c2 + NL);
    v.hist = v.c0 + NL;
    return v;
}

/* The prefix sums of tide_bkg_prefix, by the block: each thread sums a chunk of bins, a
 * Hillis-Steele scan over the partials gives each chunk its offset, then each thread writes
 * its chunk. Integer arithmetic, so the arrays equal the sequential ones exactly. */
__device__ static void block_prefix(struct bkg_shared *sh, const struct hist_view *v, int n) {
    const int t = threadIdx.x, chunk = (n + LANES - 1) / LANES;
    const int b0 = t * chunk < n ? t * chunk : n, b1 = b0 + chunk < n ? b0 + chunk : n;
    unsigned long long a = 0, b = 0, c = 0;
    for (int i = b0; i < b1; i++) {
        const unsigned long long hv = v->hist[i];
        a += hv;
        b += hv * (unsigned long long)i;
        c += hv * (unsigned long long)i * (unsigned long long)i;
    }
    sh->p0[t] = a;
    sh->p1[t] = b;
    sh->p2[t] = c;
    __syncthreads();
    for (int off = 1; off < LANES; off <<= 1) { /* inclusive scan */
        unsigned long long x0 = 0, x1 = 0, x2 = 0;
        if (t >= off) {
            x0 = sh->p0[t - off];
            x1 = sh->p1[t - off];
            x2 = sh->p2[t - off];
        }
        __syncthreads();
        sh->p0[t] += x0;
        sh->p1[t] += x1;
        sh->p2[t] += x2;
        __syncthreads();
    }
    a = t ? sh->p0[t - 1] : 0ull; /* exclusive offsets of this chunk */
    b = t ? sh->p1[t - 1] : 0ull;
    c = t ? sh->p2[t - 1] : 0ull;
    for (int i = b0; i < b1; i++) {
        v->c0[i] = (uint32_t)a;
        v->c1[i] = b;
        v->c2[i] = c;
        const unsigned long long hv = v->hist[i];
        a += hv;
        b += hv * (unsigned long long)i;
        c += hv * (unsigned long long)i * (unsigned long long)i;
    }
    if (t == LANES - 1) {
        v->c0[n] = (uint32_t)sh->p0[t];
        v->c1[n] = sh->p1[t];
        v->c2[n] = sh->p2[t];
    }
    __syncthreads();
}

/* Count, sum and sum of squares of the valid pixels of a mesh (inside [lo, hi] when @p cut),
 * in the lane order; every thread of the block gets the totals. */
__device__ static void block_sums(struct bkg_shared *sh, const float *pix, const uint16_t *mask,
                                  int64_t stride, uint16_t bits, int64_t x0, int64_t y0, int64_t mw,
                                  int64_t mh, int cut, float lo, float hi, long long *n,
                                  double *sum, double *sumsq) {
    const int t = threadIdx.x;
    const int64_t npix = mw * mh, dr = LANES / mw, dc = LANES % mw;
    int64_t r = t / mw, c = t % mw;
    double a = 0.0, b = 0.0;
    long long cnt = 0;
    for (int64_t k = t; k < npix; k += LANES) {
        const int64_t off = (y0 + r) * stride + x0 + c;
        const float v = pix[off];
        const uint16_t m = mask ? mask[off] : (uint16_t)0;
        if (tide_bkg_valid(v, m, bits) && (!cut || (v <= hi && v >= lo))) {
            a = __dadd_rn(a, (double)v);
            b = __dadd_rn(b, __dmul_rn((double)v, (double)v));
            cnt++;
        }
        c += dc;
        r += dr;
        if (c >= mw) {
            c -= mw;
            r++;
        }
    }
    __syncthreads(); /* the previous call's totals have been read */
    sh->s1[t] = a;
    sh->s2[t] = b;
    sh->sc[t] = cnt;
    __syncthreads();
    for (int s = LANES / 2; s > 0; s >>= 1) {
        if (t < s) {
            sh->s1[t] = __dadd_rn(sh->s1[t], sh->s1[t + s]);
            sh->s2[t] = __dadd_rn(sh->s2[t], sh->s2[t + s]);
            sh->sc[t] += sh->sc[t + s];
        }
        __syncthreads();
    }
    *n = sh->sc[0];
    *sum = sh->s1[0];
    *sumsq = sh->s2[0];
}

/* One mesh, by the whole block (control flow is uniform: every branch depends on block-wide
 * totals only). */
__device__ static void mesh_one(struct bkg_shared *sh, const struct hist_view *hv, const float *pix,
                                const uint16_t *mask, int64_t stride, const tide_bkg_plan *p,
                                int64_t m, float *out) {
    int64_t x0, y0, mw, mh;
    tide_bkg_mesh_box(m % p->nx, m / p->nx, p->w, p->h, p->bw, p->bh, p->nx, p->ny, &x0, &y0, &mw,
                      &mh);
    long long n;
    double sum, sumsq;
    block_sums(sh, pix, mask, stride, p->mask_bits, x0, y0, mw, mh, 0, 0.0f, 0.0f, &n, &sum,
               &sumsq);
    if (n == 0 || (float)n < (float)((double)(mw * mh) * p->min_good_frac)) {
        if (threadIdx.x == 0)
            out[2 * m] = out[2 * m + 1] = CUDART_NAN_F;
        return;
    }
    float lo, hi;
    tide_bkg_cuts(n, sum, sumsq, &lo, &hi);
    block_sums(sh, pix, mask, stride, p->mask_bits, x0, y0, mw, mh, 1, lo, hi, &n, &sum, &sumsq);
    if (n == 0) {
        if (threadIdx.x == 0)
            out[2 * m] = out[2 * m + 1] = CUDART_NAN_F;
        return;
    }
    const tide_bkg_hist h = tide_bkg_hist_setup(n, sum, sumsq);
    for (int i = threadIdx.x; i < h.nlevels; i += LANES)
        hv->hist[i] = 0u;
    __syncthreads();
    const int64_t npix = mw * mh, dr = LANES / mw, dc = LANES % mw;
    int64_t r = threadIdx.x / mw, c = threadIdx.x % mw;
    for (int64_t k = threadIdx.x; k < npix; k += LANES) {
        const int64_t off = (y0 + r) * stride + x0 + c;
        const float v = pix[off];
        if (tide_bkg_valid(v, mask ? mask[off] : (uint16_t)0, p->mask_bits)) {
            const int b = tide_bkg_bin(v, &h);
            if (b >= 0)
                atomicAdd(&hv->hist[b], 1u);
        }
        c += dc;
        r += dr;
        if (c >= mw) {
            c -= mw;
            r++;
        }
    }
    __syncthreads();
    block_prefix(sh, hv, h.nlevels);
    if (threadIdx.x == 0)
        tide_bkg_guess(&h, hv->c0, hv->c1, hv->c2, &out[2 * m], &out[2 * m + 1]);
    __syncthreads(); /* the histogram is reused by the block's next mesh */
}

__global__ void __launch_bounds__(LANES)
    bkg_mesh_kernel(const float *__restrict__ pix, const uint16_t *__restrict__ mask,
                    int64_t stride, tide_bkg_plan p, float *__restrict__ out) {
    __shared__ struct bkg_shared sh;
    extern __shared__ __align__(16) unsigned char dyn[];
    const struct hist_view hv = hist_layout(dyn);
    for (int64_t m = blockIdx.x; m < p.nmesh; m += gridDim.x)
        mesh_one(&sh, &hv, pix, mask, stride, &p, m, out);
}

extern "C" int tide_bkg_mesh_stats_cuda(tide_ctx *ctx, const tide_bkg_plan *p, const tide_image *im,
                                        float *mesh) {
    if (im->location != TIDE_DEVICE)
        return tide_error(TIDE_E_INTERNAL, "background: CUDA mesh statistics need a device image");
    const size_t bytes = sizeof(float) * 2 * (size_t)p->nmesh;
    void *d_out = NULL;
    int st = tide_device_alloc(ctx, bytes, &d_out);
    if (st)
        return st;
    const int64_t nb = p->nmesh < (1 << 20) ? p->nmesh : (1 << 20);
    cudaError_t ce = cudaFuncSetAttribute(
        bkg_mesh_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)HIST_BYTES);
    if (ce == cudaSuccess) {
        bkg_mesh_kernel<<<(unsigned)nb, LANES, HIST_BYTES, (cudaStream_t)ctx->stream>>>(
            im->pix, im->mask, im->stride, *p, (float *)d_out);
        ce = cudaGetLastError();
    }
    if (ce != cudaSuccess)
        st = tide_error(TIDE_E_CUDA, "background: mesh kernel launch failed: %s",
                        cudaGetErrorString(ce));
    if (!st)
        st = tide_memcpy(ctx, mesh, 0, d_out, 1, bytes);
    tide_device_free(ctx, d_out);
    return st;
}

/* ---- interpolation --------------------------------------------------------------------- */

/* One map at pixel (x, y) from its four planes (V, DV, XV, XDV). */
__device__ static float interp_one(const float *P, const tide_bkg_plan *p, int64_t y,
                                   const tide_bkg_xw *xw) {
    const int64_t nx = p->nx, np = p->nmesh;
    const float *V = P + TIDE_BKG_V * np, *DV = P + TIDE_BKG_DV * np;
    const float *XV = P + TIDE_BKG_XV * np, *XDV = P + TIDE_BKG_XDV * np;
    const int64_t s = nx > 1 ? xw->s : 0;
    float lo, hi = 0.0f, dlo = 0.0f, dhi = 0.0f;
    if (p->ny > 1) {
        const tide_bkg_yw w = tide_bkg_yweights(y, p->bh, p->ny);
        lo = tide_bkg_node(V, DV, nx, &w, s);
        if (nx > 1) {
            hi = tide_bkg_node(V, DV, nx, &w, s + 1);
            dlo = tide_bkg_node(XV, XDV, nx, &w, s);
            dhi = tide_bkg_node(XV, XDV, nx, &w, s + 1);
        }
    } else {
        lo = V[s];
        if (nx > 1)
            hi = V[s + 1];
    }
    return nx > 1 ? tide_bkg_cubic(lo, hi, dlo, dhi, xw) : lo;
}

__global__ void bkg_interp_kernel(const float *__restrict__ coef, tide_bkg_plan p,
                                  float *__restrict__ bk, int64_t bks, float *__restrict__ rm,
                                  int64_t rms) {
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= p.w)
        return;
    tide_bkg_xw xw = {0, 0.0f, 0.0f, 0.0f, 0.0f};
    if (p.nx > 1)
        xw = tide_bkg_xweights(x, p.bw, p.nx);
    for (int64_t y = blockIdx.y; y < p.h; y += gridDim.y) {
        if (bk)
            bk[y * bks + x] = interp_one(coef, &p, y, &xw);
        if (rm)
            rm[y * rms + x] = interp_one(coef + 4 * p.nmesh, &p, y, &xw);
    }
}

extern "C" int tide_bkg_interp_cuda(tide_ctx *ctx, const tide_bkg_plan *p, const float *coef,
                                    tide_image *bkg, tide_image *rms) {
    if ((bkg && bkg->location != TIDE_DEVICE) || (rms && rms->location != TIDE_DEVICE))
        return tide_error(TIDE_E_INTERNAL, "background: CUDA interpolation needs device maps");
    const size_t bytes = sizeof(float) * TIDE_BKG_NPLANES * (size_t)p->nmesh;
    void *d_coef = NULL;
    int st = tide_device_alloc(ctx, bytes, &d_coef);
    if (st)
        return st;
    st = tide_memcpy(ctx, d_coef, 1, coef, 0, bytes);
    if (!st) {
        const unsigned bx = 128;
        const int64_t gy = p->h < 65535 ? p->h : 65535;
        dim3 grid((unsigned)((p->w + bx - 1) / bx), (unsigned)gy);
        bkg_interp_kernel<<<grid, bx, 0, (cudaStream_t)ctx->stream>>>(
            (const float *)d_coef, *p, bkg ? bkg->pix : NULL, bkg ? bkg->stride : 0,
            rms ? rms->pix : NULL, rms ? rms->stride : 0);
        cudaError_t ce = cudaGetLastError();
        if (ce != cudaSuccess)
            st = tide_error(TIDE_E_CUDA, "background: interpolation launch failed: %s",
                            cudaGetErrorString(ce));
    }
    tide_device_free(ctx, d_coef); /* stream-ordered: after the interpolation that reads it */
    return st;
}

/* ---- smooth mode ----------------------------------------------------------------------- */

__global__ void bkg_poly_kernel(tide_bkg_plan p, tide_bkg_poly q0, tide_bkg_poly q1,
                                float *__restrict__ bk, int64_t bks, float *__restrict__ rm,
                                int64_t rms) {
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= p.w)
        return;
    for (int64_t y = blockIdx.y; y < p.h; y += gridDim.y) {
        if (bk)
            bk[y * bks + x] = tide_bkg_poly_at(q0.nt, q0.pa, q0.pb, q0.c, q0.su, q0.ou, q0.sv,
                                               q0.ov, x, y, p.bw, p.bh);
        if (rm)
            rm[y * rms + x] = tide_bkg_poly_at(q1.nt, q1.pa, q1.pb, q1.c, q1.su, q1.ou, q1.sv,
                                               q1.ov, x, y, p.bw, p.bh);
    }
}

extern "C" int tide_bkg_poly_cuda(tide_ctx *ctx, const tide_bkg_plan *p, const tide_bkg_poly *poly,
                                  tide_image *bkg, tide_image *rms) {
    if ((bkg && bkg->location != TIDE_DEVICE) || (rms && rms->location != TIDE_DEVICE))
        return tide_error(TIDE_E_INTERNAL, "background: CUDA smooth maps need device images");
    const unsigned bx = 128;
    const int64_t gy = p->h < 65535 ? p->h : 65535;
    dim3 grid((unsigned)((p->w + bx - 1) / bx), (unsigned)gy);
    bkg_poly_kernel<<<grid, bx, 0, (cudaStream_t)ctx->stream>>>(
        *p, poly[0], poly[1], bkg ? bkg->pix : NULL, bkg ? bkg->stride : 0, rms ? rms->pix : NULL,
        rms ? rms->stride : 0);
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK; /* stream-ordered: later work and copies to the host see the maps */
}

/* ---- noise model ----------------------------------------------------------------------- */

__global__ void noise_kernel(const float *__restrict__ b, int64_t bs, float *__restrict__ v,
                             int64_t vs, int64_t w, int64_t h, double inv_gain, double rn2g2,
                             double inv_n) {
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w)
        return;
    for (int64_t y = blockIdx.y; y < h; y += gridDim.y)
        v[y * vs + x] = tide_noise_var(b[y * bs + x], inv_gain, rn2g2, inv_n);
}

extern "C" int tide_noise_model_cuda(tide_ctx *ctx, const tide_image *bkg, double inv_gain,
                                     double rn2g2, double inv_n, tide_image *var) {
    if (bkg->location != TIDE_DEVICE || var->location != TIDE_DEVICE)
        return tide_error(TIDE_E_INTERNAL, "noise model: CUDA kernel needs device images");
    const unsigned bx = 256;
    const int64_t gy = bkg->height < 65535 ? bkg->height : 65535;
    dim3 grid((unsigned)((bkg->width + bx - 1) / bx), (unsigned)gy);
    noise_kernel<<<grid, bx, 0, (cudaStream_t)ctx->stream>>>(bkg->pix, bkg->stride, var->pix,
                                                             var->stride, bkg->width, bkg->height,
                                                             inv_gain, rn2g2, inv_n);
    TIDE_CUDA_LAUNCHED();
    return TIDE_OK; /* stream-ordered */
}
