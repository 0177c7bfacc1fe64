"""Host configs for tests: this machine, and SSH to a test sshd (tests.fakes.sshd) — the one way to build them.

tests/conftest.py makes fixtures of these: ``ssh_table`` (the test sshd as the build user), ``host`` (a Host of
every kind in turn, for contract tests) and ``local_host`` (this machine, as ourselves).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.config import HostConfig, parse
from tests.fakes.sshd import SshServer

LOCAL_NAME, SSH_NAME = "here", "there"  # what the hosts are called in the configs below
SshTable = Callable[..., dict[str, Any]]  # the ssh_table fixture: ssh_table(**overrides) -> a [hosts.X] table


def local_config(user: str | None = None) -> HostConfig:
    """This machine as a host (its agent a subprocess of ours), said to run builds as ``user``."""
    table: dict[str, Any] = {"address": "local"}
    if user is not None:
        table["user"] = user
    return parse({"hosts": {LOCAL_NAME: table}}).hosts[LOCAL_NAME]


def ssh_config(server: SshServer, **overrides: Any) -> HostConfig:
    """The test sshd as a host; ``overrides`` go into its [hosts.X] table (user, port, timeouts...)."""
    return parse({"hosts": {SSH_NAME: server.host_table(**overrides)}}).hosts[SSH_NAME]


def host_config(kind: str, *, user: str, server: SshServer | None = None) -> HostConfig:
    """A host of ``kind`` ("local" or "ssh", to ``server``) whose builds run as ``user``."""
    if kind == "local":
        return local_config(user)
    assert kind == "ssh" and server is not None, kind
    return ssh_config(server, user=user)
