"""Read-only steps across a group of hosts (or all of them): concurrently, with a limit and a per-host timeout,
so the answer comes as fast as the slowest host that answers in time; a host that fails is a row saying so."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from bot.actions import Requester
from bot.actions.registry import run_step
from bot.core.services import Services
from bot.language.plan import Plan, Step
from bot.reports import HostResult
from bot.util.errors import HostError, RigopsError

FANOUT_LIMIT = 32  # hosts asked at once
GRACE = 5.0  # on top of a host's connect and command timeouts


async def fan_out(services: Services, plan: Plan, step: Step, requester: Requester,
                  *, limit: int = FANOUT_LIMIT) -> list[HostResult]:
    """Run ``step`` on every member of ``plan.host`` (a group or "all"), in config order."""
    gate = asyncio.Semaphore(limit)

    async def one(name: str) -> HostResult:
        async with gate:
            hc = services.config.hosts[name]
            timeout = hc.connect_timeout + hc.command_timeout + GRACE
            try:
                ctx = services.context(replace(plan, host=name), requester)
                return HostResult(name, result=await asyncio.wait_for(run_step(ctx, step), timeout))
            except HostError as exc:
                return HostResult(name, error=exc.reason)
            except RigopsError as exc:
                return HostResult(name, error=str(exc))
            except TimeoutError:
                return HostResult(name, error=f"no answer within {timeout:g} s")

    assert plan.host is not None
    return list(await asyncio.gather(*(one(name) for name in services.config.members(plan.host))))
