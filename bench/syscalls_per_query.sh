#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# syscalls_per_query.sh - what each relay asks of the kernel per query: system
# calls, epoll events per wait, io_uring requests and completions, context
# switches, wake-ups and migrations, for the floor relays, myrewrite on epoll
# and on io_uring and any other proxy builds, at each thread count. Counts that
# the machine's load hardly moves, so they need no quiet machine and no lock
# (unlike bench/proxy_overhead.sh's CPU per query); the batching (events per
# wait) still moves with timing, so expect some spread between runs.
#
# How: starts a throwaway mariadbd (tests/lib/env.sh) with one sysbench table
# and each target in front of it over TCP (proxies with 1 worker). For each
# thread count and target it runs EVENTS sysbench oltp_point_select events
# under `perf stat --per-thread -p PID` with the syscall and io_uring
# tracepoints, and prints per query:
#   epoll_w  epoll_wait + epoll_pwait calls;  ew_zero / ew_err: epoll_waits
#            that returned 0 events / failed (EINTR)
#   ur_ent   io_uring_enter;  read, write (+ readv, writev), recvfr, sendto,
#            epl_ctl, futex;  other: every other call;  all: all calls
#   ev/wait  the events one epoll_wait returned on average (reads per wait:
#            each ready socket is read once; epoll relays only)
#   sqe, cqe io_uring requests submitted and completions posted
#   vol, invol  context switches of all its threads from /proc/PID/task/*/
#            status: voluntary (a sleep in epoll_wait) and not (preempted)
#   wakeup   sched_waking in its context (each write that wakes a reader)
#   migr     its migrations between CPUs
# then one line per thread that made any call, so a thread that wakes per
# query shows.
#
# Usage: bench/syscalls_per_query.sh [EVENTS [THREADS [PROXY_BINARY...]]]
#        EVENTS (default 20000), THREADS a list ("8 32"; default 8); each
#        PROXY_BINARY (on its default io) is named by the folder above its
#        build folder, e.g. main/myrewrite
# Env:   BENCH_EVENTS, BENCH_THREADS, BENCH_PROXIES: the same, when not given
#        as arguments
#        BENCH_TARGETS="floor uring myrewrite mr_uring" (relays are looked for
#        beside MR_BIN; myrewrite and mr_uring are MR_BIN with io = epoll and
#        io = io_uring)
#        BENCH_DIRECT_PORT, BENCH_PROXY_PORT, MR_BIN, MR_TMP
#        BENCH_RECORD=1: also `perf record -g` each target over a second run
#        of the same size ($MR_TMP/bench-syscalls/TARGET.THREADS.data; read it
#        with `perf report -i FILE --no-children --sort sym`)
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../tests/lib/env.sh
. "$(dirname "$0")/../tests/lib/env.sh"

