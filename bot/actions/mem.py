"""The memory picture of a host: ``free -h`` numbers, the top memory users and the build tools running, and
the memory limit the asked-about build runs in, where it has one (a container's, a Slurm job's, a cgroup's):
that limit, not the host's memory, is what the build can run out of."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bot.actions import ActionContext
from bot.actions.registry import ActionSpec, Reading
from bot.hosts.models import BuildMemory, Snapshot
from bot.language.commands import Command
from bot.language.plan import Step
from bot.memory.policy import DEFAULT_LEVELS, Levels, host_levels
from bot.text import render

TOP_PROCESSES = 5


@dataclass(frozen=True)
class MemoryReport:
    """A host's memory, and where it reads low there (from its memory_alert_pct, as in the digest)."""

    snapshot: Snapshot
    levels: Levels = DEFAULT_LEVELS


async def memory(ctx: ActionContext) -> Snapshot:
    """One snapshot of the target host. Raises HostError."""
    snap = await ctx.target.host.snapshot(user=ctx.target.build_user, top=TOP_PROCESSES)
    return replace(snap, builds=build_limits(ctx))


def build_limits(ctx: ActionContext) -> tuple[BuildMemory, ...]:
    """The memory limits of the target's running builds (the one asked about, or every one on the host), as
    their OOM guards' live series last saw them. Raises StateError."""
    build = ctx.target.build
    runs = ctx.store.runs(host=ctx.target.config.name, build=build.name if build else None, live=True)
    found = []
    for run in runs:
        series = ctx.memory.get(run.id)
        if series is None or not series.limited or not series.points:
            continue
        last = series.points[-1]
        found.append(BuildMemory(build=run.build, run_id=run.id, limit=last.total, used=last.total - last.available,
                                 peak=series.peak_used))
    return tuple(found)


async def _run(ctx: ActionContext, step: Step) -> MemoryReport:
    return MemoryReport(await memory(ctx), levels=host_levels(ctx.target.config))


def _reads(report: MemoryReport) -> Reading:
    return Reading(render.snapshot_text(report.snapshot), summary=render.snapshot_summary(report.snapshot))


def _row(report: MemoryReport) -> str:
    return render.snapshot_row(report.snapshot)


def _troubles(report: MemoryReport) -> tuple[str, ...]:
    return render.memory_troubles(report.snapshot, report.levels)


SPEC = ActionSpec(
    Command("mem", ("memory", "ram", "free"), "[host]", "`free -h` and the top memory users", rank=10,
            describe=lambda step, build: "show memory (`free -h`)"),
    run=_run, reads=_reads, row=_row, troubles=_troubles, columns=render.FLEET_COLUMNS)
