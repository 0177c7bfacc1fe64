"""The audit log: every request, decision and action, written to the state before the action runs, and
mirrored to an audit channel when the policy names one."""

from __future__ import annotations

from typing import Any

from bot.core.talk import Conversation
from bot.plan import Plan
from bot.services import Services
from bot.text import messages

MIRRORED = frozenset({"action", "denied", "approved", "expired"})


async def record(services: Services, conv: Conversation, what: str, *, user: str, plan: Plan | None = None,
                 detail: dict[str, Any] | None = None) -> None:
    """Write one audit entry (raises StateError when the state cannot take it: then nothing runs)."""
    full = write(services, conv, what, user=user, plan=plan, detail=detail)
    await mirror(services, conv, what, user=user, plan=plan, full=full)


def write(services: Services, conv: Conversation, what: str, *, user: str, plan: Plan | None = None,
          detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state part of :func:`record` (for a batch with other writes); returns the entry's detail."""
    full = {**({"plan": plan.to_json()} if plan else {}), **(detail or {})}
    services.store.audit(what, user=user, channel=conv.channel, thread_ts=conv.thread,
                         host=plan.host if plan else None, build=plan.build if plan else None, detail=full)
    return full


async def mirror(services: Services, conv: Conversation, what: str, *, user: str, plan: Plan | None,
                 full: dict[str, Any]) -> None:
    """The audit channel part of :func:`record`."""
    channel = services.policy.rules.audit_channel if services.policy.rules else None
    if channel and what in MIRRORED:
        await conv.elsewhere(channel).post(messages.audit_mirror(what, user=user, plan=plan, channel=conv.channel,
                                                                 detail=full))
