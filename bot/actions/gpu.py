"""GPUs of a host, from nvidia-smi."""

from __future__ import annotations

from bot.actions import ActionContext
from bot.actions.registry import ActionSpec, Reading
from bot.hosts.models import GpuReport
from bot.language.commands import Command
from bot.language.plan import Step
from bot.text import render


async def gpus(ctx: ActionContext) -> GpuReport:
    """The GPU report of the target host (``available=False`` without nvidia-smi). Raises HostError."""
    return await ctx.target.host.gpu()


async def _run(ctx: ActionContext, step: Step) -> GpuReport:
    return await gpus(ctx)


SPEC = ActionSpec(
    Command("gpu", ("gpus", "nvidia-smi"), "[host]", "GPUs from nvidia-smi", rank=50,
            describe=lambda step, build: "show GPUs (`nvidia-smi`)"),
    run=_run, reads=lambda report: Reading(render.gpu_text(report)), row=render.gpu_row)
