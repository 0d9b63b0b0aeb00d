#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SIGTERM with a statement in flight: the statement completes normally, the
# proxy then exits 0, and an idle session does not hold the shutdown up.
# Needs its own proxy (a free port, backend = main mariadbd); skipped (77) in
# direct mode, where there is no proxy to signal.
set -uo pipefail
# shellcheck source=../lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
trap mr_cleanup EXIT

if mr_direct_only; then
    echo "skip: direct mode has no proxy to send SIGTERM to"
    exit 77
fi

mr_free_port PORT || mr_die "no free port"
work=$MR_TMP/t_sigterm
rm -rf "$work"
mkdir -p "$work"
: >"$MR_TMP/term.log"
mr_start_proxy term "$PORT" "$MR_DIRECT_PORT" || mr_die "cannot start proxy term"
pid=$(mr_proxy_pid term)

cli() { mariadb --no-defaults --protocol=TCP -h "$MR_HOST" -P "$PORT" -u "$MR_USER" -p"$MR_PASSWORD" "$@"; }

# An idle session: logged in, reading statements from a fifo that this shell
# holds open and never writes to.
mkfifo "$work/idle.fifo"
cli -N "$MR_DB" <"$work/idle.fifo" >"$work/idle.out" 2>&1 &
idle_pid=$!
exec 3>"$work/idle.fifo"
# The in-flight statement, tagged so it can be found in the processlist.
# --comments: the CLI strips comments by default.
cli -N --comments -e "SELECT /* mr_sigterm */ SLEEP(3), 'finished'" >"$work/busy.out" 2>&1 &
busy_pid=$!

# Wait until the backend is actually executing it.
for ((i = 0; i < 50; i++)); do
    n=$(mr_sql_direct -N -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST
                             WHERE INFO LIKE '%mr_sigterm%' AND INFO NOT LIKE '%PROCESSLIST%'")
    [[ $n == 1 ]] && break
    sleep 0.1
done
mr_eq "statement is running on the backend" 1 "$n"

start=$SECONDS
kill -TERM "$pid"
wait "$busy_pid"
busy_rc=$?
mr_eq "in-flight statement completed after SIGTERM" $'0\tfinished' "$(cat "$work/busy.out")"
mr_eq "its client exited 0" 0 "$busy_rc"

# The proxy should be gone soon after the statement ended; the idle session
# must not keep it alive.
if mr_wait_gone "$pid" 10; then
    mr_ok "proxy exited $((SECONDS - start)) s after SIGTERM"
else
    mr_not_ok "proxy still running $((SECONDS - start)) s after SIGTERM"
fi
wait "$pid"
rc=$?
mr_eq "proxy exit status after SIGTERM" 0 "$rc"
rm -f "$MR_TMP/term.pid"

if mr_port_listening "$PORT"; then
    mr_not_ok "port $PORT still listening after exit"
else
    mr_ok "listener closed"
fi
exec 3>&-   # EOF for the idle client
wait "$idle_pid" 2>/dev/null
echo "   proxy log, last lines:"
tail -n 5 "$MR_TMP/term.log" | sed 's/^/   | /'
mr_done
