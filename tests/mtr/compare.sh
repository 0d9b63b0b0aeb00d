#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# MariaDB's own regression suite through the proxy, compared with direct.
#
#   tests/mtr/compare.sh [-l LIST] [-m "plain ps cursor"] [-t SECS] [TEST...]
#
# Starts two throwaway mariadbd (options close to the suite's own
# include/default_mysqld.cnf), one with a proxy in front of it, and runs the
# tests of LIST (default tests/mtr/full.list; or the TESTs given) with
# `mariadb-test-run.pl --extern` in three modes: plain (text protocol), ps
# (--ps-protocol), cursor (--cursor-protocol).
#
# Per mode, the whole list runs as one mtr invocation through the proxy and,
# at the same time, one direct: an invocation costs 5-8 s of mtr start-up on
# this machine, so one per test would take an hour and a half for the full
# list. mtr runs each test through tests/mtr/mariadb-test-reset, which puts
# the server of its side back first (what a test that failed halfway left
# behind would fail the tests after it in the batch). Each test has one minute there (mtr's --testcase-timeout); one that
# does not finish is killed by mtr and shown as HANG. Every test whose
# batch result through the proxy is not the direct one is then run again on
# its own, through the proxy and direct, each invocation killed after SECS
# (default 90, shown as HANG), after putting both servers back (databases a
# test left dropped, `test` empty): a test tripped by what an earlier one
# left behind is not taken for a proxy fault, and the table shows the
# isolated results.
#
# Tests named in tests/mtr/excluded.list are not run (each group there says
# why: they fail direct as well). tests/mtr/known.list names test/mode pairs
# whose difference is understood; they are shown as KNOWN and do not fail
# the run.
#
# Prints a table, test x mode -> proxy and direct result, and a summary line
# per mode, to stdout and to $MR_TMP/mtr-run/results.txt; every
# invocation's output is in $MR_TMP/mtr-run/logs/. Exits 1 when a test
# passes direct and fails, errs, skips or hangs through the proxy (and is
# not KNOWN).
#
# MR_POOL=transaction runs the proxy with `pool = transaction` (MR_POOL_SIZE, if
# set, its pool_size): the suite through the connection pool (issue 27). Then
# tests/mtr/known-pool.list is read as well as known.list, and the results
# name the pool mode.
#
# MR_TMP (default .tmp/mtr-compare), MR_BIN and MR_BUILD as in tests/lib/env.sh;
# ports are picked free.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export MR_TMP=${MR_TMP:-$root/.tmp/mtr-compare}
# shellcheck source=../lib/env.sh
. "$here/../lib/env.sh"

MTR_DIR=${MTR_DIR:-/usr/share/mysql/mysql-test}
list=$here/full.list
modes="plain ps cursor"
limit=90
while getopts "l:m:t:" opt; do
    case $opt in
        l) list=$OPTARG ;;
        m) modes=$OPTARG ;;
        t) limit=$OPTARG ;;
        *) echo "usage: $0 [-l LIST] [-m MODES] [-t SECS] [TEST...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))

[[ -x $MTR_DIR/mariadb-test-run.pl ]] || { echo "mtr: $MTR_DIR/mariadb-test-run.pl not found (apt-get install mariadb-test)"; exit 2; }
[[ -x $MR_BIN ]] || { echo "mtr: $MR_BIN not built"; exit 2; }

