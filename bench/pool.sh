#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pool.sh - sysbench and short-lived connections direct to mariadbd, through myrewrite with
# pool = session and through myrewrite with pool = transaction at several pool sizes, side by
# side in one run.
#
# Starts a throwaway mariadbd (tests/lib/env.sh; no TLS, so every leg is plaintext) with
# max_connections = BENCH_MAX_CONNECTIONS (1200: direct reaches 1,024 threads; 151, the
# server's default, shows what direct and pool = session get past it), loads BENCH_TABLES
# sysbench tables of BENCH_ROWS rows once, then:
#  1. sysbench: for each test, prepared-statement mode and thread count it runs every target
#     in turn (so drift hits all alike): "direct", "session" (myrewrite, pool = session) and
#     "txN" (myrewrite, pool = transaction, pool_size = N). Each proxy is started for its run
#     and stopped after it, so no proxy's idle pooled connections count against the server's
#     max_connections in another target's run.
#  2. connect rate: bench/connect_rate (connect, one point select, disconnect, in a loop) with
#     K threads against every target in turn.
# Per run it prints TPS (connections/s), QPS, p95, the errors the client saw, the server's
# peak Threads_connected (sampled every 0.2 s) and Max_used_connections (FLUSH STATUS before
# the run; both without the sampler's own connection), the proxy process's CPU seconds
# (utime+stime from /proc/PID/stat over the client's whole run, its logins included) per
# 1,000 queries (connections), its peak RSS (VmHWM; each proxy lives for one run), and the
# ratios to that cell's direct run. The machine's cores are shared by server, client and
# proxy: read the ratios, not the absolute figures.
#
# Prepared statements: sysbench's default, --db-ps-mode=auto, prepares each thread's
# statements on its connection once (COM_STMT_PREPARE) and then only executes them; disable
# sends every statement as text (COM_QUERY). Both run by default: a pool that pins a session
# at its first prepare holds one server connection per sysbench thread in auto mode, so past
# pool_size threads the others wait pool_max_wait and get 1040; disable shows the
# multiplexing itself.
#
# Usage: bench/pool.sh [SECONDS_PER_RUN]                       (default 10)
# Env:   BENCH_TESTS="oltp_point_select oltp_read_write"
#        BENCH_THREADS="32 128 512 1024"   BENCH_POOL_SIZES="16 32 64"
#        BENCH_PS_MODES="disable auto"     (sysbench --db-ps-mode: text protocol, and
#                                           server-side prepared statements)
#        BENCH_TARGETS="direct session transaction"  (transaction: one target per pool size)
#        BENCH_PARTS="sysbench connect"    BENCH_CONNECT_THREADS="1 8 32"
#        BENCH_CONNECT_SECS (default SECONDS_PER_RUN)
#        BENCH_TABLES=4 BENCH_ROWS=10000   BENCH_MAX_CONNECTIONS=1200
#        BENCH_THREAD_CACHE=256 (server thread_cache_size: MariaDB's default, made explicit)
#        BENCH_WORKERS=0 (proxy worker threads: one per core)
#        BENCH_PROXY_MAX_CONNECTIONS=4096  BENCH_PROXY_ARGS="--set pool_max_wait=10s ..."
#        BENCH_IGNORE_ERRORS=1213,1020,1205,1040 (sysbench counts these and retries the
#          transaction; 1040 is what a pooled session that waited pool_max_wait gets)
#        BENCH_DIRECT_PORT, BENCH_PROXY_PORT (default: free ports)
#        BENCH_SHOW="SHOW POOLS"  (admin console statements printed, as "#" lines, under each
#          pooled target's row, just before its proxy stops: where its sessions waited or
#          pinned; empty: none)
#        MR_BIN (the proxy build, e.g. a pool build); connect_rate is $MR_BUILD/connect_rate
#        BENCH_MR_BASE=/path/to/other/myrewrite: also runs that build with its default pool
#          setting, as "base" after "session", to compare pool = session with an older build
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

