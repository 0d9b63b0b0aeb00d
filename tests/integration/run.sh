#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integration test runner.
#
#   tests/integration/run.sh [FILTER]
#
# Starts mariadbd "main" (port $MR_DIRECT_PORT) and proxy "main"
# ($MR_PROXY_PORT -> main), then runs every tests/integration/t_*.sh,
# t_*.py and, when built, $MR_BUILD/tests/integration/mr_client_test, each
# under a timeout with its output in $MR_TMP/logs/NAME.log. FILTER (an
# extended regex such as "t_rules|t_faults") limits the run to matching names.
#
# MR_DIRECT_ONLY=1 starts no proxy and points the "proxy" port at mariadbd:
# this validates the tests themselves, which must all pass that way.
# MR_BUILD picks another build tree; MR_PROXY_ARGS adds flags to the proxy;
# MR_PROXY_LOG_LEVEL sets its log level (default info).
#
# A test exits 0 for pass, 77 for skip (its last line says which component
# is absent), anything else for failure. A test also fails when a log its
# processes wrote under $MR_TMP during it, its own output, or what the shared
# proxy logged meanwhile holds a sanitizer report. The last line is
# "integration: N passed, M failed, K skipped"; the exit status is non-zero
# when anything failed or no test matched FILTER.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/env.sh
. "$here/../lib/env.sh"
trap mr_cleanup EXIT

