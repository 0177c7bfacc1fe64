"""The memory chart of the newest run of a build: memory by process class over the run, OOM kills marked."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bot.actions import ActionContext, newest_run
from bot.actions.registry import ActionSpec, File, Reading
from bot.hosts.meminfo import human
from bot.language.commands import Command
from bot.language.plan import Step
from bot.memory.chart import MemorySeries, render_memory_chart
from bot.store import BuildRun
from bot.util.errors import PlanError


@dataclass(frozen=True)
class MemoryChart:
    run: BuildRun
    png: bytes
    points: int
    peak_used: int


async def memory_chart(ctx: ActionContext) -> MemoryChart:
    """The chart of the newest run: live while rigops follows it, else as the state kept it. Raises PlanError
    when there is no run or it has no samples."""
    run = newest_run(ctx, missing="no memory chart yet")
    series = ctx.memory.get(run.id)
    if series is None:
        stored = ctx.store.run_memory(run.id)
        series = MemorySeries.from_json(stored) if stored is not None else None
    if series is None or not len(series):
        raise PlanError(f"no memory samples of run {run.id} of {run.build} on {run.host}: rigops samples memory "
                        "only while it follows a build")
    title = f"{run.build} on {run.host}, run {run.id} (-j{run.jobs})"
    png = await asyncio.to_thread(render_memory_chart, series, title=title)
    return MemoryChart(run=run, png=png, points=len(series), peak_used=series.peak_used)


async def _run(ctx: ActionContext, step: Step) -> MemoryChart:
    return await memory_chart(ctx)


def _reads(chart: MemoryChart) -> Reading:
    return Reading(files=(File(chart.png, *chart_file(chart)),), summary=chart_summary(chart))


def chart_file(chart: MemoryChart) -> tuple[str, str]:
    """(file name, title) of a memory chart."""
    run = chart.run
    return f"{run.build}-run{run.id}-memory.png", f"{run.build} on {run.host}: memory of run {run.id}"


def chart_summary(chart: MemoryChart) -> str:
    return f"peak {human(chart.peak_used)} in use"


SPEC = ActionSpec(
    Command("chart", ("graph", "plot"), "[host] [build]",
            "the memory chart of the build's latest run (by process class, OOM kills marked)", hosts="one",
            build_default=True, rank=60, describe=lambda step, build: f"chart the memory of {build}'s latest run"),
    run=_run, reads=_reads)
