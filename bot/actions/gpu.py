"""GPUs of a host, from nvidia-smi."""

from __future__ import annotations

from bot.actions import ActionContext
from bot.hosts.models import GpuReport


async def gpus(ctx: ActionContext) -> GpuReport:
    """The GPU report of the target host (``available=False`` without nvidia-smi). Raises HostError."""
    return await ctx.target.host.gpu()
