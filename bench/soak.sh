#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# soak.sh - a long run of mixed load through one proxy, to show that its memory, descriptors
# and threads stay flat and that UPDATE DELAYED stays exact across reloads and backend
# restarts (not in CI: it runs for many minutes).
#
# Starts a throwaway mariadbd "soak" and one proxy (proxy_user set) with four rules:
#   [delayed soak_staged]  test.counters,  staged mode, flush_interval 1s
#   [delayed soak_memory]  test.mcounters, mode = memory, flush_interval 1s
#   [paginate soak_pages]  test.pbench, keyset, threshold 1000
#   [queue soak_queue]     test.q (bench/queue_claims.py's table), timeout 10m
# and runs, each in a loop of short runs so that it goes on after a backend restart:
#   sysbench oltp_read_write (4 threads, prepared statements)
#   build/delayed_load on counters and on mcounters (8 connections each, UPDATE DELAYED)
#   bench/queue_load.c in claim mode (4 threads; the table is refilled when it runs dry)
#   deep pages: SELECT ... ORDER BY id LIMIT off, 20 with off up to 19000, one client
# A SIGHUP (rule reload) goes to the proxy every 10 s and mariadbd is restarted (SIGTERM,
# start again) every 5 minutes. Every 10 s the proxy's RSS (VmRSS), open descriptors
# (/proc/PID/fd) and threads (/proc/PID/status) are sampled and printed as a row.
#
# At the end: each of the three is "flat" when the mean of its samples in the last 5
# minutes is within 5 % of the mean of its samples in the 5 minutes after warm-up (the first
# 2 minutes); and the counters are compared with the acknowledged UPDATE DELAYEDs after a
# FLUSH DELAYED: staged mode must be exact, but for the statements in flight when a restart
# cut their connection (the client got an error, not an OK, and the server may or may not
# have applied them; delayed_load counts them as lost): the sum must lie between the
# acknowledged count and that plus the lost ones.
#
# Usage: bench/soak.sh [MINUTES]      (default 30)
# Env:   SOAK_RESTART_S=300 SOAK_HUP_S=10 SOAK_SAMPLE_S=10 SOAK_WARMUP_S=120
set -uo pipefail
. "$(dirname "$0")/../tests/lib/env.sh"

COMMAND=$(printf '%q ' "$0" "$@")
MINUTES=${1:-30}
DURATION=$((MINUTES * 60))
RESTART_S=${SOAK_RESTART_S:-300}
HUP_S=${SOAK_HUP_S:-10}
SAMPLE_S=${SOAK_SAMPLE_S:-10}
WARMUP_S=${SOAK_WARMUP_S:-120}
HOT=100
MR_TMP=$MR_ROOT/.tmp/soak
export MR_TMP
mkdir -p "$MR_TMP"
mr_free_port MR_DIRECT_PORT || mr_die "no free port"
mr_free_port MR_PROXY_PORT || mr_die "no free port"
export MR_DIRECT_PORT MR_PROXY_PORT
LOADS=()
# each load's runs end by END on their own; on an early exit its loop is stopped
stop_loads() {
    local p
    for p in "${LOADS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    LOADS=()
}
trap 'stop_loads; mr_cleanup' EXIT

LOADGEN=$MR_BUILD/delayed_load
[[ -x $LOADGEN ]] || mr_die "$LOADGEN not built (cmake --build build)"
QGEN=$MR_TMP/queue_load
# shellcheck disable=SC2046
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $(mariadb_config --cflags) \
    "$MR_ROOT/bench/queue_load.c" -o "$QGEN" $(mariadb_config --libs) -lpthread \
    || mr_die "cannot build the queue load generator"

RULES=$MR_TMP/rules
rm -rf "$RULES" && mkdir -p "$RULES"
cat >"$RULES/10-soak.rules" <<'RULES'
[delayed soak_staged]
table = test.counters
key = id
columns = hits
flush_interval = 1s

[delayed soak_memory]
table = test.mcounters
key = id
columns = hits
mode = memory
flush_interval = 1s

[paginate soak_pages]
table = test.pbench
key = id
threshold = 1000
strategy = keyset

[queue soak_queue]
table = test.q
owner_column = owner
status_column = status
claimed_value = claimed
unclaimed_value = unsent
claimed_at_column = claimed_at
timeout = 10m
skip_locked = yes
RULES
"$MR_BIN" --rules "$RULES" --check >&2 || mr_die "the soak rules do not load"

