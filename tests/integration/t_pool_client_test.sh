#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_client_test.sh through the connection pool (issue 27): every
# mariadb-client-test case that passes direct must pass through a proxy with
# `pool = transaction` (one of the test's own; see t_client_test.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MR_POOL=transaction exec bash "$here/t_client_test.sh"
