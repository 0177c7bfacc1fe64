"""The end of the latest build log rigops wrote on a host."""

from __future__ import annotations

from dataclasses import dataclass

from bot.actions import ActionContext, newest_run
from bot.hosts.models import Tail
from bot.plan import DEFAULT_LOG_LINES
from bot.store import BuildRun


@dataclass(frozen=True)
class LogTail:
    run: BuildRun
    tail: Tail


async def tail_log(ctx: ActionContext, *, lines: int | None) -> LogTail:
    """The last ``lines`` lines of the newest run's log. Raises PlanError when there is none, HostError."""
    run = newest_run(ctx, missing="no build log yet")
    tail = await ctx.target.host.tail(run.log, lines=lines or DEFAULT_LOG_LINES)
    return LogTail(run=run, tail=tail)
