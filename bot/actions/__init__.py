"""Actions on a host, one module each, each exporting its spec (``bot.actions.registry``, whose ``run_step``
dispatches a Plan's Step to its action).

Every action takes a Target (the host, its config and the build) and returns a frozen result its spec says how
to read. Expected failures raise RigopsError subclasses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.config import BuildConfig, HostConfig
from bot.hosts import Host
from bot.memory.chart import MemorySeries
from bot.store import BuildRun, Store
from bot.util.errors import PlanError


@dataclass(frozen=True)
class Target:
    host: Host
    config: HostConfig
    build: BuildConfig | None

    @property
    def build_user(self) -> str | None:
        """Whose compilers count as the build's: the SSH user, or the agent's own user locally."""
        return self.config.user


@dataclass(frozen=True)
class Requester:
    """Who asked, and the thread the answer belongs to."""

    user: str
    channel: str | None = None
    thread_id: str | None = None


def newest_run(ctx: ActionContext, *, missing: str) -> BuildRun:
    """The newest run of the target's build (any build, when it names none). Raises PlanError("``missing``:
    rigops has not started …") when there is none."""
    target = ctx.target
    build = target.build.name if target.build else None
    runs = ctx.store.runs(host=target.config.name, build=build, limit=1)
    if not runs:
        what = f"{build} on {target.config.name}" if build else f"any build on {target.config.name}"
        raise PlanError(f"{missing}: rigops has not started {what}")
    return runs[0]


@dataclass(frozen=True)
class ActionContext:
    target: Target
    store: Store
    requester: Requester
    memory: Mapping[int, MemorySeries] = field(default_factory=dict)  # live memory series by run id
