# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared environment for the integration tests. Source it from bash:
#   . "$(dirname "$0")/../lib/env.sh"
# It defines where things live, and helpers that start and stop throwaway
# mariadbd instances and proxies. Everything a shell starts through these
# helpers is recorded, so mr_cleanup (installed as an EXIT trap by callers)
# removes exactly what this shell started and nothing else.

# Always derived from this file, so a stale exported MR_ROOT cannot point the
# tests at another checkout.
MR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MR_BUILD=${MR_BUILD:-$MR_ROOT/build}
MR_BIN=${MR_BIN:-$MR_BUILD/myrewrite}
MR_TMP=${MR_TMP:-$MR_ROOT/.tmp/it}
MR_HOST=${MR_HOST:-127.0.0.1}
MR_DIRECT_PORT=${MR_DIRECT_PORT:-23306}
MR_PROXY_PORT=${MR_PROXY_PORT:-26033}
MR_USER=${MR_USER:-app}
MR_PASSWORD=${MR_PASSWORD:-apppw}
MR_DB=${MR_DB:-test}
MR_DIRECT_ONLY=${MR_DIRECT_ONLY:-0}
# The pyenv python on PATH lacks pymysql; the Debian one has it.
MR_PY=${MR_PY:-/usr/bin/python3}

# Direct mode: every "proxy" connection goes straight to mariadbd. This is how
# the tests themselves are validated before blaming the proxy.
if [[ $MR_DIRECT_ONLY == 1 ]]; then
    MR_PROXY_PORT=$MR_DIRECT_PORT
fi

# MR_IO=io_uring (or epoll): every proxy the tests start, from the shell
# helpers or from mrtest.py, runs with `--set io=$MR_IO`, through a wrapper
# that MR_BIN then names (MR_BIN_REAL is the binary itself).
if [[ -n ${MR_IO:-} && -z ${MR_BIN_REAL:-} ]]; then
    MR_BIN_REAL=$MR_BIN
    mkdir -p "$MR_TMP/io-$MR_IO"
    MR_BIN=$MR_TMP/io-$MR_IO/myrewrite
    printf '#!/bin/sh\nexec "%s" --set io=%s "$@"\n' "$MR_BIN_REAL" "$MR_IO" >"$MR_BIN"
    chmod +x "$MR_BIN"
    export MR_BIN_REAL MR_IO
fi

# Sanitizer builds: ASan and LeakSanitizer end a process with status 1 by
# default, which a proxy also uses for a bad command line. Every sanitizer
# ends one with MR_SAN_STATUS instead, so an exit with it is a sanitizer's
# finding wherever it is seen (mr_cleanup, mrtest.Proxy). Appended, so it
# wins over an exitcode in options given from outside.
MR_SAN_STATUS=66
mr__san_exitcode() {
    local var=$1 val=${!1:-}
    [[ :$val: == *:exitcode=$MR_SAN_STATUS: ]] && return
    printf -v "$var" '%s' "${val:+$val:}exitcode=$MR_SAN_STATUS"
    export "${var?}"
}
mr__san_exitcode ASAN_OPTIONS
mr__san_exitcode UBSAN_OPTIONS
mr__san_exitcode TSAN_OPTIONS

export MR_ROOT MR_BUILD MR_BIN MR_TMP MR_HOST MR_DIRECT_PORT MR_PROXY_PORT \
       MR_USER MR_PASSWORD MR_DB MR_DIRECT_ONLY MR_PY MR_SAN_STATUS

mkdir -p "$MR_TMP"

# PIDs started by this shell; mr_cleanup only touches these. The logs of
# those proxies, in the same order, and their size when each started.
MR__PROXY_PIDS=()
MR__PROXY_LOGS=()
MR__PROXY_LOG_OFFS=()
MR__MARIADB_NAMES=()

mr_log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
mr_die() { mr_log "FATAL: $*"; exit 1; }

mr_direct_only() { [[ $MR_DIRECT_ONLY == 1 ]]; }

# True if something is listening on 127.0.0.1:PORT. Uses ss rather than a
# probe connection so that the proxy never sees a half-made client.
mr_port_listening() {
    local port=$1
    [[ -n $(ss -Htln "sport = :$port" 2>/dev/null) ]]
}

