#!/usr/bin/env bash
# Run the image deploy/build-image.sh built against the Slack emulator in this checkout (slackemu/), on
# 127.0.0.1 only, and check it: it connects, /healthz is 200 and the HEALTHCHECK healthy, a message is answered,
# /metrics parses and counts it, `podman stop` ends it with exit status 0. Prints how long each step took from
# `podman run`. Needs the checkout's venv (`make unit` or any make target that installs it) for the emulator.
#
#   deploy/run-image.sh                 # localhost/rigops:latest
#   deploy/run-image.sh --keep          # leave the container and its state volume behind to look at
#
# Environment: IMAGE (localhost/rigops:latest), PYTHON (.venv/bin/python). Run as root, like build-image.sh.
set -euo pipefail

cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-localhost/rigops:latest}
PYTHON=${PYTHON:-.venv/bin/python}
[ -x "$PYTHON" ] || { echo "no $PYTHON: make the checkout's venv first (make unit)" >&2; exit 1; }
podman image exists "$IMAGE" || { echo "no image $IMAGE: deploy/build-image.sh builds it" >&2; exit 1; }
# shellcheck source=deploy/podman.sh
. deploy/podman.sh
podman_probe "$IMAGE"
exec "$PYTHON" deploy/check_image.py --image "$IMAGE" --podman "${PODMAN[*]}" --limits "${LIMITS[*]}" "$@"
