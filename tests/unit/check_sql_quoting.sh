#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# check_sql_quoting.sh - fails when an SQL builder of the proxy writes a
# name or a string literal by hand instead of through sql/quote.h.
#
# Usage: check_sql_quoting.sh SOURCE_DIR
#
# Looked for in the C string literals of the files that build SQL (comments
# left out): a literal with an odd number of backticks or of single quotes
# (one that opens or closes a quoted name or string around text written
# next to it: "`", "_set`", "'"; an apostrophe between two letters, as in
# "the proxy's log", is not counted), a %s or %.*s in a literal that also
# holds a backtick ("`%s`"), and a quote opening a %s value the way SQL
# does ("= '%s'", "('%s", "LIKE '%s"). Fixed names such as "`seq`" and
# fixed strings such as "'BASE TABLE'" pass. A line that must keep such a
# literal says why in a comment holding "quoting-ok:".
set -u
src=${1:?usage: check_sql_quoting.sh SOURCE_DIR}/src
files=$(ls "$src"/*/*_sql.c "$src"/delayed/*.c "$src"/queue/*.c "$src"/paginate/*.c \
        "$src"/schema/*.c "$src"/net/bgconn.c "$src"/session/flush_delayed.c 2>/dev/null | sort -u)
[ -n "$files" ] || { echo "check_sql_quoting: no sources under $src" >&2; exit 2; }

bad=0
for f in $files; do
    # Drop comments (a line starting a comment or inside one, and /* */
    # and // tails), then look at each string literal of the line.
    out=$(awk '
        /^[ \t]*(\/\*|\*)/ { next }
        /quoting-ok:/ { next }
        {
            line = $0
            sub(/\/\*.*$/, "", line)
            rest = line
            while (match(rest, /"([^"\\]|\\.)*"/)) {
                lit = substr(rest, RSTART + 1, RLENGTH - 2)
                rest = substr(rest, RSTART + RLENGTH)
                ticks = gsub(/`/, "`", lit)
                fmt = lit ~ /%(\.\*)?s/
                sqlfmt = lit ~ /(=|\(|LIKE|IN) *\x27%/
                gsub(/[A-Za-z]\x27[A-Za-z]/, "", lit)
                quotes = gsub(/\x27/, "\x27", lit)
                if (ticks % 2 || quotes % 2 || (fmt && ticks) || sqlfmt) {
                    printf "%s:%d: %s\n", FILENAME, FNR, $0
                    break
                }
            }
        }' "$f")
    if [ -n "$out" ]; then
        echo "$out"
        bad=1
    fi
done
if [ "$bad" -ne 0 ]; then
    echo "check_sql_quoting: the lines above write a quoted name or string by hand;" \
         "use mr_sql_put_ident / mr_sql_put_literal (include/myrewrite/sql/quote.h)" >&2
    exit 1
fi
echo "check_sql_quoting: no hand-written quoting in $(echo "$files" | wc -w) SQL builders"