# mr_free_port VAR: sets VAR to a loopback TCP port nothing listens on, picked
# by the kernel (bind to port 0), so two test runs on one machine do not
# collide. Ports already handed out by this shell are not repeated (hence a
# variable name rather than output: $(...) would run in a subshell).
MR__FREE_PORTS=" "
mr_free_port() {
    # Locals with names of their own: a caller's `port` must not be shadowed.
    local mr__var=$1 mr__port mr__try
    for ((mr__try = 0; mr__try < 100; mr__try++)); do
        mr__port=$("$MR_PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])') || return 1
        if [[ $MR__FREE_PORTS != *" $mr__port "* ]]; then
            MR__FREE_PORTS+="$mr__port "
            printf -v "$mr__var" '%s' "$mr__port"
            return 0
        fi
    done
    return 1
}

# True while any thread of PID runs. A zombie main thread is not enough: after
# SIGKILL, mariadbd's main thread is a zombie within a millisecond while other
# threads still finish their exit for a while, holding the listening socket
# and the datadir's locks, so a restart then finds the port taken.
mr_pid_alive() {
    local pid=$1 state tasks
    [[ -n $pid ]] || return 1
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ -n $state ]] || return 1
    [[ $state != Z ]] && return 0
    tasks=(/proc/"$pid"/task/*)
    ((${#tasks[@]} > 1))
}

# Wait up to SECS for PID to exit. Returns 0 once it is gone.
mr_wait_gone() {
    local pid=$1 secs=$2 i
    for ((i = 0; i < secs * 10; i++)); do
        mr_pid_alive "$pid" || return 0
        sleep 0.1
    done
    return 1
}

# mr_sanitizer_report FILE [OFFSET]: prints the first lines of the first
# sanitizer report (ASan, LeakSanitizer, TSan or UBSan; the same pattern as
# SAN_REPORT in tests/lib/mrtest.py) in FILE after its first OFFSET bytes,
# and returns 0 if there is one.
MR_SAN_REPORT='ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|SUMMARY: [A-Za-z]+Sanitizer|[0-9]: runtime error: '
mr_sanitizer_report() {
    local f=$1 off=${2:-0}
    [[ -f $f ]] && tail -c +$((off + 1)) "$f" | grep -q -E "$MR_SAN_REPORT" || return 1
    echo "    --- sanitizer report in $f (first 60 lines of it) ---"
    tail -c +$((off + 1)) "$f" | grep -m1 -A59 -E "$MR_SAN_REPORT" | sed 's/^/    | /'
}

# mr_file_size FILE: its size in bytes (0 if it does not exist).
mr_file_size() { stat -c %s "$1" 2>/dev/null || echo 0; }

# ---------------------------------------------------------------- checks

# Tests report each check as "ok - ..." or "not ok - ..." and call mr_done
# last; it exits non-zero if any check failed.
MR__FAILS=0
mr_ok() { echo "ok - $*"; }
mr_not_ok() { echo "not ok - $*"; MR__FAILS=$((MR__FAILS + 1)); }
# mr_eq DESC EXPECTED ACTUAL
mr_eq() {
    if [[ $2 == "$3" ]]; then
        mr_ok "$1"
    else
        mr_not_ok "$1"
        printf '   expected: %q\n   actual:   %q\n' "$2" "$3"
    fi
}
# mr_match DESC REGEX TEXT
mr_match() {
    if [[ $3 =~ $2 ]]; then
        mr_ok "$1"
    else
        mr_not_ok "$1"
        printf '   wanted /%s/ in: %s\n' "$2" "$3"
    fi
}
mr_done() {
    if ((MR__FAILS > 0)); then
        echo "$MR__FAILS check(s) failed"
        exit 1
    fi
    echo "all checks passed"
    exit 0
}

# ---------------------------------------------------------------- clients

# mariadb CLI against an arbitrary port, as the test user. --no-defaults keeps
# /etc/mysql/*.cnf of the host out of the picture.
mr_sql_port() {
    local port=$1; shift
    mariadb --no-defaults --protocol=TCP -h "$MR_HOST" -P "$port" \
        -u "$MR_USER" -p"$MR_PASSWORD" "$@"
}
mr_sql_direct() { mr_sql_port "$MR_DIRECT_PORT" "$@"; }
mr_sql_proxy() { mr_sql_port "$MR_PROXY_PORT" "$@"; }

# ---------------------------------------------------------------- mariadbd

mr__mariadb_dir() { echo "$MR_TMP/$1"; }

# Root access over the instance's private unix socket.
mr_mariadb_root() {
    local name=$1; shift
    mariadb --no-defaults -u root --socket="$(mr__mariadb_dir "$name")/mariadbd.sock" "$@"
}

mr__mariadb_pid() {
    local f
    f="$(mr__mariadb_dir "$1")/mariadbd.pid"
    [[ -s $f ]] && cat "$f"
}

# mr_start_mariadb NAME PORT
# Creates (once) a datadir under $MR_TMP/NAME, starts mariadbd on
# 127.0.0.1:PORT and creates the test database and users. Does nothing but the
# (idempotent) account setup if this instance already runs on that port.
# MR_MARIADB_TLS=0 starts it without TLS (its greeting does not offer it).
# MR_MARIADB_ARGS: further mariadbd options, after (so overriding) these.
mr_start_mariadb() {
    local name=$1 port=$2
    local dir data sock pid i tls_args=()
    dir=$(mr__mariadb_dir "$name")
    data=$dir/data
    sock=$dir/mariadbd.sock
    mkdir -p "$dir"

    pid=$(mr__mariadb_pid "$name")
    if mr_pid_alive "$pid" && mr_port_listening "$port"; then
        mr_log "mariadbd $name already running (pid $pid, port $port)"
        mr__mariadb_setup "$name"
        return
    fi
    if mr_port_listening "$port"; then
        mr_log "port $port is taken by something that is not mariadbd $name"
        return 1
    fi

    # mariadbd refuses to run as root unless told to; as anyone else the
    # option is unnecessary (and install-db rejects it).
    local as_user=()
    ((EUID == 0)) && as_user=(--user=root)

    # A temporary directory of the instance's own: in the shared /tmp, two test
    # runs initialising datadirs at the same moment clash on temporary tables.
    mkdir -p "$dir/tmp"

    if [[ ! -d $data/mysql ]]; then
        rm -rf "$data"
        mr_log "initialising datadir for $name"
        if ! mariadb-install-db --no-defaults --auth-root-authentication-method=normal \
                --skip-test-db --datadir="$data" --tmpdir="$dir/tmp" "${as_user[@]}" \
                >"$dir/install.log" 2>&1; then
            tail -n 20 "$dir/install.log" >&2
            return 1
        fi
    fi

    # A TLS-capable backend makes "the proxy masks TLS in the greeting"
    # observable: without masking, TLS-preferring clients would break.
    mr__mariadb_tls "$dir" || return 1
    if [[ ${MR_MARIADB_TLS:-1} != 0 ]]; then
        tls_args=(--ssl-cert="$dir/tls/cert.pem" --ssl-key="$dir/tls/key.pem"
                  --ssl-ca="$dir/tls/cert.pem")
    fi

    rm -f "$sock" "$dir/mariadbd.pid"
    # max_connections: the fault test opens 200 sessions at once.
    # innodb_log_file_size: room for the 64 MiB blob test in the redo log.
    # Launched from a subshell so it is not a job of this shell: no zombie to
    # reap and no "Killed" notice when a test SIGKILLs it on purpose.
    (mariadbd --no-defaults "${as_user[@]}" \
        --datadir="$data" --tmpdir="$dir/tmp" --port="$port" --bind-address="$MR_HOST" \
        --socket="$sock" --pid-file="$dir/mariadbd.pid" --log-error="$dir/mariadbd.err" \
        --skip-name-resolve --innodb-buffer-pool-size=256M --innodb-log-file-size=256M \
        --max-allowed-packet=1G --local-infile=1 --max-connections=1000 \
        "${tls_args[@]}" ${MR_MARIADB_ARGS:-} \
        </dev/null >>"$dir/mariadbd.out" 2>&1 &
     echo $! >"$dir/launch.pid")
    pid=$(cat "$dir/launch.pid")
    MR__MARIADB_NAMES+=("$name")

    # Ready means: the socket answers a ping and the TCP port listens.
    for ((i = 0; i < 300; i++)); do
        if ! mr_pid_alive "$pid"; then
            mr_log "mariadbd $name exited during startup"
            tail -n 30 "$dir/mariadbd.err" >&2
            return 1
        fi
        if mariadb-admin --no-defaults -u root --socket="$sock" ping >/dev/null 2>&1 \
                && mr_port_listening "$port"; then
            break
        fi
        sleep 0.1
    done
    if ((i == 300)); then
        mr_log "mariadbd $name not ready after 30 s"
        tail -n 30 "$dir/mariadbd.err" >&2
        return 1
    fi
    mr_log "mariadbd $name up (pid $pid, port $port)"
    mr__mariadb_setup "$name"
}

# Self-signed certificate for 127.0.0.1 that is also its own CA, so a client
# can verify it with --ssl-ca=$MR_TMP/NAME/tls/cert.pem.
mr__mariadb_tls() {
    local dir=$1
    [[ -s $dir/tls/cert.pem && -s $dir/tls/key.pem ]] && return 0
    mkdir -p "$dir/tls"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 \
        -subj "/CN=$MR_HOST" -addext "subjectAltName=IP:$MR_HOST" \
        -keyout "$dir/tls/key.pem" -out "$dir/tls/cert.pem" >"$dir/tls/openssl.log" 2>&1 \
        || { cat "$dir/tls/openssl.log" >&2; return 1; }
}

# Idempotent: database, ed25519 plugin, and the three test accounts.
mr__mariadb_setup() {
    local name=$1 have_ed
    have_ed=$(mr_mariadb_root "$name" -N -e \
        "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME='ed25519'") || return 1
    if [[ $have_ed == 0 ]]; then
        mr_mariadb_root "$name" -e "INSTALL SONAME 'auth_ed25519'" || return 1
    fi
    mr_mariadb_root "$name" <<'SQL' || return 1
CREATE DATABASE IF NOT EXISTS test;
CREATE OR REPLACE USER 'app'@'%' IDENTIFIED VIA mysql_native_password USING PASSWORD('apppw');
CREATE OR REPLACE USER 'ed'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('edpw');
CREATE OR REPLACE USER 'nopw'@'%';
GRANT ALL ON *.* TO 'app'@'%';
GRANT ALL ON *.* TO 'ed'@'%';
GRANT ALL ON *.* TO 'nopw'@'%';
SQL
}

# mr_stop_mariadb NAME: clean shutdown (SIGTERM), SIGKILL after 30 s.
mr_stop_mariadb() {
    local name=$1 pid
    pid=$(mr__mariadb_pid "$name")
    if ! mr_pid_alive "$pid"; then
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null
    if ! mr_wait_gone "$pid" 30; then
        mr_log "mariadbd $name ignored SIGTERM; killing"
        kill -KILL "$pid" 2>/dev/null
        mr_wait_gone "$pid" 10
    fi
    rm -f "$(mr__mariadb_dir "$name")/mariadbd.pid"
    return 0
}

# mr_kill_mariadb NAME: simulate a crash.
mr_kill_mariadb() {
    local name=$1 pid
    pid=$(mr__mariadb_pid "$name")
    if mr_pid_alive "$pid"; then
        kill -KILL "$pid"
        mr_wait_gone "$pid" 10
    fi
    rm -f "$(mr__mariadb_dir "$name")/mariadbd.pid"
    return 0
}

# ---------------------------------------------------------------- proxy

mr_proxy_pid() {
    [[ -s $MR_TMP/$1.pid ]] && cat "$MR_TMP/$1.pid"
}

# mr_start_proxy NAME LISTEN_PORT BACKEND_PORT [extra args...]
# Runs $MR_BIN in the background (log: $MR_TMP/NAME.log, pid: $MR_TMP/NAME.pid)
# and waits until it listens. Sets MR_PROXY_PID.
mr_start_proxy() {
    local name=$1 port=$2 bport=$3 pid i off
    shift 3
    [[ -x $MR_BIN ]] || { mr_log "proxy binary $MR_BIN not built"; return 1; }
    if mr_port_listening "$port"; then
        mr_log "port $port already in use; cannot start proxy $name"
        return 1
    fi
    off=$(mr_file_size "$MR_TMP/$name.log")
    # Run from the repo root so relative defaults (rules/) resolve the same way
    # whoever calls this; exec keeps $! the proxy's own pid.
    (cd "$MR_ROOT" && exec "$MR_BIN" --listen "$MR_HOST:$port" --backend "$MR_HOST:$bport" \
        --log-level "${MR_PROXY_LOG_LEVEL:-info}" "$@" \
        </dev/null >>"$MR_TMP/$name.log" 2>&1) &
    pid=$!
    echo "$pid" >"$MR_TMP/$name.pid"
    MR__PROXY_PIDS+=("$pid")
    MR__PROXY_LOGS+=("$MR_TMP/$name.log")
    MR__PROXY_LOG_OFFS+=("$off")
    for ((i = 0; i < 100; i++)); do
        if ! mr_pid_alive "$pid"; then
            mr_log "proxy $name exited during startup"
            tail -n 30 "$MR_TMP/$name.log" >&2
            return 1
        fi
        mr_port_listening "$port" && break
        sleep 0.1
    done
    if ((i == 100)); then
        mr_log "proxy $name not listening on $port after 10 s"
        return 1
    fi
    MR_PROXY_PID=$pid
    export MR_PROXY_PID
    mr_log "proxy $name up (pid $pid, port $port -> $bport)"
}

# mr_stop_proxy NAME: SIGTERM, wait up to 30 s, and fail unless it exited 0.
mr_stop_proxy() {
    local name=$1 pid rc
    pid=$(mr_proxy_pid "$name")
    [[ -n $pid ]] || { mr_log "proxy $name: no pid file"; return 1; }
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" 2>/dev/null
        rc=$?
        mr_log "proxy $name (pid $pid) was not running$( ((rc != 127)) && echo " (exit status $rc)")"
        rm -f "$MR_TMP/$name.pid"
        return 1
    fi
    kill -TERM "$pid" 2>/dev/null
    if ! mr_wait_gone "$pid" 30; then
        mr_log "proxy $name did not exit within 30 s of SIGTERM; killing"
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        rm -f "$MR_TMP/$name.pid"
        return 1
    fi
    rm -f "$MR_TMP/$name.pid"
    # Only a parent can learn the exit status; other shells trust the wait.
    if wait "$pid" 2>/dev/null; then
        rc=0
    else
        rc=$?
        # 127: not our child, so the status is unknown.
        if ((rc == 127)); then
            return 0
        fi
    fi
    if ((rc != 0)); then
        mr_log "proxy $name exited with status $rc after SIGTERM"
        return 1
    fi
    return 0
}

# ---------------------------------------------------------------- pool

# MR_POOL (session, the default, or transaction) and MR_POOL_SIZE: the pool
# setting of the proxy that MariaDB's suites run through (tests/mtr/compare.sh,
# t_client_test.sh), with a console of its own to show the pool afterwards.
MR_POOL_CONSOLE_PASSWORD=pool-console-pw

# mr_pool_args VAR CONSOLE_PORT: sets the array VAR to the proxy flags for
# MR_POOL and MR_POOL_SIZE and a console on CONSOLE_PORT.
mr_pool_args() {
    local -n mr__args=$1
    mr__args=(--set "pool=${MR_POOL:-session}")
    [[ -n ${MR_POOL_SIZE:-} ]] && mr__args+=(--set "pool_size=$MR_POOL_SIZE")
    mr__args+=(--set "admin_listen=$MR_HOST:$2" --set "admin_password=$MR_POOL_CONSOLE_PASSWORD")
}

# mr_pool_report CONSOLE_PORT: the console's SHOW POOLS and SHOW SERVERS, as
# "# " lines (the units per server connection show how much it was shared).
mr_pool_report() {
    local sql
    for sql in "SHOW POOLS" "SHOW SERVERS"; do
        echo "# $sql:"
        mariadb --no-defaults --protocol=TCP -h "$MR_HOST" -P "$1" -u admin \
            -p"$MR_POOL_CONSOLE_PASSWORD" --table -e "$sql" 2>&1 | sed 's/^/#   /'
    done
}

# ---------------------------------------------------------------- cleanup

# EXIT trap: stop what this shell started, proxies first, each with SIGTERM
# (SIGKILL after 30 s), so that LeakSanitizer runs in every one a test did not
# kill itself. A proxy that exits with MR_SAN_STATUS or left a sanitizer report
# in its log fails the test: the trap then makes the shell's exit status 1.
mr_cleanup() {
    local pid name i rc log san=0
    for i in "${!MR__PROXY_PIDS[@]}"; do
        pid=${MR__PROXY_PIDS[i]}
        if mr_pid_alive "$pid"; then
            kill -TERM "$pid" 2>/dev/null
            mr_wait_gone "$pid" 30 || kill -KILL "$pid" 2>/dev/null
        fi
        wait "$pid" 2>/dev/null
        rc=$?
        # a benchmark's relay listed by pid alone has no log here
        log=${MR__PROXY_LOGS[i]:-}
        if ((rc == MR_SAN_STATUS)) ||
            mr_sanitizer_report "$log" "${MR__PROXY_LOG_OFFS[i]:-0}"; then
            echo "not ok - proxy pid $pid (${log:-no log}) ended (status $rc) without a sanitizer finding"
            san=1
        fi
    done
    for name in "${MR__MARIADB_NAMES[@]}"; do
        mr_stop_mariadb "$name"
    done
    MR__PROXY_PIDS=()
    MR__PROXY_LOGS=()
    MR__PROXY_LOG_OFFS=()
    MR__MARIADB_NAMES=()
    ((san == 0)) || exit 1
}
