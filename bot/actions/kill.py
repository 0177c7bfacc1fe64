"""Stop a build: the process trees of runs rigops started, plus build tools of the build user."""

from __future__ import annotations

from bot.actions import ActionContext
from bot.hosts.models import KillResult, ProcId


async def kill_build(ctx: ActionContext) -> KillResult:
    """Stop the build on the target host and wait until memory is back. Raises HostError."""
    target = ctx.target
    build = target.build.name if target.build else None
    live = ctx.store.runs(host=target.config.name, build=build, live=True)
    # Recorded as stopped before the signals: a follower that sees the build end mid-kill must not take it
    # for a failure of its own.
    for run in live:
        ctx.store.finish_run(run.id, state="stopped", exit_status=None)
    try:
        return await target.host.kill(roots=[ProcId(r.pid, r.start) for r in live if r.pid > 0],
                                      user=target.build_user)
    except BaseException:
        for run in live:
            ctx.store.reopen_run(run.id, state=run.state)
        raise
