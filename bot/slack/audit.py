"""The audit log: every request, decision and action, written to the state before the action runs, and
mirrored to an audit channel when the policy names one."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.plan import Plan
from bot.services import Services
from bot.slack.thread import Thread

MIRRORED = frozenset({"action", "denied", "approved", "expired"})


async def record(services: Services, thread: Thread, what: str, *, user: str, plan: Plan | None = None,
                 detail: dict[str, Any] | None = None) -> None:
    """Write one audit entry (raises StateError when the state cannot take it: then nothing runs)."""
    full = write(services, thread, what, user=user, plan=plan, detail=detail)
    await mirror(services, thread, what, user=user, plan=plan, full=full)


def write(services: Services, thread: Thread, what: str, *, user: str, plan: Plan | None = None,
          detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state part of :func:`record` (for a batch with other writes); returns the entry's detail."""
    full = {**({"plan": plan.to_json()} if plan else {}), **(detail or {})}
    services.store.audit(what, user=user, channel=thread.channel, thread_ts=thread.thread_ts,
                         host=plan.host if plan else None, build=plan.build if plan else None, detail=full)
    return full


async def mirror(services: Services, thread: Thread, what: str, *, user: str, plan: Plan | None,
                 full: dict[str, Any]) -> None:
    """The audit channel part of :func:`record`."""
    channel = services.policy.rules.audit_channel if services.policy.rules else None
    if channel and what in MIRRORED:
        where = f"{plan.host}" + (f"/{plan.build}" if plan and plan.build else "") if plan else "-"
        await Thread(thread.client, channel, None).post(
            f"`{what}` by <@{user}> on {where} in <#{thread.channel}>: {json.dumps(full)[:1500]}")


def render_entries(entries: list[dict[str, Any]]) -> str:
    if not entries:
        return "The audit log is empty."
    rows = []
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e["at"]))
        where = (e["host"] or "-") + (f"/{e['build']}" if e["build"] else "")
        detail = e["detail"] or ""
        rows.append(f"`{when}` *{e['what']}* <@{e['user']}> {where} in <#{e['channel']}> {detail[:300]}")
    return "*Audit log* (newest first)\n" + "\n".join(rows)
