#!/usr/bin/env bash
# relay_syscalls.sh - system calls and context switches per relayed point
# select, for the epoll floor relay and each proxy build given, at each
# thread count: counts that the machine's load hardly moves, so they need no
# quiet machine (unlike bench/proxy_overhead.sh's CPU per query).
#
# Starts a throwaway mariadbd (tests/lib/env.sh) with one sysbench table, the
# floor relay (bench/relay_floor.c) and each proxy (1 worker, io = epoll),
# all over TCP. For each thread count and relay it runs EVENTS point selects
# under `perf stat --per-thread -p PID` with the syscall tracepoints, and
# prints per query: epoll_wait, read, write (+readv/writev), epoll_ctl,
# futex, other calls, all calls; the events one epoll_wait returned on
# average (reads / epoll_waits: each ready socket is read once); context
# switches, voluntary (a sleep in epoll_wait) and not (preempted), from
# /proc/PID/task/*/status; the wake-ups the relay made (sched_waking in its
# context: each write that wakes a reader, client or server); and its
# migrations between CPUs. Then one line per thread of the relay that made
# any call, so a thread that wakes per query shows.
#
# Usage: bench/relay_syscalls.sh [PROXY_BINARY...]   (default: $MR_BIN; each is
#        named in the table by the folder above its build folder, e.g. main/myrewrite)
# Env:   BENCH_THREADS="8 32"  BENCH_EVENTS=40000  BENCH_DIRECT_PORT  MR_TMP
set -uo pipefail
. "$(dirname "$0")/../tests/lib/env.sh"

EVENTS=${BENCH_EVENTS:-40000}
THREADS=${BENCH_THREADS:-"8 32"}
MR_TMP=${MR_TMP:-$MR_ROOT/.tmp/bench}/bench-syscalls
MR_DIRECT_PORT=${BENCH_DIRECT_PORT:-23318}
export MR_TMP MR_DIRECT_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT
mr_start_mariadb bench "$MR_DIRECT_PORT" >/dev/null || exit 1

sb() { # sb PORT THREADS EVENTS CMD
    sysbench oltp_point_select --db-driver=mysql --mysql-host="$MR_HOST" --mysql-port="$1" \
        --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" --mysql-db="$MR_DB" \
        --tables=1 --table-size=10000 --threads="$2" --time=0 --events="$3" "$4"
}
sb "$MR_DIRECT_PORT" 1 1 cleanup >/dev/null 2>&1
sb "$MR_DIRECT_PORT" 1 1 prepare >/dev/null || exit 1

CALLS="epoll_wait epoll_pwait read write readv writev epoll_ctl futex"
EV="raw_syscalls:sys_enter,context-switches,cpu-migrations,sched:sched_waking"
for c in $CALLS; do EV+=",syscalls:sys_enter_$c"; done

names=() ports=() pids=() port=""
mr_free_port port
"$(dirname "$MR_BIN")/relay_floor" "$port" "$MR_HOST:$MR_DIRECT_PORT" >"$MR_TMP/floor.log" 2>&1 &
MR__PROXY_PIDS+=("$!")
names+=(floor) ports+=("$port") pids+=("$!")
for ((i = 0; i < 50; i++)); do mr_port_listening "$port" && break; sleep 0.1; done
[[ $# -gt 0 ]] || set -- "$MR_BIN"
k=0
for bin in "$@"; do
    mr_free_port port
    k=$((k + 1))
    MR_BIN=$bin MR_PROXY_LOG_LEVEL=warn mr_start_proxy "proxy$k" "$port" "$MR_DIRECT_PORT" \
        --workers 1 >/dev/null 2>&1 || exit 1
    names+=("$(basename "$(dirname "$(dirname "$bin")")")/$(basename "$bin")")
    ports+=("$port") pids+=("$MR_PROXY_PID")
done

ctx() { # voluntary and involuntary switches of all of PID's threads
    cat /proc/"$1"/task/*/status | awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2}
        END {print v, n}'
}
printf '%-28s %3s | %6s %6s %6s %6s %6s %6s %6s | %6s | %6s %6s %6s %6s\n' relay thr epoll_w read \
    write epl_ctl futex other all ev/wait vol invol wakeup migr
for thr in $THREADS; do
    for ((k = 0; k < ${#names[@]}; k++)); do
        pid=${pids[k]} out=$MR_TMP/stat.$k.$thr
        sb "${ports[k]}" "$thr" 300 run >/dev/null # connections made, caches warm
        read -r v0 n0 <<<"$(ctx "$pid")"
        perf stat --per-thread -x, -e "$EV" -p "$pid" -o "$out" -- \
            sysbench oltp_point_select --db-driver=mysql --mysql-host="$MR_HOST" \
            --mysql-port="${ports[k]}" --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" \
            --mysql-db="$MR_DB" --tables=1 --table-size=10000 --threads="$thr" --time=0 \
            --events="$EVENTS" run >"$out.sb"
        read -r v1 n1 <<<"$(ctx "$pid")"
        q=$(awk '/queries:/ && !/performed/ {print $2; exit}' "$out.sb")
        # perf stat -x, --per-thread: THREAD-TID,VALUE,UNIT,EVENT,...
        awk -F, -v q="$q" -v name="${names[k]}" -v thr="$thr" -v vol=$((v1 - v0)) -v inv=$((n1 - n0)) '
            NF < 4 || $1 ~ /^#/ {next}
            {v = $2 + 0; e = $4; sub(/^syscalls:sys_enter_/, "", e); t[e] += v; per[$1, e] += v; tids[$1] = 1}
            END {
                rw = t["read"] + t["readv"]; ww = t["write"] + t["writev"]; ew = t["epoll_wait"] + t["epoll_pwait"]
                all = t["raw_syscalls:sys_enter"]
                other = all - rw - ww - ew - t["epoll_ctl"] - t["futex"]
                printf "%-28s %3s | %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f | %6.2f | %6.3f %6.3f %6.3f %6.3f\n",
                    name, thr, ew / q, rw / q, ww / q, t["epoll_ctl"] / q, t["futex"] / q, other / q,
                    all / q, ew ? rw / ew : 0, vol / q, inv / q, t["sched:sched_waking"] / q,
                    t["cpu-migrations"] / q
                for (id in tids) if (per[id, "raw_syscalls:sys_enter"] > 0)
                    printf "    thread %-20s calls/q %.4f ctxsw/q %.4f\n", id,
                        per[id, "raw_syscalls:sys_enter"] / q, per[id, "context-switches"] / q
            }' "$out"
    done
done
