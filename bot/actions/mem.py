"""The memory picture of a host: ``free -h`` numbers, the top memory users and the build tools running."""

from __future__ import annotations

from bot.actions import ActionContext
from bot.hosts.models import Snapshot

TOP_PROCESSES = 5


async def memory(ctx: ActionContext) -> Snapshot:
    """One snapshot of the target host. Raises HostError."""
    return await ctx.target.host.snapshot(user=ctx.target.build_user, top=TOP_PROCESSES)