mr_start_mariadb soak "$MR_DIRECT_PORT" >/dev/null || mr_die "mariadbd soak did not start"
mr_sql_direct test <<SQL || mr_die "table setup failed"
CREATE OR REPLACE TABLE counters (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0);
CREATE OR REPLACE TABLE mcounters (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0);
INSERT INTO counters (id) SELECT seq FROM seq_1_to_$HOT;
INSERT INTO mcounters (id) SELECT seq FROM seq_1_to_$HOT;
CREATE OR REPLACE TABLE pbench (id INT PRIMARY KEY, k INT NOT NULL, pad VARCHAR(100) NOT NULL);
INSERT INTO pbench SELECT seq, seq * 7919 % 1000003, REPEAT('p', 100) FROM seq_1_to_20000;
CREATE OR REPLACE TABLE q (
    id INT UNSIGNED NOT NULL PRIMARY KEY,
    status ENUM('unsent','claimed','sent') NOT NULL DEFAULT 'unsent',
    owner INT UNSIGNED NOT NULL DEFAULT 0,
    claimed_at DATETIME(6) NULL,
    payload VARCHAR(100),
    KEY owner_status (owner, status), KEY status (status)) ENGINE=InnoDB;
INSERT INTO q (id, payload) SELECT seq, CONCAT('message ', seq) FROM seq_1_to_100000;
SQL
sb() {
    sysbench oltp_read_write --db-driver=mysql --mysql-host="$MR_HOST" --mysql-port="$1" \
        --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" --mysql-db="$MR_DB" \
        --tables=4 --table-size=10000 --rand-type=uniform "${@:2}"
}
sb "$MR_DIRECT_PORT" cleanup >/dev/null 2>&1
sb "$MR_DIRECT_PORT" prepare >"$MR_TMP/sb_prepare.log" 2>&1 || mr_die "sysbench prepare failed"

: >"$MR_TMP/soak_proxy.log"
mr_start_proxy soak_proxy "$MR_PROXY_PORT" "$MR_DIRECT_PORT" --rules "$RULES" --workers 2 \
    --set proxy_user="$MR_USER" --set proxy_password="$MR_PASSWORD" \
    || mr_die "the proxy did not start"
PID=$MR_PROXY_PID
END=$((SECONDS + DURATION))

# ---- the loads: each a loop of short runs until END ----------------------------------
loop_sysbench() {
    while ((SECONDS < END)); do
        sb "$MR_PROXY_PORT" --threads=4 --time=$((END - SECONDS < 60 ? END - SECONDS + 1 : 60)) \
            --mysql-ignore-errors=all --report-interval=0 run >>"$MR_TMP/sb_run.log" 2>&1
        sleep 1
    done
}
# one line per run of delayed_load: acks=... lost=... in $MR_TMP/TABLE.acks
loop_delayed() {
    local table=$1
    while ((SECONDS < END)); do
        "$LOADGEN" "$MR_HOST" "$MR_PROXY_PORT" "$MR_USER" "$MR_PASSWORD" "$MR_DB" 8 1 \
            $((END - SECONDS < 20 ? END - SECONDS + 1 : 20)) "$HOT" \
            "UPDATE DELAYED $table SET hits = hits + 1 WHERE id = %d" >>"$MR_TMP/$table.acks" \
            2>>"$MR_TMP/$table.err"
        sleep 1
    done
}
loop_queue() {
    while ((SECONDS < END)); do
        "$QGEN" "$MR_HOST" "$MR_PROXY_PORT" "$MR_USER" "$MR_PASSWORD" "$MR_DB" claim 4 20 rc 10 \
            >>"$MR_TMP/queue.log" 2>&1
        mr_sql_direct test -e "UPDATE q SET status='unsent', owner=0, claimed_at=NULL
            WHERE status='sent'" 2>/dev/null
        sleep 1
    done
}
loop_pages() {
    while ((SECONDS < END)); do
        mr_sql_proxy test -N -e "SELECT id, k FROM pbench ORDER BY id
            LIMIT $((RANDOM % 19000)), 20" >/dev/null 2>>"$MR_TMP/pages.err"
        sleep 0.2
    done
}
: >"$MR_TMP/counters.acks"; : >"$MR_TMP/mcounters.acks"; : >"$MR_TMP/sb_run.log"
: >"$MR_TMP/queue.log"; : >"$MR_TMP/pages.err"
loop_sysbench & LOADS+=($!)
loop_delayed counters & LOADS+=($!)
loop_delayed mcounters & LOADS+=($!)
loop_queue & LOADS+=($!)
loop_pages & LOADS+=($!)

