#!/usr/bin/env python3
"""store_dump.py STORE.db — a canonical text dump of a tide SQLite store, for comparing the
stores of two runs that wrote the same frames in another order (tide batch in one process and
under mpirun): every table's rows with the run-dependent columns left out (images.id and
processed, sources.SRC_ID, source_cells' first/last source ids) and image ids replaced by the
image's checksum, sorted. Prints the dump on stdout."""
import hashlib
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
key = {i: c for i, c in db.execute("SELECT id, checksum FROM images")}
cols = [r[1] for r in db.execute("PRAGMA table_info(images)")]
keep = [c for c in cols if c not in ("id", "processed")]
out = []
for row in db.execute("SELECT %s FROM images" % ", ".join(keep)):
    out.append("image " + repr(dict(zip(keep, row))))
for img, seq, cell, ra, dec, data in db.execute(
        'SELECT IMAGE_ID, SEQ, CELL, "ALPHA_J2000", "DELTA_J2000", DATA FROM sources'):
    digest = hashlib.sha256(data or b"").hexdigest()
    out.append("source %s %d %d %r %r %s" % (key[img], seq, cell, ra, dec, digest))
for cell, img in db.execute("SELECT cell, image_id FROM source_cells"):
    out.append("cell %d %s" % (cell, key[img]))
for img, layout in db.execute("SELECT image_id, layout FROM source_layouts"):
    out.append("layout %s %s" % (key[img], layout.replace("\n", " ")))
for row in db.execute("SELECT name, is_int FROM source_columns"):
    out.append("column %r" % (row,))
for row in db.execute("SELECT key, value FROM tide_meta"):
    out.append("meta %r" % (row,))
print("\n".join(sorted(out)))
