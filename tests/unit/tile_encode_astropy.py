"""Read a file tide tile-compressed (test_tile_encode.c) and fpack's file of the same image
with astropy: the pixels must be equal bit for bit (NaN where NaN). astropy 5.2 does not
apply a ZBLANK keyword to quantized floats, so its nulls are not NaN; both files must still
read alike. Usage: tile_encode_astropy.py TIDE_FILE FPACK_FILE; exit 0 when they agree."""
import sys

import numpy as np
from astropy.io import fits


def pixels(path):
    with fits.open(path) as f:
        return f[1].data.astype(np.float32)


got, ref = pixels(sys.argv[1]), pixels(sys.argv[2])
nan = np.isnan(ref)
same = got.shape == ref.shape
if same:
    bad = (np.isnan(got) != nan) | (~nan & (got.view(np.uint32) != ref.view(np.uint32)))
    same = not bad.any()
if not same:
    print("astropy reads %s and %s differently" % (sys.argv[1], sys.argv[2]))
    sys.exit(1)
