#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install everything needed to build myrewrite and run its unit and
# integration tests on Debian 12. Idempotent: when every package is already
# installed it does not even refresh the apt lists, so re-runs take a second.
set -euo pipefail

packages=(
    # toolchain and libraries the build links against
    gcc libc6-dev make cmake pkg-config
    libevent-dev libmariadb-dev libmariadb-dev-compat libpcre2-dev libcmocka-dev libssl-dev zlib1g-dev libzstd-dev
    # the fuzz targets (scripts/fuzz.sh): clang and its libFuzzer/sanitizer
    # runtimes, which clang only recommends
    clang libclang-rt-dev
    # scripts/format.sh and the ctest `format`
    clang-format
    # servers and clients the integration tests drive
    mariadb-server mariadb-client python3 python3-pymysql sysbench
    # zstd frames built by the raw clients of t_compress.py and scripts/fuzz_corpus.py
    python3-zstandard
    # MariaDB's own regression suite, run through the proxy (tests/mtr/compare.sh)
    mariadb-test
    # test plumbing: TLS certificates, pgrep/ps, fuser, ss, timeout
    openssl procps psmisc iproute2 coreutils
    # an expired server certificate (t_tls.py; openssl req cannot date one in the past)
    python3-cryptography
    # the io_uring floor relay (bench/relay_floor_uring.c; skipped without it)
    liburing-dev
    # /metrics checked with a Prometheus parser; the man page rendered with groff
    python3-prometheus-client groff-base
    # container setup in docker/; the image and package tests (t_image.sh,
    # t_package.sh): a Debian root made by debootstrap, podman building the
    # image on it, the .deb built by CPack (dpkg-shlibdeps) and checked by lintian
    docker-compose debootstrap podman dpkg-dev lintian
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#packages[@]} packages already installed"
    exit 0
fi
echo "install-deps: installing ${missing[*]}"

sudo=()
if ((EUID != 0)); then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo" >&2; exit 1; }
    sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
# One retry: a mirror hiccup should not fail a whole CI run.
"${sudo[@]}" apt-get update || { sleep 5; "${sudo[@]}" apt-get update; }
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" \
    || { sleep 5; "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; }

# Installing mariadb-server may start the distribution's own service; the
# tests start private instances on their own ports and do not need it.
echo "install-deps: done"
