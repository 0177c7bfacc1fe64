"""Builds on a host: rigops' runs (reconciled with what the host says) and build tools it did not start."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from bot.actions import ActionContext
from bot.actions.kill import live_runs
from bot.actions.registry import ActionSpec, Reading
from bot.builds.stops import interruption
from bot.hosts.meminfo import human
from bot.hosts.models import Proc, RunRef, RunStatus, Snapshot
from bot.language.commands import Command
from bot.language.plan import Step
from bot.memory.policy import DEFAULT_LEVELS, Levels, host_levels
from bot.store import BuildRun, RunState
from bot.text import render

RECENT_RUNS = 5


@dataclass(frozen=True)
class RunView:
    run: BuildRun
    status: RunStatus | None


@dataclass(frozen=True)
class StatusReport:
    """The target's recent runs, the live runs of other builds on the host (a status about one build), and the
    build user's tools, each tagged with the run whose tree holds it (``Proc.root``)."""

    host: str
    runs: tuple[RunView, ...]
    snapshot: Snapshot
    others: tuple[BuildRun, ...] = ()
    levels: Levels = DEFAULT_LEVELS  # where the host's memory reads low: from its memory_alert_pct

    @property
    def failing(self) -> tuple[str, ...]:
        """The builds whose latest run (of the recent runs, newest first) failed."""
        latest: dict[str, BuildRun] = {}
        for view in self.runs:
            latest.setdefault(view.run.build, view.run)
        return tuple(build for build, run in latest.items() if run.state == "failed")


def finished_state(status: RunStatus) -> RunState:
    """How a run the host says has ended is recorded: a signal that stops builds means it was stopped."""
    if status.exit_status == 0:
        return "succeeded"
    stopped = interruption(exit_status=status.exit_status, signal_number=status.signal)
    return "stopped" if stopped else "failed"


async def reconcile(ctx: ActionContext, runs: list[BuildRun]) -> dict[int, RunStatus]:
    """Ask the host about runs the store thinks are live; record the ones that ended or were lost."""
    live = [r for r in runs if r.state == "running"]
    if not live:
        return {}
    statuses, boot_id = await ctx.target.host.run_status([RunRef(r.pid, r.start, r.exit_file, r.log) for r in live])
    by_id: dict[int, RunStatus] = {}
    for run, status in zip(live, statuses, strict=True):
        by_id[run.id] = status
        if run.boot_id and boot_id and run.boot_id != boot_id:
            ctx.store.finish_run(run.id, state="lost", exit_status=None)
        elif status.finished:
            code = status.exit_status if status.exit_status is not None else 128 + (status.signal or 0)
            ctx.store.finish_run(run.id, state=finished_state(status), exit_status=code, ended_at=status.ended)
        # gone without an exit status: the follower decides "lost" once the supervisor had time to write it
    return by_id


async def status(ctx: ActionContext) -> StatusReport:
    """Runs on the target host (the build's, or all) and the build tools running. Raises HostError."""
    target = ctx.target
    build = target.build.name if target.build else None
    runs = ctx.store.runs(host=target.config.name, build=build, limit=RECENT_RUNS)
    statuses = await reconcile(ctx, runs)
    fresh = [ctx.store.run(r.id) or r for r in runs]
    mine, others = live_runs(ctx)
    snap = await target.host.snapshot(user=target.build_user, top=0,
                                      roots=[r.proc_id for r in (*mine, *others) if r.pid > 0])
    return StatusReport(host=target.config.name, runs=tuple(RunView(r, statuses.get(r.id)) for r in fresh),
                        snapshot=snap, others=tuple(others), levels=host_levels(target.config))


async def _run(ctx: ActionContext, step: Step) -> StatusReport:
    return await status(ctx)


def status_text(report: StatusReport) -> str:
    """The runs, each running one with its own build processes; other builds running on the host; the build
    user's build processes that belong to no build rigops started."""
    rows = [f"*Builds on {report.host}*"]
    now = time.time()
    tools = report.snapshot.tools
    for view in report.runs:
        run = view.run
        if run.state == "running":
            state = f"running for {render.duration(now - run.started_at)}" + _tools_of(run, tools)
        elif run.state in ("succeeded", "failed", "stopped"):
            took = render.duration((run.ended_at or now) - run.started_at)
            state = f"{run.state} after {took}" + (f" (exit {run.exit_status})" if run.exit_status else "")
            if run.state == "stopped" and run.stopped_by:
                state = f"stopped by {render.stopped_by(run.stopped_by)} after {took}"
        else:
            state = run.state
        rows.append(f"• `{run.build}` -j{run.jobs} — {state} (run {run.id}, pid {run.pid})")
    if not report.runs:
        rows.append("rigops has not started a build here yet.")
    for run in report.others:
        rows.append(f"Also running here: `{run.build}` -j{run.jobs} (run {run.id}){_tools_of(run, tools)}")
    strays = [p for p in tools if p.root is None]
    if strays:
        rows.append(f"Build processes of no build rigops started: {render.tool_counts(strays)} using "
                    f"{human(sum(p.rss for p in strays))}")
    elif not tools:
        rows.append("No build processes running.")
    mem = report.snapshot.memory
    rows.append(f"Memory: {human(mem.available)} available of {human(mem.total)}")
    return render.clip("\n".join(rows))


def _tools_of(run: BuildRun, tools: Sequence[Proc]) -> str:
    """": 3 build processes (1 × cc1plus, …) using 40 MiB": the build tools in the run's own tree."""
    own = [p for p in tools if p.root == run.proc_id]
    if not own:
        return ": no build processes"
    n = len(own)
    used = human(sum(p.rss for p in own))
    return f": {n} build process{'es' if n != 1 else ''} ({render.tool_counts(own)}) using {used}"


def status_troubles(report: StatusReport) -> tuple[str, ...]:
    return ((render.FAILING,) if report.failing else ()) + render.memory_troubles(report.snapshot, report.levels)


def status_row(report: StatusReport) -> str:
    """"sgl-kernel -j20 running; last: vllm failed; 12 build processes": a host's builds in one line."""
    running = [v.run for v in report.runs if v.run.state == "running"]
    last = next((v.run for v in report.runs if v.run.state != "running"), None)
    parts = [", ".join(f"{run.build} -j{run.jobs} running" for run in running) or "no rigops build running"]
    if last is not None:
        parts.append(f"last: {last.build} {last.state}")
    parts += [f"{build} failed" for build in report.failing if last is None or build != last.build]
    parts.append(f"{len(report.snapshot.tools)} build processes")
    if render.LOW_MEMORY in render.memory_troubles(report.snapshot, report.levels):
        mem = report.snapshot.memory
        parts.append(f"memory low: {human(mem.available)} available of {human(mem.total)}")
    return "; ".join(parts)


SPEC = ActionSpec(
    Command("status", (), "[host] [build]", "builds on a host and what is running", rank=30,
            describe=lambda step, build: "show build status"),
    run=_run, reads=lambda report: Reading(status_text(report)), row=status_row,
    troubles=status_troubles)
