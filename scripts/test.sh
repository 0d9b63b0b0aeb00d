#!/usr/bin/env bash
# The whole test run: dependencies, a warnings-as-errors build, the cmocka
# unit tests through ctest, then the integration suite against real mariadbd.
# Ends with "all: N passed, M failed" and exits non-zero on any failure.
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

# --- unit tests
ctest_log=$build/ctest.log
ctest --test-dir "$build" --output-on-failure 2>&1 | tee "$ctest_log"
ctest_rc=${PIPESTATUS[0]}
# "100% tests passed, 0 tests failed out of 12"
summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$ctest_log" | tail -n 1)
if [[ $summary =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    failed=$((failed + BASH_REMATCH[1]))
    passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1]))
elif grep -q 'No tests were found' "$ctest_log" && ((ctest_rc == 0)); then
    echo "test: ctest found no unit tests"
else
    echo "test: could not read the ctest summary (exit status $ctest_rc)"
    failed=$((failed + 1))
fi
((ctest_rc != 0 && failed == 0)) && failed=1

# --- integration tests
it_log=$build/integration.log
tests/integration/run.sh 2>&1 | tee "$it_log"
it_rc=${PIPESTATUS[0]}
summary=$(grep -E '^integration: [0-9]+ passed, [0-9]+ failed$' "$it_log" | tail -n 1)
if [[ $summary =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
    passed=$((passed + BASH_REMATCH[1]))
    failed=$((failed + BASH_REMATCH[2]))
    ((it_rc != 0 && BASH_REMATCH[2] == 0)) && failed=$((failed + 1))
else
    echo "test: integration run ended without a summary (exit status $it_rc)"
    failed=$((failed + 1))
fi

echo "all: $passed passed, $failed failed"
((failed == 0))
