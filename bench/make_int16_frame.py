#!/usr/bin/env python3
"""make_int16_frame.py OUT.fits [N] — an N×N (4096) BITPIX 16 frame of sky 1000 ADU with
Gaussian noise of 8 ADU, written with NumPy alone (the GPU machine has no astropy), for the
tile decoders' speed figures (fpack then compresses it: RICE_1 ~6 bits a pixel)."""
import sys

import numpy as np


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    rng = np.random.default_rng(1)
    a = np.rint(1000 + rng.normal(0, 8, (n, n))).astype(">i2")
    cards = ["SIMPLE  =                    T", "BITPIX  =                   16",
             "NAXIS   =                    2", f"NAXIS1  = {n:20d}", f"NAXIS2  = {n:20d}",
             "END"]
    head = "".join(c.ljust(80) for c in cards)
    head = head.ljust((len(head) + 2879) // 2880 * 2880)
    data = a.tobytes()
    with open(out, "wb") as f:
        f.write(head.encode("ascii"))
        f.write(data)
        f.write(b"\0" * ((-len(data)) % 2880))
    return 0


if __name__ == "__main__":
    sys.exit(main())