SECS=${1:-10}
TESTS=${BENCH_TESTS:-"oltp_point_select oltp_read_write"}
THREADS=${BENCH_THREADS:-"32 128 512 1024"}
POOL_SIZES=${BENCH_POOL_SIZES:-"16 32 64"}
PS_MODES=${BENCH_PS_MODES:-"disable auto"}
WANT=${BENCH_TARGETS:-"direct session transaction"}
PARTS=${BENCH_PARTS:-"sysbench connect"}
CONNECT_THREADS=${BENCH_CONNECT_THREADS:-"1 8 32"}
CONNECT_SECS=${BENCH_CONNECT_SECS:-$SECS}
TABLES=${BENCH_TABLES:-4}
ROWS=${BENCH_ROWS:-10000}
SERVER_MAX=${BENCH_MAX_CONNECTIONS:-1200}
THREAD_CACHE=${BENCH_THREAD_CACHE:-256}
WORKERS=${BENCH_WORKERS:-0}
PROXY_MAX=${BENCH_PROXY_MAX_CONNECTIONS:-4096}
IGNORE=${BENCH_IGNORE_ERRORS:-1213,1020,1205,1040}
CONNECT_RATE=${BENCH_CONNECT_RATE:-$MR_BUILD/connect_rate}
read -ra PROXY_ARGS <<<"${BENCH_PROXY_ARGS:-}"
SHOW=${BENCH_SHOW:-}
MR_TMP=$MR_ROOT/.tmp/bench-pool
MR_MARIADB_TLS=0
# sysbench prepares each statement once per table and thread: oltp_read_write at 512 threads
# on 4 tables passes the server's default max_prepared_stmt_count (16,382).
MR_MARIADB_ARGS="--max-connections=$SERVER_MAX --thread-cache-size=$THREAD_CACHE"
MR_MARIADB_ARGS+=" --max-prepared-stmt-count=1048576"
MR_MARIADB_ARGS+=" ${BENCH_MARIADB_ARGS:-}"
export MR_TMP MR_MARIADB_TLS MR_MARIADB_ARGS
rm -rf "$MR_TMP"
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

# 1,024 sysbench threads, and a proxy holding two sockets for each of them.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
(($(ulimit -n) >= 4 * 1024 + 64)) ||
    echo "# warning: ulimit -n is $(ulimit -n): too few descriptors for 1,024 threads" >&2
[[ " $PARTS " != *" connect "* || -x $CONNECT_RATE ]] ||
    { echo "# $CONNECT_RATE not built (cmake --build build --target connect_rate)" >&2; exit 1; }

D=${BENCH_DIRECT_PORT:-}
[[ -n $D ]] || mr_free_port D
P=${BENCH_PROXY_PORT:-}
[[ -n $P ]] || mr_free_port P
mr_free_port A # the pooled proxies' admin console, for BENCH_SHOW
mr_start_mariadb bench "$D" >/dev/null || exit 1
SOCK=$MR_TMP/bench/mariadbd.sock
CLK_TCK=$(getconf CLK_TCK)

# The targets, pool = transaction expanded to one per pool size.
TARGETS=()
for t in $WANT; do
    case $t in
    direct) TARGETS+=("$t") ;;
    session)
        TARGETS+=("$t")
        [[ -n ${BENCH_MR_BASE:-} ]] && TARGETS+=(base) ;;
    transaction) for n in $POOL_SIZES; do TARGETS+=("tx$n"); done ;;
    *) echo "# unknown target $t (direct, session, transaction)" >&2; exit 1 ;;
    esac
done

