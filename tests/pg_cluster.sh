#!/bin/bash
# pg_cluster.sh — a throw-away PostgreSQL cluster for tests.
#
#   eval "$(bash pg_cluster.sh start)" || exit $?   # prints PGHOST/PGPORT/PGUSER/PGDATABASE
#                                                   # and TIDE_PG_DIR exports
#   bash pg_cluster.sh restart "$TIDE_PG_DIR"       # stops the server (fast) and starts it again
#   bash pg_cluster.sh stop "$TIDE_PG_DIR"          # stops the server, removes everything
#   bash pg_cluster.sh down|up "$TIDE_PG_DIR"       # stops the server / starts it again
#
# The cluster lives in a fresh temporary directory, listens only on a unix socket inside it
# (no TCP port, so parallel tests never collide) and trusts local connections. PostgreSQL
# refuses to run as root, so under root (CI) the server runs as an unprivileged user
# (`postgres` when it exists, else `nobody`) that owns the directory. Exit code 77 (the tests'
# "skipped") when the server binaries are missing. PG_BIN overrides the binary directory
# [/usr/lib/postgresql/15/bin, else the newest /usr/lib/postgresql/*/bin]; it may be the bin/ of
# a relocatable bundle (scripts/gpu/pg-bundle.sh), whose files and parent directories the
# unprivileged user must be able to read. PG_CLUSTER_DURABLE=1 keeps fsync and synchronous
# commit on (for benchmarks); PG_CLUSTER_OPTS adds server options ("-c shared_buffers=2GB ...").
set -u

find_bin() {
    # absolute: the server's commands run from / (below)
    if [ -n "${PG_BIN:-}" ]; then (cd "$PG_BIN" 2>/dev/null && pwd) || echo "$PG_BIN"; return; fi
    if [ -x /usr/lib/postgresql/15/bin/initdb ]; then echo /usr/lib/postgresql/15/bin; return; fi
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

as_owner() ( # run a command as the cluster's owner
    # from /: PostgreSQL's programs go back to the current directory after finding their own
    # path, and complain when the owner may not enter it (root's home, under root)
    cd /
    if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
        runuser -u "$OWNER" -- "$@"
    elif [ "$(id -u)" = 0 ]; then
        setpriv --reuid="$(id -u "$OWNER")" --regid="$(id -g "$OWNER")" --clear-groups -- "$@"
    else
        "$@"
    fi
)

pick_owner() {
    if [ "$(id -u)" != 0 ]; then OWNER=$(id -un); return; fi
    if id postgres >/dev/null 2>&1; then OWNER=postgres; else OWNER=nobody; fi
}

cmd=${1:-}
case "$cmd" in
start)
    BIN=$(find_bin)
    if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ] || [ ! -x "$BIN/pg_ctl" ]; then
        echo "pg_cluster.sh: PostgreSQL server binaries not found (install postgresql)" >&2
        exit 77
    fi
    pick_owner
    DIR=$(mktemp -d /tmp/tide-pg.XXXXXX) || exit 1
    chmod 0755 "$DIR"
    [ "$(id -u)" = 0 ] && chown "$OWNER" "$DIR"
    PORT=$((20000 + RANDOM % 30000))
    if ! as_owner "$BIN/initdb" -D "$DIR/data" -U "$OWNER" --auth=trust --no-sync -E UTF8 \
        >"$DIR/initdb.log" 2>&1; then
        echo "pg_cluster.sh: initdb failed:" >&2
        cat "$DIR/initdb.log" >&2
        rm -rf "$DIR"
        exit 1
    fi
    # Socket only; throw-away settings (no fsync: the cluster dies with the test) unless
    # PG_CLUSTER_DURABLE=1 (benchmarks: the server's default durability).
    opts="-c listen_addresses='' -c unix_socket_directories='$DIR' -p $PORT"
    if [ "${PG_CLUSTER_DURABLE:-0}" != 1 ]; then
        opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    fi
    opts="$opts ${PG_CLUSTER_OPTS:-}"
    echo "$opts" >"$DIR/server.opts" # for `up` after `down`
    if ! as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 -o "$opts" start \
        >/dev/null 2>&1; then
        echo "pg_cluster.sh: the server did not start:" >&2
        cat "$DIR/server.log" >&2
        rm -rf "$DIR"
        exit 1
    fi
    echo "export PGHOST='$DIR' PGPORT='$PORT' PGUSER='$OWNER' PGDATABASE=postgres"
    echo "export TIDE_PG_DIR='$DIR'"
    echo "unset PGPASSWORD PGSERVICE PGSERVICEFILE PGHOSTADDR"
    ;;
stop)
    DIR=${2:-}
    case "$DIR" in
    /tmp/tide-pg.*) ;;
    *) echo "pg_cluster.sh: stop needs the cluster directory" >&2; exit 2 ;;
    esac
    BIN=$(find_bin)
    pick_owner
    if [ -d "$DIR/data" ]; then
        as_owner "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1
    fi
    rm -rf "$DIR"
    ;;
restart)
    DIR=${2:-}
    case "$DIR" in
    /tmp/tide-pg.*) ;;
    *) echo "pg_cluster.sh: restart needs the cluster directory" >&2; exit 2 ;;
    esac
    BIN=$(find_bin)
    pick_owner
    # the options of the first start are kept in postmaster.opts; -m fast ends the sessions
    as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 -m fast restart \
        >/dev/null 2>&1 || { echo "pg_cluster.sh: restart failed" >&2; exit 1; }
    ;;
down | up)
    # Stop the server of a running cluster (a fast shutdown: clients are cut off) or start it
    # again as `start` did, keeping the data: a database that goes away and comes back.
    DIR=${2:-}
    case "$DIR" in
    /tmp/tide-pg.*) ;;
    *) echo "pg_cluster.sh: $cmd needs the cluster directory" >&2; exit 2 ;;
    esac
    BIN=$(find_bin)
    pick_owner
    if [ "$cmd" = down ]; then
        as_owner "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1
    else
        as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 \
            -o "$(cat "$DIR/server.opts")" start >/dev/null 2>&1
    fi
    ;;
*)
    echo "usage: pg_cluster.sh start | restart DIR | stop DIR | down DIR | up DIR" >&2
    exit 2
    ;;
esac
