#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# docker/demo/app.sh - the compose demo's application: it talks to MariaDB only
# through myrewrite (its sidecar, on 127.0.0.1:6033 in its own network
# namespace) and prints what the proxy did for it, every 20 s:
#   - 200 hot-counter increments as UPDATE DELAYED (docker/demo/rules, rule
#     counters), the counter before and after FLUSH DELAYED;
#   - a deep page of the 10^6-row listing (rule listing: a deferred join) and
#     the page after it (a keyset seek), with their times.
# Environment: MYREWRITE_HOST (127.0.0.1), MYREWRITE_PORT (6033), APP_USER
# (app), APP_PASSWORD (apppw), APP_ROUNDS (0: forever).
set -uo pipefail
db=(mariadb --host="${MYREWRITE_HOST:-127.0.0.1}" --port="${MYREWRITE_PORT:-6033}"
    --user="${APP_USER:-app}" --password="${APP_PASSWORD:-apppw}" --database=demo -N)
page="SELECT id, created, price FROM listing ORDER BY created"

now_us() { echo "${EPOCHREALTIME/./}"; }
ms_since() { echo $((($(now_us) - $1) / 1000)); }
counter() { "${db[@]}" -e "SELECT n FROM counters WHERE id = 1"; }

until "${db[@]}" -e "SELECT 1" >/dev/null 2>&1; do
    echo "app: waiting for myrewrite on ${MYREWRITE_HOST:-127.0.0.1}:${MYREWRITE_PORT:-6033}"
    sleep 1
done

round=0
while :; do
    before=$(counter)
    t0=$(now_us)
    for ((i = 0; i < 200; i++)); do
        echo "UPDATE DELAYED counters SET n = n + 1 WHERE id = 1;"
    done | "${db[@]}" || echo "app: UPDATE DELAYED failed"
    echo "app: 200 x UPDATE DELAYED counters ... WHERE id = 1 answered in $(ms_since "$t0") ms;" \
         "counter 1 is $(counter) (was $before) until the flush"
    "${db[@]}" -e "FLUSH DELAYED counters" >/dev/null || echo "app: FLUSH DELAYED failed"
    echo "app: after FLUSH DELAYED counter 1 is $(counter)"
    t0=$(now_us)
    last=$("${db[@]}" -e "$page LIMIT 900000, 10" | tail -n 1)
    echo "app: $page LIMIT 900000, 10 through myrewrite: $(ms_since "$t0") ms, last row: $last"
    t0=$(now_us)
    last=$("${db[@]}" -e "$page LIMIT 900010, 10" | tail -n 1)
    echo "app: the next page (LIMIT 900010, 10): $(ms_since "$t0") ms, last row: $last"
    round=$((round + 1))
    [[ ${APP_ROUNDS:-0} != 0 && $round -ge ${APP_ROUNDS:-0} ]] && break
    sleep 20
done
