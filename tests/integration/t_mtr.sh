#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# MariaDB's regression suite through the proxy, the CI subset: the 40 tests
# of tests/mtr/ci.list in plain, --ps-protocol and --cursor-protocol mode,
# compared with direct by tests/mtr/compare.sh (its own two mariadbd and
# proxy, in $MR_TMP/mtr-ci). Fails when a test passes direct and fails or
# hangs through the proxy. Skips when the mariadb-test package is missing.
# The full list (tests/mtr/full.list) is for developers: doc/tests.md, "MariaDB's
# regression suite". MR_POOL=transaction runs it through the connection pool
# (t_pool_mtr.sh), in $MR_TMP/mtr-ci-transaction.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -x ${MTR_DIR:-/usr/share/mysql/mysql-test}/mariadb-test-run.pl ]]; then
    echo "mariadb-test is not installed"
    exit 77
fi
ci_dir=mtr-ci
[[ ${MR_POOL:-session} != session ]] && ci_dir=mtr-ci-$MR_POOL
MR_TMP=${MR_TMP:-$here/../../.tmp/it}/$ci_dir exec "$here/../mtr/compare.sh" \
    -l "$here/../mtr/ci.list"