# start_target NAME: sets PORT and PID (empty for direct).
start_target() {
    PORT=$D PID=''
    [[ $1 == direct ]] && return 0
    local pool=(--set pool=session) bin=$MR_BIN
    [[ $1 == tx* ]] && pool=(--set pool=transaction --set "pool_size=${1#tx}"
        --set "admin_listen=$MR_HOST:$A" --set admin_password=benchpw)
    [[ $1 == base ]] && pool=() bin=$BENCH_MR_BASE
    MR_BIN=$bin MR_PROXY_LOG_LEVEL=warn mr_start_proxy "$1" "$P" "$D" --workers "$WORKERS" \
        --set "max_connections=$PROXY_MAX" "${pool[@]}" "${PROXY_ARGS[@]}" >/dev/null 2>&1 ||
        return 1
    PORT=$P PID=$MR_PROXY_PID
}
# stop_target NAME: sets STOP_NOTE when the proxy ended during the run or did not end
# cleanly on SIGTERM (a crash is a finding of the benchmark too).
stop_target() {
    local rc
    STOP_NOTE=''
    [[ $1 == direct ]] && return 0
    if ! mr_pid_alive "$PID"; then
        wait "$PID" 2>/dev/null
        rc=$?
        STOP_NOTE="#   $1: the proxy ended during the run (status $rc; $MR_TMP/$1.log)"
        rm -f "$MR_TMP/$1.pid"
        return 1
    fi
    mr_stop_proxy "$1" 2>/dev/null ||
        STOP_NOTE="#   $1: the proxy did not exit cleanly on SIGTERM ($MR_TMP/$1.log)"
}
# BENCH_SHOW's statements on a pooled target's console: each row on one comment line, as
# column=value pairs.
show_pool() { # show_pool NAME
    [[ $1 == tx* && -n $SHOW ]] && mr_pid_alive "$PID" || return 0
    mariadb --no-defaults --protocol=TCP -h "$MR_HOST" -P "$A" -u admin -pbenchpw -E \
        -e "$SHOW" 2>&1 |
        awk '/^\*+ [0-9]+\. row \*+$/ {if (row != "") print row; row = "#    "; next}
        row == "" {print "#     " $0; next} # an error, or text before the first row
        {sub(/^ +/, ""); k = $1; sub(/:$/, "", k); $1 = ""; sub(/^ /, ""); row = row " " k "=" $0}
        END {if (row != "") print row}'
}

root_status() { # root_status VARIABLE
    mr_mariadb_root bench -N -e "SHOW GLOBAL STATUS LIKE '$1'" 2>/dev/null | awk '{print $2}'
}
# Waits (up to 20 s) until the last run's connections have left the server.
drain() {
    local i n
    for ((i = 0; i < 200; i++)); do
        n=$(root_status Threads_connected)
        ((${n:-0} <= 1)) && return 0
        sleep 0.1
    done
    echo "# warning: $(root_status Threads_connected) connections still open on the server" >&2
}

# The server's peak Threads_connected while it runs, and Max_used_connections at the end,
# each without its own connection (one, over the unix socket as root). Its FLUSH STATUS sets
# Max_used_connections to the connections open then: its own, and none other after drain.
SAMPLER='
import signal, sys, time, pymysql
c = pymysql.connect(unix_socket=sys.argv[1], user="root", autocommit=True)
cur = c.cursor()
def status(name):
    cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    return int(cur.fetchone()[1])
cur.execute("FLUSH STATUS")
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
peak = 0
print("ready", flush=True)
while not stop:
    peak = max(peak, status("Threads_connected"))
    time.sleep(0.2)
print(peak - 1, status("Max_used_connections") - 1)
'

