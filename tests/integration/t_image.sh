#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The container image, built and run: podman builds docker/Dockerfile
# (--isolation=chroot) on Debian 12 images imported from the cached
# debootstrapped root (scripts/debian-base.sh), then the proxy runs from a
# container's root filesystem (podman mount) under chroot as the image's USER,
# through the image's ENTRYPOINT with the image's own config, pointed at this
# test's mariadbd by arguments, with a rules file put where a volume on
# /etc/myrewrite/rules would put it:
#   * a client connects through it and a rule rewrites its statement;
#   * the image's HEALTHCHECK script passes against it, and fails once it stops;
#   * the image runs as a user that is not root, and its size is printed.
# podman keeps its storage under ${XDG_CACHE_HOME:-$HOME/.cache}/myrewrite/podman
# (overlay driver), so a warm run reuses the base images and the build stage's
# package layer. Only the test's own images and its container are touched.
# SKIP (77) without root, podman, debootstrap or a reachable mirror.
# Environment: MR_DIRECT_PORT (the test mariadbd), MR_BIN; the proxy takes free ports.
set -uo pipefail
. "$(dirname "$0")/../lib/env.sh"
MR_BASE_LIB=1 . "$MR_ROOT/scripts/debian-base.sh"

skip() { echo "SKIP: $*"; exit 77; }
((EUID == 0)) || skip "needs root for podman and chroot"
command -v podman >/dev/null || skip "podman not installed"
base=$("$MR_ROOT/scripts/debian-base.sh" 2>"$MR_TMP/img-base.err")
rc=$?
((rc == 77)) && skip "$(cat "$MR_TMP/img-base.err")"
((rc == 0)) || mr_die "debian-base.sh: $(cat "$MR_TMP/img-base.err")"

mr_free_port port && mr_free_port http || mr_die "no free port"
# The storage and its run directory both in the cache: podman records the run
# directory with the storage and refuses another one, and CI runs from a fresh
# clone in another folder.
pm() { podman --root "$cache/podman-store" --runroot "$cache/podman-store-run" --storage-driver overlay "$@"; }
build_img=localhost/myrewrite-test-base:bookworm
slim_img=localhost/myrewrite-test-slim:bookworm
image=localhost/myrewrite-test:latest
t0=$(date +%s)
for p in "$port" "$http"; do
    mr_port_listening "$p" && mr_die "port $p is in use"
done

