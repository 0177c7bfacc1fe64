"""The end of the latest build log rigops wrote on a host."""

from __future__ import annotations

from dataclasses import dataclass

from bot.actions import ActionContext
from bot.errors import PlanError
from bot.hosts.models import Tail
from bot.plan import DEFAULT_LOG_LINES
from bot.store import BuildRun


@dataclass(frozen=True)
class LogTail:
    run: BuildRun
    tail: Tail


async def tail_log(ctx: ActionContext, *, lines: int | None) -> LogTail:
    """The last ``lines`` lines of the newest run's log. Raises PlanError when there is none, HostError."""
    target = ctx.target
    build = target.build.name if target.build else None
    runs = ctx.store.runs(host=target.config.name, build=build, limit=1)
    if not runs:
        what = f"{build} on {target.config.name}" if build else f"any build on {target.config.name}"
        raise PlanError(f"no build log yet: rigops has not started {what}")
    tail = await target.host.tail(runs[0].log, lines=lines or DEFAULT_LOG_LINES)
    return LogTail(run=runs[0], tail=tail)
