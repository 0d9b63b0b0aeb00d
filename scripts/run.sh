#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - install, build and start myrewrite on a fresh Debian 12 machine.
#
# With a backend or a configuration given, starts the proxy with them; any
# arguments go to myrewrite, e.g.
#   scripts/run.sh --backend 10.0.0.5:3306 --listen 0.0.0.0:6033
#   scripts/run.sh --config /etc/myrewrite/myrewrite.conf
#
# With neither, it is a demo of what the proxy is for. It starts a throwaway
# MariaDB on 127.0.0.1:3307 (datadir under .tmp/demo, user app / password
# apppw) and creates on it, once (re-runs reuse it):
#   - the schema demo of docker/demo/schema.sql: a counters table, a listing
#     of 10^6 rows with a secondary index and a queue table;
#   - the proxy's own account, myrewrite, with the privileges
#     doc/proxy-account.md lists, its password generated into .tmp/demo;
# then starts the proxy with the rules of docker/demo/rules/ (rules/ holds
# only disabled examples), the admin console on 127.0.0.1:6034 with a
# generated password, and /metrics on 127.0.0.1:9104, and prints a
# walkthrough to paste (also kept in .tmp/demo/walkthrough.txt).
#
# The demo's environment (defaults in brackets):
#   MR_RUN_DIR         where the demo keeps its files [.tmp/demo]
#   MR_RUN_DB_PORT     the throwaway MariaDB [3307]
#   MR_RUN_PROXY_PORT  the proxy [6033]
#   MR_RUN_ADMIN_PORT  the admin console [6034]
#   MR_RUN_HTTP_PORT   /metrics, /health, /ready [9104]
#   MR_RUN_DETACH=1    start the proxy in the background (pid and log in
#                      MR_RUN_DIR), print the walkthrough once it accepts
#                      clients, and return
#   MR_RUN_NO_BUILD=1  skip installing and building; run $MR_BIN [build/myrewrite]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [[ ${MR_RUN_NO_BUILD:-0} != 1 ]]; then
    scripts/install-deps.sh || exit 1
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
    cmake --build build -j"$(nproc)" --target myrewrite || exit 1
fi
bin=${MR_BIN:-$root/build/myrewrite}

args=("$@")
has_backend=0
for a in "$@"; do
    case $a in --backend | --backend=* | -b | --config | --config=* | -c) has_backend=1 ;; esac
done

if ((has_backend == 1)); then
    listen=127.0.0.1:6033
    for ((i = 0; i < ${#args[@]}; i++)); do
        [[ ${args[i]} == --listen || ${args[i]} == -l ]] && listen=${args[i + 1]:-$listen}
    done
    echo
    echo "myrewrite is starting; connect with:"
    echo "  mariadb -h ${listen%:*} -P ${listen##*:} -u <user> -p <database>"
    echo "Ctrl-C stops it."
    echo
    exec "$bin" "${args[@]}"
fi

. scripts/demo.sh
demo_main "$bin" "${args[@]}"
