#!/usr/bin/python3
"""make-seeds.py — writes the seed corpus of every harness into fuzz/corpus/HARNESS/ (Debian's
python3 with numpy and astropy; fpack from libcfitsio-bin for the fpack seeds; the store seeds
need the harness build's seed_store program).

usage: /usr/bin/python3 fuzz/make-seeds.py [BUILD_DIR]   (default build-sanitize)

Small inputs on purpose (a few FITS blocks each; the whole corpus stays well under 1 MB): the
fuzzer mutates bytes, so every structure a reader knows should appear once, small. The seeds are
committed; run this again after a reader learns something new and commit what changed. The
output is deterministic (fixed random seeds, no dates), so a re-run changes nothing else.
"""
import gzip
import io
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import warnings

import numpy as np
from astropy.io import fits
from astropy.utils.exceptions import AstropyUserWarning

warnings.simplefilter("ignore", AstropyUserWarning)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")
rng = np.random.default_rng(22)


def out(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def fits_bytes(hdul):
    b = io.BytesIO()
    # no checksum/date cards: the same bytes on every run
    hdul.writeto(b, output_verify="silentfix")
    return b.getvalue()


def wcs_cards(h, sip=False):
    h["CTYPE1"] = "RA---TAN-SIP" if sip else "RA---TAN"
    h["CTYPE2"] = "DEC--TAN-SIP" if sip else "DEC--TAN"
    h["CRVAL1"], h["CRVAL2"] = 150.1, 2.2
    h["CRPIX1"], h["CRPIX2"] = 8.5, 6.5
    h["CD1_1"], h["CD1_2"], h["CD2_1"], h["CD2_2"] = -7.3e-5, 1e-6, 1e-6, 7.3e-5
    if sip:
        h["A_ORDER"] = h["B_ORDER"] = 2
        h["A_2_0"], h["A_0_2"], h["B_1_1"] = 1e-6, -2e-6, 3e-6
        h["AP_ORDER"] = h["BP_ORDER"] = 2
        h["AP_2_0"], h["BP_0_2"] = -1e-6, 2e-6


def image_seeds():
    """Plain images: every BITPIX, scaling, BLANK, extensions, tide's own MASK/VAR layout."""
    ny, nx = 6, 8
    base = (np.arange(ny * nx).reshape(ny, nx) * 7 % 50).astype(np.float64)
    seeds = {}
    for bp, dt in ((8, np.uint8), (16, np.int16), (32, np.int32), (64, np.int64),
                   (-32, np.float32), (-64, np.float64)):
        a = base.astype(dt)
        h = fits.PrimaryHDU(a)
        h.header["EXPTIME"] = 30.0
        h.header["FILTER"] = "r"
        if bp == 16:
            h.header["BLANK"] = -32768
            a[2, 3] = -32768
            h.data = a
        if bp == -32:
            h.data[1, 1] = np.nan
        seeds[f"bitpix{bp}.fits"] = fits_bytes(fits.HDUList([h]))
    # scaled and unsigned integers (BSCALE/BZERO)
    h = fits.PrimaryHDU(base.astype(np.int16))
    h.header["BSCALE"], h.header["BZERO"] = 0.5, 100.0
    seeds["scaled16.fits"] = fits_bytes(fits.HDUList([h]))
    h = fits.PrimaryHDU((base * 1000).astype(np.uint16))  # astropy writes BZERO = 32768
    seeds["uint16.fits"] = fits_bytes(fits.HDUList([h]))
    # empty primary + named image extension, with a WCS
    e = fits.ImageHDU(base.astype(np.float32), name="SCI")
    wcs_cards(e.header)
    seeds["mef_sci.fits"] = fits_bytes(fits.HDUList([fits.PrimaryHDU(), e]))
    # NAXIS3 = 1
    seeds["cube1.fits"] = fits_bytes(fits.HDUList([fits.PrimaryHDU(base[None].astype(np.float32))]))
    # the layout tide_fits_write_image writes: float primary, MASK (uint16) and VAR extensions
    p = fits.PrimaryHDU(base.astype(np.float32))
    p.header["TIDEMASK"] = "MASK"
    p.header["TIDEVAR"] = "VAR"
    m = fits.ImageHDU((base % 3).astype(np.uint16), name="MASK")
    m.header["BIT0"] = "NODATA"
    v = fits.ImageHDU(np.ones((ny, nx), np.float32), name="VAR")
    seeds["tide_mask_var.fits"] = fits_bytes(fits.HDUList([p, m, v]))
    # gzip-compressed file (cfitsio reads it by its magic bytes)
    seeds["gzip_file.fits.gz"] = gzip.compress(seeds["bitpix-32.fits"], mtime=0)
    return seeds


def compressed_seeds():
    """Tile-compressed images of every algorithm (astropy), and fpack's output where present."""
    ny, nx = 16, 16
    ints = (rng.poisson(100, (ny, nx))).astype(np.int16)
    flt = rng.normal(100, 5, (ny, nx)).astype(np.float32)
    seeds = {}
    cases = (("rice_i16", ints, "RICE_1", {}),
             ("rice_f32_dither", flt, "RICE_1", {"quantize_level": 16.0}),
             ("gzip1_f32", flt, "GZIP_1", {"quantize_level": 0.0}),
             ("gzip2_i32", ints.astype(np.int32), "GZIP_2", {}),
             ("hcompress_i16", ints, "HCOMPRESS_1", {}),
             ("plio_i16", np.abs(ints), "PLIO_1", {}),
             ("rice_blank_i32", np.where(ints > 110, -999, ints).astype(np.int32), "RICE_1", {}))
    for name, data, algo, kw in cases:
        c = fits.CompImageHDU(data, compression_type=algo, tile_size=(8, 8), **kw)
        if name == "rice_blank_i32":
            c.header["BLANK"] = -999
        seeds[name + ".fits"] = fits_bytes(fits.HDUList([fits.PrimaryHDU(), c]))
    fpack = shutil.which("fpack")
    if fpack:
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "img.fits")
            fits.PrimaryHDU(ints).writeto(src)
            for flag in ("-r", "-g", "-h", "-p", "-d"):  # -d: NOCOMPRESS (tide decodes it)
                dst = os.path.join(d, "img.fits.fz")
                if os.path.exists(dst):
                    os.remove(dst)
                if subprocess.run([fpack, flag, "-t", "8,8", src],
                                  capture_output=True).returncode == 0:
                    with open(dst, "rb") as f:
                        seeds[f"fpack{flag}.fits.fz"] = f.read()
    return seeds


