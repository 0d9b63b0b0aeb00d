#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tls_connect_ab.sh - new connections per second through two myrewrite builds in front of the
# same mariadbd, alternating rounds (bench/tls_connect.py against each, beside direct).
#
# Usage: bench/tls_connect_ab.sh BASE_BINARY [SECONDS] [ROUNDS]     (defaults 3 and 3)
# Both proxies have one worker and the server's self-signed certificate as tls_cert; the
# backend leg is TCP, so it is TLS too. MR_BIN is the other build (default build/myrewrite).
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"
BASE=${1:?usage: $0 BASE_BINARY [SECONDS] [ROUNDS]}
SECS=${2:-3}
ROUNDS=${3:-3}
MR_TMP=$MR_ROOT/.tmp/tls-ab
export MR_TMP
rm -rf "$MR_TMP"
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT
mr_free_port D
mr_free_port P
mr_free_port Q
mr_start_mariadb tlsab "$D" >/dev/null || exit 1
TLS_DIR=$MR_TMP/tlsab/tls
tls=(--workers 1 --log-level warn --set "tls_cert=$TLS_DIR/cert.pem" --set "tls_key=$TLS_DIR/key.pem")
MR_BIN=$BASE mr_start_proxy base "$P" "$D" "${tls[@]}" >/dev/null || exit 1
mr_start_proxy this "$Q" "$D" "${tls[@]}" >/dev/null || exit 1
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); base: $BASE; this: $MR_BIN"
for ((r = 1; r <= ROUNDS; r++)); do
    for which in base this; do
        port=$P
        [[ $which == this ]] && port=$Q
        echo "# round $r: proxy = $which"
        /usr/bin/python3 "$MR_ROOT/bench/tls_connect.py" --ca "$TLS_DIR/cert.pem" --direct "$D" \
            --proxy "$port" --seconds "$SECS" --procs 1
    done
done
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
