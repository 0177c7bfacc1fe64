"""Start the configured build, detached, at a given parallelism; stop a still-running one first."""

from __future__ import annotations

import time
from dataclasses import dataclass

from bot.actions import ActionContext
from bot.actions.kill import kill_build
from bot.config import BuildConfig
from bot.errors import PlanError
from bot.hosts.models import KillResult
from bot.store import BuildRun

DEFAULT_LOG_DIR = "~/.local/state/rigops/logs"


@dataclass(frozen=True)
class RebuildResult:
    run: BuildRun
    command: str
    jobs: int
    stopped_first: KillResult | None
    warnings: tuple[str, ...] = ()


def build_env(build: BuildConfig, jobs: int) -> dict[str, str]:
    """The build's configured environment plus the parallelism every common build tool reads."""
    return {**build.env, "MAX_JOBS": str(jobs), "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs), "MAKEFLAGS": f"-j{jobs}"}


def build_command(build: BuildConfig, jobs: int) -> str:
    """The configured command with ``{jobs}`` replaced; no chat text ever gets here."""
    return build.command.replace("{jobs}", str(int(jobs)))


def log_path(build: BuildConfig, *, now: float) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{(build.log_dir or DEFAULT_LOG_DIR).rstrip('/')}/{build.name}-{stamp}.log"


async def rebuild(ctx: ActionContext, *, jobs: int | None) -> RebuildResult:
    """Restart the target build at ``jobs`` (default: the configured jobs, else the host's cores).

    Raises PlanError when the target has no build, HostError when the host fails.
    """
    target = ctx.target
    build = target.build
    if build is None:
        raise PlanError(f"no build to start on {target.config.name}: name one from the config")
    info = await target.host.info()
    jobs = jobs or build.jobs or info.cores
    warnings = []
    if jobs > info.cores:
        warnings.append(f"-j{jobs} is more than the {info.cores} cores of {target.config.name}")
    stopped = await _stop_if_running(ctx)
    now = time.time()
    log = log_path(build, now=now)
    command = build_command(build, jobs)
    ctx.store.audit("spawn", user=ctx.requester.user, channel=ctx.requester.channel,
                    thread_ts=ctx.requester.thread_ts, host=target.config.name, build=build.name,
                    detail={"jobs": jobs, "command": command, "log": log})
    spawned = await target.host.spawn(workdir=build.workdir, command=command, env=build_env(build, jobs),
                                      log_path=log, exit_file=f"{log}.exit")
    run = ctx.store.add_run(host=target.config.name, build=build.name, jobs=jobs, pid=spawned.pid,
                            start=spawned.start, supervisor_pid=spawned.supervisor_pid, log=spawned.log,
                            exit_file=spawned.exit_file, boot_id=info.boot_id, started_by=ctx.requester.user,
                            channel=ctx.requester.channel, thread_ts=ctx.requester.thread_ts)
    return RebuildResult(run=run, command=command, jobs=jobs, stopped_first=stopped, warnings=tuple(warnings))


async def _stop_if_running(ctx: ActionContext) -> KillResult | None:
    """Two builds in one tree fight over it: stop what is still running there first."""
    target = ctx.target
    live = ctx.store.runs(host=target.config.name, build=target.build.name if target.build else None, live=True)
    snap = await target.host.snapshot(user=target.build_user, top=0)
    if not live and not snap.tools:
        return None
    return await kill_build(ctx)