def header_seeds(images, compressed):
    """What `tide info` meets: WCS (TAN, TAN-SIP), MEF, tables only, compressed."""
    seeds = {}
    a = np.zeros((6, 8), np.float32)
    for sip in (False, True):
        h = fits.PrimaryHDU(a)
        wcs_cards(h.header, sip)
        for k, v in (("OBJECT", "M 31"), ("EXPTIME", 30.0), ("GAIN", 1.5), ("RDNOISE", 4.0),
                     ("SATURATE", 60000.0), ("DATE-OBS", "2024-01-02T03:04:05"),
                     ("TELESCOP", "T"), ("INSTRUME", "I")):
            h.header[k] = v
        seeds["wcs_sip.fits" if sip else "wcs_tan.fits"] = fits_bytes(fits.HDUList([h]))
    seeds["tables_only.fits"] = table_seeds()["bintable_refcat.fits"]
    for k in ("mef_sci.fits", "tide_mask_var.fits"):
        seeds[k] = images[k]
    seeds["rice_i16.fits"] = compressed["rice_i16.fits"]
    return seeds


def table_seeds():
    """Binary and ASCII tables: refcat columns of several types, text angles, odd types."""
    seeds = {}
    n = 4
    ra = 150.0 + 0.01 * np.arange(n)
    dec = 2.2 + 0.01 * np.arange(n)
    cols = [fits.Column("RA", "D", array=ra, unit="deg"),
            fits.Column("DEC", "D", array=dec, unit="deg"),
            fits.Column("MAG", "E", array=np.linspace(14, 17, n)),
            fits.Column("MAGERR", "E", array=np.full(n, 0.02)),
            fits.Column("COLOR", "E", array=np.array([0.5, np.nan, 0.7, 0.8])),
            fits.Column("ID", "K", array=np.arange(n)),
            fits.Column("N", "J", array=np.arange(n, dtype=np.int32)),
            fits.Column("S", "I", array=np.arange(n, dtype=np.int16)),
            fits.Column("B", "B", array=np.arange(n, dtype=np.uint8)),
            fits.Column("OK", "L", array=np.array([True, False, True, True])),
            fits.Column("NAME", "8A", array=np.array(["a", "bb", "ccc", "d"])),
            fits.Column("V", "3D", array=np.ones((n, 3)))]
    t = fits.BinTableHDU.from_columns(cols, name="REFCAT")
    seeds["bintable_refcat.fits"] = fits_bytes(fits.HDUList([fits.PrimaryHDU(), t]))
    # sexagesimal text positions
    cols = [fits.Column("RA", "12A", array=np.array(["10:00:00.0", "10:00:02.4", "10 00 04.8",
                                                      "10:00:07.2"])),
            fits.Column("DEC", "12A", array=np.array(["+02:12:00", "+02:12:36", "-02 13 12",
                                                       "+02:13:48.5"])),
            fits.Column("MAG", "D", array=np.linspace(14, 17, n))]
    t = fits.BinTableHDU.from_columns(cols)
    seeds["bintable_sexagesimal.fits"] = fits_bytes(fits.HDUList([fits.PrimaryHDU(), t]))
    # scaled integer column (TSCAL): astropy will not write one from raw integers, so the
    # card goes in before the table header's END (its block has room)
    t = fits.BinTableHDU.from_columns([fits.Column("RA", "E", array=ra.astype(np.float32)),
                                       fits.Column("DEC", "E", array=dec.astype(np.float32)),
                                       fits.Column("MAG", "I", array=np.array([1400, 1500, 1600,
                                                                                1700], np.int16))])
    b = fits_bytes(fits.HDUList([fits.PrimaryHDU(), t]))
    end = b.index(b"END" + b" " * 77, 2880)
    card = b"TSCAL3  =                 0.01".ljust(80)
    b = b[:end] + card + b[end:end + 80] + b[end + 160:]
    seeds["bintable_scaled.fits"] = b
    # ASCII table
    t = fits.TableHDU.from_columns([fits.Column("RA", "F12.6", array=ra),
                                    fits.Column("DEC", "F12.6", array=dec),
                                    fits.Column("MAG", "F8.3", array=np.linspace(14, 17, n))])
    seeds["ascii_table.fits"] = fits_bytes(fits.HDUList([fits.PrimaryHDU(), t]))
    # no rows
    t = fits.BinTableHDU.from_columns([fits.Column("RA", "D", array=np.zeros(0)),
                                       fits.Column("DEC", "D", array=np.zeros(0))])
    seeds["bintable_empty.fits"] = fits_bytes(fits.HDUList([fits.PrimaryHDU(), t]))
    return seeds


