#!/bin/bash
# tide diff --store (issue 18 item 1): a simulated pair (tide sim --epoch2) differenced into an
# SQLite store and into a real PostgreSQL + Q3C one (tests/pg_cluster.sh): the candidates rows
# equal candidates.fits row for row and column for column (read back with sqlite3 and psql,
# compared in astropy), the diffs row holds both checksums (sha256sum) and the grid, a
# difference cutout equals difference.fits around its candidate within its quantisation, a
# re-run of the pair gives the same counts (rows replaced), a second epoch of the same field
# makes objects of 2 detections with their light curve (tide query object), tide query
# candidates --cone equals the rows in the cone, a store that fails leaves no output, the files
# are those of a run without a store, and the C suite test_store_candidates runs against the
# server. The PostgreSQL part is skipped without the server binaries.
set -u
SRC=${TIDE_SOURCE_DIR:?}
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-python3}
T=$(mktemp -d /tmp/tide-diffstore.XXXXXX)
PGDIR=
trap '[ -n "$PGDIR" ] && bash "$SRC/tests/pg_cluster.sh" stop "$PGDIR"; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

sim="--width 384 --height 384 --nstars 150 --ngal 5 --seed 7 --ntransient 4"
"$TIDE" sim -o "$T/a.fits" --epoch2 "$T/b.fits" $sim >/dev/null 2>&1 || { echo "FAIL: sim"; exit 1; }
"$TIDE" sim -o "$T/a2.fits" --epoch2 "$T/c.fits" $sim --e2-dt 49 >/dev/null 2>&1 ||
    { echo "FAIL: sim 2"; exit 1; }
cmp -s "$T/a.fits" "$T/a2.fits" || bad "the two simulations do not share their first epoch"

# the rows of one store, as CSV with a header: $1 sqlite|pg, $2 store, $3 SQL
rows() {
    if [ "$1" = sqlite ]; then
        sqlite3 -header -csv "$2" "$3"
    else
        psql -X -q -A -F, -P footer=off -c "$3"
    fi
}

