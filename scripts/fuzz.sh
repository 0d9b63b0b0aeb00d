#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/fuzz.sh [SECONDS] [TARGET...]: builds the libFuzzer targets of
# tests/fuzz/ (clang, ASan + UBSan) and runs each for SECONDS (default 30)
# on a copy of its seed corpus, so nothing found is written into the tree.
# Prints per target the runs and runs per second reached; a crash, a leak,
# a sanitizer report, a timeout or an out-of-memory fails the target, and
# its input (the artifact) and log stay in a temp dir whose path is
# printed. Ends with "fuzz: N passed, M failed"; exits non-zero on any
# failure. MR_FUZZ_BUILD picks the build dir (default build-fuzz).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

seconds=${1:-30}
shift $(($# > 0 ? 1 : 0))
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2; }
build=${MR_FUZZ_BUILD:-$root/build-fuzz}

command -v clang >/dev/null || { echo "fuzz: clang is not installed (scripts/install-deps.sh)"; exit 1; }
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
    -DMYREWRITE_FUZZ=ON -DMYREWRITE_TESTS=OFF -DMYREWRITE_WERROR=ON >/dev/null \
    || { echo "fuzz: cmake configure failed"; exit 1; }
cmake --build "$build" -j2 --target fuzz >"$build/fuzz-build.log" 2>&1 \
    || { tail -n 30 "$build/fuzz-build.log"; echo "fuzz: build failed"; exit 1; }

targets=("$@")
if ((${#targets[@]} == 0)); then
    for src in tests/fuzz/fuzz_*.c; do
        targets+=("$(basename "$src" .c)")
    done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/myrewrite-fuzz.XXXXXX")
passed=0
failed=0

# run_target NAME: one libFuzzer run; prints its line, returns non-zero on a finding.
run_target() {
    local name=$1 bin=$build/tests/fuzz/$1 dir=$work/$1
    [[ -x $bin ]] || { echo "$name: no such target"; return 1; }
    mkdir -p "$dir/corpus" "$dir/artifacts"
    [[ -d tests/fuzz/corpus/$name ]] && cp tests/fuzz/corpus/"$name"/* "$dir/corpus/" 2>/dev/null
    local seeds
    seeds=$(find "$dir/corpus" -type f | wc -l)
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1
    local rc=$? runs secs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$dir/log" | tail -n 1)
    local corpus
    corpus=$(find "$dir/corpus" -type f | wc -l)
    if ((rc == 0)) && ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$dir/log"; then
        local rate=$((runs / (secs > 0 ? secs : 1)))
        printf '%s: ok, %s runs in %s s (%s exec/s), corpus %s -> %s\n' \
            "$name" "${runs:-?}" "${secs:-?}" "$rate" "$seeds" "$corpus"
        rm -rf "$dir"
        return 0
    fi
    echo "$name: FAILED (exit $rc) after ${runs:-?} runs:"
    grep -m 5 -E 'ERROR:|runtime error:|invariant broken|SUMMARY:' "$dir/log" | sed 's/^/    /'
    echo "    artifacts: $dir/artifacts/ ($(ls "$dir/artifacts" | wc -l) file(s)); log: $dir/log"
    return 1
}

for t in "${targets[@]}"; do
    if run_target "$t"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done

((failed == 0)) && rmdir "$work" 2>/dev/null
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