# A list file: one test per line (suite.name; main.name for main), '#' comments.
read_list() { sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$1"; }
declare -A excluded=() known=()
while read -r t; do excluded[$t]=1; done < <(read_list "$here/excluded.list")
pool=${MR_POOL:-session}
known_lists=("$here/known.list")
[[ $pool != session ]] && known_lists+=("$here/known-pool.list")
for f in "${known_lists[@]}"; do
    while read -r t m reason; do known["$t $m"]=$reason; done < <(read_list "$f")
done

tests=()
if (($# > 0)); then
    tests=("$@")
else
    while read -r t; do [[ -z ${excluded[$t]:-} ]] && tests+=("$t"); done < <(read_list "$list")
fi

work=$MR_TMP/mtr-run
rm -rf "$work"
mkdir -p "$work/logs" "$work/tmp"
trap mr_cleanup EXIT

# ---------------------------------------------------------------- servers

mr_free_port dport   # mariadbd "mtrd", for the direct runs
mr_free_port bport   # mariadbd "mtrp", behind the proxy
mr_free_port pport   # the proxy
mr_free_port cport   # its console (SHOW POOLS at the end)
mr_pool_args pool_args "$cport"
psock=$MR_TMP/mtr-proxy.sock

# What the suite's default_mysqld.cnf sets and its results depend on; name
# resolution on, so 127.0.0.1 is root@localhost as in the suite's own runs.
export MR_MARIADB_ARGS="--skip-name-resolve=0 --character-set-server=latin1
 --collation-server=latin1_swedish_ci --log-bin-trust-function-creators=1
 --key-buffer-size=1M --sort-buffer-size=256K --max-heap-table-size=1M
 --open-files-limit=1024 --connect-timeout=60 --plugin-maturity=unknown
 --max-allowed-packet=16M --innodb-buffer-pool-size=64M
 --secure-file-priv=$work"
export MR_MARIADB_TLS=0

# The suite logs in as root; the anonymous users go, as in the suite's own
# bootstrap. Tests call mtr.add_suppression() (their warnings are not
# checked here: extern mode cannot read the server's error log).
setup_server() {
    mr_mariadb_root "$1" >"$work/setup-$1.log" 2>&1 <<'SQL'
DELETE FROM mysql.global_priv WHERE user = '';
FLUSH PRIVILEGES;
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS mtr CHARSET latin1;
CREATE TABLE IF NOT EXISTS mtr.test_suppressions (pattern VARCHAR(255)) ENGINE=MyISAM;
CREATE OR REPLACE DEFINER=root@localhost PROCEDURE mtr.add_suppression(pattern VARCHAR(255))
    INSERT INTO mtr.test_suppressions (pattern) VALUES (pattern);
SQL
}
for name in mtrd mtrp; do
    port=$dport
    [[ $name == mtrp ]] && port=$bport
    mr_start_mariadb "$name" "$port" >/dev/null || mr_die "cannot start mariadbd $name"
    setup_server "$name" || mr_die "setup of $name failed: $(tail -n 3 "$work/setup-$name.log")"
done
mr_start_proxy mtr "$pport" "$bport" --socket "$psock" "${pool_args[@]}" >/dev/null ||
    mr_die "cannot start the proxy"
baseline_dbs=$(mr_mariadb_root mtrd -N -e "SHOW DATABASES" | tr '\n' ' ')

# Puts a server back: a failed test leaves tables, procedures and databases
# behind; the next test expects an empty `test`.
reset_server() {
    local name=$1 db sql=""
    for db in $(mr_mariadb_root "$name" -N -e "SHOW DATABASES"); do
        [[ " $baseline_dbs " == *" $db "* ]] && continue
        sql+="DROP DATABASE \`$db\`; "
    done
    mr_mariadb_root "$name" -e "${sql}DROP DATABASE IF EXISTS test; CREATE DATABASE test;
        SET GLOBAL sql_mode = DEFAULT; SET GLOBAL character_set_server = latin1;
        SET GLOBAL collation_server = latin1_swedish_ci" >/dev/null 2>&1
}

# ---------------------------------------------------------------- mtr

mode_flag() {
    case $1 in
        plain) echo "" ;;
        ps) echo "--ps-protocol" ;;
        cursor) echo "--cursor-protocol" ;;
        *) mr_die "unknown mode $1 (plain, ps, cursor)" ;;
    esac
}

# mtr SIDE MODE LOG LIMIT TEST...: one mariadb-test-run.pl invocation
# against the proxy or direct; its own vardir per side.
mtr() {
    local side=$1 mode=$2 log=$3 secs=$4 port sock reset_sock
    shift 4
    if [[ $side == proxy ]]; then
        port=$pport sock=$psock reset_sock=$MR_TMP/mtrp/mariadbd.sock
    else
        port=$dport sock=$MR_TMP/mtrd/mariadbd.sock reset_sock=$MR_TMP/mtrd/mariadbd.sock
    fi
    # shellcheck disable=SC2046
    (cd "$MTR_DIR" && MYSQL_TEST=$here/mariadb-test-reset MR_RESET_SOCK=$reset_sock \
        MR_RESET_KEEP=$baseline_dbs timeout --kill-after=10 "$secs" ./mariadb-test-run.pl \
        --extern host=127.0.0.1 --extern port="$port" --extern socket="$sock" \
        --extern user=root --vardir="$work/var-$side" --tmpdir="$work/tmp/$side" \
        --nocheck-testcases --force --retry=0 --max-test-fail=0 --testcase-timeout=1 \
        $(mode_flag "$mode") "$@") </dev/null >"$log" 2>&1
}

