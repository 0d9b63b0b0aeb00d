#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/format.sh [--check]: formats the C sources (src/, include/, tests/, bench/) with
# clang-format and the tree's .clang-format. --check changes nothing: it lists the files
# that differ from their formatted selves and exits 1 if there are any (CI runs it).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
command -v clang-format >/dev/null ||
    { echo "format: clang-format is not installed (scripts/install-deps.sh)"; exit 1; }
mapfile -t files < <(git ls-files -- 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 'bench/*.[ch]')
if [[ ${1:-} != --check ]]; then
    clang-format -i "${files[@]}"
    exit 0
fi
# One clang-format for all files: it names each line that would change.
mapfile -t bad < <(clang-format --dry-run "${files[@]}" 2>&1 |
    sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u)
for f in "${bad[@]}"; do
    echo "format: $f differs from clang-format's (run scripts/format.sh)"
done
echo "format: ${#files[@]} files, ${#bad[@]} to format"
((${#bad[@]} == 0))
