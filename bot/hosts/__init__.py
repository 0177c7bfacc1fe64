"""Hosts: each configured machine, reached through the rigops agent (locally or over SSH)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping

from bot.config import Config, HostConfig
from bot.hosts.base import Host


def make_host(config: HostConfig) -> Host:
    if config.is_local:
        from bot.hosts.local import LocalHost

        return LocalHost(config)
    from bot.hosts.ssh import SshHost

    return SshHost(config)


class Hosts:
    """The configured hosts, each connected lazily on first use and reused after."""

    def __init__(self, config: Config) -> None:
        self._hosts: Mapping[str, Host] = {name: make_host(hc) for name, hc in config.hosts.items()}

    def __getitem__(self, name: str) -> Host:
        return self._hosts[name]

    def __iter__(self) -> Iterator[Host]:
        return iter(self._hosts.values())

    async def close_idle(self, max_idle: float) -> list[str]:
        """Close the connections of hosts nobody asked anything for ``max_idle`` seconds; they reopen on use."""
        now = time.monotonic()
        idle = [h for h in self._hosts.values() if h.connected and now - h.last_used > max_idle]
        await asyncio.gather(*(h.close() for h in idle), return_exceptions=True)
        return [h.name for h in idle]

    async def close(self) -> None:
        await asyncio.gather(*(h.close() for h in self._hosts.values()), return_exceptions=True)


__all__ = ["Host", "Hosts", "make_host"]
