#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test run: dependencies, a warnings-as-errors build, the cmocka
# unit tests through ctest, the integration suite against real mariadbd,
# part of it again with io = io_uring, then the unit tests and part of the suite again under ASan/UBSan, a
# threaded subset under ThreadSanitizer, then every fuzz target for a short
# while (scripts/fuzz.sh).
# Ends with "all: N passed, M failed, K skipped" (each skip's reason printed
# before) and exits non-zero on any failure. Under CI=true a stage this
# machine cannot run fails instead of being skipped.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

build=${MR_BUILD:-$root/build}
export MR_BUILD=$build

scripts/install-deps.sh || { echo "test: installing dependencies failed"; exit 1; }

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMYREWRITE_WERROR=ON \
    || { echo "test: cmake configure failed"; exit 1; }
cmake --build "$build" -j2 || { echo "test: build failed"; exit 1; }

passed=0
failed=0
skipped=0
skips=()

# skip_stage WHY: a stage that cannot run here; on CI (CI=true), where every
# stage can, a failure.
skip_stage() {
    if [[ ${CI:-} == true ]]; then
        echo "test: FAIL: $1 (CI=true: every stage must run on CI's machine)"
        failed=$((failed + 1))
    else
        echo "test: SKIP: $1"
        skipped=$((skipped + 1))
        skips+=("$1")
    fi
}

