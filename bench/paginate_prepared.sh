#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# paginate_prepared.sh - what the prepare-time rewrite of `LIMIT ?, ?` costs: a paginate
# rule rewrites such a statement to its deferred join for every offset (the value is only
# known at COM_STMT_EXECUTE), so shallow pages run the join too. This times, direct on
# mariadbd (no proxy, to see the SQL alone), the original prepared statement
#     SELECT * FROM ps_items ORDER BY v, id LIMIT ?, 20
# against its deferred join, at offsets from 0 to 19,000 of a 20,000-row table of
# ~230-byte rows: median microseconds of 400 executions each, three rounds.
#
# Usage: bench/paginate_prepared.sh   (build first: cmake --build build)
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"
MR_TMP=$MR_ROOT/.tmp/pbench
MR_DIRECT_PORT=23347
export MR_TMP MR_DIRECT_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT
mr_start_mariadb pbench "$MR_DIRECT_PORT" || mr_die "cannot start mariadbd"
"$MR_PY" - <<PY || mr_die "cannot fill ps_items"
import pymysql
c = pymysql.connect(host="$MR_HOST", port=$MR_DIRECT_PORT, user="$MR_USER",
                    password="$MR_PASSWORD", database="$MR_DB", autocommit=True)
cur = c.cursor()
cur.execute("DROP TABLE IF EXISTS ps_items")
cur.execute("CREATE TABLE ps_items (id INT PRIMARY KEY, v INT NOT NULL, name VARCHAR(20) "
            "NOT NULL, pad CHAR(200) NOT NULL DEFAULT '', UNIQUE KEY (name), KEY (v)) "
            "ENGINE=InnoDB")
cur.execute("INSERT INTO ps_items (id, v, name) SELECT seq, seq % 11, CONCAT('n', seq) "
            "FROM seq_1_to_20000")
cur.execute("ANALYZE TABLE ps_items")
PY
for round in 1 2 3; do
    echo "round $round"
    "$MR_BUILD/tests/integration/mr_stmt_paginate" --bench "$MR_HOST" "$MR_DIRECT_PORT" \
        "$MR_USER" "$MR_PASSWORD" "$MR_DB" || exit 1
done
