#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Container health check: GET /health from myrewrite's HTTP endpoint and
# succeed on a 200 answer. Needs only bash (its /dev/tcp), so the slim
# runtime image carries no HTTP client.
#   healthcheck.sh [HOST:PORT]   default: $MYREWRITE_HTTP or 127.0.0.1:9104
# Exit 0: healthy; 1: no answer or another status.
set -u
addr=${1:-${MYREWRITE_HTTP:-127.0.0.1:9104}}
host=${addr%:*}
port=${addr##*:}
{ exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null || { echo "unhealthy: nothing on $addr"; exit 1; }
printf 'GET /health HTTP/1.0\r\nHost: %s\r\n\r\n' "$addr" >&3
IFS= read -r -t 2 status <&3 || { echo "unhealthy: no answer from $addr"; exit 1; }
exec 3<&-
if [[ $status == *" 200 "* ]]; then
    exit 0
fi
echo "unhealthy: ${status%$'\r'}"
exit 1
