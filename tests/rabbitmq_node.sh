#!/bin/bash
# rabbitmq_node.sh — a throw-away RabbitMQ node for tests.
#
#   eval "$(bash rabbitmq_node.sh start)" || exit $?  # exports TIDE_RMQ_DIR, TIDE_RMQ_URL
#   bash rabbitmq_node.sh restart "$TIDE_RMQ_DIR"     # stop the node, start it again (queues and
#                                                    # persistent messages survive)
#   bash rabbitmq_node.sh kill "$TIDE_RMQ_DIR"        # SIGKILL the node (a crash)
#   bash rabbitmq_node.sh up "$TIDE_RMQ_DIR"          # start it again after kill
#   bash rabbitmq_node.sh ctl "$TIDE_RMQ_DIR" ARGS... # rabbitmqctl against the node
#   bash rabbitmq_node.sh stop "$TIDE_RMQ_DIR"        # stop it and remove everything
#
# Everything stays on loopback and in a fresh temporary directory: the AMQP listener, the
# Erlang distribution port and a private epmd on ports of their own (so parallel tests never
# collide), the database (mnesia), logs, the cookie, no plugins. As root (CI) the node runs as
# the `rabbitmq` user, which owns the directory (Debian's start script would do the same).
# Exit code 77 (the tests' "skipped") when rabbitmq-server is not installed.
set -u

SERVER=/usr/lib/rabbitmq/bin/rabbitmq-server
CTL=/usr/lib/rabbitmq/bin/rabbitmqctl

as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u rabbitmq -- "$@"
    else
        "$@"
    fi
}

# The environment of the node in $1 (written by start into its env file).
load() {
    DIR=${1:-}
    case "$DIR" in
    /tmp/tide-rmq.*) ;;
    *) echo "rabbitmq_node.sh: needs the node's directory" >&2; exit 2 ;;
    esac
    # shellcheck disable=SC1091
    . "$DIR/env.sh"
}

launch() {
    # exec's redirections, not a command's: bash keeps no saved copy of the caller's stdout
    # (a $(...) pipe) in the background shell, which would hold the caller's read open forever
    (
        cd "$DIR" || exit 1
        exec >>"$DIR/server.log" 2>&1 </dev/null
        as_owner env "$SERVER"
    ) &
    for _ in $(seq 1 120); do
        if as_owner env "$CTL" -n "$RABBITMQ_NODENAME" await_startup --timeout 1 >/dev/null 2>&1
        then
            return 0
        fi
        sleep 0.5
    done
    echo "rabbitmq_node.sh: the node did not start:" >&2
    tail -n 30 "$DIR/server.log" >&2
    return 1
}

halt() {
    as_owner env "$CTL" -n "$RABBITMQ_NODENAME" stop >/dev/null 2>&1
    kill_node
}

kill_node() {
    local pid
    pid=$(cat "$RABBITMQ_PID_FILE" 2>/dev/null)
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    pkill -9 -f -- "-sname $RABBITMQ_NODENAME" 2>/dev/null
    pkill -9 -f -- "$RABBITMQ_NODENAME" 2>/dev/null
    # wait until the AMQP port is free again
    for _ in $(seq 1 50); do
        ss -ltn 2>/dev/null | grep -q "127.0.0.1:$RABBITMQ_NODE_PORT " || return 0
        sleep 0.1
    done
}

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

cmd=${1:-}
case "$cmd" in
start)
    if [ ! -x "$SERVER" ] || [ ! -x "$CTL" ]; then
        echo "rabbitmq_node.sh: rabbitmq-server not installed" >&2
        exit 77
    fi
    DIR=$(mktemp -d /tmp/tide-rmq.XXXXXX) || exit 1
    chmod 0755 "$DIR"
    port=$(free_port); dist=$(free_port); epmd=$(free_port)
    node="tide$$x$RANDOM@localhost"
    cat >"$DIR/env.sh" <<EOF
export RABBITMQ_NODENAME='$node'
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT=$port
export RABBITMQ_DIST_PORT=$dist
export ERL_EPMD_ADDRESS=127.0.0.1
export ERL_EPMD_PORT=$epmd
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}'
export RABBITMQ_MNESIA_BASE='$DIR/mnesia'
export RABBITMQ_LOG_BASE='$DIR/log'
export RABBITMQ_CONFIG_FILE='$DIR/rabbitmq'
export RABBITMQ_ADVANCED_CONFIG_FILE='$DIR/advanced.config'
export RABBITMQ_ENABLED_PLUGINS_FILE='$DIR/enabled_plugins'
export RABBITMQ_PID_FILE='$DIR/pid'
export RABBITMQ_CONF_ENV_FILE='$DIR/rabbitmq-env.conf'
export HOME='$DIR'
EOF
    echo "[]." >"$DIR/enabled_plugins"
    : >"$DIR/rabbitmq-env.conf"
    printf 'listeners.tcp.default = 127.0.0.1:%s\nloopback_users.guest = true\n' "$port" \
        >"$DIR/rabbitmq.conf"
    [ "$(id -u)" = 0 ] && chown -R rabbitmq: "$DIR"
    load "$DIR"
    if ! launch; then
        kill_node
        ERL_EPMD_PORT=$epmd epmd -kill >/dev/null 2>&1
        rm -rf "$DIR"
        exit 1
    fi
    echo "export TIDE_RMQ_DIR='$DIR' TIDE_RMQ_URL='amqp://127.0.0.1:$port'"
    echo "unset TIDE_AMQP_USER TIDE_AMQP_PASSWORD TIDE_AMQP_PASSWORD_FILE"
    ;;
restart)
    load "${2:-}"
    halt
    launch || exit 1
    ;;
kill)
    load "${2:-}"
    kill_node
    ;;
up)
    load "${2:-}"
    launch || exit 1
    ;;
ctl)
    load "${2:-}"
    shift 2
    as_owner env "$CTL" -n "$RABBITMQ_NODENAME" "$@"
    ;;
stop)
    load "${2:-}"
    halt
    ERL_EPMD_PORT=$ERL_EPMD_PORT epmd -kill >/dev/null 2>&1
    pkill -9 -f -- "epmd.*-port $ERL_EPMD_PORT" 2>/dev/null
    rm -rf "$DIR"
    ;;
*)
    echo "usage: rabbitmq_node.sh start | restart DIR | kill DIR | up DIR | ctl DIR ARGS | stop DIR" >&2
    exit 2
    ;;
esac