EVENTS=${1:-${BENCH_EVENTS:-20000}}
THREADS=${2:-${BENCH_THREADS:-8}}
shift $(($# < 2 ? $# : 2))
if [[ $# -eq 0 && -n ${BENCH_PROXIES:-} ]]; then
    read -ra PROXIES <<<"$BENCH_PROXIES"
    set -- "${PROXIES[@]}"
fi
WANT=${BENCH_TARGETS:-"floor uring myrewrite mr_uring"}
RELAY_DIR=$(dirname "${MR_BIN_REAL:-$MR_BIN}")
MY_BIN=$MR_BIN
MR_TMP=${MR_TMP:-$MR_ROOT/.tmp/bench}/bench-syscalls
MR_DIRECT_PORT=${BENCH_DIRECT_PORT:-23317}
MR_PROXY_PORT=${BENCH_PROXY_PORT:-26044}
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

CALLS="epoll_wait epoll_pwait io_uring_enter read readv write writev recvfrom sendto epoll_ctl futex"
EV=(-e raw_syscalls:sys_enter -e context-switches -e cpu-migrations -e sched:sched_waking)
for c in $CALLS; do EV+=(-e "syscalls:sys_enter_$c"); done
EV+=(-e io_uring:io_uring_submit_req -e io_uring:io_uring_complete)
# Last, as the awk below tells the two apart by their order within a thread.
EV+=(-e syscalls:sys_exit_epoll_wait --filter 'ret == 0')
EV+=(-e syscalls:sys_exit_epoll_wait --filter 'ret < 0')

names=() ports=() pids=()

sb() { # sb PORT THREADS CMD EVENTS [WRAPPER...]: sysbench, run under WRAPPER
    local port=$1 thr=$2 cmd=$3 events=$4
    shift 4
    "$@" sysbench oltp_point_select --db-driver=mysql --mysql-host="$MR_HOST" \
        --mysql-port="$port" --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" \
        --mysql-db="$MR_DB" --tables=1 --table-size=10000 --threads="$thr" --time=0 \
        --events="$events" --report-interval=0 "$cmd"
}

prepare_db() {
    mr_start_mariadb bench "$MR_DIRECT_PORT" >/dev/null || return 1
    sb "$MR_DIRECT_PORT" 1 cleanup 0 >/dev/null 2>&1
    sb "$MR_DIRECT_PORT" 1 prepare 0 >/dev/null
}

add_target() { # add_target NAME PORT PID
    names+=("$1") ports+=("$2") pids+=("$3")
}

start_floor() { # start_floor NAME BINARY: a floor relay beside MR_BIN
    local port i
    mr_free_port port || return 1
    "$RELAY_DIR/$2" "$port" "$MR_HOST:$MR_DIRECT_PORT" >>"$MR_TMP/$1.log" 2>&1 &
    MR__PROXY_PIDS+=("$!")
    for ((i = 0; i < 50; i++)); do
        mr_port_listening "$port" && { add_target "$1" "$port" "${MR__PROXY_PIDS[-1]}"; return 0; }
        sleep 0.1
    done
    return 1
}

start_proxy() { # start_proxy NAME BINARY [OPTION...]: one worker
    local name=$1 bin=$2 port
    shift 2
    mr_free_port port || return 1
    MR_BIN=$bin MR_PROXY_LOG_LEVEL=warn mr_start_proxy "proxy${#names[@]}" "$port" \
        "$MR_DIRECT_PORT" --workers 1 "$@" >/dev/null 2>&1 || return 1
    add_target "$name" "$port" "$MR_PROXY_PID"
}

start_target() { # start_target NAME: one of BENCH_TARGETS
    case $1 in
    floor) start_floor floor relay_floor ;;
    uring) start_floor uring relay_floor_uring ;;
    myrewrite) start_proxy myrewrite "$MY_BIN" --set io=epoll ;;
    mr_uring) start_proxy mr_uring "$MY_BIN" --set io=io_uring ;;
    *) echo "# unknown target $1" >&2; return 1 ;;
    esac
}

build_name() { # build_name BINARY: e.g. main/myrewrite for /work/main/build/myrewrite
    echo "$(basename "$(dirname "$(dirname "$1")")")/$(basename "$1")"
}

