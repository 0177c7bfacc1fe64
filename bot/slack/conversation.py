"""One request in one thread: show the plan, ask for a Run when needed, run the steps, edit the status."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import replace

from bot.actions import Requester
from bot.actions.chart import MemoryChart
from bot.actions.log import LogTail
from bot.actions.rebuild import RebuildResult
from bot.actions.run import StepResult, run_step
from bot.actions.status import StatusReport
from bot.errors import RigopsError
from bot.fleet import fan_out
from bot.hosts.models import GpuReport, KillResult, Snapshot
from bot.memory import human
from bot.plan import Plan
from bot.services import Services
from bot.slack import audit, messages, render
from bot.slack.render import StepLine
from bot.slack.thread import Thread
from bot.store import BuildRun

log = logging.getLogger(__name__)


BuildStarted = Callable[[BuildRun], None]


async def handle_plan(services: Services, thread: Thread, plan: Plan, *, requester: Requester,
                      request_ts: str | None, on_build: BuildStarted | None = None) -> None:
    """Answer a parsed request: refuse it, ask for a Run, or run it — after the policy said yes."""
    if plan.error:
        await audit.record(services, thread, "refused", user=requester.user, plan=plan, detail={"why": plan.error})
        await thread.post(messages.plan_refused(plan))
        return
    decision = await services.policy.decide(plan, requester.user, channel=thread.channel)
    with services.store.batch():  # one transaction for the request and what the thread remembers
        full = audit.write(services, thread, "request", user=requester.user, plan=plan,
                           detail={"role": decision.role, "allowed": decision.allowed})
        if decision.allowed and thread.thread_ts and plan.host:
            services.store.remember_thread(thread.channel, thread.thread_ts, host=plan.host, build=plan.build)
    await audit.mirror(services, thread, "request", user=requester.user, plan=plan, full=full)
    if not decision.allowed:
        await audit.record(services, thread, "denied", user=requester.user, plan=plan, detail={"why": decision.reason})
        await thread.post(messages.denied(decision.reason))
        return
    if plan.destructive or services.config.is_group(plan.host):  # quick looks answer before an :eyes: would help
        await thread.react(request_ts, "eyes")
    if plan.destructive and services.config.confirm and not decision.auto_approved:
        await ask_confirmation(services, thread, plan, requester=requester, request_ts=request_ts)
        return
    await execute(services, thread, plan, requester=requester, request_ts=request_ts, on_build=on_build)


async def ask_confirmation(services: Services, thread: Thread, plan: Plan, *, requester: Requester,
                           request_ts: str | None) -> None:
    lines = [StepLine(s, "waiting") for s in plan.steps]
    note = messages.confirm_prompt(requester.user, minutes=services.policy.confirm_timeout() / 60)
    plan_id = services.store.add_plan(channel=thread.channel, thread_ts=thread.thread_ts or "",
                                      request_ts=request_ts, user=requester.user, plan=plan)
    ts = await thread.post(render.plan_text(plan, lines, note=note),
                           blocks=render.plan_blocks(plan, lines, note=note, plan_id=plan_id))
    if ts is not None:
        services.store.set_plan_message(plan_id, message_ts=ts, thread_ts=thread.thread_ts or ts)
        if plan.host:
            services.store.remember_thread(thread.channel, thread.thread_ts or ts, host=plan.host, build=plan.build)


async def execute(services: Services, thread: Thread, plan: Plan, *, requester: Requester,
                  request_ts: str | None = None, status_ts: str | None = None, note: str = "",
                  on_build: BuildStarted | None = None) -> None:
    """Run the plan's steps in order, editing one status message; stop at the first failure.

    A destructive plan runs alone on its host and build: a second one is told who is already at it.
    """
    requester = replace(requester, channel=thread.channel, thread_ts=thread.thread_ts)
    key = (plan.host or "", plan.build)
    if plan.destructive and services.lock(plan).locked():
        text = messages.already_running(services.holders.get(key, "someone"))
        if status_ts is not None:
            await thread.update(status_ts, text, blocks=[])
        else:
            await thread.post(text)
        return
    lines = [StepLine(s, "waiting") for s in plan.steps]
    needs_status = plan.destructive or len(plan.steps) > 1 or status_ts is not None
    if needs_status and status_ts is None:
        status_ts = await thread.post(render.plan_text(plan, lines, note=note))

    async def show() -> None:
        if status_ts is not None:
            await thread.update(status_ts, render.plan_text(plan, lines, note=note),
                                blocks=render.plan_blocks(plan, lines, note=note))

    ok = True
    async with services.lock(plan) if plan.destructive else contextlib.nullcontext():
        if plan.destructive:
            services.holders[key] = requester.user
        for i, step in enumerate(plan.steps):
            lines[i] = StepLine(step, "running")
            await show()
            try:
                await audit.record(services, thread, "action", user=requester.user, plan=plan,
                                   detail={"step": step.to_json()})
                summary = await _run_one(services, thread, plan, i, requester, on_build)
                lines[i] = StepLine(step, "done", summary)
            except RigopsError as exc:
                lines[i] = StepLine(step, "failed", str(exc))
                ok = False
            except Exception:
                log.exception("step %s of plan %s failed", step.action, plan)
                lines[i] = StepLine(step, "failed", messages.GENERIC_FAILURE)
                ok = False
            with contextlib.suppress(RigopsError):
                services.store.audit("result", user=requester.user, channel=thread.channel,
                                     thread_ts=thread.thread_ts, host=plan.host, build=plan.build,
                                     detail={"step": step.to_json(), "ok": ok, "summary": lines[i].summary[:500]})
            if not ok:
                lines[i + 1:] = [StepLine(s, "skipped") for s in plan.steps[i + 1:]]
                if status_ts is None:
                    await thread.post(f":x: {lines[i].summary}")
                break
        services.holders.pop(key, None)
    await show()
    await thread.react(request_ts, "white_check_mark" if ok else "x")


async def _run_one(services: Services, thread: Thread, plan: Plan, index: int, requester: Requester,
                   on_build: BuildStarted | None) -> str:
    step = plan.steps[index]
    if step.action == "help":
        await thread.post(messages.HELP)
        return ""
    if step.action == "hosts":
        await thread.post(render.hosts_text(services.config))
        return ""
    if plan.host is not None and services.config.is_group(plan.host):
        results = await fan_out(services, plan, step, requester)
        await thread.post(render.fleet_text(plan.host, step, results))
        failed = sum(1 for r in results if r.error is not None)
        return f"{len(results) - failed} of {len(results)} hosts answered"
    ctx = services.context(plan, requester)
    result = await run_step(ctx, step)
    if isinstance(result, RebuildResult) and on_build is not None:
        on_build(result.run)
    return await _show_result(thread, result)


async def _show_result(thread: Thread, result: StepResult) -> str:
    """Post what deserves its own message; return the one-line summary for the status message."""
    match result:
        case KillResult():
            return render.kill_summary(result)
        case Snapshot():
            await thread.post(render.snapshot_text(result))
            return f"{human(result.memory.available)} available of {human(result.memory.total)}"
        case RebuildResult():
            return render.rebuild_summary(result)
        case StatusReport():
            await thread.post(render.status_text(result))
            return ""
        case LogTail():
            text, attachment = render.log_text(result)
            await thread.post(text)
            if attachment is not None:
                await thread.upload(attachment, filename=f"{result.run.build}-run{result.run.id}.log",
                                    title=f"{result.run.build} log (last {len(result.tail.lines)} lines)")
            return ""
        case GpuReport():
            await thread.post(render.gpu_text(result))
            return ""
        case MemoryChart():
            await thread.upload(result.png, filename=f"{result.run.build}-run{result.run.id}-memory.png",
                                     title=f"{result.run.build} on {result.run.host}: memory of run {result.run.id}")
            return f"peak {human(result.peak_used)} in use"
    raise AssertionError(f"unrendered result {type(result).__name__}")
