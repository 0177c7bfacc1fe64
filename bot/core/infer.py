"""What a request that names no host (or build) is about, when the thread and the channel do not say: the one
host where a build runs — one rigops started, or build processes its agents see — and the one build running
there. A guess always says where it came from, so a wrong one is one Cancel away."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.services import Services
from bot.text import messages
from bot.util.aio import within
from bot.util.errors import HostError

PROBE_TIMEOUT = 2.0  # seconds the agents have to say what runs on their hosts
MAX_PROBED = 32  # beyond this many candidates, only hosts with a warm agent are asked


@dataclass(frozen=True)
class Guess:
    host: str
    build: str | None
    why: str


async def guess_host(services: Services, candidates: Sequence[str]) -> Guess | None:
    """The one candidate host with a build running, or None when none or several have one."""
    running = {r.host: r.build for r in services.store.runs(live=True, limit=500) if r.host in candidates}
    if len(running) == 1:
        host, build = next(iter(running.items()))
        return Guess(host, build, messages.guessed_rigops_build(host))
    if running:
        return None
    busy = await _hosts_with_build_processes(services, candidates)
    if len(busy) == 1:
        return Guess(busy[0], None, messages.guessed_build_processes(busy[0]))
    return None


def guess_build(services: Services, host: str, candidates: Sequence[str]) -> Guess | None:
    """The one build of ``candidates`` rigops has running on ``host``."""
    running = {r.build for r in services.store.runs(host=host, live=True, limit=100) if r.build in candidates}
    if len(running) == 1:
        build = next(iter(running))
        return Guess(host, build, messages.guessed_running_build(host, build))
    return None


async def _hosts_with_build_processes(services: Services, candidates: Sequence[str]) -> list[str]:
    names = [h for h in candidates if h in services.config.hosts]
    if len(names) > MAX_PROBED:
        names = [h for h in names if services.hosts[h].connected]

    async def busy(name: str) -> bool:
        try:
            snap = await within(services.hosts[name].snapshot(user=services.config.hosts[name].user, top=0),
                                PROBE_TIMEOUT)
        except (HostError, TimeoutError):
            return False
        return bool(snap.tools)

    found = await asyncio.gather(*(busy(n) for n in names))
    return [n for n, yes in zip(names, found, strict=True) if yes]