# count_ctest LOG STATUS: adds ctest's "N% tests passed, F tests failed out of T";
# a test ctest lists as "(Skipped)" (its exit status 77) counts as skipped,
# with the "skip: " lines it printed (kept in ctest's LastTest.log).
count_ctest() {
    local summary name n=0
    summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -n 1)
    if [[ $summary =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
        failed=$((failed + BASH_REMATCH[1]))
        passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1]))
        ((BASH_REMATCH[1] == 0 && $2 != 0)) && failed=$((failed + 1))
    else
        echo "test: could not read the ctest summary (exit status $2)"
        failed=$((failed + 1))
        return
    fi
    while IFS= read -r name; do
        n=$((n + 1))
        skips+=("$1: $name: $(awk -v t="$name" '$0 ~ "^[0-9]+/[0-9]+ Test: " t "$" { on = 1 }
            on && /^skip: / { print; exit }' "${1%/*}/Testing/Temporary/LastTest.log")")
    done < <(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (Skipped)$/\1/p' "$1")
    passed=$((passed - n))
    skipped=$((skipped + n))
}

# count_fuzz LOG STATUS: adds fuzz.sh's "fuzz: N passed, M failed" (one per target).
count_fuzz() {
    local summary
    summary=$(grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1)
    if [[ $summary =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
        passed=$((passed + BASH_REMATCH[1]))
        failed=$((failed + BASH_REMATCH[2]))
        ((BASH_REMATCH[2] == 0 && $2 != 0)) && failed=$((failed + 1))
    else
        echo "test: fuzzing ended without a summary (exit status $2)"
        failed=$((failed + 1))
    fi
}

# count_integration LOG STATUS: adds run.sh's "integration: N passed, M
# failed, K skipped" and keeps the reasons of the skips.
count_integration() {
    local summary line
    summary=$(grep -E '^integration: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$1" | tail -n 1)
    if [[ $summary =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]]; then
        passed=$((passed + BASH_REMATCH[1]))
        failed=$((failed + BASH_REMATCH[2]))
        skipped=$((skipped + BASH_REMATCH[3]))
        while IFS= read -r line; do
            skips+=("$line")
        done < <(sed -n "s|^integration: skipped |$1: |p" "$1")
        ((BASH_REMATCH[2] == 0 && $2 != 0)) && failed=$((failed + 1))
    else
        echo "test: integration run ended without a summary (exit status $2)"
        failed=$((failed + 1))
    fi
}

# --- unit tests
ctest --test-dir "$build" --output-on-failure 2>&1 | tee "$build/ctest.log"
count_ctest "$build/ctest.log" "${PIPESTATUS[0]}"

# --- integration tests
tests/integration/run.sh 2>&1 | tee "$build/integration.log"
count_integration "$build/integration.log" "${PIPESTATUS[0]}"

# --- the other socket backend: a subset of the suite again with every proxy
# on io = io_uring (tests/lib/env.sh honours MR_IO): the raw protocol, the
# libraries, TLS, compression, pipelined logins, faults, the clean stop,
# backpressure toward a slow backend (sends in flight) and io_uring's own
# test (3m45s measured with t_blob64 too, at load 20; about 3 minutes
# without it). scripts/test_io.sh runs the whole suite on both backends.
# (A TLS conn moves to epoll when TLS starts, so t_tls's run of
# mr_client_test over TLS would repeat the epoll one: MR_TLS_CLIENT_TEST=0.)
MR_IO=io_uring MR_TLS_CLIENT_TEST=0 MR_TMP=$root/.tmp/it-uring tests/integration/run.sh \
    't_io_uring|t_rawproto|t_pymysql|t_tls$|t_compress|t_auth_pipeline|t_fault_matrix|t_sigterm|t_rules|t_slowbackend|t_backend_kill|t_pool_state|t_pool_many|t_pool_shared' 2>&1 |
    tee "$build/integration-uring.log"
count_integration "$build/integration-uring.log" "${PIPESTATUS[0]}"

# --- sanitizers: the unit tests and the protocol-heavy integration tests
# again, with everything built with AddressSanitizer + UBSan (a report or a
# leak at exit fails the test: every proxy a test starts is ended with SIGTERM
# and its exit status and log are checked; t_harness proves it on a stand-in).
asan=${MR_ASAN_BUILD:-$root/build-asan}
if cmake -S . -B "$asan" -DCMAKE_BUILD_TYPE=ASAN -DMYREWRITE_WERROR=ON >/dev/null &&
    cmake --build "$asan" -j2 >/dev/null; then
    ctest --test-dir "$asan" --output-on-failure 2>&1 | tee "$asan/ctest.log"
    count_ctest "$asan/ctest.log" "${PIPESTATUS[0]}"
    MR_BUILD=$asan MR_TMP=$root/.tmp/it-asan tests/integration/run.sh \
        't_rawproto|t_ps_blocks|t_rules|t_faults|t_fault_matrix|t_options|t_pymysql|t_sigterm|t_delayed_memory|t_delayed_set|t_delayed_default|t_delayed_bucket|t_delayed_reject|t_delayed_group|t_delayed_read_pending|t_delayed_park_prepared|t_delayed_locked_faults|t_delayed_dropped|t_log_escape|t_keyset|t_paginate_params|t_delayed_keys|t_admin|t_fd_exhaust|t_auth_pipeline|t_unreadable|t_lex_readings|t_ident_injection|t_quiet|t_http_token|t_compress|t_tls_reload|t_io_uring|t_backend_kill|t_dynamic_sql|t_stmt_pool|t_pool_kill|t_pool_refused|t_pool_ps|t_pool_state|t_pool_basic|t_pool_queue|t_pool_counts|t_pool_statement|t_pool_shared|t_bulk_rules|t_harness|mr_client_test' 2>&1 |
        tee "$asan/integration.log"
    count_integration "$asan/integration.log" "${PIPESTATUS[0]}"
else
    echo "test: sanitizer build failed"
    failed=$((failed + 1))
fi

# --- ThreadSanitizer: the unit tests that start threads (racing the stores'
# locks; the schema cache's loader),
# and short integration tests whose proxies run every background thread
# (workers, the own connections opening and closing, flushers, HTTP). A
# report stops the process (halt_on_error), so the test fails. TSan needs
# the address layout it expects: when it cannot map its shadow memory it is
# run again without ASLR (setarch -R), and skipped with the reason if that
# does not help either (under CI=true a failure: TSan runs on CI's machine).
tsan=${MR_TSAN_BUILD:-$root/build-tsan}
tsan_units='^(test_delayed_mem_keys|test_rules_match|test_schema_cache)$'
tsan_its='t_harness|t_quiet|t_http_token|t_tls$|t_delayed_memory|t_delayed_default|t_delayed_schema|t_delayed_group|t_delayed_read_pending|t_delayed_park_prepared|t_tls_reload|t_http_churn|t_admin_flush|t_pool_kill|t_pool_state|t_pool_shared'
# history_size=4 keeps the stack of an access long before its racing one
# tests/tsan.supp: one harmless descriptor race inside libevent's evhttp
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:history_size=4:suppressions=$root/tests/tsan.supp}
if cmake -S . -B "$tsan" -DCMAKE_BUILD_TYPE=TSAN -DMYREWRITE_WERROR=ON >/dev/null &&
    cmake --build "$tsan" -j2 >/dev/null; then
    tsan_run=()
    if ! "$tsan/tests/unit/test_rule_hits" >"$tsan/probe.log" 2>&1; then
        if setarch "$(uname -m)" -R "$tsan/tests/unit/test_rule_hits" >"$tsan/probe.log" 2>&1; then
            tsan_run=(setarch "$(uname -m)" -R)
        else
            tsan_run=(skip)
        fi
    fi
    if [[ ${tsan_run[0]:-} == skip ]]; then
        skip_stage "ThreadSanitizer stage: a TSan binary does not run here, even without ASLR (setarch -R): $(grep -m1 -E 'FATAL|ERROR' "$tsan/probe.log")"
    else
        "${tsan_run[@]}" ctest --test-dir "$tsan" --output-on-failure -R "$tsan_units" 2>&1 |
            tee "$tsan/ctest.log"
        count_ctest "$tsan/ctest.log" "${PIPESTATUS[0]}"
        # t_tls without its mr_client_test run: two more minutes under TSan
        # for TLS paths t_tls's own checks take (40 concurrent clients too).
        MR_BUILD=$tsan MR_TMP=$root/.tmp/it-tsan MR_TLS_CLIENT_TEST=0 \
            "${tsan_run[@]}" tests/integration/run.sh \
            "$tsan_its" 2>&1 | tee "$tsan/integration.log"
        count_integration "$tsan/integration.log" "${PIPESTATUS[0]}"
    fi
else
    echo "test: ThreadSanitizer build failed"
    failed=$((failed + 1))
fi

# --- fuzzing: every libFuzzer target of tests/fuzz/ on its seed corpus,
# MR_FUZZ_SECONDS (30) each, one pass per clean target.
fuzz_log=$root/.tmp/fuzz.log
mkdir -p "$root/.tmp"
scripts/fuzz.sh "${MR_FUZZ_SECONDS:-30}" 2>&1 | tee "$fuzz_log"
count_fuzz "$fuzz_log" "${PIPESTATUS[0]}"

for line in "${skips[@]}"; do
    echo "test: skipped: $line"
done
echo "all: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
