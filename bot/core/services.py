"""What every part of rigops runs on: the config, the state, the hosts and the access policy. Built once, shared,
never patched afterwards; what changes while rigops runs belongs to the part of the core that owns it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.actions import ActionContext, Requester, Target
from bot.config import Config
from bot.core.metrics import Metrics
from bot.core.policy import GroupMembers, Policy, no_groups
from bot.hosts import Hosts
from bot.language.plan import Plan
from bot.memory.chart import MemorySeries
from bot.store import Store
from bot.util.errors import PlanError


@dataclass(frozen=True)
class Services:
    config: Config
    store: Store
    hosts: Hosts
    policy: Policy
    metrics: Metrics = field(default_factory=Metrics)

    @classmethod
    def open(cls, config: Config, state_dir: Path, *, members: GroupMembers = no_groups,
             console_admin: str | None = None, metrics: Metrics | None = None) -> Services:
        """``members`` says who is in a user group (Slack's usergroups); ``console_admin`` is the console's user."""
        return cls(config=config, store=Store.open(state_dir, url=config.state), hosts=Hosts(config),
                   policy=Policy(config, members=members, console_admin=console_admin),
                   metrics=metrics or Metrics())

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

    def context(self, plan: Plan, requester: Requester, *,
                memory: Mapping[int, MemorySeries] | None = None) -> ActionContext:
        """What an action needs; ``memory``: the live memory series of followed runs (the OOM guard's)."""
        return ActionContext(target=self.target(plan), store=self.store, requester=requester, memory=memory or {})
