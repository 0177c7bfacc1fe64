"""Stop a build, and only that build.

A build rigops started is stopped by its own process trees (and the memory cgroups they moved into). The
build user's compilers are stopped by name only for a build rigops did not start (the seed's build started by
hand) or whose tree is gone; even then, never a process in the tree of another build rigops knows is running
on that host: the agent is given those builds' roots to spare.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from bot.actions import ActionContext
from bot.actions.registry import ActionSpec, Reading
from bot.hosts.agent.protocol import BUILD_TOOL_NAMES, COMPILER_NAMES
from bot.hosts.meminfo import human
from bot.hosts.models import KillResult, Proc, ProcId
from bot.language.commands import Command
from bot.language.plan import Step
from bot.store import BuildRun
from bot.text import render
from bot.util.errors import AgentUnavailable, HostUnreachable

log = logging.getLogger(__name__)
RESEND_FOR = 20.0  # seconds a stop cut off by a dropped connection is sent again for

# "tree": the build's own process trees; "names": the build user's build tools by name, rigops having started
# no run of the build; "tree_gone": by name too, the tree of the run rigops started being gone
StopKind = Literal["tree", "names", "tree_gone"]


@dataclass(frozen=True)
class Stopped:
    """What stopping a build (every build on the host, when the request named none) did."""

    build: str | None
    kind: StopKind
    result: KillResult
    others: Mapping[ProcId, str]  # the other builds rigops knows run there, by the root of their tree

    @property
    def spared(self) -> dict[str, tuple[Proc, ...]]:
        """The processes of other builds that the stop left alone although they matched, by build."""
        out: dict[str, list[Proc]] = defaultdict(list)
        for proc in self.result.spared:
            out[self.others.get(proc.root, "another build") if proc.root else "another build"].append(proc)
        return {build: tuple(procs) for build, procs in out.items()}

    @property
    def still_running(self) -> tuple[str, ...]:
        """The other builds whose trees were still alive once the stop was over."""
        return tuple(sorted({self.others[r] for r in self.result.spare_alive if r in self.others}))


def live_runs(ctx: ActionContext) -> tuple[list[BuildRun], list[BuildRun]]:
    """(the target build's live runs, the live runs of every other build on the host); without a build, every
    live run on the host is the target's."""
    target = ctx.target
    build = target.build.name if target.build else None
    live = ctx.store.runs(host=target.config.name, live=True)
    return [r for r in live if build is None or r.build == build], [r for r in live if build and r.build != build]


async def kill_build(ctx: ActionContext) -> Stopped:
    """Stop the target build on its host and wait until memory is back. Raises HostError."""
    target = ctx.target
    mine, others = live_runs(ctx)
    roots = [r.proc_id for r in mine if r.pid > 0]
    spare = {r.proc_id: r.build for r in others if r.pid > 0}
    # Recorded as stopped before the signals: a follower that sees the build end mid-kill must not take it
    # for a failure of its own.
    for run in mine:
        ctx.store.finish_run(run.id, state="stopped", exit_status=None, stopped_by=ctx.requester.user)
    try:
        result = await _kill(ctx, roots, spare)
    except BaseException:
        for run in mine:
            ctx.store.reopen_run(run.id, state=run.state)
        raise
    kind: StopKind = "tree" if result.tree else "tree_gone" if roots else "names"
    return Stopped(build=target.build.name if target.build else None, kind=kind, result=result, others=spare)


async def _kill(ctx: ActionContext, roots: list[ProcId], spare: Mapping[ProcId, str]) -> KillResult:
    """The stop, sent again on a new connection when the one it went out on drops before its answer (sshd
    restarted, the network cut: the agent that was stopping the build went with it); signalling again touches only
    what still runs. Tries for about RESEND_FOR seconds."""
    target = ctx.target
    delay, deadline, sent = 0.5, time.monotonic() + RESEND_FOR, False
    while True:
        try:
            return await target.host.kill(roots=roots, user=target.build_user, fallback_names=BUILD_TOOL_NAMES,
                                          spare=list(spare))
        except (AgentUnavailable, HostUnreachable) as exc:
            # a host unreachable from the start was never sent the stop: that is said at once
            sent = sent or isinstance(exc, AgentUnavailable)
            if not sent or time.monotonic() + delay > deadline:
                raise
            log.warning("the stop on %s was cut off (%s): sent again on a new connection", target.config.name, exc)
            await asyncio.sleep(delay)
            delay = min(2 * delay, 4.0)


async def _run(ctx: ActionContext, step: Step) -> Stopped:
    return await kill_build(ctx)


STOP_SCOPE: dict[StopKind, str] = {
    "tree": "its own process tree",
    "names": "the build user's build tools by name, as rigops did not start it",
    "tree_gone": "the build user's build tools by name, as the process tree of its run is gone",
}


def kill_summary(stopped: Stopped) -> str:
    """What a stop did, which kind of stop it was and what of other builds it left alone, e.g. "stopped 4
    processes (…) in 120 ms (4 on SIGTERM): its own process tree; available memory …; `two` still running,
    untouched"."""
    result = stopped.result
    scope = STOP_SCOPE[stopped.kind]
    if result.cgroups:
        scope += f" and memory cgroup{'s' if len(result.cgroups) > 1 else ''} " + \
            ", ".join(f"`{c}`" for c in result.cgroups)
    if not result.targets:
        parts = [f"nothing was running ({scope})"]
    else:
        gone = "" if not result.survivors else f"; {len(result.survivors)} would not die"
        how = f"{result.termed} on SIGTERM" + (f", {result.killed} needed SIGKILL" if result.killed else "")
        n = len(result.targets)
        parts = [f"stopped {n} process{'es' if n != 1 else ''} ({render.counted(result.counts)}) in "
                 f"{render.duration(result.stop_elapsed)} ({how}){gone}: {scope}",
                 f"available memory {human(result.before.available)} → "
                 f"{human(result.after.available)}, settled "
                 f"after {render.duration(result.elapsed)}"]
    for build, procs in stopped.spared.items():
        parts.append(f"spared {_tools_noun(procs)} of `{build}` ({render.tool_counts(procs)})")
    if running := stopped.still_running:
        untouched = "" if stopped.spared else ", untouched"
        parts.append(", ".join(f"`{b}`" for b in running) + f" still running{untouched}")
    return "; ".join(parts)


def _tools_noun(procs: Sequence[Proc]) -> str:
    """"2 compilers", "3 build processes"."""
    n = len(procs)
    if all(p.name in COMPILER_NAMES for p in procs):
        return f"{n} compiler{'s' if n != 1 else ''}"
    return f"{n} build process{'es' if n != 1 else ''}"


SPEC = ActionSpec(
    Command("kill", ("stop", "abort"), "[host] [build]",
            "stop the build: its own processes (the build user's compilers by name only when rigops did not start "
            "it); other builds are spared", role="operator", destructive=True, hosts="one", build_default=True,
            rank=0, describe=lambda step, build: f"stop {build} (its own processes; other builds are spared)"),
    run=_run, reads=lambda stopped: Reading(summary=kill_summary(stopped)))