# every check on one store: $1 sqlite|pg, $2 store URI, $3 database for rows()
check_store() {
    local kind=$1 uri=$2 db=$3 out=$T/$1
    mkdir -p "$out"
    "$TIDE" diff "$T/b.fits" "$T/a.fits" -o "$out/d1" --backend cpu --store "$uri" \
        --json >"$out/d1.json" 2>"$out/d1.err" || { bad "$kind: tide diff --store: $(cat "$out/d1.err")"; return; }
    local id1
    id1=$(sed -n 's/.*"diff_id": \([0-9]*\).*/\1/p' "$out/d1.json")
    [ -n "$id1" ] || { bad "$kind: no diff_id in $(cat "$out/d1.json")"; return; }
    rows "$kind" "$db" "SELECT * FROM candidates WHERE diff_id = $id1 ORDER BY seq" >"$out/c1.csv"
    rows "$kind" "$db" "SELECT sci_checksum, tmpl_checksum, naxis1, naxis2, ncand, mjd_sci, \
        ra_center, kernel_sum, noise, length(grid_header) AS hl FROM diffs WHERE id = $id1" \
        >"$out/diff.csv"
    rows "$kind" "$db" "SELECT c.seq, c.\"X_IMAGE\", c.\"Y_IMAGE\", u.w, u.zero, u.scale \
        FROM cutouts u JOIN candidates c ON c.id = u.candidate_id WHERE c.diff_id = $id1 AND \
        u.kind = 'diff' ORDER BY c.seq LIMIT 1" >"$out/cut.csv"
    local cid
    cid=$(rows "$kind" "$db" "SELECT c.id FROM cutouts u JOIN candidates c ON c.id = \
        u.candidate_id WHERE c.diff_id = $id1 AND u.kind = 'diff' ORDER BY c.seq LIMIT 1" | tail -1)
    if [ "$kind" = sqlite ]; then
        sqlite3 "$db" "SELECT hex(data) FROM cutouts WHERE candidate_id = $cid AND kind = 'diff'" \
            >"$out/cut.hex"
    else
        psql -X -q -A -t -c "SELECT encode(data, 'hex') FROM cutouts WHERE candidate_id = $cid \
            AND kind = 'diff'" >"$out/cut.hex"
    fi
    sha256sum "$T/b.fits" "$T/a.fits" | cut -d' ' -f1 >"$out/sums"
    "$PY" - "$out" "$out/d1" <<'PYEOF' || bad "$kind: the stored rows differ from the outputs"
import csv, math, sys
import numpy as np
from astropy.io import fits
out, d = sys.argv[1], sys.argv[2]
t = fits.getdata(d + "/candidates.fits", 1)
rows = list(csv.DictReader(open(out + "/c1.csv")))
bad = 0
if len(rows) != len(t) or len(t) == 0:
    print("rows: store %d, candidates.fits %d" % (len(rows), len(t))); sys.exit(1)
for name in t.columns.names:
    for i, r in enumerate(rows):
        v, s = float(t[name][i]), r.get(name)
        if s is None:
            print("no column", name); sys.exit(1)
        if s == "":
            ok = math.isnan(v)
        else:
            w = float(s)
            ok = w == v or abs(w - v) <= 1e-14 * abs(v)  # sqlite3 prints 15 digits
        if not ok:
            bad += 1
            if bad < 5:
                print("row %d %s: store %r, file %r" % (i + 1, name, s, v))
    if bad:
        break
for i, r in enumerate(rows):
    if int(r["seq"]) != i + 1 or r["score"] != "" or r["object_id"] == "":
        bad += 1
dr = list(csv.DictReader(open(out + "/diff.csv")))[0]
sums = open(out + "/sums").read().split()
h = fits.getheader(d + "/difference.fits")
if [dr["sci_checksum"], dr["tmpl_checksum"]] != sums:
    print("checksums", dr["sci_checksum"], dr["tmpl_checksum"], sums); bad += 1
if int(dr["naxis1"]) != h["NAXIS1"] or int(dr["ncand"]) != len(t) or int(dr["hl"]) < 800:
    print("diffs row", dr); bad += 1
if not (0 < float(dr["noise"]) < 1e4 and abs(float(dr["kernel_sum"]) - h["KSUM"]) < 1e-6):
    print("diffs row", dr); bad += 1
# the difference cutout of the first candidate against difference.fits
c = list(csv.DictReader(open(out + "/cut.csv")))[0]
q = np.frombuffer(bytes.fromhex(open(out + "/cut.hex").read().strip()), dtype="<i2")
w = int(c["w"])
img = fits.getdata(d + "/difference.fits", 0).astype(np.float64)
x0, y0 = int(round(float(c["X_IMAGE"]) - 1)), int(round(float(c["Y_IMAGE"]) - 1))
ref = np.full((w, w), np.nan)
for v in range(w):
    for u in range(w):
        x, y = x0 - w // 2 + u, y0 - w // 2 + v
        if 0 <= x < img.shape[1] and 0 <= y < img.shape[0]:
            ref[v, u] = img[y, x]
got = np.where(q == -32768, np.nan, float(c["zero"]) + float(c["scale"]) * q).reshape(w, w)
same_nan = np.array_equal(np.isnan(got), np.isnan(ref))
err = np.nanmax(np.abs(got - ref))
if q.size != w * w or not same_nan or not err <= 0.5 * float(c["scale"]) * 1.01 + 1e-3:
    print("cutout: %d values, NaN equal %s, worst %g (scale %s)" % (q.size, same_nan, err, c["scale"]))
    bad += 1
print("%d candidates, %d columns, cutout worst %.3g (scale %.3g)" % (len(t), len(t.columns), err, float(c["scale"])))
sys.exit(1 if bad else 0)
PYEOF
    count() { rows "$kind" "$db" "SELECT count(*) AS n FROM $1" | tail -1; }
    local n1 o1 u1
    n1=$(count candidates) o1=$(count objects) u1=$(count cutouts)
    # the same pair again: its rows replaced, the counts unchanged
    "$TIDE" diff "$T/b.fits" "$T/a.fits" -o "$out/d1" --backend cpu --store "$uri" >/dev/null 2>&1 ||
        bad "$kind: re-run failed"
    [ "$(count diffs)" = 1 ] || bad "$kind: after a re-run $(count diffs) diffs"
    [ "$(count candidates)" = "$n1" ] && [ "$(count objects)" = "$o1" ] && [ "$(count cutouts)" = "$u1" ] ||
        bad "$kind: re-run changed the counts ($n1 $o1 $u1 -> $(count candidates) $(count objects) $(count cutouts))"
    # a second epoch of the same field: objects of two detections
    "$TIDE" diff "$T/c.fits" "$T/a.fits" -o "$out/d2" --backend cpu --store "$uri" >/dev/null 2>&1 ||
        bad "$kind: second epoch failed"
    local n2
    n2=$(rows "$kind" "$db" "SELECT count(*) AS n FROM objects WHERE ndet = 2" | tail -1)
    [ "${n2:-0}" -ge 2 ] || bad "$kind: $n2 objects of 2 detections"
    local oid
    oid=$(rows "$kind" "$db" "SELECT min(id) AS i FROM objects WHERE ndet = 2" | tail -1)
    "$TIDE" query object "$oid" --store "$uri" --json >"$out/obj.json" 2>&1 || bad "$kind: query object"
    "$PY" -c "
import json, sys
o = json.load(open('$out/obj.json'))
d = o['detections']
sys.exit(0 if o['ndet'] == 2 and len(d) == 2 and d[0]['MJD'] < d[1]['MJD'] and
         abs(d[1]['MJD'] - d[0]['MJD'] - 48 / 24) < 1e-6 else 1)" || bad "$kind: light curve $(cat "$out/obj.json")"
    # a cone through tide query equals the rows in it
    local ra dec
    read -r ra dec < <(rows "$kind" "$db" "SELECT ra, dec FROM objects WHERE id = $oid" | tail -1 | tr , ' ')
    local nq ns
    nq=$("$TIDE" query candidates --store "$uri" --cone "$ra" "$dec" 3s --csv | tail -n +2 | wc -l)
    ns=$(rows "$kind" "$db" "SELECT count(*) AS n FROM candidates WHERE object_id = $oid" | tail -1)
    [ "$nq" = "$ns" ] && [ "$nq" -ge 2 ] || bad "$kind: cone of 3\" found $nq candidates, object has $ns"
    echo "$kind: $n1 candidates, $o1 objects, $u1 cutouts; $n2 objects of 2 detections"
    counts_of_kind="$n1 $o1 $u1 $n2"
}