def csv_seeds():
    return {
        "plain.csv": b"ra,dec,mag,magerr,color\n150.0,2.2,14.5,0.02,0.6\n150.01,2.21,15.1,,nan\n",
        "sexagesimal.csv": b"RA,DEC,MAG\n10:00:00.0,+02:12:00,14.5\n\"10 00 02.4\",-02:12:36.5,15\n",
        "quoted.csv": b"\"ra\",\"dec\",\"mag\",\"name, with comma\"\r\n150,2.2,14,\"a \"\"q\"\" b\"\r\n",
        "renamed.csv": b"RAJ2000,DEJ2000,Gmag\n150.0,2.2,12.0\n",
        "no_trailing_newline.csv": b"ra,dec,mag\n150,2.2,14",
        "header_only.csv": b"ra,dec,mag\n",
    }


def config_seeds():
    seeds = {}
    with open(os.path.join(ROOT, "config", "default.json"), "rb") as f:
        seeds["default.json"] = f.read()
    inst = os.path.join(ROOT, "config", "instruments")
    for name in sorted(os.listdir(inst)):
        with open(os.path.join(inst, name), "rb") as f:
            seeds[name] = f.read()
    seeds["override.txt"] = b"detect.thresh=4.5"
    seeds["override_array.txt"] = b"phot.apertures=[3, 5, 8]"
    seeds["nested_null.json"] = b'{"detect": {"thresh": null}, "phot": {"apertures": [1e3, 2]}}'
    return seeds


def store_seeds(build):
    prog = os.path.join(build, "fuzz", "seed_store")
    if not os.access(prog, os.X_OK):
        print(f"make-seeds: {prog} not built: store seeds left as they are", file=sys.stderr)
        return {}
    seeds = {}
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
        subprocess.run([prog, d], check=True, env=env)
        for name in sorted(os.listdir(d)):
            if not name.endswith(".db"):  # the -wal/-shm files are checkpointed at close
                continue
            # tide's 64 KiB pages make a 768 KiB file of a dozen pages; the same content in
            # 512-byte pages is ~20 KiB (rollback journal: VACUUM cannot change a WAL page size)
            p = os.path.join(d, name)
            con = sqlite3.connect(p)
            con.execute("PRAGMA journal_mode=DELETE")
            con.execute("PRAGMA page_size=512")
            con.execute("VACUUM")
            con.close()
            with open(p, "rb") as f:
                seeds[name] = f.read()
    return seeds


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build-sanitize")
    images = image_seeds()
    compressed = compressed_seeds()
    sets = {"fuzz_fits_image": images, "fuzz_fits_compressed": compressed,
            "fuzz_fits_header": header_seeds(images, compressed), "fuzz_fits_table": table_seeds(),
            "fuzz_refcat_csv": csv_seeds(), "fuzz_config": config_seeds(),
            "fuzz_store": store_seeds(build)}
    # the image reader also meets compressed files, and the table reader a few images
    images.update({k: v for k, v in compressed.items() if k.startswith(("rice_i16", "gzip1"))})
    sets["fuzz_fits_table"]["image_not_table.fits"] = images["bitpix16.fits"]
    total = 0
    for harness, seeds in sets.items():
        for name, data in seeds.items():
            out(harness, name, data)
            total += len(data)
    print(f"make-seeds: {sum(map(len, sets.values()))} seeds, {total} bytes in {CORPUS}")


if __name__ == "__main__":
    main()