# The two bases: the debootstrapped root with the host's apt sources, and
# the same without docs, man pages and locales (as debian:bookworm-slim).
import_base() {
    local tag=$1 slim=$2 dir=$MR_TMP/img-root
    pm image exists "$tag" && return 0
    rm -rf --one-file-system "$dir"; mkdir -p "$dir"
    tar -C "$dir" -xf "$base" || return 1
    mr_apt_like_host "$dir"
    if ((slim)); then
        rm -rf "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/info/* \
               "$dir"/usr/share/locale/* "$dir"/var/cache/apt/archives/*.deb \
               "$dir"/var/cache/apt/*.bin "$dir"/var/lib/apt/lists/*
        printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\npath-exclude /usr/share/locale/*\n' \
            >"$dir/etc/dpkg/dpkg.cfg.d/excludes"
    fi
    tar -C "$dir" --one-file-system -c . | pm import - "$tag" >/dev/null
    local rc=$?
    rm -rf --one-file-system "$dir"
    return $rc
}
import_base "$build_img" 0 || mr_die "cannot import $build_img"
import_base "$slim_img" 1 || mr_die "cannot import $slim_img"
mr_ok "base images imported ($(($(date +%s) - t0)) s so far)"

pm build --isolation=chroot --build-arg BASE_IMAGE="$build_img" \
    --build-arg RUNTIME_IMAGE="$slim_img" -f "$MR_ROOT/docker/Dockerfile" -t "$image" \
    "$MR_ROOT" >"$MR_TMP/img-build.log" 2>&1
rc=$?
mr_eq "podman build docker/Dockerfile" 0 "$rc"
((rc == 0)) || { tail -n 30 "$MR_TMP/img-build.log"; mr_done; }
mr_ok "image built ($(($(date +%s) - t0)) s so far)"
size=$(pm images --format '{{.Size}}' "$image")
echo "# image $image: $size"
user=$(pm image inspect --format '{{.Config.User}}' "$image")
mr_eq "the image's USER" "myrewrite" "$user"
mapfile -t entry < <(pm image inspect --format '{{range .Config.Entrypoint}}{{println .}}{{end}}' "$image" | sed '/^$/d')
mr_eq "the image's ENTRYPOINT" "/usr/local/bin/myrewrite-entrypoint" "${entry[*]}"
mapfile -t envs < <(pm image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$image" | sed '/^$/d')

# A container's root filesystem, writable, as the proxy sees it in a container.
ctr=$(pm create "$image") || mr_die "podman create failed"
mnt=$(pm mount "$ctr") || { pm rm "$ctr" >/dev/null; mr_die "podman mount failed"; }
pid=
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    pm umount "$ctr" >/dev/null 2>&1
    pm rm -f "$ctr" >/dev/null 2>&1
}
trap cleanup EXIT
for d in null:1:3 zero:1:5 random:1:8 urandom:1:9; do
    IFS=: read -r n ma mi <<<"$d"
    [[ -e $mnt/dev/$n ]] || mknod -m 666 "$mnt/dev/$n" c "$ma" "$mi"
done
cat >"$mnt/etc/myrewrite/rules/50-image-test.rules" <<'RULES'
[rewrite image_upper]
pattern = SELECT name FROM img_items WHERE id = ?
replacement = SELECT UPPER(name) AS name FROM img_items WHERE id = ?
RULES
chmod 644 "$mnt/etc/myrewrite/rules/50-image-test.rules"
mr_sql_direct test -e "DROP TABLE IF EXISTS img_items;
    CREATE TABLE img_items (id INT PRIMARY KEY, name VARCHAR(20));
    INSERT INTO img_items VALUES (1, 'container')" || mr_die "cannot create img_items"

in_image() { chroot --userspec="$user:$user" "$mnt" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${envs[@]}" HOME=/ "$@"; }
# A simple command in the background: $! is the proxy itself (chroot, env and
# the entrypoint each exec the next).
chroot --userspec="$user:$user" "$mnt" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    "${envs[@]}" HOME=/ "${entry[@]}" --listen "127.0.0.1:$port" --backend "127.0.0.1:$MR_DIRECT_PORT" \
    --set "http_listen=127.0.0.1:$http" >"$MR_TMP/img-proxy.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    mr_port_listening "$port" && break
    sleep 0.1
done
mr_match "the proxy from the image listens" 'listening on 127\.0\.0\.1:'"$port" \
    "$(cat "$MR_TMP/img-proxy.log")"
uid=$(awk -F: -v u="$user" '$1 == u { print $3 }' "$mnt/etc/passwd")
((uid > 0)) && mr_ok "the image's $user has uid $uid, not root" || mr_not_ok "the image's $user has uid '$uid'"
mr_eq "the proxy runs as $user" "$uid" "$(ps -o uid= -p "$pid" | tr -d ' ')"
mr_eq "it reads the image's config" "yes" \
    "$(grep -q 'rules_dir = /etc/myrewrite/rules' "$mnt/etc/myrewrite/myrewrite.conf" && echo yes)"
mr_eq "a client connects and the image's rule rewrites" "CONTAINER" \
    "$(mr_sql_port "$port" test -N -e "SELECT name FROM img_items WHERE id = 1" 2>&1)"
mr_eq "other statements pass unchanged" "container" \
    "$(mr_sql_port "$port" test -N -e "SELECT name FROM img_items WHERE id + 0 = 1" 2>&1)"
hc=$(in_image MYREWRITE_HTTP="127.0.0.1:$http" bash /usr/local/bin/myrewrite-healthcheck 2>&1)
mr_eq "the image's healthcheck passes" "0" "$?"
kill "$pid"; wait "$pid" 2>/dev/null; pid=
hc=$(in_image MYREWRITE_HTTP="127.0.0.1:$http" bash /usr/local/bin/myrewrite-healthcheck 2>&1)
rc=$?
mr_eq "the healthcheck fails once the proxy is gone" "1 unhealthy: nothing on 127.0.0.1:$http" "$rc $hc"
echo "# t_image took $(($(date +%s) - t0)) s; image $size"
mr_sql_direct test -e "DROP TABLE IF EXISTS img_items"
mr_done
