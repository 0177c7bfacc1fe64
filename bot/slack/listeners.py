"""Bolt listeners: turn Slack events, slash commands and button presses into Plans and answers.

Each listener counts itself in ``services.activity`` so the console can wait for what it sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot import intents
from bot.actions import Requester
from bot.errors import StateError
from bot.plan import MAX_JOBS, MIN_JOBS, Plan, Step, half_jobs
from bot.services import Services
from bot.slack import audit, guard_render, messages
from bot.slack.conversation import execute, handle_plan
from bot.slack.extension import CommandContext, Subcommand
from bot.slack.follow import Follower
from bot.slack.thread import Thread
from bot.store import BuildRun

log = logging.getLogger(__name__)
# Message subtypes that are still a person writing; edits, joins, bot posts and deletions are not.
HUMAN_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})
SHOW_LOG_LINES = 80
# Messages answered at once. A burst of events then waits its turn at this gate (cheaply) instead of every
# answer running at once, so Slack's acks, which share the event loop, are not queued behind all that work.
ANSWERS_AT_ONCE = 8


def register(app: AsyncApp, services: Services, follower: Follower,
             subcommands: Mapping[str, Subcommand] | None = None) -> None:
    listeners = Listeners(services, follower, subcommands or {})
    app.event("message")(listeners.on_message)
    app.event("app_mention")(listeners.on_mention)
    app.command("/rigops")(listeners.on_command)
    app.action(messages.RUN_ACTION)(listeners.on_run)
    app.action(messages.CANCEL_ACTION)(listeners.on_cancel)
    app.action(messages.RETRY_ACTION)(listeners.on_retry)
    app.action(messages.RETRY_HALF_ACTION)(listeners.on_retry)
    app.action(messages.SHOW_LOG_ACTION)(listeners.on_show_log)
    for action_id in (guard_render.RESTART_ACTION, guard_render.PAUSE_ACTION, guard_render.IGNORE_ACTION,
                      guard_render.RESUME_ACTION):
        app.action(action_id)(listeners.on_memory_button)
    app.error(listeners.on_error)


class Listeners:
    def __init__(self, services: Services, follower: Follower, subcommands: Mapping[str, Subcommand]) -> None:
        self.services = services
        self.follower = follower
        self.subcommands = subcommands
        self._answering = asyncio.Semaphore(ANSWERS_AT_ONCE)

    def _first_delivery(self, body: dict[str, Any]) -> bool:
        event_id = body.get("event_id")
        return not event_id or self.services.store.first_delivery(str(event_id))

    async def on_message(self, body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient,
                         context: dict[str, Any]) -> None:
        async with self.services.activity.track():
            if event.get("subtype") not in HUMAN_SUBTYPES or event.get("bot_id") or not event.get("user"):
                return
            if event.get("channel") not in self.services.config.slack.ops_channels:
                return
            bot_user = context.get("bot_user_id")
            if bot_user and f"<@{bot_user}>" in (event.get("text") or ""):
                return  # the app_mention event answers it
            await self._guarded(client, event, lambda: self._answer_once(body, event, client, addressed=False))

    async def on_mention(self, body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient) -> None:
        async with self.services.activity.track():
            if event.get("bot_id") or not event.get("user"):
                return
            await self._guarded(client, event, lambda: self._answer_once(body, event, client, addressed=True))

    async def _answer_once(self, body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient, *,
                           addressed: bool) -> None:
        async with self._answering:
            if self._first_delivery(body):
                await self._answer(event, client, addressed=addressed)

    async def _guarded(self, client: AsyncWebClient, where: dict[str, Any],
                       work: Callable[[], Awaitable[None]]) -> None:
        """Run the work; when the state database fails, say so in the thread: nothing was run."""
        try:
            await work()
        except StateError as exc:
            log.error("state failure: %s", exc)
            channel = where.get("channel") or where.get("channel_id")
            if channel:
                ts = where.get("thread_ts") or where.get("ts")
                await Thread(client, str(channel), str(ts) if ts else None).post(messages.state_failed(str(exc)))

    async def _answer(self, event: dict[str, Any], client: AsyncWebClient, *, addressed: bool) -> None:
        channel, ts = str(event["channel"]), str(event["ts"])
        thread = Thread(client, channel, str(event.get("thread_ts") or ts))
        assert thread.thread_ts is not None
        context = self.services.store.thread_context(channel, thread.thread_ts)
        plan = intents.parse(event.get("text") or "", config=self.services.config, context=context,
                             addressed=addressed)
        if not plan.steps and not plan.error:
            if addressed:
                await thread.post(messages.NOT_UNDERSTOOD)
            return
        if await self._over_limit(str(event["user"]), thread):
            return
        await handle_plan(self.services, thread, plan, requester=Requester(user=str(event["user"])), request_ts=ts,
                          on_build=self.follower.follow)

    async def on_command(self, ack: AsyncAck, command: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        async with self.services.activity.track():
            await self._guarded(client, command, lambda: self._command(command, client))

    async def _command(self, command: dict[str, Any], client: AsyncWebClient) -> None:
        thread = Thread(client, str(command["channel_id"]), None)
        text = str(command.get("text") or "")
        word, _, rest = text.strip().partition(" ")
        user = str(command["user_id"])
        if await self._over_limit(user, thread):
            return
        if word.lower() == "audit":
            await self._audit(user, rest.strip(), thread)
            return
        if (handler := self.subcommands.get(word.lower())) is not None:
            await handler(CommandContext(user=str(command["user_id"]), channel=thread.channel,
                                         args=rest.strip(), thread=thread))
            return
        plan = intents.parse_command(text, config=self.services.config)
        await handle_plan(self.services, thread, plan, requester=Requester(user=str(command["user_id"])),
                          request_ts=None, on_build=self.follower.follow)

    async def on_run(self, ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        async with self.services.activity.track():
            where = {"channel": (body.get("channel") or {}).get("id"),
                     "thread_ts": (body.get("message") or {}).get("thread_ts")}
            await self._guarded(client, where, lambda: self._run(body, client))

    async def _run(self, body: dict[str, Any], client: AsyncWebClient) -> None:
        user, plan_id = _pressed(body)
        pending = self.services.store.plan(plan_id)
        if pending is None or pending.state != "pending":
            await self._stale(body, client, plan_id)
            return
        thread = Thread(client, pending.channel, pending.thread_ts)
        policy = self.services.policy
        if time.time() - pending.created_at > policy.confirm_timeout():
            await self._expire(thread, pending.id, pending.message_ts, user=user, plan=pending.plan)
            return
        if not await policy.may_press_run(user, host=pending.plan.host, channel=pending.channel):
            await audit.record(self.services, thread, "denied", user=user, plan=pending.plan,
                               detail={"why": "pressed Run without the operator role"})
            await thread.ephemeral(user, messages.NOT_YOURS.format(host=pending.plan.host))
            return
        if self.services.store.claim_plan(plan_id, "running") is None:
            await self._stale(body, client, plan_id)
            return
        await audit.record(self.services, thread, "approved", user=user, plan=pending.plan,
                           detail={"requested_by": pending.user})
        await execute(self.services, thread, pending.plan, requester=Requester(user=pending.user),
                      request_ts=pending.request_ts, status_ts=pending.message_ts,
                      note=messages.approved_by(user), on_build=self.follower.follow)
        self.services.store.finish_plan(plan_id)

    async def _expire(self, thread: Thread, plan_id: int, message_ts: str | None, *, user: str, plan: Plan) -> None:
        if self.services.store.claim_plan(plan_id, "expired") is None:
            return
        await audit.record(self.services, thread, "expired", user=user, plan=plan)
        if message_ts:
            await thread.update(message_ts, messages.EXPIRED,
                                blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": messages.EXPIRED}}])
        else:
            await thread.post(messages.EXPIRED)

    async def on_cancel(self, ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        async with self.services.activity.track():
            user, plan_id = _pressed(body)
            pending = self.services.store.claim_plan(plan_id, "cancelled")
            if pending is None:
                await self._stale(body, client, plan_id)
                return
            if pending.message_ts:
                thread = Thread(client, pending.channel, pending.thread_ts)
                text = messages.CANCELLED.format(user=user)
                await thread.update(pending.message_ts, text,
                                    blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": text}}])

    async def on_retry(self, ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        """Retry (or Retry at half the jobs) under a build's result: start it again, in the same thread."""
        await ack()
        async with self.services.activity.track():
            user, run = self._pressed_run(body)
            if run is None or run.channel is None:
                return
            halve = body["actions"][0]["action_id"] == messages.RETRY_HALF_ACTION
            jobs = half_jobs(run.jobs) if halve else run.jobs
            plan = Plan(host=run.host, build=run.build, steps=(Step("rebuild", jobs=jobs),))
            thread = Thread(client, run.channel, run.thread_ts)
            decision = await self.services.policy.decide(plan, user, channel=run.channel)
            await audit.record(self.services, thread, "request", user=user, plan=plan,
                               detail={"role": decision.role, "allowed": decision.allowed, "via": "retry button"})
            if not decision.allowed:
                await thread.ephemeral(user, messages.denied(decision.reason))
                return
            await execute(self.services, thread, plan, requester=Requester(user=user),
                          note=messages.retried_by(user), on_build=self.follower.follow)

    async def on_show_log(self, ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        async with self.services.activity.track():
            user, run = self._pressed_run(body)
            if run is None or run.channel is None:
                return
            plan = Plan(host=run.host, build=run.build, steps=(Step("log", lines=SHOW_LOG_LINES),))
            await execute(self.services, Thread(client, run.channel, run.thread_ts), plan,
                          requester=Requester(user=user))

    async def on_memory_button(self, ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        """[Stop & restart at -jN] [Pause the heaviest compilers] [Ignore] under a memory-pressure alert, and
        [Resume now] under a pause: as much power as a kill, so only for operators of the host."""
        await ack()
        async with self.services.activity.track():
            await self._guarded(client, {"channel": (body.get("channel") or {}).get("id")},
                                lambda: self._memory_button(body, client))

    async def _memory_button(self, body: dict[str, Any], client: AsyncWebClient) -> None:
        action = body["actions"][0]
        user = str(body["user"]["id"])
        run_id, _, jobs = str(action.get("value") or "").partition(":")
        run = self.services.store.run(int(run_id)) if run_id.isdigit() else None
        if run is None or run.channel is None:
            return
        thread = Thread(client, run.channel, run.thread_ts)
        guard = self.follower.guards.get(run.id)
        if guard is None:
            await thread.ephemeral(user, "That build is no longer running.")
            return
        what = {guard_render.RESTART_ACTION: "restart", guard_render.PAUSE_ACTION: "pause",
                guard_render.RESUME_ACTION: "resume"}.get(action["action_id"], "ignore")
        if what == "restart" and not (jobs.isdigit() and MIN_JOBS <= int(jobs) <= MAX_JOBS):
            return  # not a value rigops put on the button
        step = Step("rebuild", jobs=int(jobs)) if what == "restart" else Step("kill")
        plan = Plan(host=run.host, build=run.build, steps=(step,))
        decision = await self.services.policy.decide(plan, user, channel=run.channel)
        await audit.record(self.services, thread, "request", user=user, plan=plan,
                           detail={"role": decision.role, "allowed": decision.allowed, "via": f"memory {what}"})
        if not decision.allowed:
            await thread.ephemeral(user, messages.denied(decision.reason))
            return
        if what == "restart" and step.jobs:
            await self.follower.guards.settle_alert(guard, f"<@{user}> chose to restart at -j{step.jobs}.")
            self.follower.guards.restart(guard, step.jobs, user=user)
        elif what == "pause":
            await self.follower.guards.settle_alert(guard, f"<@{user}> paused the heaviest compilers.")
            await self.follower.guards.pause(guard, user=user)
        elif what == "resume":
            await self.follower.guards.resume(guard, user=user)
        else:
            guard.ignored_by = user
            await self.follower.guards.settle_alert(
                guard, f"Ignored by <@{user}>: no more pressure alerts for this run (OOM kills are still told).")

    def _pressed_run(self, body: dict[str, Any]) -> tuple[str, BuildRun | None]:
        """Who pressed a button under a build's result, and that run (None when the state has forgotten it)."""
        user, run_id = _pressed(body)
        return user, self.services.store.run(run_id)

    async def _stale(self, body: dict[str, Any], client: AsyncWebClient, plan_id: int) -> None:
        known = self.services.store.plan(plan_id)
        text = messages.ALREADY_HANDLED.format(state=known.state) if known else messages.UNKNOWN_PLAN
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        thread_ts = (body.get("container") or {}).get("message_ts")
        if channel:
            await Thread(client, str(channel), thread_ts).post(text)

    async def _over_limit(self, user: str, thread: Thread) -> bool:
        """Count the request; say so once when the user goes over the per-minute limit."""
        policy = self.services.policy
        if not policy.over_rate_limit(user):
            return False
        limit = policy.rules.rate_limit if policy.rules else 30
        if policy.requests_in_window(user) == limit + 1:
            await thread.post(messages.SLOW_DOWN.format(limit=limit))
        return True

    async def _audit(self, user: str, args: str, thread: Thread) -> None:
        """`/rigops audit [N]`: the last N audit entries, for admins."""
        if not await self.services.policy.is_admin(user):
            await thread.ephemeral(user, messages.ADMINS_ONLY)
            return
        count = int(args) if args.isdigit() and 0 < int(args) <= 200 else 20
        await thread.post(audit.render_entries(self.services.store.audit_entries(count)))

    async def on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("unhandled error in a listener", exc_info=error)


def _pressed(body: dict[str, Any]) -> tuple[str, int]:
    action = body["actions"][0]
    return str(body["user"]["id"]), int(action.get("value") or 0)
