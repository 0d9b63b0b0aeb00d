#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The stock mariadb / mariadb-admin clients through the proxy, compared with
# the same commands sent straight to mariadbd.
set -uo pipefail
# shellcheck source=../lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

P=$MR_PROXY_PORT
D=$MR_DIRECT_PORT
CA=$MR_TMP/main/tls/cert.pem

# Run a client command against port $1 with stdout+stderr merged and the exit
# status appended, so a refusal can be compared like any other output.
run() {
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    printf '%s\nrc=%d' "$out" "$rc"
}

# --- plain queries: identical output both ways
q="SELECT 1 AS one, 'abc' AS s, NULL AS n, 3.25 AS d, CAST('2024-02-29' AS DATE) AS dt,
   _utf8mb4'héllo ☃ 😀' AS u, @@version AS v, 0x00ff AS b"
mr_eq "SELECT via proxy equals direct" \
    "$(run mr_sql_direct -t --column-type-info --default-character-set=utf8mb4 -e "$q")" \
    "$(run mr_sql_proxy -t --column-type-info --default-character-set=utf8mb4 -e "$q")"

q="select 1; select 2; select 'three' as t"
direct=$(run mr_sql_direct -e "$q")
mr_eq "multi-statement -e via proxy equals direct" "$direct" "$(run mr_sql_proxy -e "$q")"
mr_match "multi-statement returned all three results" $'2\n2\nt\nthree\nrc=0' "$direct"

# Error inside a multi-statement batch: the client stops at the bad statement.
q="select 1; select * from no_such_table; select 3"
mr_eq "multi-statement with error via proxy equals direct" \
    "$(run mr_sql_direct "$MR_DB" -e "$q")" "$(run mr_sql_proxy "$MR_DB" -e "$q")"

# --- \s (status): same server facts; connection id/port/uptime naturally differ
status_facts() {
    grep -E '^(Current database|Current user|Server|Server version|Protocol version|Connection|Server characterset|Db     characterset|Client characterset|Conn.  characterset):'
}
sd=$(mr_sql_direct "$MR_DB" -e '\s' 2>&1 | status_facts)
sp=$(mr_sql_proxy "$MR_DB" -e '\s' 2>&1 | status_facts)
mr_eq "\\s status facts via proxy equal direct" "$sd" "$sp"
mr_match "\\s shows user and database" "Current database:[[:space:]]+$MR_DB" "$sp"

# --- USE: COM_INIT_DB from the CLI and a database given at connect time
q="use mysql; select database(); use $MR_DB; select database()"
out=$(run mr_sql_proxy -N -e "$q")
mr_eq "USE switches database through the proxy" $'mysql\ntest\nrc=0' "$out"
mr_eq "connect-time database via proxy" "mysql" "$(mr_sql_proxy -N -D mysql -e 'select database()' 2>&1)"
out=$(run mr_sql_proxy -N -e "use no_such_db")
mr_match "USE of a missing database is refused with 1049" "ERROR 1049" "$out"

# --- wrong password: refused by the backend with 1045, proxy keeps serving
out=$(run mariadb --no-defaults -h "$MR_HOST" -P "$P" -u "$MR_USER" -pwrong -e 'select 1')
mr_match "wrong password refused with 1045" "ERROR 1045 \(28000\).*Access denied for user 'app'" "$out"
mr_match "wrong password exit status is 1" "rc=1$" "$out"
mr_eq "proxy still works after a refused login" "1" "$(mr_sql_proxy -N -e 'select 1' 2>&1)"

# --- other accounts: ed25519 (client plugin) and an empty password
for port in "$D" "$P"; do
    out=$(mariadb --no-defaults -h "$MR_HOST" -P "$port" -u ed -pedpw -N -e 'select current_user()' 2>&1)
    mr_eq "ed25519 user logs in (port $port)" "ed@%" "$out"
    out=$(mariadb --no-defaults -h "$MR_HOST" -P "$port" -u nopw -N -e 'select current_user()' 2>&1)
    mr_eq "passwordless user logs in (port $port)" "nopw@%" "$out"
done
out=$(run mariadb --no-defaults -h "$MR_HOST" -P "$P" -u ed -pwrong -e 'select 1')
mr_match "ed25519 with wrong password refused with 1045" "ERROR 1045" "$out"

# --- TLS. The backend offers TLS. The CLI prefers TLS by default, so through
# the proxy it must quietly fall back to plaintext (greeting masked); a client
# that insists on TLS must get a clear error quickly rather than hang.
out=$(mr_sql_proxy -e '\s' 2>&1 | grep '^SSL:')
if mr_direct_only; then
    mr_match "default client uses TLS when direct" "Cipher in use" "$out"
else
    mr_match "default client falls back to no TLS through proxy" "Not in use" "$out"
fi
start=$SECONDS
out=$(run timeout 10 mariadb --no-defaults -h "$MR_HOST" -P "$P" -u "$MR_USER" -p"$MR_PASSWORD" \
          --ssl --ssl-verify-server-cert --ssl-ca="$CA" -e '\s')
elapsed=$((SECONDS - start))
if mr_direct_only; then
    mr_match "required TLS works direct (valid cert)" "SSL:[[:space:]]+Cipher in use" "$out"
else
    mr_match "required TLS through proxy fails with 2026" "ERROR 2026" "$out"
    mr_match "required TLS failure is not a timeout" "rc=1$" "$out"
fi
if ((elapsed < 5)); then mr_ok "TLS attempt finished in ${elapsed}s"; else mr_not_ok "TLS attempt took ${elapsed}s"; fi

# --- mariadb-admin: COM_STATISTICS and COM_PING
admin() {
    local port=$1; shift
    mariadb-admin --no-defaults --protocol=TCP -h "$MR_HOST" -P "$port" -u "$MR_USER" -p"$MR_PASSWORD" "$@"
}
out=$(run admin "$P" status)
mr_match "mariadb-admin status (COM_STATISTICS)" \
    '^Uptime: [0-9]+  Threads: [0-9]+  Questions: [0-9]+  Slow queries: [0-9]+  Opens: [0-9]+  Open tables: [0-9]+  Queries per second avg: [0-9.]+'$'\n''rc=0$' "$out"
mr_eq "mariadb-admin ping" $'mysqld is alive\nrc=0' "$(run admin "$P" ping)"
vd=$(admin "$D" version 2>&1 | grep -E '^(Server version|Protocol version)')
vp=$(admin "$P" version 2>&1 | grep -E '^(Server version|Protocol version)')
mr_eq "mariadb-admin version via proxy equals direct" "$vd" "$vp"

# --- a batch fed on stdin, with a multi-line result and DDL/DML row counts
batch="DROP TABLE IF EXISTS t_cli; CREATE TABLE t_cli (id INT PRIMARY KEY, v VARCHAR(20));
INSERT INTO t_cli VALUES (1,'a'),(2,NULL),(3,'c');
UPDATE t_cli SET v='b' WHERE id=2;
SELECT ROW_COUNT();
SELECT * FROM t_cli ORDER BY id;
DROP TABLE t_cli;"
# -vv prints "Query OK, N rows affected (0.001 sec)"; only the timing differs.
untimed() { sed -E 's/ \([0-9.]+ sec\)//'; }
mr_eq "stdin batch via proxy equals direct" \
    "$(echo "$batch" | run mr_sql_direct -vv "$MR_DB" | untimed)" \
    "$(echo "$batch" | run mr_sql_proxy -vv "$MR_DB" | untimed)"

mr_done
