#!/bin/bash
# tide review (issue 18 items 3-5) through its JSON API with curl: a simulated pair differenced
# into an SQLite store (scored by a model trained on simulated pairs when libxgboost is there,
# else by a stand-in score written with sqlite3), two reviewers whose tokens the store keeps
# only as SHA-256 (sha256sum), 401 without or with a bad token or cookie, 403 for a cookie
# write without the CSRF token or with another, labels saved with reviewer and time (read
# back with sqlite3), the API's queues equal `tide review queue`, a disagreement between the
# reviewers in the disagreement queue, stamps as PNG (no request value reaches a path),
# export as CSV and FITS equal to the labels table (astropy), `tide rb train --store` on the
# features tide diff --store kept (equal to those --labels computes on the difference); then
# the C suite test_store_review and the same API on a real PostgreSQL (tests/pg_cluster.sh;
# skipped without the server binaries).
set -u
SRC=${TIDE_SOURCE_DIR:?}
TIDE=${TIDE_BIN:?}
PY=${TIDE_PYTHON:-python3}
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
T=$(mktemp -d /tmp/tide-review.XXXXXX)
PGDIR=
SRV=
trap '[ -n "$SRV" ] && kill "$SRV" 2>/dev/null; [ -n "$PGDIR" ] && bash "$SRC/tests/pg_cluster.sh" stop "$PGDIR"; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$TIDE" sim --seed 777 --width 512 --height 512 --nstars 180 --ngal 30 --ntransient 20 \
    --nvariable 20 --nmoving 2 --nsatellite 2 -o "$T/e1.fits" --epoch2 "$T/e2.fits" >/dev/null ||
    { echo "FAIL: sim"; exit 1; }
xgb=0
if "$TIDE" rb train --sim 5 --size 512 --seed 1 --rounds 30 -o "$T/m.json" >/dev/null 2>"$T/train.err"; then
    xgb=1
    model="--rb-model $T/m.json"
else
    grep -q libxgboost "$T/train.err" || bad "rb train: $(tail -1 "$T/train.err")"
    model=
fi

# start the server on store $1; sets SRV, URL
serve() {
    "$TIDE" review serve --store "$1" --listen 127.0.0.1:0 --seed 3 >"$T/serve.out" 2>&1 &
    SRV=$!
    for _ in $(seq 50); do grep -q "on port" "$T/serve.out" && break; sleep 0.1; done
    URL=http://127.0.0.1:$(sed -n 's/.*on port \([0-9]*\).*/\1/p' "$T/serve.out")
}
stop() { kill "$SRV"; wait "$SRV" 2>/dev/null; SRV=; }
# status code of a request: curl arguments
code() { curl -s -o "$T/body" -w "%{http_code}" "$@"; }

