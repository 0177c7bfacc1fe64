# rigops in a container: `rigops run` (Slack Socket Mode) as an unprivileged user. See docs/deploy.md.
#
#   docker build -t rigops .
#   docker run -d --name rigops --restart unless-stopped \
#     --env-file /etc/rigops/rigops.env \
#     -v /etc/rigops/rigops.toml:/etc/rigops/rigops.toml:ro \
#     -v /etc/rigops/ssh:/home/rigops/.ssh:ro \
#     -v rigops-state:/var/lib/rigops \
#     rigops
#
# The arguments after the image name replace `run`: `docker run --rm ... rigops check`, `... rigops --help`.
# With podman or buildah, build with `--format docker` (the OCI format has no HEALTHCHECK); without Docker Hub,
# deploy/build-image.sh makes a Debian base from Debian's packages and builds on it (PYTHON_IMAGE below).
#
# PYTHON_IMAGE: any Debian-based image whose python3 (3.11 or newer) has venv and ensurepip: the official
# python:3.11-slim, or a Debian bookworm with python3, python3-venv and ca-certificates.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# openssh-client: rigops itself speaks SSH through asyncssh; ssh and ssh-keyscan are here to check a key and to
# fill known_hosts from inside the container. tini: pid 1 that reaps orphans and passes the stop signal on.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-client tini \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

# A fixed uid/gid, so that the mounted keys and state volume can be given to it on the host (chown 10001).
ARG RIGOPS_UID=10001
RUN groupadd --system --gid "${RIGOPS_UID}" rigops \
 && useradd --system --uid "${RIGOPS_UID}" --gid rigops --home-dir /home/rigops --create-home \
      --shell /usr/sbin/nologin rigops \
 && install -d -o rigops -g rigops -m 0700 /var/lib/rigops \
 && install -d -m 0755 /etc/rigops

# The package from the checkout (only what it is built from; .dockerignore keeps the rest out of the context),
# into its own venv: Debian's python3 is managed by apt (PEP 668) and refuses a `pip install` into it; the
# official image's takes the venv the same way. /opt/rigops/bin comes first on PATH, so `rigops` is that one.
# CA_BUNDLE: a CA bundle pip trusts during this build only, for a network whose proxy intercepts TLS
# (deploy/build-image.sh mounts the host's with `podman build --volume`); it is not copied into the image.
ARG CA_BUNDLE=
WORKDIR /tmp/rigops-src
COPY pyproject.toml README.md ./
# The dependencies pyproject.toml names first, in a layer of their own: a change to bot/ rebuilds only the
# next one, which installs rigops itself.
RUN if [ -n "$CA_BUNDLE" ]; then export PIP_CERT="$CA_BUNDLE"; fi \
 && python3 -m venv /opt/rigops \
 && python3 -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"], sep="\n")' \
      > requirements.txt \
 && /opt/rigops/bin/pip install -r requirements.txt
COPY bot ./bot
RUN if [ -n "$CA_BUNDLE" ]; then export PIP_CERT="$CA_BUNDLE"; fi \
 && /opt/rigops/bin/pip install . --no-deps \
 && /opt/rigops/bin/pip check \
 && cd / && rm -rf /tmp/rigops-src
ENV PATH=/opt/rigops/bin:$PATH

# The health check asks rigops' own /healthz (200: the state answers and Slack is connected) on the address it
# serves metrics on (`metrics = "0.0.0.0:9464"` in the config, or `run --metrics`); with metrics off it has
# nothing to ask and passes. Docker runs it itself; podman only when systemd is there (else `podman
# healthcheck run rigops`).
COPY deploy/healthcheck.py /usr/local/lib/rigops/healthcheck.py
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["/opt/rigops/bin/python", "/usr/local/lib/rigops/healthcheck.py"]

# Config: mount it read-only here (no file there = an error, not the local-only default).
# State: SQLite, logs and local files; one volume per rigops (a replica too). Tokens: SLACK_BOT_TOKEN and
# SLACK_APP_TOKEN (and RIGOPS_STATE_URL for a shared PostgreSQL state) from the environment (--env-file).
# SSH: keys and known_hosts in /home/rigops/.ssh (mounted read-only), so `key = "~/.ssh/id_ed25519"` works.
ENV RIGOPS_CONFIG=/etc/rigops/rigops.toml \
    RIGOPS_STATE_DIR=/var/lib/rigops \
    HOME=/home/rigops
VOLUME ["/var/lib/rigops"]
USER rigops:rigops
WORKDIR /var/lib/rigops

# `docker stop` sends SIGTERM: rigops stops cleanly (resumes compilers it paused, leaves its builds to the other
# rigops on a shared state, closes its connections) and exits 0.
ENTRYPOINT ["/usr/bin/tini", "--", "rigops"]
CMD ["run"]
