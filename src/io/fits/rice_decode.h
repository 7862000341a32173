/* rice_decode.h — a bounded decoder for the RICE_1 tile compression of FITS images.
 *
 * The format is the one of the FITS tiled-image convention (Pence et al. 2009; FITS standard
 * 4.0, section 10.4.1), as cfitsio's fits_rcomp* write it: the first pixel as BYTEPIX bytes,
 * big-endian, then blocks of BLOCKSIZE pixel differences (the last block may be shorter), each
 * block led by an FSBITS-bit code: 0 for a block of zero differences, FSMAX + 1 for
 * differences stored verbatim in 8 * BYTEPIX bits, otherwise fs + 1 followed by each
 * difference (mapped to unsigned, 2d or -2d-1) as a unary high part and fs low bits.
 * FSBITS/FSMAX are 3/6 for 1-byte pixels, 4/14 for 2-byte and 5/25 for 4-byte pixels.
 *
 * Unlike cfitsio 4.2.0's fits_rdecomp*, which check for the end of their input only after
 * each block (and read past it within one, or without end on a run of zero bytes), every
 * byte read here is checked against the input's length: a stream that is cut short, has a
 * code above FSMAX + 1, or a difference wider than 32 bits is an error, never a read out of
 * bounds. On valid streams the output is bit for bit that of fits_rdecomp_byte /
 * fits_rdecomp_short / fits_rdecomp. Kept free of I/O so it can be the CPU twin of a GPU
 * decoder. Not public. */
#ifndef TIDE_RICE_DECODE_H
#define TIDE_RICE_DECODE_H
#include <stddef.h>
#include <stdint.h>

/** Decode @p npix pixels (>= 1) from the @p nin bytes at @p in, blocks of @p blocksize (>= 1)
 *  pixels of @p bytepix (1, 2 or 4) bytes, into @p out: npix uint8, uint16 or uint32 values
 *  in host order (what fits_rdecomp_byte/_short/fits_rdecomp write; signed data are the same
 *  bits). Bytes left over after the last pixel are allowed, as cfitsio allows them.
 *  Returns 0, TIDE_E_INVAL for bad parameters, or TIDE_E_FORMAT with a detail saying where
 *  the stream is wrong (tide_error_detail()); on failure @p out holds an unspecified prefix. */
int tide_rice_decode(const uint8_t *in, size_t nin, int bytepix, int blocksize, int64_t npix,
                     void *out);

/** The same, also giving the number of input bytes the decode consumed (<= nin). */
int tide_rice_decode_used(const uint8_t *in, size_t nin, int bytepix, int blocksize, int64_t npix,
                          void *out, size_t *used);

#endif
