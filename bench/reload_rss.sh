#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# reload_rss.sh - the proxy's RSS across many SIGHUP reloads: a leak would keep it growing.
# A reload logs one line at log_level = warn here (the rule's table does not exist), and
# base/log.c's queue (a static ring of 4096 lines of 1 KiB) starts again at its first slot
# whenever it empties, so lines passing through it do not make more of it resident (before
# that, RSS grew by about 1 KiB per line until 4096 lines had been logged).
#
# Starts a throwaway mariadbd "reloadrss" and one proxy with a staged delayed rule, sends
# N SIGHUPs 10 ms apart and prints RSS and the log's line count every 1000.
# Usage: bench/reload_rss.sh [N]      (default 6000)
set -uo pipefail
. "$(dirname "$0")/../tests/lib/env.sh"
N=${1:-6000}
MR_TMP=$MR_ROOT/.tmp/reloadrss
export MR_TMP
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT
mr_free_port DB || mr_die "no free port"
mr_free_port P || mr_die "no free port"
mr_start_mariadb reloadrss "$DB" >/dev/null || mr_die "mariadbd did not start"
rd=$MR_TMP/rules
rm -rf "$rd" && mkdir -p "$rd"
cat >"$rd/10.rules" <<'RULES'
[delayed reload_rss]
table = test.reload_rss_counters
key = id
columns = hits
flush_interval = 1s
RULES
: >"$MR_TMP/proxy.log"
MR_PROXY_LOG_LEVEL=warn mr_start_proxy proxy "$P" "$DB" --rules "$rd" --workers 2 \
    --set proxy_user="$MR_USER" --set proxy_password="$MR_PASSWORD" || mr_die "no proxy"
pid=$MR_PROXY_PID
sleep 2
for ((i = 0; i <= N; i++)); do
    if ((i % 1000 == 0)); then
        printf '%6d SIGHUPs: rss %6d KiB, %5d log lines\n' "$i" \
            "$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")" "$(wc -l <"$MR_TMP/proxy.log")"
    fi
    kill -HUP "$pid"
    sleep 0.01
done
mr_stop_proxy proxy
echo "command: bench/reload_rss.sh $N"