# results LOG: "test RESULT" for each test line of an mtr log (a test run
# in several combinations: FAIL or HANG over PASS over SKIP).
results() {
    awk '
        match($0, /\[ (pass|fail|skipped|disabled) \]/) {
            t = $1; r = substr($0, RSTART + 2, RLENGTH - 4)
            r = r == "pass" ? "PASS" : r == "fail" ? "FAIL" : "SKIP"
            if (r == "FAIL" && $0 ~ /timeout after/) r = "HANG"
            rank["SKIP"] = 1; rank["PASS"] = 2; rank["FAIL"] = 3; rank["HANG"] = 4
            if (!(t in res) || rank[r] > rank[res[t]]) res[t] = r
        }
        END { for (t in res) print t, res[t] }' "$1"
}

# alone SIDE MODE TEST: the test on its own, on a server put back first;
# prints PASS, FAIL, SKIP, HANG or ERROR.
alone() {
    local side=$1 mode=$2 t=$3 log r rc
    log=$work/logs/${t//\//_}.$mode.$side.log
    if [[ $side == proxy ]]; then reset_server mtrp; else reset_server mtrd; fi
    mtr "$side" "$mode" "$log" "$limit" "$t"
    rc=$?
    ((rc == 124 || rc == 137)) && { echo HANG; return; }
    r=$(results "$log" | awk -v t="$t" '$1 == t { print $2 }')
    echo "${r:-ERROR}"
}

# ---------------------------------------------------------------- the run

results_txt=$work/results.txt
declare -A pass_n=() fail_n=() known_n=() same_n=()
bad=()
printf '%-48s %-7s %-6s %-6s %s\n' test mode proxy direct verdict | tee "$results_txt"
start=$(date +%s)
batch_secs=$((${#tests[@]} * 70 + 120))
for mode in $modes; do
    reset_server mtrp
    reset_server mtrd
    mtr proxy "$mode" "$work/logs/batch.$mode.proxy.log" "$batch_secs" "${tests[@]}" &
    ppid=$!
    mtr direct "$mode" "$work/logs/batch.$mode.direct.log" "$batch_secs" "${tests[@]}"
    wait "$ppid"
    declare -A pr=() dr=()
    while read -r t r; do pr[$t]=$r; done < <(results "$work/logs/batch.$mode.proxy.log")
    while read -r t r; do dr[$t]=$r; done < <(results "$work/logs/batch.$mode.direct.log")
    for t in "${tests[@]}"; do
        p=${pr[$t]:-ERROR}
        d=${dr[$t]:-ERROR}
        if [[ $p != "$d" ]]; then # again, each on its own
            p=$(alone proxy "$mode" "$t")
            d=$(alone direct "$mode" "$t")
        fi
        if [[ $p == "$d" ]]; then
            verdict=same
            if [[ $p == PASS ]]; then
                pass_n[$mode]=$((${pass_n[$mode]:-0} + 1))
            else
                same_n[$mode]=$((${same_n[$mode]:-0} + 1))
            fi
        elif [[ $d != PASS ]]; then
            verdict="direct $d: not the proxy's"
            same_n[$mode]=$((${same_n[$mode]:-0} + 1))
        elif [[ -n ${known["$t $mode"]:-} ]]; then
            verdict="KNOWN: ${known["$t $mode"]}"
            known_n[$mode]=$((${known_n[$mode]:-0} + 1))
        else
            verdict=DIFFERS
            fail_n[$mode]=$((${fail_n[$mode]:-0} + 1))
            bad+=("$t/$mode")
        fi
        printf '%-48s %-7s %-6s %-6s %s\n' "$t" "$mode" "$p" "$d" "$verdict" | tee -a "$results_txt"
    done
    unset pr dr
done
secs=$(($(date +%s) - start))

{
    for mode in $modes; do
        echo "mtr $mode: ${pass_n[$mode]:-0} pass through the proxy and direct," \
             "${fail_n[$mode]:-0} differ, ${known_n[$mode]:-0} known differences," \
             "${same_n[$mode]:-0} fail or skip direct as well"
    done
    ((${#bad[@]} > 0)) && echo "mtr: differ from direct: ${bad[*]} (logs in $work/logs)"
    [[ $pool != session ]] && mr_pool_report "$cport"
    echo "mtr: ${#tests[@]} tests x $(wc -w <<<"$modes") modes in ${secs}s (pool = $pool)," \
         "$( ((${#bad[@]} == 0)) && echo "no difference" || echo "${#bad[@]} differences")"
} | tee -a "$results_txt"
((${#bad[@]} == 0))