# every check on one store: $1 sqlite|pg, $2 URI, $3 SQL runner (reads SQL on stdin)
check_store() {
    local kind=$1 uri=$2 sql=$3
    "$TIDE" diff "$T/e2.fits" "$T/e1.fits" -o "$T/d-$kind" $model --store "$uri" \
        --log-level error >/dev/null || { bad "$kind: tide diff --store"; return; }
    [ $xgb = 1 ] || echo "UPDATE candidates SET score = ((id * 37) % 100) / 100.0;" | $sql
    local ta tb
    ta=$("$TIDE" review add-reviewer --store "$uri" alice 2>/dev/null) || bad "$kind: add alice"
    tb=$("$TIDE" review add-reviewer --store "$uri" bob 2>/dev/null) || bad "$kind: add bob"
    "$TIDE" review add-reviewer --store "$uri" alice >/dev/null 2>&1 && bad "$kind: a second alice"
    [ ${#ta} = 64 ] || bad "$kind: token '$ta'"
    local ha
    ha=$(echo "SELECT token_hash FROM reviewers WHERE name = 'alice';" | $sql)
    [ "$ha" = "$(printf %s "$ta" | sha256sum | cut -d' ' -f1)" ] || bad "$kind: token_hash $ha"
    echo "SELECT * FROM reviewers;" | $sql | grep -q "$ta" && bad "$kind: the token is stored"

    serve "$uri"
    local A="Authorization: Bearer $ta" B="Authorization: Bearer $tb" wrong
    # alice's token with its last digit changed
    wrong=${ta%?}$([ "${ta: -1}" = 0 ] && echo 1 || echo 0)
    # without a valid token: 401 and nothing else
    for u in /api/queue "/api/queue?by=audit" /api/candidates/1 /api/candidates/1/stamp/diff.png \
        /api/summary /api/me; do
        [ "$(code "$URL$u")" = 401 ] || bad "$kind: $u without a token: not 401"
        [ "$(code -H "Authorization: Bearer $wrong" "$URL$u")" = 401 ] || bad "$kind: $u bad token"
        [ "$(code -b "tide_session=$ta" "$URL$u")" = 401 ] || bad "$kind: $u bad cookie"
    done
    grep -q '"ids"\|"score"' "$T/body" && bad "$kind: a 401 says something"
    [ "$(code -X POST -d '{"label":"real"}' "$URL/api/candidates/1/label")" = 401 ] ||
        bad "$kind: a label without a token"
    local J="Content-Type: application/json"
    [ "$(code -H "$J" -X POST -d '{"token":"nope"}' "$URL/api/login")" = 401 ] || bad "$kind: bad login"
    [ "$(code -X POST -d "{\"token\":\"$ta\"}" "$URL/api/login")" = 415 ] ||
        bad "$kind: a login that is not JSON (a cross-site form)"
    # the queues: the API's equal the command's
    for q in uncertainty disagreement audit; do
        curl -s -H "$A" "$URL/api/queue?by=$q&limit=30" >"$T/q-api.json"
        "$TIDE" review queue --store "$uri" --by $q --limit 30 --seed 3 --reviewer alice \
            | cut -d' ' -f1 >"$T/q-cli.txt"
        "$PY" -c "import json,sys; print('\n'.join(map(str, json.load(open(sys.argv[1]))['ids'])))" \
            "$T/q-api.json" | grep . >"$T/q-api.txt"
        cmp -s "$T/q-api.txt" <(grep . "$T/q-cli.txt") || bad "$kind: queue $q: API and CLI differ"
    done
    [ "$(wc -l <"$T/q-cli.txt")" -ge 20 ] || bad "$kind: fewer than 20 candidates in the audit queue"
    [ "$(code -H "$A" "$URL/api/queue?by=nonsense")" = 400 ] || bad "$kind: a bad queue name"
    # a candidate, its stamps
    local c1
    c1=$(head -1 "$T/q-api.txt")
    [ "$(code -H "$A" "$URL/api/candidates/$c1")" = 200 ] || bad "$kind: candidate $c1"
    "$PY" - "$T/body" "$(echo "SELECT score FROM candidates WHERE id = $c1;" | $sql)" <<'PYEOF' || bad "$kind: candidate JSON"
import json, sys
c = json.load(open(sys.argv[1]))
assert abs(c["score"] - float(sys.argv[2])) < 1e-9, (c["score"], sys.argv[2])
assert set(c["stamps"]) >= {"science", "template", "diff"}, c["stamps"]
assert "SNR" in c["fit"] and "X_IMAGE" in c["fit"] and c["light_curve"], c
PYEOF
    for k in science template diff residual; do
        [ "$(code -H "$A" "$URL/api/candidates/$c1/stamp/$k.png")" = 200 ] || bad "$kind: stamp $k"
        head -c 8 "$T/body" | od -An -tx1 | grep -q "89 50 4e 47" || bad "$kind: stamp $k is no PNG"
    done
    for u in "stamp/..%2F..%2Fetc%2Fpasswd" "stamp/../../../etc/passwd" "stamp/diff" "stamp/x.png" \
        "../1"; do
        [ "$(code --path-as-is -H "$A" "$URL/api/candidates/$c1/$u")" = 404 ] || bad "$kind: $u not 404"
    done
    [ "$(code -H "$A" "$URL/api/candidates/1%20OR%201=1")" = 404 ] || bad "$kind: a bad id"
    # bearer writes; bad labels refused
    [ "$(code -H "$A" -X POST -d '{"label":"real","tags":"x'"'"'); DROP TABLE labels; --"}' \
        "$URL/api/candidates/$c1/label")" = 200 ] || bad "$kind: a bearer label"
    [ "$(code -H "$A" -X POST -d '{"label":"maybe"}' "$URL/api/candidates/$c1/label")" = 400 ] ||
        bad "$kind: a bad label"
    [ "$(code -H "$A" -X POST -d 'not json' "$URL/api/candidates/$c1/label")" = 400 ] ||
        bad "$kind: a bad body"
    [ "$(code -H "$A" -X POST -d '{"label":"real"}' "$URL/api/candidates/999999/label")" = 404 ] ||
        bad "$kind: a missing candidate"
    # the cookie session: CSRF needed on writes
    [ "$(code -c "$T/jar" -H "$J" -X POST -d "{\"token\":\"$tb\"}" "$URL/api/login")" = 200 ] || bad "$kind: login"
    local csrf
    csrf=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['csrf'])" "$T/body")
    grep -q "HttpOnly_127.0.0.1" "$T/jar" || bad "$kind: the cookie is not HttpOnly"
    [ "$(code -b "$T/jar" "$URL/api/queue")" = 200 ] || bad "$kind: a cookie read"
    [ "$(code -b "$T/jar" -X POST -d '{"label":"bogus"}' "$URL/api/candidates/$c1/label")" = 403 ] ||
        bad "$kind: a cookie write without CSRF"
    [ "$(code -b "$T/jar" -H "X-CSRF-Token: ${csrf%?}$([ "${csrf: -1}" = 0 ] && echo 1 || echo 0)" -X POST -d '{"label":"bogus"}' \
        "$URL/api/candidates/$c1/label")" = 403 ] || bad "$kind: a cookie write with a bad CSRF"
    [ "$(echo "SELECT count(*) FROM labels WHERE reviewer_id = (SELECT id FROM reviewers WHERE name = 'bob');" | $sql)" = 0 ] ||
        bad "$kind: a refused write was saved"
    [ "$(code -b "$T/jar" -H "X-CSRF-Token: $csrf" -X POST -d '{"label":"bogus","comment":"cr"}' \
        "$URL/api/candidates/$c1/label")" = 200 ] || bad "$kind: a cookie write with CSRF"
    # labels as saved: reviewer, value, tags verbatim, time
    echo "SELECT r.name, l.label, l.tags, length(l.time) FROM labels l JOIN reviewers r ON r.id = l.reviewer_id WHERE candidate_id = $c1 ORDER BY r.name;" | $sql >"$T/labels.txt"
    grep -q "^alice|real|x'); DROP TABLE labels; --|20$" "$T/labels.txt" || bad "$kind: alice's label: $(cat "$T/labels.txt")"
    grep -q "^bob|bogus||20$" "$T/labels.txt" || bad "$kind: bob's label: $(cat "$T/labels.txt")"
    # they disagree: the disagreement queue has it, first
    [ "$(curl -s -H "$B" "$URL/api/queue?by=disagreement" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['ids'][0])")" = "$c1" ] ||
        bad "$kind: the disagreement is not first in its queue"
    "$TIDE" review queue --store "$uri" --by disagreement | grep -q "^$c1 " || bad "$kind: CLI disagreement"
    # summaries
    curl -s -H "$A" "$URL/api/summary" >"$T/sum.json"
    "$PY" -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['labels']==1 and s['pairs_with_others']==1 and s['agreement_with_others']==0, s" "$T/sum.json" || bad "$kind: summary"
    # more labels from alice, for the export and the training
    for id in $(echo "SELECT id FROM candidates ORDER BY id;" | $sql); do
        local l=bogus
        [ "$(echo "SELECT CASE WHEN score > 0.5 THEN 1 ELSE 0 END FROM candidates WHERE id = $id;" | $sql)" = 1 ] && l=real
        [ "$id" = "$c1" ] && continue
        curl -s -o /dev/null -H "$A" -X POST -d "{\"label\":\"$l\"}" "$URL/api/candidates/$id/label"
    done
    [ "$(code -b "$T/jar" -H "X-CSRF-Token: $csrf" -X POST "$URL/api/logout")" = 200 ] || bad "$kind: logout"
    [ "$(code -b "$T/jar" "$URL/api/queue")" = 401 ] || bad "$kind: the session outlived its logout"
    stop
    if [ "$kind" = sqlite ]; then
        "$TIDE" review export --store "$uri" --format csv -o "$uri" 2>/dev/null &&
            bad "export over the store itself"
        echo "SELECT count(*) FROM labels;" | $sql >/dev/null || bad "the store was overwritten"
    fi
    # export: CSV and FITS equal the labels table
    "$TIDE" review export --store "$uri" --format csv -o "$T/l-$kind.csv" 2>/dev/null || bad "$kind: export csv"
    "$TIDE" review export --store "$uri" --format fits -o "$T/l-$kind.fits" 2>/dev/null || bad "$kind: export fits"
    echo "SELECT l.id, l.candidate_id, r.name, l.label FROM labels l JOIN reviewers r ON r.id = l.reviewer_id ORDER BY l.id;" | $sql >"$T/l-$kind.db"
    "$PY" - "$T/l-$kind" <<'PYEOF' || bad "$kind: the exports"
import csv, sys
from astropy.table import Table
p = sys.argv[1]
db = [l.rstrip("\n").split("|") for l in open(p + ".db")]
rows = list(csv.DictReader(open(p + ".csv")))
t = Table.read(p + ".fits", hdu="LABELS")
assert len(db) == len(rows) == len(t) >= 40, (len(db), len(rows), len(t))
for d, r, f in zip(db, rows, t):
    assert [r["LABEL_ID"], r["CAND_ID"], r["REVIEWER"], r["LABEL"]] == d, (r, d)
    txt = lambda v: (v.decode() if isinstance(v, bytes) else str(v)).rstrip()
    assert [txt(f[k]) for k in ("LABEL_ID", "CAND_ID", "REVIEWER", "LABEL")] == d, (f, d)
assert any("DROP TABLE" in r["TAGS"] for r in rows)
print(f"{len(rows)} labels exported")
PYEOF
    if [ $xgb = 1 ]; then
        "$TIDE" rb train --store "$uri" --rounds 30 -o "$T/m2-$kind.json" \
            --examples "$T/ex-store.csv" >"$T/retrain.out" 2>&1 ||
            bad "$kind: rb train --store: $(tail -2 "$T/retrain.out")"
        grep -q "store labels" "$T/m2-$kind.json" || bad "$kind: the model does not name its labels"
        grep -q "44 kept by tide diff\|[1-9][0-9]* kept by tide diff, 0 from" "$T/retrain.out" ||
            bad "$kind: features not kept: $(head -1 "$T/retrain.out")"
        grep "held-out AUC" "$T/retrain.out"
        # the kept features are those of the whole difference: the same labels through
        # --labels and candidates.fits give the same feature rows
        echo "SELECT c.seq || ',' || l.label FROM labels l JOIN candidates c ON c.id = l.candidate_id WHERE l.candidate_id <> $c1 ORDER BY c.seq;" | $sql >"$T/lab.csv"
        "$TIDE" rb train --labels "$T/lab.csv" --candidates "$T/d-$kind/candidates.fits" --rounds 30 \
            -o "$T/m3-$kind.json" --examples "$T/ex-file.csv" >/dev/null 2>&1 || bad "$kind: rb train --labels"
        "$PY" - "$T/ex-store.csv" "$T/ex-file.csv" <<'PYEOF' || bad "$kind: store features differ from the file's"
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
assert len(a) == len(b) >= 40, (len(a), len(b))
for x, y in zip(a, b):
    for k in list(x)[4:]:
        assert x[k] == y[k] and x["LABEL"] == y["LABEL"], (k, x[k], y[k])
print(f"{len(a)} examples: store features equal the difference image's")
PYEOF
    fi
}

check_store sqlite "$T/c.db" "sqlite3 $T/c.db"

env_lines=$(bash "$SRC/tests/pg_cluster.sh" start)
rc=$?
if [ $rc = 77 ]; then
    echo "SKIP (PostgreSQL part): no PostgreSQL server binaries"
elif [ $rc != 0 ]; then
    bad "could not start a PostgreSQL cluster"
else
    eval "$env_lines"
    PGDIR=$TIDE_PG_DIR
    prog=./test_store_review
    [ -x "$prog" ] || prog=$(dirname "$TIDE")/tests/test_store_review
    TIDE_TEST_PG="pg:" "$prog" >"$T/suite.log" 2>&1 || bad "test_store_review on PostgreSQL: $(tail -5 "$T/suite.log")"
    psql -X -q -c "DROP TABLE IF EXISTS diffs, candidates, cutouts, objects, labels, reviewers" >/dev/null
    check_store pg "pg:" "psql -X -q -A -t"
fi
[ $fail = 0 ] && echo "ok"
exit $fail
