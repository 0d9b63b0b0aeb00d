#!/usr/bin/env bash
# syscalls_per_query.sh - system calls per query of each relay (the floor
# relays, myrewrite on epoll and on io_uring), counted, not timed.
#
# Starts a throwaway mariadbd (tests/lib/env.sh) and each target in front of
# it over TCP, runs a fixed number of sysbench oltp_point_select events
# through it, and counts the relay process's system calls over that run with
# `perf stat -e syscalls:sys_enter_*` (all its threads). Prints, per target,
# the calls per query of the ones that matter here, io_uring requests and
# completions per query, and how many epoll_wait calls per query returned
# 0 events or failed (EINTR). Counts, so no lock is needed;
# the batching (events per wait) still depends on timing, so expect some
# spread between runs.
#
# Usage: bench/syscalls_per_query.sh [EVENTS] [THREADS]
# Env:   BENCH_TARGETS="floor uring myrewrite mr_uring"
#        BENCH_DIRECT_PORT, BENCH_PROXY_PORT, MR_BIN (relays are looked for beside it)
#        BENCH_RECORD=1: also `perf record -g` each target over a second run
#        of the same size ($MR_TMP/bench-syscalls/TARGET.data; read it with
#        `perf report -i FILE --no-children --sort sym`)
set -uo pipefail
. "$(dirname "$0")/../tests/lib/env.sh"

EVENTS=${1:-20000}
THR=${2:-8}
WANT=${BENCH_TARGETS:-"floor uring myrewrite mr_uring"}
RELAY_DIR=$(dirname "${MR_BIN_REAL:-$MR_BIN}")
MR_TMP=${MR_TMP:-$MR_ROOT/.tmp/bench}/bench-syscalls
MR_DIRECT_PORT=${BENCH_DIRECT_PORT:-23317}
MR_PROXY_PORT=${BENCH_PROXY_PORT:-26044}
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT
CALLS="epoll_wait io_uring_enter read write recvfrom sendto epoll_ctl"
# io_uring's own tracepoints: requests submitted, completions posted.
URING="io_uring_submit_req io_uring_complete"

mr_start_mariadb bench "$MR_DIRECT_PORT" >/dev/null || exit 1
sb() { # sb PORT THREADS CMD [EVENTS]
    sysbench oltp_point_select --db-driver=mysql --mysql-host="$MR_HOST" --mysql-port="$1" \
        --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" --mysql-db="$MR_DB" \
        --tables=1 --table-size=10000 --threads="$2" --time=0 --events="${4:-0}" \
        --report-interval=0 "$3"
}
sb "$MR_DIRECT_PORT" 1 cleanup >/dev/null 2>&1 || true
sb "$MR_DIRECT_PORT" 1 prepare >/dev/null || exit 1

start_target() { # start_target NAME: sets PORT and PID
    mr_free_port PORT || return 1
    case $1 in
    floor | uring)
        local bin=relay_floor
        [[ $1 == uring ]] && bin=relay_floor_uring
        "$RELAY_DIR/$bin" "$PORT" "$MR_HOST:$MR_DIRECT_PORT" >>"$MR_TMP/$1.log" 2>&1 &
        PID=$!
        MR__PROXY_PIDS+=("$PID")
        for ((i = 0; i < 50; i++)); do mr_port_listening "$PORT" && break; sleep 0.1; done ;;
    myrewrite | mr_uring)
        local extra=()
        [[ $1 == mr_uring ]] && extra=(--set io=io_uring)
        [[ $1 == myrewrite ]] && extra=(--set io=epoll)
        MR_PROXY_LOG_LEVEL=warn mr_start_proxy "$1" "$PORT" "$MR_DIRECT_PORT" --workers 1 \
            "${extra[@]}" >/dev/null || return 1
        PID=$MR_PROXY_PID ;;
    esac
}

printf '%-10s %6s' target queries
for c in $CALLS $URING; do n=${c#io_uring_}; printf ' %8s' "${n:0:8}"; done
printf ' %8s %8s\n' ew_zero ew_err
for t in $WANT; do
    start_target "$t" || { echo "# $t did not start" >&2; continue; }
    sb "$PORT" "$THR" run 200 >/dev/null # connections warm, buffers registered
    ev=()
    for c in $CALLS; do ev+=(-e "syscalls:sys_enter_$c"); done
    for c in $URING; do ev+=(-e "io_uring:$c"); done
    perf stat -x, -o "$MR_TMP/$t.stat" -p "$PID" "${ev[@]}" \
        -e syscalls:sys_exit_epoll_wait --filter 'ret == 0' \
        -e syscalls:sys_exit_epoll_wait --filter 'ret < 0' &
    ppid=$!
    sleep 0.5
    out=$(sb "$PORT" "$THR" run "$EVENTS")
    kill -INT "$ppid"
    wait "$ppid"
    q=$(awk '/queries:/ && !/performed/ {print $2; exit}' <<<"$out")
    printf '%-10s %6s' "$t" "$q"
    awk -F, -v q="$q" '$3 ~ /(syscalls|io_uring):/ {n++; v[n]=$1}
        END {for (i = 1; i <= n; i++) printf " %8.3f", v[i] / q; printf "\n"}' "$MR_TMP/$t.stat"
    if [[ -n ${BENCH_RECORD:-} ]]; then
        perf record -q -g -o "$MR_TMP/$t.data" -p "$PID" 2>/dev/null &
        ppid=$!
        sleep 0.5
        sb "$PORT" "$THR" run "$EVENTS" >/dev/null
        kill -INT "$ppid"
        wait "$ppid"
    fi
    kill "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
done
sb "$MR_DIRECT_PORT" 1 cleanup >/dev/null