# A pooled target whose server had more connections at once than its pool_size (the sampler's
# own excluded): said under its row. Connections the proxy closed count until the server has
# torn them down, so a pool that closes and opens connections overshoots a little; far above
# pool_size, the build is not pooling.
check_pooled() { # check_pooled NAME
    [[ $1 == tx* && ${SRV_MAX:-0} -gt ${1#tx} ]] &&
        echo "#   $1: Max_used_connections $SRV_MAX is above pool_size ${1#tx}"
}
ticks() { [[ -n $1 ]] && awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# measure PID CMD...: runs CMD (its output in OUT, its status in RC) with the server
# sampled; sets SRV_PEAK, SRV_MAX, TICKS (the proxy PID's CPU ticks over the run; 0
# without one) and RSS (its peak resident MiB, VmHWM: each proxy lives for one run; -).
measure() {
    local pid=$1 t0 t1 sp i
    shift
    drain
    rm -f "$MR_TMP/sample.out" # the last run's "ready" must not count
    "$MR_PY" -c "$SAMPLER" "$SOCK" >"$MR_TMP/sample.out" 2>&1 &
    sp=$!
    for ((i = 0; i < 50; i++)); do
        grep -qs ready "$MR_TMP/sample.out" && break
        sleep 0.1
    done
    t0=$(ticks "$pid")
    OUT=$("$@" 2>&1)
    RC=$?
    t1=$(ticks "$pid")
    RSS=$(awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status" 2>/dev/null)
    RSS=${RSS:--}
    kill -TERM "$sp" 2>/dev/null
    wait "$sp"
    read -r SRV_PEAK SRV_MAX < <(tail -n 1 "$MR_TMP/sample.out")
    TICKS=$((t1 - t0))
}

sb() { # sb TEST PORT THREADS PS_MODE CMD
    timeout -k 5 $((SECS + 120)) sysbench "$1" --db-driver=mysql --mysql-host="$MR_HOST" \
        --mysql-port="$2" --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" \
        --mysql-db="$MR_DB" --tables="$TABLES" --table-size="$ROWS" --threads="$3" --time="$SECS" \
        --db-ps-mode="$4" --mysql-ignore-errors="$IGNORE" --percentile=95 \
        --report-interval=0 "$5"
}
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$line"; } # of connect_rate's line
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {if (a != "" && b > 0) printf "%.2f", a / b; else printf "-"}'
}
per_k() { # per_k TICKS COUNT: CPU seconds per 1,000
    awk -v t="$1" -v n="$2" -v hz="$CLK_TCK" \
        'BEGIN {if (n > 0) printf "%.4f", t / hz / n * 1000; else printf "-"}'
}

echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); proxy: $MR_BIN; server" \
    "max_connections $SERVER_MAX, thread_cache_size $THREAD_CACHE; $SECS s runs"

# The connect-rate loop's point select reads sbtest1 too.
echo "# preparing $TABLES sysbench tables of $ROWS rows" >&2
sysbench oltp_read_write --db-driver=mysql --mysql-host="$MR_HOST" --mysql-port="$D" \
    --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" --mysql-db="$MR_DB" \
    --tables="$TABLES" --table-size="$ROWS" --threads="$TABLES" prepare >/dev/null || exit 1

if [[ " $PARTS " == *" sysbench "* ]]; then
    printf '%-8s %5s | %8s %9s %5s | %7s %5s | %7s | %6s %8s | %8s %6s\n' target thr tps qps \
        tps_r p95_ms p95_r errors srv_pk max_used cpu_s/kq rss_mb
    for test in $TESTS; do
        for ps in $PS_MODES; do
            echo "# $test, --db-ps-mode=$ps"
            for thr in $THREADS; do
                dt='' dl=''
                for name in "${TARGETS[@]}"; do
                    if ! start_target "$name"; then
                        echo "# $name: the proxy did not start (see $MR_TMP/$name.log)"
                        continue
                    fi
                    measure "$PID" sb "$test" "$PORT" "$thr" "$ps" run
                    shown=$(show_pool "$name")
                    stop_target "$name"
                    t=$(awk '/transactions:/ {gsub(/\(/, "", $3); print $3}' <<<"$OUT")
                    q=$(awk '/queries:/ && !/performed/ {gsub(/\(/, "", $3); print $3}' <<<"$OUT")
                    nq=$(awk '/queries:/ && !/performed/ {print $2}' <<<"$OUT")
                    l=$(awk '/95th percentile:/ {print $3}' <<<"$OUT")
                    e=$(awk '/ignored errors:/ {print $3}' <<<"$OUT")
                    cpu=-
                    [[ -n $PID ]] && cpu=$(per_k "$TICKS" "${nq:-0}")
                    [[ $name == direct ]] && dt=$t dl=$l
                    if [[ -z $t ]]; then
                        printf '%-8s %5s | %8s %9s %5s | %7s %5s | %7s | %6s %8s | %8s %6s\n' \
                            "$name" "$thr" failed - - - - - "$SRV_PEAK" "$SRV_MAX" "$cpu" "$RSS"
                        fatal=$(grep -c 'unable to connect' <<<"$OUT")
                        why=$(grep -m1 -E 'FATAL: (error|mysql)' <<<"$OUT" ||
                            grep -m1 -E 'FATAL|error' <<<"$OUT")
                        ((RC == 124)) && why="no result within $((SECS + 120)) s (killed)"
                        echo "#   $name $thr: sysbench failed; $fatal of $thr threads could not" \
                            "connect; first: ${why:-no message}"
                        [[ -z $shown ]] || echo "$shown"
                        [[ -z $STOP_NOTE ]] || echo "$STOP_NOTE"
                        continue
                    fi
                    printf '%-8s %5s | %8.0f %9.0f %5s | %7s %5s | %7s | %6s %8s | %8s %6s\n' \
                        "$name" "$thr" "$t" "$q" "$(ratio "$t" "$dt")" "$l" "$(ratio "$l" "$dl")" \
                        "${e:-?}" "$SRV_PEAK" "$SRV_MAX" "$cpu" "$RSS"
                    check_pooled "$name"
                    [[ -z $shown ]] || echo "$shown"
                    [[ -z $STOP_NOTE ]] || echo "$STOP_NOTE"
                done
            done
        done
    done
fi

if [[ " $PARTS " == *" connect "* ]]; then
    echo "# connect rate: connect, one point select, disconnect; $CONNECT_SECS s runs"
    printf '%-8s %5s | %8s %5s | %7s %7s | %7s | %6s %8s | %8s %6s\n' target thr conn/s ratio \
        p50_ms p95_ms errors srv_pk max_used cpu_s/kc rss_mb
    for k in $CONNECT_THREADS; do
        dr=
        for name in "${TARGETS[@]}"; do
            if ! start_target "$name"; then
                echo "# $name: the proxy did not start (see $MR_TMP/$name.log)"
                continue
            fi
            measure "$PID" timeout -k 5 $((CONNECT_SECS + 120)) "$CONNECT_RATE" "$MR_HOST" \
                "$PORT" "$MR_USER" "$MR_PASSWORD" "$MR_DB" "$k" "$CONNECT_SECS" \
                "SELECT c FROM sbtest1 WHERE id=%d" "$ROWS"
            shown=$(show_pool "$name")
            stop_target "$name"
            line=$(grep -m1 '^conns=' <<<"$OUT")
            n=$(field conns) r=$(field rate) e=$(field errors)
            [[ $name == direct ]] && dr=$r
            cpu=-
            [[ -n $PID ]] && cpu=$(per_k "$TICKS" "${n:-0}")
            printf '%-8s %5s | %8s %5s | %7s %7s | %7s | %6s %8s | %8s %6s\n' "$name" "$k" \
                "${r:-failed}" "$(ratio "$r" "$dr")" "$(field p50_ms)" "$(field p95_ms)" \
                "${e:--}" "$SRV_PEAK" "$SRV_MAX" "$cpu" "$RSS"
            [[ -n $line ]] || echo "#   $name $k: ${OUT:0:300}"
            check_pooled "$name"
            [[ ${e:-0} == 0 ]] || echo "#   $name $k: first error: ${line#*first_error=}"
            [[ -z $shown ]] || echo "$shown"
            [[ -z $STOP_NOTE ]] || echo "$STOP_NOTE"
        done
    done
fi
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
