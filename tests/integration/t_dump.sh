#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mariadb-dump through the proxy piped into mariadb through the proxy: the copy
# must be bit-identical (CHECKSUM TABLE, read direct), and the dump itself
# must equal one taken straight from mariadbd.
set -uo pipefail
# shellcheck source=../lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

SRC=dump_src
DST=dump_dst
ROWS=20000
work=$MR_TMP/t_dump
rm -rf "$work"
mkdir -p "$work"

# Binary-safe, utf8mb4-safe client settings for both the dumper and the loader.
dump() {
    local port=$1; shift
    mariadb-dump --no-defaults --protocol=TCP -h "$MR_HOST" -P "$port" \
        -u "$MR_USER" -p"$MR_PASSWORD" --default-character-set=utf8mb4 \
        --single-transaction --routines --triggers "$@"
}

mr_log "creating $SRC with $ROWS-row tables"
mr_sql_direct --default-character-set=utf8mb4 <<SQL || mr_die "schema setup failed"
DROP DATABASE IF EXISTS $SRC;
DROP DATABASE IF EXISTS $DST;
CREATE DATABASE $SRC CHARACTER SET utf8mb4;
CREATE DATABASE $DST CHARACTER SET utf8mb4;
USE $SRC;

-- Most column types, with NULLs sprinkled by row number.
CREATE TABLE t_types (
  id INT PRIMARY KEY,
  ti TINYINT, usi SMALLINT UNSIGNED, mi MEDIUMINT, bi BIGINT, ubi BIGINT UNSIGNED,
  dc DECIMAL(30,8), fl FLOAT, db DOUBLE,
  dt DATETIME(6), ts TIMESTAMP(3) NULL DEFAULT NULL, d DATE, tm TIME(2), yr YEAR,
  bt BIT(12), en ENUM('red','green','blue'), st SET('x','y','z'),
  ch CHAR(10), vc VARCHAR(200), js JSON
) ENGINE=InnoDB;
INSERT INTO t_types
SELECT seq,
  IF(seq % 7 = 0, NULL, seq % 256 - 128),
  seq % 65536,
  seq * 31 - 4000000,
  IF(seq % 11 = 0, NULL, seq * 1000003 * IF(seq % 2, -1, 1)),
  18446744073709551615 - seq,
  seq * 1234.56789012 - 9999999.5,
  (seq % 4000) / 8,  -- FLOAT prints 6 significant digits; keep values exact in 6
  IF(seq % 13 = 0, NULL, seq / 3),
  '2000-01-01 00:00:00' + INTERVAL seq MINUTE + INTERVAL seq MICROSECOND,
  IF(seq % 5 = 0, NULL, '2020-01-01 00:00:00' + INTERVAL seq SECOND),
  '1970-01-01' + INTERVAL seq DAY,
  SEC_TO_TIME(seq * 7 - 70000),
  1901 + seq % 255,
  seq % 4096,
  ELT(1 + seq % 3, 'red', 'green', 'blue'),
  MAKE_SET(seq % 8, 'x', 'y', 'z'),
  IF(seq % 3 = 0, NULL, LEFT(MD5(seq), 10)),
  CONCAT('row ', seq, ' \'quoted\' "double" back\\\\slash'),
  IF(seq % 17 = 0, NULL, JSON_OBJECT('n', seq, 'a', JSON_ARRAY(seq, 'x', NULL)))
FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_$ROWS) s;

-- utf8mb4 text: accents, CJK, emoji, control characters, SQL metacharacters.
CREATE TABLE t_text (
  id INT PRIMARY KEY,
  short_txt VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  long_txt MEDIUMTEXT CHARACTER SET utf8mb4
) ENGINE=InnoDB;
INSERT INTO t_text
SELECT seq,
  CONCAT(ELT(1 + seq % 6, 'héllo wörld', '日本語テキスト', '😀🎉🚀', 'tab\there', 'nl\nline', 'q''uote;--'), ' #', seq),
  IF(seq % 9 = 0, NULL, REPEAT(CONCAT('Ωmega ', seq, ' 🐬 '), 1 + seq % 40))
FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_$ROWS) s;

