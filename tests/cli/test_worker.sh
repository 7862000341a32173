#!/bin/bash
# tide worker, tide submit and tide watch against a real RabbitMQ node on loopback
# (tests/rabbitmq_node.sh): frames submitted with confirms are reduced into an SQLite store,
# each acked after its commit; a frame that is not FITS is tried --max-attempts times and
# dead-lettered with its reason, a message that is not a task at once; submitting the frames
# again replaces their rows (never twice); SIGTERM finishes the frame in hand and leaves the
# rest queued; a diff task writes what tide diff --template writes; a broker that is down is waited for; credentials in the URL are refused; the
# JSON log lines of a frame name it; its metrics pass promtool and count what it did; tide watch submits files closed or renamed into a
# directory, not partial ones. Skipped (77) without rabbitmq-server.
set -u
SRC=${TIDE_SOURCE_DIR:?}
TIDE=${TIDE_BIN:?}
env_lines=$(bash "$SRC/tests/rabbitmq_node.sh" start)
rc=$?
if [ $rc = 77 ]; then echo "SKIP: no rabbitmq-server"; exit 77; fi
[ $rc = 0 ] || { echo "FAIL: could not start a RabbitMQ node"; exit 1; }
eval "$env_lines"
T=$(mktemp -d /tmp/tide-worker.XXXXXX)
WPID=
trap '[ -n "$WPID" ] && kill -9 $WPID 2>/dev/null; bash "$SRC/tests/rabbitmq_node.sh" stop "$TIDE_RMQ_DIR"; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
Q="--queue $TIDE_RMQ_URL --queue-name frames"
nimages() { sqlite3 "$T/store.db" "SELECT count(*) FROM images" 2>/dev/null || echo -1; }
depth() { bash "$SRC/tests/rabbitmq_node.sh" ctl "$TIDE_RMQ_DIR" list_queues -q name messages 2>/dev/null |
    awk -v q="$1" '$1 == q { print $2 }'; }

mkdir -p "$T/in" "$T/out"
for i in 1 2 3 4 5 6 7 8; do
    "$TIDE" sim -o "$T/in/f$i.fits" --seed "$i" --width 256 --height 256 --nstars 60 --ngal 5 \
        >/dev/null || bad "sim f$i"
done
echo "SIMPLE? no, a text file" >"$T/in/bad.fits"

# 1. submit: confirmed, absolute paths, a missing file refused and named (exit 1)
out=$(cd "$T/in" && "$TIDE" submit $Q --json f1.fits f2.fits f3.fits f4.fits bad.fits nosuch.fits)
rc=$?
[ $rc = 1 ] || bad "submit with a missing file exited $rc"
grep -q '"submitted":5' <<<"$out" || bad "submit summary: $out"
grep -q 'nosuch.fits' <<<"$out" || bad "submit does not name the missing file: $out"
# two messages that are not tasks
amqp-publish --url="$TIDE_RMQ_URL" -r frames -p -b 'this is not JSON' || bad "amqp-publish"
amqp-publish --url="$TIDE_RMQ_URL" -r frames -p -b '{"paht": "x.fits"}' || bad "amqp-publish"
[ "$(depth frames)" = 7 ] || bad "queue holds $(depth frames) messages, not 7"

# 2. the worker: 4 done, bad.fits dead-lettered after 2 attempts, 2 malformed at once
"$TIDE" worker $Q --store "$T/store.db" --outdir "$T/out" --max-attempts 2 --idle-exit 2 \
    --log-json --json >"$T/w1.json" 2>"$T/w1.log"
rc=$?
[ $rc = 0 ] || bad "worker exited $rc: $(tail -3 "$T/w1.log")"
grep -q '"done": 4' "$T/w1.json" || bad "worker summary: $(cat "$T/w1.json")"
grep -q '"dead_lettered": 1' "$T/w1.json" || bad "worker summary: $(cat "$T/w1.json")"
grep -q '"malformed": 2' "$T/w1.json" || bad "worker summary: $(cat "$T/w1.json")"
[ "$(nimages)" = 4 ] || bad "store holds $(nimages) images, not 4"
for i in 1 2 3 4; do [ -s "$T/out/f$i.cat.fits" ] || bad "no catalog f$i.cat.fits"; done
grep -q "\"frame\":\"$T/in/f1.fits\"" "$T/w1.log" || bad "no log line names the frame f1"
[ "$(depth frames)" = 0 ] || bad "queue still holds $(depth frames)"

