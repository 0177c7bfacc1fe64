"""The audit log: every request, decision and action, written to the state before the action runs, and
mirrored to an audit channel when the policy names one.

There is one way in: :meth:`bot.store.Store.audit`, whoever writes (a person's request, the OOM guard's own
pause, a spawn, a schedule change, a takeover by another rigops). Each entry is told to the store's audit
listeners, and :class:`AuditMirror` — one of them — posts the kinds in :data:`MIRRORED` to the audit channel, so
the channel a team reads for "who did what" sees everything that acted, not only what came through a request.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bot.core.services import Services
from bot.core.talk import Conversation, Reply
from bot.language.plan import Plan
from bot.store import AuditEntry
from bot.text import messages
from bot.util.aio import Tasks

log = logging.getLogger(__name__)
# What acts or decides, mirrored to the audit channel; the rest (a request before its plan runs, a question, a
# build's result) stays in the log, which `/rigops audit` reads.
MIRRORED = frozenset({"action", "denied", "approved", "expired", "spawn", "pause", "resume", "memory pressure",
                      "schedule add", "schedule remove", "takeover"})
NOT_MIRRORED = frozenset({"request", "refused", "asked", "result"})
CLOSE_WAIT = 5.0  # seconds the entries still queued may take to go out when rigops stops


async def record(services: Services, conv: Conversation, what: str, *, user: str, plan: Plan | None = None,
                 detail: dict[str, Any] | None = None) -> None:
    """Write one audit entry (raises StateError when the state cannot take it: then nothing runs)."""
    write(services, conv, what, user=user, plan=plan, detail=detail)


def write(services: Services, conv: Conversation, what: str, *, user: str, plan: Plan | None = None,
          detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`record` without awaiting (for a batch with other writes); returns the entry's detail."""
    full = {**({"plan": plan.to_json()} if plan else {}), **(detail or {})}
    services.store.audit(what, user=user, channel=conv.channel, thread_id=conv.thread,
                         host=plan.host if plan else None, build=plan.build if plan else None, detail=full)
    return full


class AuditMirror:
    """Posts each mirrored entry to the policy's audit channel, in the order written, without holding up the
    part of rigops that wrote it (a post waits for Slack; the action must not)."""

    def __init__(self, services: Services, reply: Reply) -> None:
        self.services = services
        self.reply = reply
        self._queue: asyncio.Queue[AuditEntry] | None = None
        self._tasks = Tasks()

    def __call__(self, entry: AuditEntry) -> None:
        channel = self.services.policy.rules.audit_channel if self.services.policy.rules else None
        if not channel or entry.what not in MIRRORED:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # no event loop (a command-line tool writing the state): nothing to post with
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._tasks.start(self._post_all(channel), name="audit-mirror")
        self._queue.put_nowait(entry)

    async def _post_all(self, channel: str) -> None:
        assert self._queue is not None
        while True:
            entry = await self._queue.get()
            text = messages.audit_mirror(entry.what, user=entry.user, host=entry.host, build=entry.build,
                                         channel=entry.channel, detail=entry.detail)
            try:  # each entry a message of its own in the channel, never a thread under the first
                await Conversation(self.reply, channel, None).post(text)
            except Exception:
                log.exception("mirroring an audit entry to %s failed", channel)
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        """Wait until every entry written so far is posted."""
        if self._queue is not None:
            await self._queue.join()

    async def close(self, *, wait: float = CLOSE_WAIT) -> None:
        """Post what is still queued (for at most ``wait`` seconds), then stop."""
        try:
            await asyncio.wait_for(self.flush(), wait)
        except TimeoutError:
            log.warning("%d audit entries were not mirrored before rigops stopped (they are in the audit log)",
                        self._queue.qsize() if self._queue else 0)
        await self._tasks.close()
