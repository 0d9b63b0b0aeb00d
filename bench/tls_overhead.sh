#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tls_overhead.sh - sysbench oltp_point_select over TLS: direct to mariadbd vs through
# myrewrite with TLS toward the client (tls_cert), side by side.
#
# Starts a throwaway mariadbd (tests/lib/env.sh; it has TLS with a self-signed certificate)
# and a proxy whose tls_cert/tls_key are that same certificate, loads one sysbench table,
# then for each thread count runs sysbench --mysql-ssl=on direct and through the proxy and
# prints TPS, p95 latency and the proxy/direct ratio, then the same pair in plaintext; last,
# new connections per second (bench/tls_connect.py: full handshakes, resumed, plaintext). The backend leg is printed too: with
# BENCH_BACKEND=tcp (default) the server offers TLS there, so a TLS client's leg to it is
# TLS as well (both legs encrypted); BENCH_BACKEND=unix relays over mariadbd's unix socket
# (TLS there too: the server offers it); BENCH_BACKEND=plain puts a second mariadbd without
# TLS behind the proxy, so only the client's leg is encrypted (direct stays the TLS server).
#
# Usage: bench/tls_overhead.sh [SECONDS_PER_RUN]            (default 10)
# Env:   BENCH_THREADS="1 8"  BENCH_ROWS=100000  BENCH_WORKERS=1 (proxy worker threads)
#        BENCH_BACKEND=tcp|unix|plain  BENCH_DIRECT_PORT=49390  BENCH_PROXY_PORT=49090
#        BENCH_CONNECT_SECONDS=5  BENCH_CONNECT_PROCS="1 4" (the new-connections part)
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

SECS=${1:-10}
THREADS=${BENCH_THREADS:-"1 8"}
ROWS=${BENCH_ROWS:-100000}
WORKERS=${BENCH_WORKERS:-1}
MR_TMP=$MR_ROOT/.tmp/tlsbench
MR_DIRECT_PORT=${BENCH_DIRECT_PORT:-49390}
MR_PROXY_PORT=${BENCH_PROXY_PORT:-49090}
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

mr_start_mariadb tlsbench "$MR_DIRECT_PORT" >/dev/null || exit 1
TLS_DIR=$MR_TMP/tlsbench/tls
backend_args=()
if [[ ${BENCH_BACKEND:-tcp} == unix ]]; then
    backend_args=(--backend "$MR_TMP/tlsbench/mariadbd.sock")
elif [[ ${BENCH_BACKEND:-tcp} == plain ]]; then
    # a second mariadbd without TLS behind the proxy: TLS on the client's leg only
    mr_free_port PLAIN_DB_PORT
    MR_MARIADB_TLS=0 mr_start_mariadb tlsbench_plain "$PLAIN_DB_PORT" >/dev/null || exit 1
    backend_args=(--backend "$MR_HOST:$PLAIN_DB_PORT")
fi
mr_start_proxy tlsbench "$MR_PROXY_PORT" "$MR_DIRECT_PORT" --workers "$WORKERS" \
    --log-level warn --set "tls_cert=$TLS_DIR/cert.pem" --set "tls_key=$TLS_DIR/key.pem" \
    "${backend_args[@]}" || exit 1

# sysbench --mysql-ssl=on reads cacert.pem, client-cert.pem and client-key.pem from its
# working directory; the server's self-signed certificate serves for all three.
SB_DIR=$MR_TMP/sysbench-tls
mkdir -p "$SB_DIR"
cp "$TLS_DIR/cert.pem" "$SB_DIR/cacert.pem"
cp "$TLS_DIR/cert.pem" "$SB_DIR/client-cert.pem"
cp "$TLS_DIR/key.pem" "$SB_DIR/client-key.pem"

sb() { # sb PORT THREADS CMD [SSL]
    (cd "$SB_DIR" && sysbench oltp_point_select --db-driver=mysql --mysql-host="$MR_HOST" --mysql-port="$1" \
        --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" --mysql-db="$MR_DB" \
        --mysql-ssl="${4:-on}" --tables=1 --table-size="$ROWS" --threads="$2" --time="$SECS" \
        --percentile=95 --report-interval=0 "$3")
}

leg() { # leg PORT: the client's cipher and the backend leg's, as one connection sees them
    mariadb --no-defaults -h "$MR_HOST" -P "$1" -u "$MR_USER" -p"$MR_PASSWORD" --ssl \
        --ssl-ca="$TLS_DIR/cert.pem" --ssl-verify-server-cert "$MR_DB" \
        -e "\\s" -e "SHOW SESSION STATUS LIKE 'Ssl_cipher'" 2>&1 |
        awk '/^SSL:/ {sub(/^SSL:[ \t]*/, ""); c=$0} /^Ssl_cipher/ {b=$2} \
             END {printf "client: %s; backend leg: %s\n", c, b ? b : "plain"}'
}

echo "# preparing sbtest1 with $ROWS rows" >&2
sb "$MR_DIRECT_PORT" 1 cleanup >/dev/null 2>&1 || true
sb "$MR_DIRECT_PORT" 1 prepare >/dev/null || exit 1
if [[ -n ${PLAIN_DB_PORT:-} ]]; then
    sb "$PLAIN_DB_PORT" 1 cleanup off >/dev/null 2>&1 || true
    sb "$PLAIN_DB_PORT" 1 prepare off >/dev/null || exit 1
fi
echo "# direct: $(leg "$MR_DIRECT_PORT")"
echo "# proxy:  $(leg "$MR_PROXY_PORT")"

# The same pair in plaintext, on the same machine at the same time, for reference: the
# proxy's cost without TLS.
printf '%-6s %4s | %10s %10s %6s | %8s %8s\n' client thr tps_direct tps_proxy ratio \
    p95d_ms p95p_ms
for thr in $THREADS; do
    for ssl in on off; do
        out=$(sb "$MR_DIRECT_PORT" "$thr" run "$ssl")
        d=$(awk '/transactions:/ {gsub(/\(/,"",$3); print $3}' <<<"$out")
        dl=$(awk '/95th percentile:/ {print $3}' <<<"$out")
        out=$(sb "$MR_PROXY_PORT" "$thr" run "$ssl")
        p=$(awk '/transactions:/ {gsub(/\(/,"",$3); print $3}' <<<"$out")
        pl=$(awk '/95th percentile:/ {print $3}' <<<"$out")
        errs=$(awk '/ignored errors:/ {print $3}' <<<"$out")
        [[ ${errs:-0} == 0 ]] || echo "# warning: $errs ignored errors through the proxy" >&2
        printf '%-6s %4s | %10.0f %10.0f %6.2f | %8s %8s\n' "$([[ $ssl == on ]] && echo TLS || echo plain)" \
            "$thr" "$d" "$p" "$(awk -v a="$p" -v b="$d" 'BEGIN {print b ? a / b : 0}')" "$dl" "$pl"
    done
done
echo "# load average while it ran: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
sb "$MR_DIRECT_PORT" 1 cleanup >/dev/null

# New connections per second: full TLS handshakes, resumed ones, plaintext (tls_connect.py).
echo "# new connections per second, ${BENCH_CONNECT_SECONDS:-5} s each (bench/tls_connect.py)"
/usr/bin/python3 "$MR_ROOT/bench/tls_connect.py" --ca "$TLS_DIR/cert.pem" \
    --direct "$MR_DIRECT_PORT" --proxy "$MR_PROXY_PORT" --seconds "${BENCH_CONNECT_SECONDS:-5}" \
    --procs "${BENCH_CONNECT_PROCS:-1 4}"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