# 2b. a diff task: the outputs tide diff --template writes, byte for byte
"$TIDE" sim -o "$T/in/tmpl.fits" --epoch2 "$T/in/new.fits" --width 384 --height 384 \
    --nstars 150 --ngal 5 --seed 7 >/dev/null 2>&1 || bad "sim pair"
"$TIDE" submit $Q --job diff --template "$T/in/tmpl.fits" "$T/in/new.fits" >/dev/null ||
    bad "submit a diff task"
"$TIDE" worker $Q --outdir "$T/dout" --idle-exit 2 2>"$T/wd.log" || bad "diff worker failed"
"$TIDE" diff --template "$T/in/tmpl.fits" "$T/in/new.fits" -o "$T/dref" >/dev/null 2>&1 ||
    bad "tide diff --template failed"
for f in difference.fits candidates.fits; do
    [ -s "$T/dout/new/$f" ] || bad "the diff task wrote no $f: $(ls "$T/dout" "$T/dout/new" 2>&1)"
    cmp -s "$T/dout/new/$f" "$T/dref/new/$f" || bad "the diff task's $f differs from tide diff's"
done

# 3. the dead letters, with their reasons
"$TIDE" submit $Q --failed >"$T/dlq.json" 2>/dev/null || bad "submit --failed"
[ "$(wc -l <"$T/dlq.json")" = 3 ] || bad "dead letters: $(cat "$T/dlq.json")"
grep -q 'bad.fits.*not a FITS file.*"attempts":2' "$T/dlq.json" || bad "bad.fits: $(cat "$T/dlq.json")"
grep -q 'not JSON' "$T/dlq.json" || bad "the non-JSON message: $(cat "$T/dlq.json")"
grep -q 'unknown member' "$T/dlq.json" || bad "the bad member: $(cat "$T/dlq.json")"
[ "$(depth frames.failed)" = 0 ] || bad "dead-letter queue still holds $(depth frames.failed)"

# 4. the same frames again: replaced, never stored twice
n1=$(sqlite3 "$T/store.db" "SELECT count(*) FROM sources")
"$TIDE" submit $Q "$T"/in/f[1-4].fits >/dev/null || bad "resubmit"
"$TIDE" worker $Q --store "$T/store.db" --outdir "$T/out" --idle-exit 2 2>"$T/w2.log" ||
    bad "second worker failed"
[ "$(nimages)" = 4 ] || bad "after a repeat the store holds $(nimages) images"
[ "$(sqlite3 "$T/store.db" "SELECT count(*) FROM sources")" = "$n1" ] || bad "sources changed"

# 5. SIGTERM: the frame in hand is finished and acked, the rest stays queued
"$TIDE" submit $Q "$T"/in/f[5-8].fits >/dev/null || bad "submit f5-f8"
"$TIDE" worker $Q --store "$T/store.db" --outdir "$T/out" --runners 1 --prefetch 1 \
    --metrics 127.0.0.1:0 --log-json 2>"$T/w3.log" &
WPID=$!
for _ in $(seq 1 300); do grep -q '"msg":"[^"]*: done' "$T/w3.log" && break; sleep 0.05; done
# its metrics and health while it runs: valid exposition, a frame counted done
port=$(sed -n 's/.*metrics on http:[^ ]* (port \([0-9]*\)).*/\1/p' "$T/w3.log" | head -1)
if [ -n "$port" ]; then
    curl -sf "http://127.0.0.1:$port/metrics" >"$T/metrics.txt" || bad "scraping the worker failed"
    if command -v promtool >/dev/null; then
        promtool check metrics <"$T/metrics.txt" >"$T/promtool.txt" 2>&1 ||
            bad "promtool: $(cat "$T/promtool.txt")"
    fi
    grep -q '^tide_frames_total{status="done"} [1-9]' "$T/metrics.txt" ||
        bad "no frame counted done: $(grep tide_frames "$T/metrics.txt")"
    grep -q '^tide_frame_seconds_count [1-9]' "$T/metrics.txt" ||
        bad "no submit-to-commit latency: $(grep tide_frame_seconds_count "$T/metrics.txt")"
    grep -q '^process_resident_memory_bytes [1-9]' "$T/metrics.txt" || bad "no RSS"
    curl -sf "http://127.0.0.1:$port/healthz" | grep -q '"status":"ok"' || bad "healthz not ok"
