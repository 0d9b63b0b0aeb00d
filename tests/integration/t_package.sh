#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package, installed where it will run: scripts/package.sh builds
# myrewrite_<version>_amd64.deb, lintian (when installed) reports no error or
# warning with a real maintainer address, and apt installs it with its runtime
# libraries into a fresh debootstrapped bookworm root (chroot), where
#   * the binary, unit, sysusers entry, man page, config and example rules are
#     in place, the config and rules as conffiles;
#   * postinst made the system user myrewrite, with no login shell;
#   * `myrewrite --check` passes on the packaged config, run as that user;
#   * removing the package keeps the conffiles, purging removes them.
# The base root is cached (scripts/debian-base.sh), as are the .debs apt
# fetched, under ${XDG_CACHE_HOME:-$HOME/.cache}/myrewrite/.
# SKIP (77) without root, debootstrap or a reachable mirror. Needs no database.
set -uo pipefail
. "$(dirname "$0")/../lib/env.sh"
MR_BASE_LIB=1 . "$MR_ROOT/scripts/debian-base.sh"

skip() { echo "SKIP: $*"; exit 77; }
((EUID == 0)) || skip "needs root for chroot"
base=$("$MR_ROOT/scripts/debian-base.sh" 2>"$MR_TMP/pkg-base.err")
rc=$?
((rc == 77)) && skip "$(cat "$MR_TMP/pkg-base.err")"
((rc == 0)) || mr_die "debian-base.sh: $(cat "$MR_TMP/pkg-base.err")"

deb=$(DEBEMAIL=${DEBEMAIL:-ops@example.org} "$MR_ROOT/scripts/package.sh" "${MR_DEB_BUILD:-$MR_ROOT/build-deb}")
rc=$?
mr_eq "scripts/package.sh builds the package" 0 "$rc"
((rc == 0)) || mr_done
mr_match "the package is named myrewrite_<version>_amd64.deb" \
    '/myrewrite_[0-9]+\.[0-9]+\.[0-9]+_amd64\.deb$' "$deb"
if command -v lintian >/dev/null; then
    mr_eq "lintian reports nothing" "" "$(lintian "$deb" 2>/dev/null)"
else
    echo "# lintian not installed; package not linted"
fi

root=$MR_TMP/pkgroot
rm -rf --one-file-system "$root"
mkdir -p "$root"
tar -C "$root" -xf "$base" || mr_die "cannot unpack $base"
mr_apt_like_host "$root"
archives=$cache/apt-archives
mkdir -p "$archives"
cp "$archives"/*.deb "$root/var/cache/apt/archives/" 2>/dev/null
cp "$deb" "$root/tmp/myrewrite.deb"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 "$@"; }
if ! in_root apt-get update -qq >"$MR_TMP/pkg-apt.log" 2>&1; then
    skip "apt-get update in the root failed: $(tail -n 1 "$MR_TMP/pkg-apt.log")"
fi
DEBIAN_FRONTEND=noninteractive in_root apt-get install -y --no-install-recommends \
    /tmp/myrewrite.deb >>"$MR_TMP/pkg-apt.log" 2>&1
rc=$?
mr_eq "apt-get install ./myrewrite.deb in the root" 0 "$rc"
((rc == 0)) || { tail -n 20 "$MR_TMP/pkg-apt.log"; mr_done; }
cp "$root"/var/cache/apt/archives/*.deb "$archives/" 2>/dev/null

mr_eq "dpkg says installed" "install ok installed" \
    "$(in_root dpkg-query -W -f='${Status}' myrewrite)"
for f in /usr/bin/myrewrite /usr/lib/systemd/system/myrewrite.service \
         /usr/lib/sysusers.d/myrewrite.conf /usr/share/man/man1/myrewrite.1.gz \
         /usr/share/doc/myrewrite/copyright /etc/myrewrite/myrewrite.conf \
         /etc/myrewrite/rules/00-examples.rules; do
    [[ -s $root$f ]] && mr_ok "installs $f" || mr_not_ok "installs $f"
done
mr_eq "the copyright file says Apache-2.0" "License: Apache-2.0" \
    "$(grep -m1 '^License:' "$root/usr/share/doc/myrewrite/copyright")"
conffiles=$(in_root dpkg-query -W -f='${Conffiles}' myrewrite | awk '{ print $1 }' | sort | tr '\n' ' ')
mr_eq "conffiles" "/etc/myrewrite/myrewrite.conf /etc/myrewrite/rules/00-examples.rules " "$conffiles"
mr_eq "the unit runs /usr/bin/myrewrite on /etc/myrewrite" \
    "ExecStart=/usr/bin/myrewrite --config /etc/myrewrite/myrewrite.conf" \
    "$(grep '^ExecStart=' "$root/usr/lib/systemd/system/myrewrite.service")"
user=$(in_root getent passwd myrewrite)
mr_match "postinst made the system user" '^myrewrite:x:[0-9]+:[0-9]+:' "$user"
mr_match "the user has no login shell" ':/usr/sbin/nologin$' "$user"
uid=$(cut -d: -f3 <<<"$user")
((uid > 0 && uid < 1000)) && mr_ok "uid $uid is a system uid" || mr_not_ok "uid '$uid' is a system uid"

out=$(in_root chroot --userspec=myrewrite:myrewrite / \
      /usr/bin/myrewrite --config /etc/myrewrite/myrewrite.conf --check 2>&1)
rc=$?
mr_eq "myrewrite --check on the packaged config, as user myrewrite" 0 "$rc"
((rc == 0)) || echo "$out"
mr_match "--version runs in the root" '0\.[0-9]+\.[0-9]+' "$(in_root myrewrite --version 2>&1)"

in_root dpkg -r myrewrite >>"$MR_TMP/pkg-apt.log" 2>&1
[[ ! -e $root/usr/bin/myrewrite && -s $root/etc/myrewrite/myrewrite.conf ]] \
    && mr_ok "dpkg -r removes the binary, keeps the config" \
    || mr_not_ok "dpkg -r removes the binary, keeps the config"
in_root dpkg -P myrewrite >>"$MR_TMP/pkg-apt.log" 2>&1
[[ ! -e $root/etc/myrewrite/myrewrite.conf ]] && mr_ok "dpkg -P removes the config" \
    || mr_not_ok "dpkg -P removes the config"

rm -rf --one-file-system "$root"
mr_done
