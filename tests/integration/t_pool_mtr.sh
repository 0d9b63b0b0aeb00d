#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_mtr.sh through the connection pool (issue 27): the 40 tests of
# tests/mtr/ci.list in the three modes through a proxy with `pool =
# transaction`, compared with direct (tests/mtr/compare.sh with MR_POOL;
# tests/mtr/known-pool.list names the understood differences). Skips as
# t_mtr.sh does when mariadb-test is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MR_POOL=transaction exec bash "$here/t_mtr.sh"