else
    bad "the worker did not say where its metrics are: $(head -3 "$T/w3.log")"
fi
kill -TERM $WPID
wait $WPID
rc=$?
WPID=
[ $rc = 0 ] || bad "worker after SIGTERM exited $rc"
grep -q 'stopping' "$T/w3.log" || bad "worker did not say it was stopping"
ndone=$(grep -c '"msg":"[^"]*: done' "$T/w3.log")
left=$(depth frames)
[ $((ndone + left)) = 4 ] || bad "after SIGTERM: $ndone done + $left queued != 4"
[ "$(nimages)" = $((4 + ndone)) ] || bad "after SIGTERM the store holds $(nimages)"
"$TIDE" worker $Q --store "$T/store.db" --outdir "$T/out" --idle-exit 2 2>/dev/null ||
    bad "worker after the stop failed"
[ "$(nimages)" = 8 ] || bad "the rest was not done: $(nimages) images"

# 6. a broker that is down is waited for (SIGTERM then ends it cleanly)
timeout --preserve-status -s TERM 3 "$TIDE" worker --queue amqp://127.0.0.1:1/ --store "$T/store.db" \
    2>"$T/w4.log"
rc=$?
[ $rc = 0 ] || bad "worker without a broker, stopped, exited $rc"
grep -q "cannot reach the broker" "$T/w4.log" || bad "no word of the missing broker: $(cat "$T/w4.log")"

# 7. credentials go in the environment, never in the URL
"$TIDE" worker --queue "amqp://tide:s3cret@127.0.0.1:1/" >/dev/null 2>"$T/err"
rc=$?
[ $rc = 1 ] || bad "credentials in the URL: exit $rc"
grep -q TIDE_AMQP_PASSWORD "$T/err" || bad "credentials in the URL: $(cat "$T/err")"
grep -q s3cret "$T/err" && bad "the password was printed"
TIDE_AMQP_USER=nobody TIDE_AMQP_PASSWORD=wrong "$TIDE" submit $Q "$T/in/f1.fits" \
    >/dev/null 2>"$T/err" && bad "a wrong password was accepted"
grep -q wrong "$T/err" && bad "the wrong password was printed"

# 8. tide watch: closed and renamed-in files, not partial ones or hidden ones
mkdir -p "$T/drop"
"$TIDE" watch "$T/drop" $Q --max 2 >"$T/watch.out" 2>"$T/watch.err" &
WPID=$!
for _ in $(seq 1 100); do grep -q watching "$T/watch.err" && break; sleep 0.05; done
cp "$T/in/f1.fits" "$T/drop/.f1.fits.part"
cp "$T/in/f2.fits" "$T/drop/w2.fits.part"
mv "$T/drop/.f1.fits.part" "$T/drop/w1.fits"
cp "$T/in/f3.fits" "$T/drop/w3.fits"
for _ in $(seq 1 200); do kill -0 $WPID 2>/dev/null || break; sleep 0.05; done
kill -0 $WPID 2>/dev/null && { kill -9 $WPID; bad "watch did not exit after 2 files"; }
wait $WPID
WPID=
grep -q "submitted $T/drop/w1.fits" "$T/watch.out" || bad "watch missed the renamed file: $(cat "$T/watch.out")"
grep -q "submitted $T/drop/w3.fits" "$T/watch.out" || bad "watch missed the closed file: $(cat "$T/watch.out")"
grep -q "part" "$T/watch.out" && bad "watch submitted a partial file"
[ "$(depth frames)" = 2 ] || bad "watch: the queue holds $(depth frames)"

[ $fail = 0 ] && echo "PASS: worker, submit, watch"
exit $fail
