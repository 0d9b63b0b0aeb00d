# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# demo.sh - the demo scripts/run.sh runs when no backend is given: a throwaway
# MariaDB with the schema of docker/demo/schema.sql, the proxy's own account,
# the proxy with docker/demo/rules/, its console and /metrics, and a printed
# walkthrough. Sourced by scripts/run.sh from the repository root; settings
# are run.sh's MR_RUN_* variables.

demo_dir=${MR_RUN_DIR:-$PWD/.tmp/demo}
demo_db_port=${MR_RUN_DB_PORT:-3307}
demo_proxy_port=${MR_RUN_PROXY_PORT:-6033}
demo_admin_port=${MR_RUN_ADMIN_PORT:-6034}
demo_http_port=${MR_RUN_HTTP_PORT:-9104}

# A secret kept in a file of the run dir (made once, readable by its owner
# only), so a re-run reuses the account and the console password.
demo_secret() {
    local f=$demo_dir/$1
    if [[ ! -s $f ]]; then
        (umask 077 && head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$f") || return 1
    fi
    cat "$f"
}

# The schema, unless a finished build is there already (demo.setup_done).
demo_schema() {
    local done
    done=$(mr_mariadb_root demo -N -e "SELECT COUNT(*) FROM information_schema.TABLES
        WHERE TABLE_SCHEMA = 'demo' AND TABLE_NAME = 'setup_done'") || return 1
    if [[ $done == 1 ]]; then
        echo "demo schema: already built (demo.counters, demo.listing, demo.jobs)"
        return 0
    fi
    echo "demo schema: building demo.counters, demo.listing (10^6 rows) and demo.jobs..."
    local t0=$SECONDS
    mr_mariadb_root demo <docker/demo/schema.sql || return 1
    echo "demo schema: built in $((SECONDS - t0)) s"
}

# The proxy's own account: the privileges doc/proxy-account.md lists, on the
# demo schema only. Its password is set at every run, so
# the account always matches the file.
demo_account() {
    local pw=$1
    mr_mariadb_root demo <<SQL
CREATE USER IF NOT EXISTS 'myrewrite'@'127.0.0.1';
ALTER USER 'myrewrite'@'127.0.0.1' IDENTIFIED BY '$pw';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON demo.* TO 'myrewrite'@'127.0.0.1';
GRANT PROCESS, CONNECTION ADMIN ON *.* TO 'myrewrite'@'127.0.0.1';
SQL
}

# The configuration: passwords in a file only its owner reads, not on the
# command line where ps shows them.
demo_config() {
    local proxy_pw=$1 admin_pw=$2 conf=$demo_dir/myrewrite.conf
    (umask 077 && cat >"$conf") <<EOF
# written by scripts/run.sh (the demo); every key: myrewrite --config-reference
[myrewrite]
listen = 127.0.0.1:$demo_proxy_port
backend = 127.0.0.1:$demo_db_port
rules_dir = $PWD/docker/demo/rules
proxy_user = myrewrite
proxy_password = $proxy_pw
admin_listen = 127.0.0.1:$demo_admin_port
admin_password = $admin_pw
http_listen = 127.0.0.1:$demo_http_port
log_level = info
EOF
    echo "$conf"
}

# The walkthrough, with this run's ports and console password.
demo_walkthrough() {
    local admin_pw=$1 page="SELECT id, created, price FROM listing ORDER BY created"
    cat <<EOF
myrewrite runs on 127.0.0.1:$demo_proxy_port in front of a throwaway MariaDB (127.0.0.1:$demo_db_port),
with the rules of docker/demo/rules/demo.rules. Paste these lines into a shell:

P="mariadb -h 127.0.0.1 -P $demo_proxy_port -u app -papppw demo"   # through the proxy
D="mariadb -h 127.0.0.1 -P $demo_db_port -u app -papppw demo"   # straight to MariaDB
A="mariadb -h 127.0.0.1 -P $demo_admin_port -u admin -p$admin_pw"   # the proxy's console

# 1. A hot counter: UPDATE DELAYED is answered at once; the row waits in
#    counters_delayed until the flusher adds it (every 30 s, or FLUSH DELAYED).
\$P -e "UPDATE DELAYED counters SET n = n + 1 WHERE id = 1"
\$P -e "SELECT n FROM counters WHERE id = 1"
\$A -t -e "SHOW DELAYED"
\$A -e "FLUSH DELAYED"
\$A -t -e "SHOW DELAYED"
\$P -e "SELECT n FROM counters WHERE id = 1"
#    A table no delayed rule covers gets the proxy's error, with the rule to add:
\$P -e "UPDATE DELAYED jobs SET owner = owner + 1 WHERE id = 1"

# 2. A deep page of 10^6 rows: direct, through the proxy (a deferred join on
#    the index), then the next page (a keyset seek from where this one ended).
#    The pages' last rows and their times:
\$D -vvv -e "$page LIMIT 900000, 10" | tail -n 5 | head -n 3
\$P -vvv -e "$page LIMIT 900000, 10" | tail -n 5 | head -n 3
\$P -vvv -e "$page LIMIT 900010, 10" | tail -n 5 | head -n 3
#    What the proxy sends instead (the console has no default schema):
\$A -e "EXPLAIN REWRITE '${page/listing/demo.listing} LIMIT 900000, 10'" | grep -E '^(action|text):'

# 3. A queue: a worker claims jobs and goes away; the proxy gives them back.
\$P -e "UPDATE jobs SET status = 'claimed', owner = CONNECTION_ID(), claimed_at = NOW(6) WHERE status = 'ready' LIMIT 5"
sleep 1; \$D -e "SELECT COUNT(*) AS still_claimed FROM jobs WHERE status = 'claimed'"

# 4. Metrics (every series is myrewrite_*):
curl -s http://127.0.0.1:$demo_http_port/metrics | grep -E '^myrewrite_(delayed_rows|paginate_(deferred|keyset_hits)|queue_rows_released)'
EOF
}

# Waits up to 10 s for the proxy (pid $1) to listen on its port and console.
demo_wait_up() {
    local pid=$1 i
    for ((i = 0; i < 100; i++)); do
        mr_pid_alive "$pid" || return 1
        mr_port_listening "$demo_proxy_port" && mr_port_listening "$demo_admin_port" && return 0
        sleep 0.1
    done
    return 1
}

demo_main() {
    local bin=$1
    shift
    export MR_TMP=$demo_dir MR_DIRECT_PORT=$demo_db_port
    . tests/lib/env.sh
    mr_start_mariadb demo "$demo_db_port" || return 1
    echo "throwaway MariaDB running on 127.0.0.1:$demo_db_port (datadir $demo_dir/demo)"
    echo "stop it later with: kill \$(cat $demo_dir/demo/mariadbd.pid)"
    demo_schema || return 1
    local proxy_pw admin_pw conf
    proxy_pw=$(demo_secret proxy_password) && admin_pw=$(demo_secret admin_password) || return 1
    demo_account "$proxy_pw" || return 1
    conf=$(demo_config "$proxy_pw" "$admin_pw") || return 1
    demo_walkthrough "$admin_pw" >"$demo_dir/walkthrough.txt"
    if [[ ${MR_RUN_DETACH:-0} == 1 ]]; then
        "$bin" --config "$conf" "$@" </dev/null >"$demo_dir/myrewrite.log" 2>&1 &
        local pid=$!
        echo "$pid" >"$demo_dir/myrewrite.pid"
        if ! demo_wait_up "$pid"; then
            echo "myrewrite did not start; its log:" >&2
            tail -n 20 "$demo_dir/myrewrite.log" >&2
            return 1
        fi
        echo "myrewrite running (pid $pid, log $demo_dir/myrewrite.log); stop it with: kill $pid"
        echo
        cat "$demo_dir/walkthrough.txt"
        return 0
    fi
    echo
    cat "$demo_dir/walkthrough.txt"
    echo
    echo "(also in $demo_dir/walkthrough.txt) Ctrl-C stops the proxy; its log follows."
    echo
    exec "$bin" --config "$conf" "$@"
}
