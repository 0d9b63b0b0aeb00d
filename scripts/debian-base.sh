#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the path of a Debian bookworm minbase root as a tarball, made once
# with debootstrap and cached under ${XDG_CACHE_HOME:-$HOME/.cache}/myrewrite/
# (never in the tree). The package and image tests start from it, so a warm
# run does not download the base again.
#
# The mirror is the one this machine's apt uses (sources.list or deb822
# .sources), read at run time, so no host is written down here.
# mr_apt_like_host ROOT (after sourcing with MR_BASE_LIB=1) points the root's
# apt at the host's sources and Acquire::Check-* settings.
# Exit 77 with a reason on stderr when debootstrap or the mirror is missing.
cache=${MR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/myrewrite}
tarball=$cache/bookworm-minbase.tar

apt_mirror() {
    local f uri
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r $f ]] || continue
        uri=$(awk '/^URIs:/ { print $2; exit }' "$f")
        [[ $uri == */debian ]] && { echo "$uri"; return; }
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r $f ]] || continue
        uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' "$f" \
              | grep -m1 '/debian/\?$' || true)
        [[ -n $uri ]] && { echo "${uri%/}"; return; }
    done
    return 1
}

mr_apt_like_host() {
    local r=$1 f
    rm -f "$r"/etc/apt/sources.list "$r"/etc/apt/sources.list.d/*
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [[ -r $f ]] && cp "$f" "$r$f"
    done
    apt-config dump | grep '^Acquire::Check' >"$r/etc/apt/apt.conf.d/50host-checks" || true
    cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
}
[[ ${MR_BASE_LIB:-0} == 1 ]] && return 0
set -euo pipefail

if [[ -s $tarball ]]; then echo "$tarball"; exit 0; fi
command -v debootstrap >/dev/null || { echo "debootstrap not installed" >&2; exit 77; }
mirror=$(apt_mirror) || { echo "no Debian mirror in /etc/apt sources" >&2; exit 77; }
mkdir -p "$cache"
work=$(mktemp -d "$cache/debootstrap.XXXXXX")
# debootstrap mounts /proc and /sys inside the root while it runs; a failed
# run may leave them, so they are unmounted before the directory goes.
cleanup() {
    findmnt -rn -o TARGET | grep "^$work/" | sort -r | xargs -r -n1 umount -l || true
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT
if ! debootstrap --variant=minbase bookworm "$work/root" "$mirror" >"$work/log" 2>&1; then
    echo "debootstrap from $mirror failed: $(tail -n 1 "$work/log")" >&2
    exit 77
fi
tar -C "$work/root" --one-file-system -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
echo "$tarball"
