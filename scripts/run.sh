#!/usr/bin/env bash
# run.sh - install, build and start myrewrite on a fresh Debian 12 machine.
#
# With no backend given, starts a throwaway MariaDB on 127.0.0.1:3307
# (datadir under .tmp/demo, user app / password apppw, database test) and
# puts the proxy in front of it. Any arguments go to myrewrite, e.g.
#   scripts/run.sh --backend 10.0.0.5:3306 --listen 0.0.0.0:6033
#   scripts/run.sh --config /etc/myrewrite/myrewrite.conf
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

scripts/install-deps.sh || exit 1
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
cmake --build build -j"$(nproc)" --target myrewrite || exit 1

args=("$@")
has_backend=0
for a in "$@"; do
    case $a in --backend | --backend=* | -b | --config | --config=* | -c) has_backend=1 ;; esac
done

if ((has_backend == 0)); then
    export MR_TMP=$root/.tmp/demo MR_DIRECT_PORT=3307
    . tests/lib/env.sh
    mr_start_mariadb demo "$MR_DIRECT_PORT" || exit 1
    args+=(--backend "127.0.0.1:$MR_DIRECT_PORT")
    echo "throwaway MariaDB running on 127.0.0.1:3307 (datadir $MR_TMP/demo)"
    echo "stop it later with: kill \$(cat $MR_TMP/demo/mariadbd.pid)"
fi

listen=127.0.0.1:6033
for ((i = 0; i < ${#args[@]}; i++)); do
    [[ ${args[i]} == --listen || ${args[i]} == -l ]] && listen=${args[i + 1]:-$listen}
done
echo
echo "myrewrite is starting; connect with:"
echo "  mariadb -h ${listen%:*} -P ${listen##*:} -u app -papppw test"
echo "Ctrl-C stops it."
echo
exec build/myrewrite "${args[@]}"
