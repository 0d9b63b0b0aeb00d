#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/spdx.sh [--check]: every source file of ours says its licence on its first line
# (after a #! line): `/* SPDX-License-Identifier: Apache-2.0 */` in C, `# ...` in shell,
# Python and CMake, `-- ...` in Lua. Without --check it adds the line where it is missing and
# changes nothing else (run it again: nothing to do). --check changes nothing: it lists the
# files without the line and exits 1 if there are any (ctest `spdx`).
# Source files: C, shell, Python, Lua, CMake and #! scripts under src, include, tests, bench,
# scripts, and the build, image and package scripts (CMakeLists.txt, docker, dist, .ci); not
# data (fuzz corpus, test lists, configs, rules, SQL, documentation).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
id='SPDX-License-Identifier: Apache-2.0'

# The comment line a file takes, or nothing when it is not one of our source files.
comment_for() {
    [[ $1 == tests/fuzz/corpus/* ]] && return
    case ${1##*/} in
    *.c | *.h) echo "/* $id */" ;;
    *.sh | *.py | *.cmake | CMakeLists.txt | Dockerfile) echo "# $id" ;;
    *.lua) echo "-- $id" ;;
    *.*) ;;
    *) [[ $(head -c 2 "$1") == '#!' ]] && echo "# $id" ;;
    esac
}

# True when the licence line is the first line, or the second after a #! line.
has_id() {
    local first second
    { IFS= read -r first; IFS= read -r second; } <"$1"
    [[ $first == *"$id"* ]] || [[ $first == '#!'* && $second == *"$id"* ]]
}

mapfile -t files < <(git ls-files -- src include tests bench scripts docker dist .ci CMakeLists.txt)
missing=0 added=0 checked=0
for f in "${files[@]}"; do
    [[ -f $f ]] || continue
    line=$(comment_for "$f")
    [[ -n $line ]] || continue
    checked=$((checked + 1))
    has_id "$f" && continue
    if [[ ${1:-} == --check ]]; then
        echo "spdx: $f has no '$id' line (run scripts/spdx.sh)"
        missing=$((missing + 1))
    elif [[ $(head -c 2 "$f") == '#!' ]]; then
        sed -i "1a\\$line" "$f" && added=$((added + 1))
    else
        sed -i "1i\\$line" "$f" && added=$((added + 1))
    fi
done
if [[ ${1:-} == --check ]]; then
    echo "spdx: $checked source files, $missing without the licence line"
    ((missing == 0))
else
    echo "spdx: $checked source files, the line added to $added"
fi