-- Arbitrary bytes, including 0x00, quote and backslash, in several sizes.
CREATE TABLE t_bin (
  id INT PRIMARY KEY,
  vb VARBINARY(64),
  bl BLOB,
  mb MEDIUMBLOB
) ENGINE=InnoDB;
INSERT INTO t_bin
SELECT seq,
  UNHEX(SHA2(seq, 256)),
  IF(seq % 4 = 0, NULL, UNHEX(REPEAT(SHA2(seq, 512), 1 + seq % 8))),
  IF(seq % 1000 = 1, UNHEX(REPEAT(SHA2(seq, 512), 4000)), CHAR(0, 39, 92, 10, 13, 26, seq % 256))
FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_$ROWS) s;

-- An ordinary MyISAM table and an empty one, to cover non-transactional and
-- zero-row dumps.
CREATE TABLE t_myisam (id INT PRIMARY KEY, v VARCHAR(50)) ENGINE=MyISAM;
INSERT INTO t_myisam SELECT seq, CONCAT('v', seq) FROM seq_1_to_1000;
CREATE TABLE t_empty (id INT PRIMARY KEY, v TEXT);

-- A trigger and a routine so the dump carries DDL besides data.
CREATE TRIGGER t_myisam_bi BEFORE INSERT ON t_myisam FOR EACH ROW SET NEW.v = UPPER(NEW.v);
CREATE FUNCTION add_one(x INT) RETURNS INT DETERMINISTIC RETURN x + 1;
SQL

tables="t_types t_text t_bin t_myisam t_empty"

# 1. Dump through the proxy, load through the proxy.
start=$SECONDS
dump "$MR_PROXY_PORT" "$SRC" 2>"$work/dump_proxy.err" \
    | mariadb --no-defaults --protocol=TCP -h "$MR_HOST" -P "$MR_PROXY_PORT" \
        -u "$MR_USER" -p"$MR_PASSWORD" --default-character-set=utf8mb4 "$DST" 2>"$work/load.err"
st=("${PIPESTATUS[@]}")
mr_eq "dump|load through proxy: both clients exit 0 ($((SECONDS - start))s)" "0 0" "${st[*]}"
[[ -s $work/dump_proxy.err ]] && cat "$work/dump_proxy.err"
[[ -s $work/load.err ]] && cat "$work/load.err"

# 2. Checksums of the copy, read directly from mariadbd.
checksums() {
    local db=$1 t out
    for t in $tables; do
        out=$(mr_sql_direct -N -e "CHECKSUM TABLE $db.$t EXTENDED; SELECT COUNT(*) FROM $db.$t" | awk '{print $NF}' | paste -sd' ')
        echo "$t $out"
    done
}
src_sums=$(checksums "$SRC")
dst_sums=$(checksums "$DST")
echo "source checksums (checksum rows):"
echo "$src_sums" | sed 's/^/   /'
mr_eq "CHECKSUM TABLE of the copy equals the source" "$src_sums" "$dst_sums"
mr_match "source really has $ROWS rows" "t_types [0-9]+ $ROWS" "$src_sums"
mr_eq "routine copied" "42" "$(mr_sql_direct -N -e "SELECT $DST.add_one(41)")"
mr_eq "trigger copied" "1" \
    "$(mr_sql_direct -N -e "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA='$DST'")"

# 3. The dump text itself: proxy and direct must agree byte for byte, apart
# from the trailing "-- Dump completed on <date>" comment.
dump "$MR_DIRECT_PORT" "$SRC" >"$work/direct.sql" 2>"$work/dump_direct.err"
rc_d=$?
dump "$MR_PROXY_PORT" "$SRC" >"$work/proxy.sql" 2>>"$work/dump_proxy.err"
rc_p=$?
mr_eq "both dumps exit 0" "0 0" "$rc_d $rc_p"
sed -i '/^-- Dump completed on /d' "$work/direct.sql" "$work/proxy.sql"
if cmp -s "$work/direct.sql" "$work/proxy.sql"; then
    mr_ok "dump via proxy is identical to direct dump ($(wc -c <"$work/direct.sql") bytes)"
else
    mr_not_ok "dump via proxy differs from direct dump"
    diff "$work/direct.sql" "$work/proxy.sql" | head -c 2000
fi
if grep -q "^INSERT INTO \`t_bin\` VALUES" "$work/direct.sql"; then
    mr_ok "dump carries the binary table's rows"
else
    mr_not_ok "no INSERT for t_bin in the dump"
fi

[[ ${MR_KEEP:-0} == 1 ]] || mr_sql_direct -e "DROP DATABASE $SRC; DROP DATABASE $DST"
rm -rf "$work"
mr_done
