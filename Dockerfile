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
 && rm -rf /var/lib/apt/lists/*

# A fixed uid/gid, so that the mounted keys and state volume can be given to it on the host (chown 10001).
ARG RIGOPS_UID=10001
RUN groupadd --system --gid "${RIGOPS_UID}" rigops \
 && useradd --system --uid "${RIGOPS_UID}" --gid rigops --home-dir /home/rigops --create-home \
      --shell /usr/sbin/nologin rigops \
 && install -d -o rigops -g rigops -m 0700 /var/lib/rigops \
 && install -d -m 0755 /etc/rigops

# The package from the checkout (only what it is built from; .dockerignore keeps the rest out of the context).
WORKDIR /tmp/rigops-src
COPY pyproject.toml README.md ./
COPY bot ./bot
RUN pip install . \
 && cd / && rm -rf /tmp/rigops-src

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
