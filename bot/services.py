"""What the bot runs on: config, state, hosts, and a count of requests in flight (the console waits on it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bot.actions import ActionContext, Requester, Target
from bot.chart import MemorySeries
from bot.config import Config
from bot.errors import PlanError
from bot.hosts import Hosts
from bot.plan import Plan
from bot.policy import Policy
from bot.progress import Progress
from bot.store import Store


class Activity:
    """Counts handled requests so a front end can wait until what it sent has been dealt with."""

    def __init__(self) -> None:
        self.finished = 0
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def track(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            async with self._changed:
                self.finished += 1
                self._changed.notify_all()

    async def wait_finished(self, count: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.finished >= count)


@dataclass
class Services:
    config: Config
    store: Store
    hosts: Hosts
    policy: Policy
    activity: Activity = field(default_factory=Activity)
    holders: dict[tuple[str, str | None], str] = field(default_factory=dict)  # who runs the destructive action
    memory: dict[int, MemorySeries] = field(default_factory=dict)  # the live memory series of followed runs
    progress: dict[int, tuple[Progress, float | None]] = field(default_factory=dict)  # followed runs: (progress, eta)
    _locks: dict[tuple[str, str | None], asyncio.Lock] = field(default_factory=dict)

    @classmethod
    def open(cls, config: Config, state_dir: Path, *, console_admin: str | None = None) -> Services:
        return cls(config=config, store=Store.open(state_dir), hosts=Hosts(config),
                   policy=Policy(config, console_admin=console_admin))

    async def close(self) -> None:
        await self.hosts.close()
        self.store.close()

    def target(self, plan: Plan) -> Target:
        """The host and build a plan is about. Raises PlanError when it names none."""
        if plan.host is None:
            raise PlanError("which host? " + ", ".join(self.config.hosts))
        host_config = self.config.host(plan.host)
        build = host_config.builds.get(plan.build) if plan.build else None
        return Target(host=self.hosts[plan.host], config=host_config, build=build)

    def context(self, plan: Plan, requester: Requester) -> ActionContext:
        return ActionContext(target=self.target(plan), store=self.store, requester=requester, memory=self.memory)

    def lock(self, plan: Plan) -> asyncio.Lock:
        """One destructive action per host and build at a time."""
        return self._locks.setdefault((plan.host or "", plan.build), asyncio.Lock())
