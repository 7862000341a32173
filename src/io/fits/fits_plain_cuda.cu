/* fits_plain_cuda.cu — the device twin of fits_fast_read.c's conversion: the raw big-endian
 * data unit of a plain image, read by cuFile into device memory (fits_cufile_cudaonly.c),
 * becomes float pixels and a no-data mask, one pixel per thread, through the same per-value
 * functions as the host reader (fits_fast_math.h), so both give the same bits. The bytes are
 * read one at a time: the data unit starts on a 2880-byte boundary of the file, not on one of
 * the value's size in the buffer. */
#include <cuda_runtime.h>

#include "core/gpu/cuda_check.h"
#include "fits_stack.h"

__global__ static void plain_convert_kernel(const unsigned char *raw, int64_t n, int bitpix,
                                            tide_fits_iconv ic, float *out, uint16_t *mask) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int null = 0;
        float v;
        if (bitpix == -32 || bitpix == 32) {
            const unsigned char *b = raw + 4 * i;
            const uint32_t u =
                (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
            v = bitpix < 0 ? tide_fits_f32_value(u, &null)
                           : tide_fits_int_value(&ic, (int32_t)u, &null);
        } else if (bitpix == 16) {
            const unsigned char *b = raw + 2 * i;
            v = tide_fits_int_value(&ic, (int16_t)(uint16_t)((unsigned)b[0] << 8 | b[1]), &null);
        } else {
            v = tide_fits_int_value(&ic, raw[i], &null);
        }
        out[i] = v;
        mask[i] = null ? (uint16_t)TIDE_MASK_NODATA : (uint16_t)0;
    }
}

extern "C" int tide_fits_plain_convert_cuda(tide_ctx *ctx, const void *d_raw,
                                            const tide_fits_plain_unit *u, float *d_pix,
                                            uint16_t *d_mask) {
    const int64_t n = u->width * u->height;
    const int block = 256;
    const int64_t g = (n + block - 1) / block;
    const unsigned grid = (unsigned)(g > 65535 * 16 ? 65535 * 16 : g);
    plain_convert_kernel<<<grid, block, 0, (cudaStream_t)ctx->stream>>>(
        (const unsigned char *)d_raw, n, u->bitpix, u->ic, d_pix, d_mask);
    TIDE_CUDA_LAUNCHED();
    return 0;
}