filter=${1:-}
logs=$MR_TMP/logs
rm -rf "$logs"
mkdir -p "$logs"
# Rule directories are loaded whole: a file left by an older run of a test
# would be loaded beside the one the test writes now. Every test's rules
# directory has "rules" in its name.
rm -rf "${MR_TMP:?}"/*rules*

passed=0
failed=0
skipped=0
ran=0
failed_names=()
skip_lines=()

# Per-test time limits in seconds; generous, so a limit hit means a hang.
limit_for() {
    case $1 in
        t_slowreader*) echo 180 ;;
        t_sysbench*) echo 180 ;;
        t_faults*) echo 240 ;;
        t_client_test*|t_pool_client_test*) echo 480 ;;
        t_fault_matrix*) echo 120 ;;  # it takes about 30 s; its budget in CI is 90
        t_image*) echo 600 ;;
        *) echo 300 ;;
    esac
}

proxy_log_tail() {
    mr_direct_only && return
    echo "    --- proxy main log (last 20 lines) ---"
    tail -n 20 "$MR_TMP/main.log" 2>/dev/null | sed 's/^/    | /'
}

# sanitizer_reports MAIN_OFFSET: prints the sanitizer reports the test's
# processes left and returns 0 if there is any: in the logs under $MR_TMP
# written since the marker touched before the test (its own proxies, clients
# and stand-ins), in its output, and in what the shared proxy logged after
# MAIN_OFFSET bytes.
sanitizer_reports() {
    local f found=1
    while IFS= read -r -d '' f; do
        mr_sanitizer_report "$f" && found=0
    done < <(find "$MR_TMP" -name '*.log' -newer "$MR_TMP/.test-start" -not -path "$logs/*" -print0)
    mr_sanitizer_report "$log" && found=0
    if ! mr_direct_only; then
        mr_sanitizer_report "$MR_TMP/main.log" "$1" && found=0
    fi
    return $found
}

# MR_PROXY_ARGS: extra flags for the shared proxy, e.g. "--workers 4".
start_main_proxy() {
    mr_direct_only && return 0
    # shellcheck disable=SC2086
    mr_start_proxy main "$MR_PROXY_PORT" "$MR_DIRECT_PORT" ${MR_PROXY_ARGS:-}
}

mr_start_mariadb main "$MR_DIRECT_PORT" || mr_die "cannot start mariadbd main"
if mr_direct_only; then
    echo "direct mode: tests talk to mariadbd on $MR_DIRECT_PORT, no proxy"
else
    [[ -x $MR_BIN ]] || mr_die "$MR_BIN not found; build first (cmake --build build)"
    rm -f "$MR_TMP/main.log"
    start_main_proxy || mr_die "cannot start proxy main"
fi

# Collect tests: scripts in name order, then the C client test if built.
tests=()
for f in "$here"/t_*.sh "$here"/t_*.py; do
    [[ -e $f ]] && tests+=("$f")
done
mapfile -t tests < <(printf '%s\n' "${tests[@]}" | sort)
if [[ -x $MR_BUILD/tests/integration/mr_client_test ]]; then
    tests+=("$MR_BUILD/tests/integration/mr_client_test")
fi

for path in "${tests[@]}"; do
    file=$(basename "$path")
    name=${file%.*}
    [[ -n $filter && ! $name =~ $filter ]] && continue
    case $file in
        *.py) cmd=("$MR_PY" "$path") ;;
        *.sh) cmd=(bash "$path") ;;
        *) cmd=("$path") ;;
    esac
    log=$logs/$name.log
    limit=$(limit_for "$name")
    start=$(date +%s.%N)
    main_off=$(mr_file_size "$MR_TMP/main.log")
    touch "$MR_TMP/.test-start"
    # Own process group via timeout; --kill-after covers tests that ignore TERM.
    timeout --kill-after=10 "$limit" "${cmd[@]}" </dev/null >"$log" 2>&1
    rc=$?
    ran=$((ran + 1))
    secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

    # A test that killed the shared proxy fails, and the proxy is restarted
    # so the remaining tests still say something useful.
    proxy_died=0
    if ! mr_direct_only && ! mr_pid_alive "$MR_PROXY_PID"; then
        proxy_died=1
    fi

    san=0
    reports=$(sanitizer_reports "$main_off") && san=1

    if ((rc == 77 && proxy_died == 0 && san == 0)); then
        skipped=$((skipped + 1))
        skip_lines+=("$name: $(tail -n 1 "$log")")
        echo "SKIP $name ($(tail -n 1 "$log"))"
    elif ((rc == 0 && proxy_died == 0 && san == 0)); then
        passed=$((passed + 1))
        echo "PASS $name (${secs}s)"
    else
        failed=$((failed + 1))
        failed_names+=("$name")
        if ((rc == 124 || rc == 137)); then
            echo "FAIL $name (timed out after ${limit}s)"
        elif ((proxy_died)); then
            echo "FAIL $name (proxy main died; test exit status $rc)"
        elif ((san)); then
            echo "FAIL $name (a sanitizer report in a log of its processes; test exit status $rc)"
        else
            echo "FAIL $name (exit status $rc, ${secs}s)"
        fi
        # The failed checks first: a traceback at the end can push them out of the tail.
        echo "    --- $log: failed checks ---"
        grep -m 20 -A 2 '^not ok' "$log" | sed 's/^/    | /'
        echo "    --- $log (last 40 lines) ---"
        tail -n 40 "$log" | sed 's/^/    | /'
        proxy_log_tail
        [[ -n $reports ]] && echo "$reports"
        if ((proxy_died)); then
            cp "$MR_TMP/main.log" "$logs/proxy-main-died-in-$name.log" 2>/dev/null
            wait "$MR_PROXY_PID" 2>/dev/null
            echo "    proxy exit status: $?"
            start_main_proxy || mr_die "cannot restart proxy main"
        fi
    fi
done

# The shared proxy has now carried the whole suite; it must still shut down
# cleanly on SIGTERM.
if ! mr_direct_only; then
    if mr_stop_proxy main; then
        passed=$((passed + 1))
        echo "PASS main-proxy-shutdown (SIGTERM, exit 0)"
    else
        failed=$((failed + 1))
        failed_names+=(main-proxy-shutdown)
        echo "FAIL main-proxy-shutdown"
        proxy_log_tail
        mr_sanitizer_report "$MR_TMP/main.log"
    fi
fi
cp "$MR_TMP/main.log" "$logs/proxy-main.log" 2>/dev/null

# The shared proxy's shutdown is counted above, but it is not a test: a
# filter that matched nothing fails.
if ((ran == 0)); then
    echo "integration: no test matched '$filter'"
    failed_names+=("(no test matched)")
    failed=$((failed + 1))
fi
for line in "${skip_lines[@]}"; do
    echo "integration: skipped $line"
done
((failed > 0)) && echo "integration: failed: ${failed_names[*]} (logs in $logs)"
echo "integration: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
