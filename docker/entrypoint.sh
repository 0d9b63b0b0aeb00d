#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The container's entrypoint: the proxy's own account comes from the
# environment or a secret, never from the image. With MYREWRITE_PROXY_USER
# set, the password is read from the file MYREWRITE_PROXY_PASSWORD_FILE (a
# compose or swarm secret, /run/secrets/...) or else MYREWRITE_PROXY_PASSWORD,
# and both are added to a private copy of the configuration, so they show
# neither in the image nor on the command line (ps). Arguments go to myrewrite.
# MYREWRITE_BIN and MYREWRITE_CONFIG move the binary and the configuration
# (t_options.py runs this script on the host).
set -euo pipefail
bin=${MYREWRITE_BIN:-/usr/local/bin/myrewrite}
conf=${MYREWRITE_CONFIG:-/etc/myrewrite/myrewrite.conf}
if [[ -n ${MYREWRITE_PROXY_USER:-} ]]; then
    if [[ -n ${MYREWRITE_PROXY_PASSWORD_FILE:-} ]]; then
        pw=$(<"$MYREWRITE_PROXY_PASSWORD_FILE")
    else
        pw=${MYREWRITE_PROXY_PASSWORD:-}
    fi
    private=$(umask 077 && mktemp "${TMPDIR:-/tmp}/myrewrite.XXXXXX.conf")
    { cat "$conf"; printf '\nproxy_user = %s\nproxy_password = %s\n' "$MYREWRITE_PROXY_USER" "$pw"; } \
        >"$private"
    conf=$private
fi
exec "$bin" --config "$conf" "$@"
