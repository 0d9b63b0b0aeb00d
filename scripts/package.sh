#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package myrewrite_<version>_amd64.deb with CPack from a
# build directory of its own (default build-deb/, tests off, Release with
# debug info stripped from the packaged binary), and prints its path.
#   scripts/package.sh [BUILD_DIR]
# DEBEMAIL (and DEBFULLNAME) set the package's maintainer. Then, optionally: lintian --info "$(scripts/package.sh)"
#
# CPack rather than a debian/ directory: the package is made from the same
# install() rules as `cmake --install` (CMakeLists.txt, dist/install.cmake),
# so the two cannot drift apart, and building it needs nothing beyond the
# build dependencies. See dist/package.cmake.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-deb}
maint="${DEBFULLNAME:-myrewrite maintainers} <${DEBEMAIL:-myrewrite@localhost}>"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMYREWRITE_TESTS=OFF \
      -DMYREWRITE_DEB=ON -DCMAKE_INSTALL_PREFIX=/usr -DMYREWRITE_DEB_MAINTAINER="$maint" >"$build/package.log" 2>&1 \
    || { cat "$build/package.log" >&2; exit 1; }
cmake --build "$build" -j"$(nproc)" >>"$build/package.log" 2>&1 || { tail -n 30 "$build/package.log" >&2; exit 1; }
(cd "$build" && cpack -G DEB >>"$build/package.log" 2>&1) || { tail -n 30 "$build/package.log" >&2; exit 1; }
version=$(sed -n 's/^project(myrewrite VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
deb=$build/myrewrite_${version}_$(dpkg --print-architecture).deb
[[ -s $deb ]] || { echo "package.sh: $deb was not made; see $build/package.log" >&2; exit 1; }
echo "$deb"
