#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sysbench OLTP load through the proxy: 16 threads for 10 s of
# oltp_read_write (prepared statements), then a short text-protocol
# point-select run. Any error or reconnect is a failure; deadlocks (which
# InnoDB can raise direct too) are allowed up to 1% of the transactions.
set -uo pipefail
# shellcheck source=../lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

work=$MR_TMP/t_sysbench
mkdir -p "$work"
TABLES=4
ROWS=10000

sb() {
    local port=$1 test=$2; shift 2
    # uniform keys: the default "special" distribution piles threads onto a
    # few hot rows and makes deadlocks (ignored errors) likely even direct.
    sysbench "$test" --db-driver=mysql --mysql-host="$MR_HOST" --mysql-port="$port" \
        --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" --mysql-db="$MR_DB" \
        --tables=$TABLES --table-size=$ROWS --rand-type=uniform \
        --mysql-ignore-errors=1213,1205,1020 "$@"
}

# Pull "N" out of a line like "    ignored errors:   0      (0.00 per sec.)".
stat() { awk -v k="$1" '$0 ~ "^[[:space:]]*" k ":" { sub("^[[:space:]]*" k ":[[:space:]]*", ""); print $1; exit }' "$2"; }

check_run() {
    local label=$1 log=$2 rc=$3 n
    mr_eq "$label: sysbench exit status" 0 "$rc"
    n=$(stat transactions "$log")
    if [[ ${n:-0} -gt 0 ]]; then mr_ok "$label: $n transactions"; else mr_not_ok "$label: no transactions"; fi
    grep -E '^[[:space:]]+(queries|transactions):' "$log" | sed 's/^ */   /'
    # sysbench 1.0 prints "ignored errors:"; other versions print "errors:".
    if grep -qE '^[[:space:]]+errors:' "$log"; then
        mr_eq "$label: errors" 0 "$(stat errors "$log")"
    fi
    # Ignored errors are only the codes given above: a deadlock (1213), a
    # lock wait timeout (1205) or a changed record (1020) that InnoDB can
    # raise between two transactions direct as well; sysbench rolls back
    # and retries. Anything else the proxy could cause (a wrong answer, a
    # lost connection) is a FATAL line or a reconnect, checked below.
    local ignored
    ignored=$(stat 'ignored errors' "$log")
    if [[ ${ignored:-0} -le $(( ${n:-0} / 100 )) ]]; then
        mr_ok "$label: ignored errors (deadlocks and lock waits) $ignored, at most 1% of $n"
    else
        mr_not_ok "$label: $ignored ignored errors (deadlocks or lock waits) in $n transactions"
    fi
    mr_eq "$label: reconnects" 0 "$(stat reconnects "$log")"
    if grep -qiE 'FATAL|error [0-9]+|Lost connection' "$log"; then
        mr_not_ok "$label: sysbench logged errors"
        grep -iE 'FATAL|error [0-9]+|Lost connection' "$log" | head -n 10
    fi
}

sb "$MR_DIRECT_PORT" oltp_read_write cleanup >/dev/null 2>&1
sb "$MR_DIRECT_PORT" oltp_read_write prepare >"$work/prepare.log" 2>&1 \
    || { cat "$work/prepare.log"; mr_die "sysbench prepare failed"; }
mr_ok "prepared $TABLES tables x $ROWS rows (direct)"

sb "$MR_PROXY_PORT" oltp_read_write --threads=16 --time=10 --report-interval=0 run >"$work/rw.log" 2>&1
check_run "oltp_read_write via proxy" "$work/rw.log" $?

sb "$MR_PROXY_PORT" oltp_point_select --threads=16 --time=5 --db-ps-mode=disable run >"$work/ps.log" 2>&1
check_run "oltp_point_select (text protocol) via proxy" "$work/ps.log" $?

# read_write deletes and re-inserts the same ids, so every table must still
# hold exactly ROWS rows once all transactions are committed.
counts=$(for i in $(seq 1 $TABLES); do mr_sql_direct -N "$MR_DB" -e "SELECT COUNT(*) FROM sbtest$i"; done | paste -sd' ')
mr_eq "row counts intact after the run" "$(printf "$ROWS %.0s" $(seq 1 $TABLES) | sed 's/ $//')" "$counts"

sb "$MR_DIRECT_PORT" oltp_read_write cleanup >"$work/cleanup.log" 2>&1
mr_eq "sysbench cleanup" 0 "$?"
mr_done
