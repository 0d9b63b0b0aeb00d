#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole integration suite once per socket backend: io = epoll, then
# io = io_uring (every proxy the tests start gets `--set io=...` through
# tests/lib/env.sh's MR_IO). For a change to net/; CI runs a subset of the
# io_uring pass (scripts/test.sh). Arguments go to run.sh (a FILTER); MR_TMP,
# MR_DIRECT_PORT and MR_PROXY_PORT are passed through, each pass under its
# own MR_TMP. Ends with one summary line per backend; non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
tmp=${MR_TMP:-$root/.tmp/it}
rc=0
summary=()
for io in epoll io_uring; do
    MR_IO=$io MR_TMP=$tmp-$io tests/integration/run.sh "$@" 2>&1 | tee "$tmp-$io.log"
    ((PIPESTATUS[0] == 0)) || rc=1
    summary+=("io = $io: $(grep -E '^integration: ' "$tmp-$io.log" | tail -n 1)")
done
printf '%s\n' "${summary[@]}"
exit $rc
