#!/usr/bin/env bash
# Build rigops' container image with podman where Docker Hub cannot be reached: a Debian bookworm root file
# system made from Debian's own packages (mmdebstrap, from the Debian mirror), imported as a local base image,
# then the Dockerfile built on it. Idempotent: a base image already there is kept, and podman's layer cache makes
# a second build of an unchanged checkout a matter of seconds. See docs/deploy.md.
#
#   deploy/build-image.sh                  # localhost/rigops-base:bookworm, then localhost/rigops:latest
#   deploy/build-image.sh --rebuild-base   # make the base again (e.g. for Debian's security updates)
#   deploy/build-image.sh --no-cache       # build the image with no cached layer (the base is kept)
#
# Environment: IMAGE (localhost/rigops:latest), BASE (localhost/rigops-base:bookworm), MIRROR
# (http://deb.debian.org/debian), SECURITY_MIRROR (http://deb.debian.org/debian-security). Run as root
# (mmdebstrap's root mode; rootful podman); podman and mmdebstrap are installed from Debian when missing.
set -euo pipefail

cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-localhost/rigops:latest}
BASE=${BASE:-localhost/rigops-base:bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm
# What python:3.11-slim-bookworm has that the Dockerfile needs: Python 3.11 with venv/ensurepip, CA certificates.
BASE_PACKAGES=python3,python3-venv,ca-certificates

rebuild_base=false
cache=()
for arg in "$@"; do
    case $arg in
        --rebuild-base) rebuild_base=true ;;
        --no-cache) cache=(--no-cache) ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $arg (see --help)" >&2; exit 2 ;;
    esac
done

say() { printf '== %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- the tools ------------------------------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || { echo "run as root: mmdebstrap makes the base in root mode, podman runs rootful" >&2; exit 1; }
missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
# cgroups v1 with a cgroup2 hierarchy beside it: crun (podman's default) refuses it, runc runs it
if [ "$(stat -fc %T /sys/fs/cgroup)" = tmpfs ] && [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ] \
        && ! command -v runc >/dev/null 2>&1; then
    missing+=(runc)
fi
if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} from Debian"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# shellcheck source=deploy/podman.sh
. deploy/podman.sh

# --- the base: Debian bookworm from Debian's packages ---------------------------------------------------------
if $rebuild_base || ! podman image exists "$BASE"; then
    work=$(mktemp -d /var/tmp/rigops-base.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    say "making $BASE with mmdebstrap ($SUITE, minbase + $BASE_PACKAGES, from $MIRROR)"
    start=$(now)
    # minbase: essential packages and apt; no man pages, docs or translations, as in Debian's -slim images
    # (the dpkg settings stay in the image, so what the Dockerfile installs leaves them out too); mmdebstrap
    # removes apt's lists and cache at the end. The apt settings of Debian's own container images are written
    # in: the .debs and apt's binary caches deleted after each install, no translations (with them in place,
    # mmdebstrap's `apt-get clean` no longer sees the caches of its own install: the second hook drops them).
    clean='"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"'
    printf '%s\n' "DPkg::Post-Invoke { $clean; };" "APT::Update::Post-Invoke { $clean; };" \
        'Dir::Cache::pkgcache "";' 'Dir::Cache::srcpkgcache "";' >"$work/docker-clean"
    echo 'Acquire::Languages "none";' >"$work/docker-no-languages"
    # shellcheck disable=SC2016  # the hook's $1 is for mmdebstrap to fill in: the root it makes
    mmdebstrap --quiet --variant=minbase --include="$BASE_PACKAGES" \
        --customize-hook="copy-in $work/docker-clean $work/docker-no-languages /etc/apt/apt.conf.d" \
        --customize-hook='rm -f "$1"/var/cache/apt/*.bin' \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        "$SUITE" "$work/rootfs.tar" \
        "deb $MIRROR $SUITE main" \
        "deb $MIRROR $SUITE-updates main" \
        "deb $SECURITY_MIRROR $SUITE-security main"
    podman image rm -f "$BASE" >/dev/null 2>&1 || true
    podman import --quiet \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/bin/bash"]' \
        --change "LABEL org.opencontainers.image.description=\"Debian $SUITE minbase + $BASE_PACKAGES, mmdebstrap\"" \
        --message "mmdebstrap $SUITE minbase + $BASE_PACKAGES from $MIRROR" \
        "$work/rootfs.tar" "$BASE" >/dev/null
    rm -rf "$work"
    trap - EXIT
    say "base made in $(since "$start") s"
else
    say "$BASE is there (--rebuild-base makes it again)"
fi
podman_probe "$BASE"

# --- the image ------------------------------------------------------------------------------------------------
# --format docker: the OCI image format has no HEALTHCHECK, and podman would drop it.
# A CA bundle that pip is told to trust here (a proxy that intercepts TLS: $PIP_CERT, or pip's `cert` setting)
# is mounted for the build only, as the Dockerfile's CA_BUNDLE; it does not end up in the image.
ca=${CA_BUNDLE:-${PIP_CERT:-$(python3 -m pip config get global.cert 2>/dev/null || true)}}
trust=()
if [ -n "$ca" ] && [ -f "$ca" ]; then
    trust=(--volume "$(realpath "$ca"):/run/build-ca.pem:ro" --build-arg CA_BUNDLE=/run/build-ca.pem)
    say "pip in the build trusts $ca (mounted for the build only)"
fi
say "building $IMAGE on $BASE"
start=$(now)
"${PODMAN[@]}" build --format docker "${LIMITS[@]}" "${cache[@]}" "${trust[@]}" \
    --build-arg PYTHON_IMAGE="$BASE" --tag "$IMAGE" --file Dockerfile .
say "built $IMAGE in $(since "$start") s: $(podman image inspect --format '{{.Size}}' "$IMAGE" \
    | awk '{ printf "%.0f MB", $1 / 1e6 }') ($(podman image inspect --format '{{.Size}}' "$BASE" \
    | awk '{ printf "%.0f MB", $1 / 1e6 }') of it the base)"
