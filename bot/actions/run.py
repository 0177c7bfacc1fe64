"""Dispatch a Step to its action."""

from __future__ import annotations

from bot.actions import ActionContext
from bot.actions.chart import MemoryChart, memory_chart
from bot.actions.gpu import gpus
from bot.actions.kill import Stopped, kill_build
from bot.actions.log import LogTail, tail_log
from bot.actions.mem import memory
from bot.actions.rebuild import RebuildResult, rebuild
from bot.actions.status import StatusReport, status
from bot.hosts.models import GpuReport, Snapshot
from bot.plan import Step

StepResult = Stopped | Snapshot | RebuildResult | StatusReport | LogTail | GpuReport | MemoryChart


async def run_step(ctx: ActionContext, step: Step) -> StepResult:
    """Run one step on the context's target. Raises RigopsError subclasses for expected failures."""
    match step.action:
        case "kill":
            return await kill_build(ctx)
        case "mem":
            return await memory(ctx)
        case "rebuild":
            return await rebuild(ctx, jobs=step.jobs, clean=step.clean)
        case "status":
            return await status(ctx)
        case "log":
            return await tail_log(ctx, lines=step.lines)
        case "gpu":
            return await gpus(ctx)
        case "chart":
            return await memory_chart(ctx)
        case _:
            raise ValueError(f"{step.action} is not a host action")