# ---- the driver: samples, SIGHUPs, restarts ------------------------------------------
sample() {
    local rss fds thr
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status")
    thr=$(awk '/^Threads:/ {print $2}' "/proc/$PID/status")
    fds=$(find "/proc/$PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    printf '%6d %10d %6d %8d\n' "$1" "$rss" "$fds" "$thr" | tee -a "$MR_TMP/samples"
}
: >"$MR_TMP/samples"
printf '%6s %10s %6s %8s\n' "t_s" "rss_kib" "fds" "threads"
start=$SECONDS next_hup=$((SECONDS + HUP_S)) next_restart=$((SECONDS + RESTART_S))
next_sample=$SECONDS restarts=0 hups=0
while ((SECONDS < END)); do
    mr_pid_alive "$PID" || mr_die "the proxy died (see $MR_TMP/soak_proxy.log)"
    if ((SECONDS >= next_sample)); then
        sample $((SECONDS - start))
        next_sample=$((next_sample + SAMPLE_S))
    fi
    if ((SECONDS >= next_hup)); then
        kill -HUP "$PID" && hups=$((hups + 1))
        next_hup=$((next_hup + HUP_S))
    fi
    if ((SECONDS >= next_restart)); then
        mr_log "restarting mariadbd"
        mr_stop_mariadb soak
        mr_start_mariadb soak "$MR_DIRECT_PORT" >/dev/null || mr_die "mariadbd did not restart"
        restarts=$((restarts + 1))
        next_restart=$((next_restart + RESTART_S))
    fi
    sleep 1
done
wait "${LOADS[@]}"
LOADS=()
sample $((SECONDS - start))

# ---- verdicts ----------------------------------------------------------------------------
echo
echo "# $hups SIGHUPs, $restarts backend restarts in $MINUTES min"
awk -v w="$WARMUP_S" -v total="$DURATION" '
    { t[NR] = $1; v[1, NR] = $2; v[2, NR] = $3; v[3, NR] = $4 }
    END {
        split("rss fds threads", name, " ")
        for (c = 1; c <= 3; c++) {
            a = 0; na = 0; b = 0; nb = 0
            for (i = 1; i <= NR; i++) {
                if (t[i] >= w && t[i] < w + 300) { a += v[c, i]; na++ }
                if (t[i] >= total - 300) { b += v[c, i]; nb++ }
            }
            if (!na || !nb) { printf "# %s: too few samples\n", name[c]; continue }
            a /= na; b /= nb
            d = a ? (b - a) * 100 / a : 0
            printf "# %-7s after warm-up %.0f, last 5 min %.0f: %+.1f %% -> %s\n", name[c], a,
                   b, d, (d <= 5 && d >= -5) ? "flat" : "NOT FLAT"
        }
    }' "$MR_TMP/samples"

sum_acks() { awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2] } }
    END { printf "%d %d\n", s["acks"], s["lost"] }' "$1"; }
# the flushers catch up after the last restart; FLUSH DELAYED waits for the round
for _ in 1 2 3; do mr_sql_proxy test -e "FLUSH DELAYED" >/dev/null 2>&1 && break; sleep 2; done
rc=0
for table in counters mcounters; do
    read -r acks lost < <(sum_acks "$MR_TMP/$table.acks")
    total=$(mr_sql_direct test -N -e "SELECT SUM(hits) FROM $table")
    if ((total == acks)); then
        verdict=exact
    elif ((total > acks && total <= acks + lost)); then
        verdict="exact but for $((total - acks)) of the $lost in flight when a restart cut them"
    else
        verdict="WRONG by $((total - acks))"
        [[ $table == counters ]] && rc=1
    fi
    echo "# DELAYED $table ($([[ $table == counters ]] && echo staged || echo memory)):" \
        "$acks acknowledged, $lost lost in flight, sum $total: $verdict"
done
grep -c 'keys held in memory\|are lost\|dropped' "$MR_TMP/soak_proxy.log" \
    | sed 's/^/# memory-mode loss lines in the proxy log: /'
echo "# sysbench runs: $(grep -c '^SQL statistics' "$MR_TMP/sb_run.log")," \
    "transactions $(awk '/transactions:/ {s += $2} END {print s + 0}' "$MR_TMP/sb_run.log")"
echo "# queue runs: $(grep -c . "$MR_TMP/queue.log") lines; deep page errors:" \
    "$(grep -c . "$MR_TMP/pages.err")"
mr_stop_proxy soak_proxy || rc=1
echo "command: ${COMMAND% }"
exit $rc
