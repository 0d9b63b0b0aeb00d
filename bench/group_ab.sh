#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# group_ab.sh - group-commit throughput and CPU per statement of two or more myrewrite builds,
# in alternating rounds against the same mariadbd (bench/group_ab.py does the runs).
#
# Each run starts one proxy of the build with a staged delayed rule with group_commit = yes
# on test.counters (1,000 rows), drives 128 clients of UPDATE DELAYED counters SET hits =
# hits + 1 WHERE id = <1..HOT> through it for SECONDS (the C generator build/delayed_load
# with 2 threads, or sysbench running bench/delayed_counters.lua), and prints acknowledged
# statements/s and, per statement, the user and system CPU of the proxy, of mariadbd and of
# the generator, the CPU time of the 2 cores not taken by those three ("rest": the kernel's
# softirqs charged to nobody, other processes), the busy share of all CPUs, statements per
# batch and rows merged per batch (/metrics). Then it stops the proxy (its last flush) and
# checks that the counters grew by exactly the acknowledged statements (OK / MISMATCH).
#
# Usage: bench/group_ab.sh ROUNDS SECONDS HOT c|sysbench BINARY...
# Env:   GROUP_AB_RULE (more rule lines, \n between them)  GROUP_AB_FLUSH=1s (flush_interval)
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"
(($# >= 5)) || mr_die "usage: $0 ROUNDS SECONDS HOT c|sysbench BINARY..."
MR_TMP=$MR_ROOT/.tmp/group-ab
export MR_TMP
rm -rf "$MR_TMP"
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT
mr_free_port D
export MR_DIRECT_PORT=$D
mr_start_mariadb groupab "$D" >/dev/null || mr_die "mariadbd did not start"
[[ -x $MR_BUILD/delayed_load ]] || mr_die "$MR_BUILD/delayed_load not built"
"$MR_PY" "$MR_ROOT/bench/group_ab.py" --db-port "$D" --db-pid "$(cat "$MR_TMP/groupab/mariadbd.pid")" \
    --loadgen "$MR_BUILD/delayed_load" --lua "$MR_ROOT/bench/delayed_counters.lua" "$@"
