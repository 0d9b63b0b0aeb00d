#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packaging: `cmake --install` into a throwaway prefix, then
#   * the binary, man page, systemd unit, sysusers entry, example config,
#     rules, and the licence land where they should, with the unit's paths filled in;
#   * the unit passes `systemd-analyze verify` (when systemd-analyze exists);
#   * every flag of `myrewrite --help` is documented in doc/myrewrite.1, and
#     the page renders without groff warnings (when groff exists);
#   * every key of `myrewrite --config-reference` is in dist/myrewrite.conf
#     with its default, and the installed example passes --check;
#   * a second install keeps a config the administrator changed.
# Needs no database.
set -uo pipefail
. "$(dirname "$0")/../lib/env.sh"

prefix=$MR_TMP/inst
rm -rf "$prefix"
out=$(cmake --install "$MR_BUILD" --prefix "$prefix" 2>&1)
rc=$?
mr_eq "cmake --install succeeds" 0 "$rc"
((rc == 0)) || echo "$out"

for f in bin/myrewrite share/man/man1/myrewrite.1 lib/systemd/system/myrewrite.service \
         lib/sysusers.d/myrewrite.conf etc/myrewrite/myrewrite.conf \
         share/doc/myrewrite/myrewrite.conf share/doc/myrewrite/rules/README.md \
         share/doc/myrewrite/rules/00-examples.rules share/doc/myrewrite/LICENSE; do
    if [[ -s $prefix/$f ]]; then mr_ok "installs $f"; else mr_not_ok "installs $f"; fi
done
[[ -x $prefix/bin/myrewrite ]] && mr_ok "bin/myrewrite is executable" \
    || mr_not_ok "bin/myrewrite is executable"
[[ -d $prefix/etc/myrewrite/rules ]] && mr_ok "creates etc/myrewrite/rules" \
    || mr_not_ok "creates etc/myrewrite/rules"

unit=$prefix/lib/systemd/system/myrewrite.service
mr_eq "unit ExecStart uses the prefix" \
    "ExecStart=$prefix/bin/myrewrite --config $prefix/etc/myrewrite/myrewrite.conf" \
    "$(grep '^ExecStart=' "$unit")"
mr_eq "unit runs in the config directory" "WorkingDirectory=$prefix/etc/myrewrite" \
    "$(grep '^WorkingDirectory=' "$unit")"
mr_eq "no placeholder left in the unit" "" "$(grep -o '@[A-Z_]*@' "$unit")"
if command -v systemd-analyze >/dev/null; then
    v=$(systemd-analyze verify --man=no "$unit" 2>&1)
    mr_eq "systemd-analyze verify accepts the unit" "" "$v"
else
    echo "# systemd-analyze not installed; unit not verified"
fi

# Every flag of --help in the man page (its source, with \- read as -).
help=$("$MR_BIN" --help)
page=$(sed 's/\\-/-/g' "$MR_ROOT/doc/myrewrite.1")
mapfile -t flags < <(grep -oE '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' <<<"$help" \
                     | sed 's/^[ ,]*//' | sort -u)
((${#flags[@]} >= 16)) && mr_ok "found ${#flags[@]} flags in --help" \
    || mr_not_ok "found only ${#flags[@]} flags in --help"
for f in "${flags[@]}"; do
    if grep -qE -- "(^|[^a-zA-Z-])${f}([^a-zA-Z-]|$)" <<<"$page"; then
        mr_ok "man page documents $f"
    else
        mr_not_ok "man page documents $f"
    fi
done
if command -v groff >/dev/null; then
    w=$(groff -man -ww -z "$MR_ROOT/doc/myrewrite.1" 2>&1)
    mr_eq "man page renders without groff warnings" "" "$w"
    text=$(groff -man -Tascii -P -cbu "$MR_ROOT/doc/myrewrite.1" 2>/dev/null)
    mr_match "rendered page has the options section" "OPTIONS" "$text"
fi

# Every config key, with its default, in the example config.
conf=$MR_ROOT/dist/myrewrite.conf
while IFS='|' read -r _ key def _; do
    key=$(sed 's/[ `]//g' <<<"$key")
    def=$(sed 's/^ *`//; s/` *$//' <<<"$def")
    [[ -z $key || $key == key || $key == ---* ]] && continue
    want="# $key = $def"
    want=${want% }
    if grep -qxF -- "$want" "$conf"; then
        mr_ok "example config has '$want'"
    else
        mr_not_ok "example config has '$want'"
    fi
done < <("$MR_BIN" --config-reference)
chk=$(cd "$MR_TMP" && "$prefix/bin/myrewrite" --config "$prefix/etc/myrewrite/myrewrite.conf" \
      --rules "$prefix/etc/myrewrite/rules" --check 2>&1)
mr_match "installed example config passes --check" "^configuration OK" "$chk"

# Reinstalling keeps an edited config.
echo "# edited" >>"$prefix/etc/myrewrite/myrewrite.conf"
cmake --install "$MR_BUILD" --prefix "$prefix" >/dev/null 2>&1
mr_eq "reinstall keeps the administrator's config" "# edited" \
    "$(tail -n 1 "$prefix/etc/myrewrite/myrewrite.conf")"

rm -rf "$prefix"
mr_done
