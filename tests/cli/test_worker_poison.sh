#!/bin/bash
# A poison message ends (issue 17: "a frame that fails goes to a dead-letter queue with the
# reason after bounded retries"): a task that crashes the worker process is written down in
# the worker's crash ledger before the process dies, and the next worker, started again as
# systemd would, counts those crashes as attempts; after --max-attempts crashes the message
# goes to NAME.failed unrun, with "crashed the worker 3 times (SIGSEGV)", and the frames beside
# it are each stored once. Resubmitted, the same message starts afresh (the ledger cleared
# it). The crash is injected with TIDE_WORKER_CRASH_ON (a runner raises SIGSEGV on a task
# whose path holds the string). Skipped (77) without rabbitmq-server.
set -u
SRC=${TIDE_SOURCE_DIR:?}
TIDE=${TIDE_BIN:?}
env_lines=$(bash "$SRC/tests/rabbitmq_node.sh" start)
rc=$?
if [ $rc = 77 ]; then echo "SKIP: no rabbitmq-server"; exit 77; fi
[ $rc = 0 ] || { echo "FAIL: could not start a RabbitMQ node"; exit 1; }
eval "$env_lines"
T=$(mktemp -d /tmp/tide-ledger.XXXXXX)
trap 'bash "$SRC/tests/rabbitmq_node.sh" stop "$TIDE_RMQ_DIR"; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ulimit -c 0
Q="--queue $TIDE_RMQ_URL --queue-name frames"
nimages() { sqlite3 "$T/store.db" "SELECT count(*) FROM images" 2>/dev/null || echo -1; }
depth() { bash "$SRC/tests/rabbitmq_node.sh" ctl "$TIDE_RMQ_DIR" list_queues -q name messages 2>/dev/null |
    awk -v q="$1" '$1 == q { print $2 }'; }

mkdir -p "$T/in"
for i in 1 2 3; do
    "$TIDE" sim -o "$T/in/f$i.fits" --seed "$i" --width 256 --height 256 --nstars 60 \
        >/dev/null || bad "sim f$i"
done
"$TIDE" sim -o "$T/in/poison.fits" --seed 4 --width 256 --height 256 --nstars 60 >/dev/null ||
    bad "sim poison"
(cd "$T/in" && "$TIDE" submit $Q f1.fits poison.fits f2.fits f3.fits >/dev/null) || bad "submit"
[ "$(depth frames)" = 4 ] || bad "queue holds $(depth frames) messages, not 4"

# The worker, restarted after each death as systemd's Restart=on-failure would.
crashes=0 runs=0 last=
while [ $runs -lt 8 ]; do
    runs=$((runs + 1))
    TIDE_WORKER_CRASH_ON=/poison.fits "$TIDE" worker $Q --store "$T/store.db" --state-dir "$T/state" \
        --max-attempts 3 --idle-exit 2 --json >"$T/w$runs.json" 2>"$T/w$runs.log"
    last=$?
    [ $last = 0 ] && break
    if [ $last = 139 ]; then crashes=$((crashes + 1)); else
        bad "run $runs exited $last: $(tail -3 "$T/w$runs.log")"
        break
    fi
done
[ $last = 0 ] || bad "the worker never came through (last exit $last)"
[ $crashes = 3 ] || bad "$crashes crashes before the poison message ended, not 3"
[ "$(nimages)" = 3 ] || bad "store holds $(nimages) images, not 3"
[ "$(sqlite3 "$T/store.db" "SELECT count(DISTINCT file) FROM images")" = 3 ] ||
    bad "a frame stored twice"
grep -q '"dead_lettered": 1' "$T/w$runs.json" || bad "last run's summary: $(cat "$T/w$runs.json")"
grep -q 'crashed the worker 3 times (SIGSEGV)' "$T/w$runs.log" ||
    bad "the last run does not say why: $(tail -3 "$T/w$runs.log")"
[ "$(grep -c SIGSEGV "$T/state/crashes-frames.log")" = 3 ] ||
    bad "ledger: $(cat "$T/state/crashes-frames.log")"
[ "$(depth frames)" = 0 ] || bad "queue still holds $(depth frames)"

# The dead letter, with its reason; resubmitted without the fault it is reduced once.
"$TIDE" submit $Q --failed --resubmit >"$T/dlq.json" 2>/dev/null || bad "submit --failed --resubmit"
[ "$(wc -l <"$T/dlq.json")" = 1 ] || bad "dead letters: $(cat "$T/dlq.json")"
grep -q 'poison.fits.*crashed the worker 3 times (SIGSEGV)' "$T/dlq.json" ||
    bad "dead letter: $(cat "$T/dlq.json")"
"$TIDE" worker $Q --store "$T/store.db" --state-dir "$T/state" --max-attempts 3 --idle-exit 2 \
    --json >"$T/wr.json" 2>"$T/wr.log" || bad "the worker after resubmission failed"
grep -q '"done": 1' "$T/wr.json" || bad "resubmitted: $(cat "$T/wr.json")"
[ "$(nimages)" = 4 ] || bad "store holds $(nimages) images after resubmission, not 4"
grep -q ' clear$' "$T/state/crashes-frames.log" || bad "the ledger never cleared the message"

[ $fail = 0 ] && echo "PASS: a poison message ended after 3 crashes; its neighbours stored once"
exit $fail
