# batch_frames.sh — sourced by test_batch.sh and test_batch_mpi.sh: in directory $T, 12
# small simulated frames for tide batch (10 to reduce, 2 science frames differenced against
# their templates), two bad entries on purpose (a missing file, a file that is not FITS), the
# manifests (good.jsonl, all.jsonl with the bad entries, list.txt, array.json), and the
# reference outputs of `tide reduce` and `tide diff --template` in $T/ref. Needs $TIDE.
# Every tide runs with one thread: a catalog's DEVICE card says how many ('CPU (1 threads)'),
# and the MPI ranks share the cores out.
export SOURCE_DATE_EPOCH=1700000000 # PROCDATE: byte-identical catalogs
unset TIDE_STORE
make_batch_frames() {
    local k
    for k in $(seq 1 10); do
        "$TIDE" sim -o "$T/f$k.fits" --seed $((40 + k)) --width 320 --height 288 --nstars 200 \
            --ngal 5 --threads 1 >/dev/null || return 1
    done
    for k in 1 2; do
        "$TIDE" sim -o "$T/s$k.fits" --epoch2 "$T/t$k.fits" --seed $((60 + k)) --width 448 \
            --height 448 --nstars 300 --ngal 10 --threads 1 >/dev/null || return 1
    done
    echo "this is not a FITS file" >"$T/junk.fits"
    {
        echo "# the frames of test_batch"
        for k in $(seq 1 10); do echo "{\"path\": \"$T/f$k.fits\", \"id\": \"f$k\"}"; done
        echo ""
        for k in 1 2; do
            echo "{\"path\": \"$T/s$k.fits\", \"job\": \"diff\", \"template\": \"$T/t$k.fits\"}"
        done
    } >"$T/good.jsonl"
    { cat "$T/good.jsonl"
      echo "{\"path\": \"$T/missing.fits\", \"id\": \"missing\"}"
      echo "{\"path\": \"$T/junk.fits\", \"id\": \"junk\"}"; } >"$T/all.jsonl"
    mkdir -p "$T/ref"
    for k in $(seq 1 10); do
        "$TIDE" reduce "$T/f$k.fits" -o "$T/ref/f$k.cat.fits" --backend cpu --threads 1 \
            >/dev/null 2>&1 || return 1
    done
    for k in 1 2; do
        "$TIDE" diff --template "$T/t$k.fits" "$T/s$k.fits" -o "$T/ref" --backend cpu \
            --threads 1 >/dev/null 2>&1 || return 1
    done
}

# same_outputs DIR: every catalog and diff file of DIR is the reference's, byte for byte
same_outputs() {
    local k f bad=0
    for k in $(seq 1 10); do
        cmp -s "$T/ref/f$k.cat.fits" "$1/f$k.cat.fits" || { echo "differs: $1/f$k.cat.fits"; bad=1; }
    done
    for k in 1 2; do
        for f in "$T/ref/s$k"/*; do
            cmp -s "$f" "$1/s$k/$(basename "$f")" || { echo "differs: $1/s$k/$(basename "$f")"; bad=1; }
        done
    done
    return $bad
}