# a store that cannot be written: nothing is left behind (the files are staged, then the
# store's transaction, then the rename)
"$TIDE" diff "$T/b.fits" "$T/a.fits" -o "$T/nostore" --backend cpu --store "$T/no/such/dir/s.db" \
    >/dev/null 2>"$T/nostore.err"
rc=$?
[ $rc = 1 ] || bad "a diff into an unwritable store exited $rc"
[ ! -e "$T/nostore" ] || bad "a diff whose store failed left $T/nostore"
ls -a "$T" | grep -q '^\.tide-' && bad "a diff whose store failed left its staged files"
grep -q "s.db" "$T/nostore.err" || bad "the store's failure does not name it: $(cat "$T/nostore.err")"

check_store sqlite "sqlite:$T/s.db" "$T/s.db"
sq_counts=$counts_of_kind
# the store changes none of the files
"$TIDE" diff "$T/b.fits" "$T/a.fits" -o "$T/plain" --backend cpu >/dev/null 2>&1 || bad "plain diff"
for f in "$T"/plain/*; do
    cmp -s "$f" "$T/sqlite/d1/$(basename "$f")" || bad "$(basename "$f") differs with --store"
done

env_lines=$(bash "$SRC/tests/pg_cluster.sh" start)
rc=$?
if [ $rc = 77 ]; then
    echo "SKIP (PostgreSQL part): no PostgreSQL server binaries"
elif [ $rc != 0 ]; then
    bad "could not start a PostgreSQL cluster"
else
    eval "$env_lines"
    PGDIR=$TIDE_PG_DIR
    check_store pg "pg:" ""
    [ "$counts_of_kind" = "$sq_counts" ] || bad "SQLite ($sq_counts) and PostgreSQL ($counts_of_kind) differ"
    # the C suite against the same server (its own tables' rows are truncated first)
    prog=./test_store_candidates
    [ -x "$prog" ] || prog=$(dirname "$TIDE")/tests/test_store_candidates
    TIDE_TEST_PG="pg:" "$prog" >"$T/suite.log" 2>&1 || bad "test_store_candidates: $(tail -5 "$T/suite.log")"
    grep "differences between SQLite and PostgreSQL" "$T/suite.log"
fi
[ $fail = 0 ] && echo "ok"
exit $fail
