"""Running a plan's steps in one conversation: one status message edited as steps run, results posted as they come,
a final ✓ or ✗ on the request. A destructive plan runs alone on its host and build."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace

from bot.actions import Requester
from bot.actions.rebuild import RebuildResult
from bot.actions.registry import Reading, reading, run_step, spec
from bot.core import audit
from bot.core.fleet import fan_out
from bot.core.services import Services
from bot.core.talk import Conversation
from bot.language.plan import Plan
from bot.memory.chart import MemorySeries
from bot.store import BuildRun
from bot.text import messages, render
from bot.text.digest_layout import DigestPosts, fleet_posts
from bot.text.render import StepLine
from bot.util.errors import RigopsError

log = logging.getLogger(__name__)
QUEUE_WAIT = 60.0  # how long a person's next destructive step waits for their previous one on the same build
BuildStarted = Callable[[BuildRun], None]


class Executor:
    """Runs plans. ``on_build`` hears of every build a step started (the follower takes it from there);
    ``memory`` holds the live memory series of followed runs (for the chart)."""

    def __init__(self, services: Services, *, on_build: BuildStarted, memory: Mapping[int, MemorySeries]) -> None:
        self.services = services
        self.on_build = on_build
        self.memory = memory
        self._locks: dict[tuple[str, str | None], asyncio.Lock] = {}
        self._holders: dict[tuple[str, str | None], str] = {}  # who runs the destructive action

    def _lock(self, plan: Plan) -> asyncio.Lock:
        return self._locks.setdefault((plan.host or "", plan.build), asyncio.Lock())

    async def _free(self, plan: Plan) -> None:
        """Until no destructive plan runs on the plan's host and build."""
        async with self._lock(plan):
            pass

    async def execute(self, conv: Conversation, plan: Plan, *, requester: Requester, request_id: str | None = None,
                      status_id: str | None = None, note: str = "", record: bool = True,
                      plan_id: int | None = None) -> None:
        """Run the plan's steps in order, editing one status message; stop at the first failure.

        A destructive plan runs alone on its host and build: a second one is told who is already at it, unless
        it is the same person's next step ("kill", then "rebuild" while the stop still waits for memory to
        come back), which waits its turn for a while.
        """
        requester = replace(requester, channel=conv.channel, thread_id=conv.thread)
        key = (plan.host or "", plan.build)
        if plan.destructive and self._holders.get(key) == requester.user:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._free(plan), QUEUE_WAIT)
        if plan.destructive and self._lock(plan).locked():
            text = messages.already_running(self._holders.get(key, "someone"))
            if status_id is not None:
                await conv.update(status_id, text)
            else:
                await conv.post(text)
            return
        store = self.services.store
        if plan.destructive and record and plan_id is None:  # kept while it runs: a rigops that dies mid-way
            plan_id = store.add_plan(channel=conv.channel, thread_id=conv.thread or "",  # leaves it interrupted
                                     request_id=request_id, user=requester.user, plan=plan, state="running")
        lines = [StepLine(s, "waiting") for s in plan.steps]
        needs_status = plan.destructive or len(plan.steps) > 1 or status_id is not None
        if needs_status and status_id is None:
            status_id = await conv.post(render.plan_text(plan, lines, note=note))
            if plan_id is not None and status_id is not None:
                store.set_plan_message(plan_id, message_id=status_id, thread_id=conv.thread or status_id)

        async def show() -> None:
            if status_id is not None:
                await conv.update(status_id, render.plan_message(plan, lines, note=note))

        ok = True
        async with self._lock(plan) if plan.destructive else contextlib.nullcontext():
            if plan.destructive:
                self._holders[key] = requester.user
            for i, step in enumerate(plan.steps):
                lines[i] = StepLine(step, "running")
                await show()
                try:
                    if record:  # a look answered while the state cannot be written is not recorded
                        await audit.record(self.services, conv, "action", user=requester.user, plan=plan,
                                           detail={"step": step.to_json()})
                    summary = await self._run_one(conv, plan, i, requester)
                    lines[i] = StepLine(step, "done", summary)
                except RigopsError as exc:
                    lines[i] = StepLine(step, "failed", str(exc))
                    ok = False
                except Exception:
                    log.exception("step %s of plan %s failed", step.action, plan)
                    lines[i] = StepLine(step, "failed", messages.GENERIC_FAILURE)
                    ok = False
                with contextlib.suppress(RigopsError):
                    if record:
                        self.services.store.audit("result", user=requester.user, channel=conv.channel,
                                                  thread_id=conv.thread, host=plan.host, build=plan.build,
                                                  detail={"step": step.to_json(), "ok": ok,
                                                          "summary": lines[i].summary[:500]})
                if not ok:
                    lines[i + 1:] = [StepLine(s, "skipped") for s in plan.steps[i + 1:]]
                    if status_id is None:
                        await conv.post(f":x: {lines[i].summary}")
                    break
            self._holders.pop(key, None)
        if plan_id is not None:
            with contextlib.suppress(RigopsError):
                store.finish_plan(plan_id)
        await show()
        # done, failed, or done but the answer never reached the thread (the front end could not post it)
        await conv.react(request_id, "x" if not ok else "warning" if conv.lost else "white_check_mark")

    async def _run_one(self, conv: Conversation, plan: Plan, index: int, requester: Requester) -> str:
        step = plan.steps[index]
        services = self.services
        if step.action == "help":
            await conv.post(messages.help_text())
            return ""
        if step.action == "hosts":
            await conv.post(render.hosts_text(services.config))
            return ""
        if plan.host is not None and services.config.is_group(plan.host):
            rows = spec(step.action)
            assert rows is not None, f"{step.action} is not a host action"  # help and hosts are answered above
            results = await fan_out(services, plan, step, requester)
            await _show_fleet(conv, fleet_posts(plan.host, rows, results))
            failed = sum(1 for r in results if r.error is not None)
            return f"{len(results) - failed} of {len(results)} hosts answered"
        result = await run_step(services.context(plan, requester, memory=self.memory), step)
        if isinstance(result, RebuildResult):
            self.on_build(result.run)
        return await _show_result(conv, reading(step, result))


async def post_thread(conv: Conversation, posts: DigestPosts) -> None:
    """What did not fit in a fleet's first post (a digest, a status of many hosts): in the thread, then the file."""
    for message in posts.thread:
        await conv.post(message)
    if posts.attachment is not None:
        await conv.upload(posts.attachment.content, filename=posts.attachment.filename, title=posts.attachment.title)


async def _show_fleet(conv: Conversation, posts: DigestPosts) -> None:
    """A fleet's answer, laid out as posts: the rest of its rows go on in the thread."""
    await conv.post(posts.first)
    await post_thread(conv, posts)


async def _show_result(conv: Conversation, shown: Reading) -> str:
    """Post what deserves its own message (and the files); return the one-line summary for the status message."""
    if shown.text is not None:
        await conv.post(shown.text)
    for file in shown.files:
        await conv.upload(file.content, filename=file.filename, title=file.title)
    return shown.summary
