"""Write tile-compressed images with astropy (the other writer tide must read): every codec
astropy offers, quantized floats with each method and seed, odd tiles, unsigned 16-bit.
Usage: tile_decode_astropy.py DIR; prints the files written, one a line."""
import sys

import numpy as np
from astropy.io import fits

out = sys.argv[1]
rng = np.random.default_rng(19)
y, x = np.mgrid[0:203, 0:157]
sky = 1000 + 30 * np.sin(x / 11.0) + rng.normal(0, 8, y.shape)
f32 = sky.astype(np.float32)
f32[rng.random(f32.shape) < 0.01] = np.nan
f32[50:60, :40] = 0.0
images = {
    "i16": (sky * 10 - 10000).astype(np.int16),
    "u16": (sky * 40).astype(np.uint16),
    "i32": (sky * 1e5).astype(np.int32),
    "u8": (sky % 256).astype(np.uint8),
    "f32": f32,
    "f64": f32.astype(np.float64),
}
cases = [("RICE_1", {}), ("GZIP_1", {}), ("GZIP_2", {}), ("RICE_1", {"tile_size": (23, 17)}),
         ("GZIP_2", {"tile_size": (203, 157)}), ("HCOMPRESS_1", {"tile_size": (16, 157)}),
         ("PLIO_1", {})]
qcases = [{"quantize_method": 1, "dither_seed": 7}, {"quantize_method": 2, "dither_seed": 9999},
          {"quantize_method": -1}, {"quantize_level": 4.0, "quantize_method": 1,
                                    "dither_seed": 1234, "tile_size": (23, 17)}]
n = 0
for name, data in images.items():
    for ctype, kw in cases:
        for q in (qcases if data.dtype.kind == "f" and ctype != "PLIO_1" else [{}]):
            args = dict(kw)
            args.update(q)
            if ctype == "PLIO_1" and (data.dtype.kind == "f" or name == "i32"):
                continue
            n += 1
            path = "%s/astropy_%02d_%s_%s.fits" % (out, n, name, ctype)
            try:
                hdu = fits.CompImageHDU(data, compression_type=ctype, uint=name == "u16", **args)
                fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path, overwrite=True)
            except Exception as e:  # a combination astropy refuses
                print("# %s: %s" % (path, e), file=sys.stderr)
                continue
            print(path)