ctx() { # ctx PID: voluntary and involuntary switches of all its threads
    cat /proc/"$1"/task/*/status | awk '/^voluntary_ctxt/ {v += $2}
        /^nonvoluntary_ctxt/ {n += $2} END {print v, n}'
}

header() {
    printf '%-20s %3s %6s | %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s | %7s | %6s %6s' \
        relay thr queries epoll_w ew_zero ew_err ur_ent read write recvfr sendto epl_ctl \
        futex other all ev/wait sqe cqe
    printf ' | %6s %6s %6s %6s\n' vol invol wakeup migr
}

report() { # report STATFILE NAME THREADS QUERIES VOL INVOL
    # perf stat -x, --per-thread: COMM-TID,VALUE,UNIT,EVENT,...
    awk -F, -v name="$2" -v thr="$3" -v q="$4" -v vol="$5" -v inv="$6" '
        NF < 4 || $1 ~ /^#/ {next}
        {
            v = $2 + 0; e = $4; sub(/^(syscalls:sys_enter_|io_uring:io_uring_)/, "", e)
            if (e == "syscalls:sys_exit_epoll_wait") e = (++exits[$1] == 1) ? "ew_zero" : "ew_err"
            t[e] += v; per[$1, e] += v; tids[$1] = 1
        }
        END {
            ew = t["epoll_wait"] + t["epoll_pwait"]; rw = t["read"] + t["readv"]
            ww = t["write"] + t["writev"]; all = t["raw_syscalls:sys_enter"]
            other = all - ew - t["io_uring_enter"] - rw - ww - t["recvfrom"] - t["sendto"] \
                - t["epoll_ctl"] - t["futex"]
            printf "%-20s %3s %6s | %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f",
                name, thr, q, ew / q, t["ew_zero"] / q, t["ew_err"] / q, t["io_uring_enter"] / q,
                rw / q, ww / q, t["recvfrom"] / q, t["sendto"] / q, t["epoll_ctl"] / q
            printf " %6.3f %6.3f %6.3f | %7.2f | %6.3f %6.3f | %6.3f %6.3f %6.3f %6.3f\n",
                t["futex"] / q, other / q, all / q, ew ? rw / ew : 0, t["submit_req"] / q,
                t["complete"] / q, vol / q, inv / q, t["sched:sched_waking"] / q,
                t["cpu-migrations"] / q
            for (id in tids) if (per[id, "raw_syscalls:sys_enter"] > 0)
                printf "    thread %-20s calls/q %.4f ctxsw/q %.4f\n", id,
                    per[id, "raw_syscalls:sys_enter"] / q, per[id, "context-switches"] / q
        }' "$1"
}

count() { # count K THREADS: target K's counts over one run
    local k=$1 thr=$2 pid=${pids[$1]} out=$MR_TMP/stat.$1.$2 q v0 n0 v1 n1
    sb "${ports[k]}" "$thr" run 300 >/dev/null # connections made, caches warm
    read -r v0 n0 <<<"$(ctx "$pid")"
    sb "${ports[k]}" "$thr" run "$EVENTS" perf stat --per-thread -x, "${EV[@]}" -p "$pid" \
        -o "$out" -- >"$out.sb"
    read -r v1 n1 <<<"$(ctx "$pid")"
    q=$(awk '/queries:/ && !/performed/ {print $2; exit}' "$out.sb")
    [[ ${q:-0} -gt 0 ]] || { echo "# ${names[k]}: no queries (see $out.sb)" >&2; return 1; }
    report "$out" "${names[k]}" "$thr" "$q" $((v1 - v0)) $((n1 - n0))
}

record() { # record K THREADS: perf record -g of target K over a second run
    local k=$1 thr=$2 file=$MR_TMP/${names[$1]//\//_}.$2.data
    sb "${ports[k]}" "$thr" run "$EVENTS" perf record -q -g -o "$file" -p "${pids[k]}" -- \
        >/dev/null 2>>"$MR_TMP/record.log"
}

main() {
    local t bin thr k
    prepare_db || exit 1
    for t in $WANT; do start_target "$t" || echo "# $t did not start" >&2; done
    for bin in "$@"; do
        start_proxy "$(build_name "$bin")" "$bin" || echo "# $bin did not start" >&2
    done
    header
    for thr in $THREADS; do
        for ((k = 0; k < ${#names[@]}; k++)); do
            count "$k" "$thr"
            [[ -z ${BENCH_RECORD:-} ]] || record "$k" "$thr"
        done
    done
    sb "$MR_DIRECT_PORT" 1 cleanup 0 >/dev/null
}

main "$@"
