"""Requests: the one gate every message, slash command and button press goes through.

    said / command / pressed  ->  plan  ->  policy  ->  confirmation  ->  audit  ->  run  ->  reply

A front end hands over what a person did (:class:`Said`, :class:`SlashCommand`, :class:`~bot.core.talk.Pressed`)
and the core answers through the front end's Reply. Nothing here knows Slack.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from bot.actions import Requester
from bot.builds import logs
from bot.core import audit
from bot.core.execute import Executor
from bot.core.guard import Guards
from bot.core.policy import Decision
from bot.core.questions import Questions
from bot.core.schedules import Schedules
from bot.core.services import Services
from bot.core.talk import Conversation, Pressed, Reply, parse_value
from bot.language import intents
from bot.language.plan import Plan, Step, ThreadContext
from bot.memory.policy import retry_jobs
from bot.store import BuildRun
from bot.text import guard as guard_text
from bot.text import messages, render
from bot.text.render import StepLine
from bot.util.errors import StateError

log = logging.getLogger(__name__)
SHOW_LOG_LINES = 80
# Messages answered at once. A burst of events then waits its turn at this gate (cheaply) instead of every
# answer running at once, so a front end's acks, which share the event loop, are not queued behind all that work.
ANSWERS_AT_ONCE = 8
AUDIT_MAX = 200


@dataclass(frozen=True)
class Said:
    """A person's message ``message_id`` in ``channel``, in the thread ``thread_id`` when it is a reply. ``addressed``:
    it mentions rigops (or is a direct message), so weak requests count and chatter gets a "didn't catch that".
    ``delivery``: the front end's id of this delivery, when it may deliver the same message twice."""

    text: str
    user: str
    channel: str
    message_id: str
    thread_id: str | None = None
    addressed: bool = False
    delivery: str | None = None


@dataclass(frozen=True)
class SlashCommand:
    """``/rigops <text>`` typed by ``user`` in ``channel``; ``private_route`` reaches the user even where rigops
    cannot post (Slack's response_url); ``key`` names this one command among the others (Slack's trigger id),
    for the claim that lets another rigops answer it when this one dies after acknowledging it."""

    text: str
    user: str
    channel: str
    private_route: str | None = None
    key: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"text": self.text, "user": self.user, "channel": self.channel, "private_route": self.private_route,
                "key": self.key}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SlashCommand:
        route, key = d.get("private_route"), d.get("key")
        return cls(text=str(d["text"]), user=str(d["user"]), channel=str(d["channel"]),
                   private_route=route if isinstance(route, str) else None, key=key if isinstance(key, str) else None)


class Activity:
    """Counts what a front end handed over and saw handled, so it (or a test) can wait until what it sent has been
    dealt with: a front end that acknowledges first and works after (Slack's) wraps each hand-over in track()."""

    def __init__(self) -> None:
        self.finished = 0
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def track(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            async with self._changed:
                self.finished += 1
                self._changed.notify_all()

    async def wait_finished(self, count: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.finished >= count)


class Requests:
    def __init__(self, services: Services, reply: Reply, *, executor: Executor, guards: Guards,
                 schedules: Schedules) -> None:
        self.services = services
        self.reply = reply
        self.executor = executor
        self.guards = guards
        self.schedules = schedules
        self._answering = asyncio.Semaphore(ANSWERS_AT_ONCE)
        self.questions = Questions(services, reply, carry_on=self.handle)

    # -- what people do -----------------------------------------------------------------------------------
    async def said(self, said: Said) -> None:
        """A message in an ops channel, or one that mentions rigops."""
        conv = Conversation(self.reply, said.channel, said.thread_id or said.message_id)
        with logs.ids(channel=said.channel, thread=said.thread_id or said.message_id, user=said.user):
            await self._guarded(conv, lambda: self._said_once(said, conv), kind="message",
                                look=lambda problem: self._look_without_state(
                                    conv, intents.parse(said.text, config=self.services.config, context=None,
                                                        addressed=said.addressed, channel=said.channel),
                                    user=said.user, request_id=said.message_id, problem=problem))

    async def command(self, cmd: SlashCommand) -> None:
        """``/rigops …``: its answer starts a thread in the channel."""
        conv = Conversation(self.reply, cmd.channel, None, private_route=cmd.private_route)
        with logs.ids(channel=cmd.channel, user=cmd.user):
            await self._guarded(conv, lambda: self._command(cmd, conv), kind="command",
                                look=lambda problem: self._command_without_state(cmd, conv, problem))

    async def pressed(self, press: Pressed) -> None:
        """A button under something rigops posted."""
        conv = Conversation(self.reply, press.place.channel, press.place.thread)
        ref = press.parsed.ref if press.parsed is not None else None
        plan = ref if press.kind in ("run", "cancel", "pick") else None
        with logs.ids(channel=press.place.channel, thread=press.place.thread, user=press.user, plan=plan):
            done = await self._guarded(conv, lambda: self._pressed(press), kind="press")
        if done:
            self.services.metrics.request("press", press.kind, "done")

    # -- the gate -----------------------------------------------------------------------------------------
    async def admit(self, conv: Conversation, plan: Plan, *, user: str, via: str | None = None) -> Decision | None:
        """Policy and audit: the policy's yes when ``user`` may run ``plan``, else None. A refusal or denial is
        answered here: in the thread for a request, privately for a button (``via`` says which button)."""
        if plan.error:
            await audit.record(self.services, conv, "refused", user=user, plan=plan, detail={"why": plan.error})
            await conv.post(messages.plan_refused(plan))
            return None
        decision = await self.services.policy.decide(plan, user, channel=conv.channel)
        detail = {"role": decision.role, "allowed": decision.allowed, **({"via": via} if via else {})}
        with self.services.store.batch():  # one transaction for the request and what the thread remembers
            audit.write(self.services, conv, "request", user=user, plan=plan, detail=detail)
            if via is None and decision.allowed and conv.thread and plan.host:
                self.services.store.remember_thread(conv.channel, conv.thread, host=plan.host, build=plan.build)
        if decision.allowed:
            return decision
        if via is None:
            await audit.record(self.services, conv, "denied", user=user, plan=plan, detail={"why": decision.reason})
            await conv.post(messages.denied(decision.reason))
        else:
            await conv.private(user, messages.denied(decision.reason))
        return None

    async def handle(self, conv: Conversation, plan: Plan, *, user: str, request_id: str | None,
                     kind: str = "message") -> None:
        """A parsed request: ask which host or build, refuse it, ask for a Run, or run it — after the policy said
        yes."""
        count = functools.partial(self.services.metrics.request, kind, plan.steps[0].action if plan.steps else None)
        if plan.question is not None:
            await self.questions.ask(conv, plan, user=user, request_id=request_id)
            count("asked")
            return
        decision = await self.admit(conv, plan, user=user)
        if decision is None:
            count("refused" if plan.error else "denied")
            return
        if plan.destructive or self.services.config.is_group(plan.host):  # quick looks answer before :eyes: helps
            await conv.react(request_id, "eyes")
        if plan.destructive and self.services.config.confirm and not decision.auto_approved:
            await self._ask(conv, plan, user=user, request_id=request_id)
            count("asked")
            return
        await self.executor.execute(conv, plan, requester=Requester(user=user), request_id=request_id)
        count("done")

    async def _ask(self, conv: Conversation, plan: Plan, *, user: str, request_id: str | None,
                   note: str | None = None) -> None:
        """The plan with Run and Cancel; the press comes back through :meth:`pressed`."""
        lines = [StepLine(s, "waiting") for s in plan.steps]
        note = note or messages.confirm_prompt(user, minutes=self.services.policy.confirm_timeout() / 60)
        store = self.services.store
        plan_id = store.add_plan(channel=conv.channel, thread_id=conv.thread or "", request_id=request_id, user=user,
                                 plan=plan)
        message_id = await conv.post(render.plan_message(plan, lines, note=note, plan_id=plan_id))
        if message_id is not None:
            store.set_plan_message(plan_id, message_id=message_id, thread_id=conv.thread or message_id)
            if plan.host:
                store.remember_thread(conv.channel, conv.thread or message_id, host=plan.host, build=plan.build)

    # -- messages and commands ----------------------------------------------------------------------------
    async def _said_once(self, said: Said, conv: Conversation) -> None:
        async with self._answering:
            if said.delivery and not self.services.store.first_delivery(said.delivery):
                return  # a second delivery of the same message runs nothing twice
            assert conv.thread is not None
            store, config = self.services.store, self.services.config
            open_question = store.open_question(conv.channel, conv.thread) if said.thread_id else None
            if open_question is not None and await self.questions.answer(open_question, said.text, user=said.user):
                return
            context = store.thread_context(conv.channel, conv.thread)
            plan = intents.parse(said.text, config=config, context=context, addressed=said.addressed,
                                 channel=said.channel)
            if not plan.steps and not plan.error:
                if said.addressed:
                    await self._did_you_mean(said, conv, context)
                else:
                    self.services.metrics.request("message", None, "ignored")
                return
            if await self._over_limit(said.user, conv):
                return
            await self.handle(conv, await self.questions.complete(plan), user=said.user, request_id=said.message_id,
                              kind="message")

    async def _did_you_mean(self, said: Said, conv: Conversation, context: ThreadContext | None) -> None:
        """Said to rigops, a request put as a supposition or advice ("@rigops maybe we could drop vllm to -j8")
        is not run on a guess: it is offered, with Run and Cancel. Anything else gets the short help."""
        offer = intents.guess(said.text, config=self.services.config, context=context, channel=said.channel)
        metrics = self.services.metrics
        if offer is None:
            metrics.request("message", None, "ignored")
            await conv.post(messages.NOT_UNDERSTOOD)
            return
        if await self._over_limit(said.user, conv):
            return
        if await self.admit(conv, offer, user=said.user) is None:
            metrics.request("message", offer.steps[0].action, "denied")
            return
        minutes = self.services.policy.confirm_timeout() / 60
        await self._ask(conv, offer, user=said.user, request_id=said.message_id,
                        note=messages.did_you_mean(said.user, minutes=minutes))
        metrics.request("message", offer.steps[0].action, "asked")

    async def _command(self, cmd: SlashCommand, conv: Conversation) -> None:
        word, _, rest = cmd.text.strip().partition(" ")
        if await self._over_limit(cmd.user, conv):
            return
        plan = None if word.lower() in ("audit", "schedule", "schedules") else await self.questions.complete(
            intents.parse_command(cmd.text, config=self.services.config, channel=cmd.channel))
        where = await self._answer_where(cmd, conv, thread_needed=plan is not None and plan.destructive)
        if where is None:
            return
        match word.lower():
            case "audit":
                await self._audit(cmd.user, rest.strip(), where)
            case "schedule" | "schedules":
                await where.post(await self.schedules.command(rest, user=cmd.user, channel=cmd.channel))
            case _:
                assert plan is not None
                await self.handle(where, plan, user=cmd.user, request_id=None, kind="command")

    async def _look_without_state(self, conv: Conversation, plan: Plan, *, user: str, request_id: str | None,
                                  problem: str) -> bool:
        """While the state cannot be written, a request that only looks (memory, status, a log, the GPUs) is
        answered all the same, saying it was not recorded; False for anything else (nothing is run without its
        record)."""
        if not plan.steps or plan.error or plan.question is not None or plan.destructive:
            return False
        decision = await self.services.policy.decide(plan, user, channel=conv.channel)
        if not decision.allowed:
            return False
        log.warning("answering a look without recording it (the state does not answer)")
        await conv.post(messages.not_recorded(problem))
        await self.executor.execute(conv, plan, requester=Requester(user=user), request_id=request_id, record=False)
        return True

    async def _command_without_state(self, cmd: SlashCommand, conv: Conversation, problem: str) -> bool:
        word = cmd.text.strip().partition(" ")[0].lower()
        if word in ("audit", "schedule", "schedules"):
            return False
        plan = intents.parse_command(cmd.text, config=self.services.config, channel=cmd.channel)
        return await self._look_without_state(conv, plan, user=cmd.user, request_id=None, problem=problem)

    async def _answer_where(self, cmd: SlashCommand, conv: Conversation, *,
                            thread_needed: bool) -> Conversation | None:
        """Where a slash command is answered: in the channel when rigops may post there; else privately to the
        person, or, for a request that needs a thread (a Run button, a followed build), in a DM with them."""
        if await conv.can_post():
            return conv
        if not thread_needed:
            await conv.private(cmd.user, messages.not_here_read_only(cmd.channel))
            return Conversation(self.reply, cmd.channel, None, private_route=cmd.private_route,
                                private_to=cmd.user)
        dm = await self.reply.direct(cmd.user)
        if dm is None:
            await conv.private(cmd.user, messages.cannot_answer_here(cmd.channel))
            return None
        await conv.private(cmd.user, messages.moved_to_dm(cmd.channel))
        return Conversation(self.reply, dm, None)

    async def _audit(self, user: str, args: str, conv: Conversation) -> None:
        """`/rigops audit [N]`: the last N audit entries, for admins."""
        if not await self.services.policy.is_admin(user):
            await conv.private(user, messages.ADMINS_ONLY)
            return
        count = int(args) if args.isdigit() and 0 < int(args) <= AUDIT_MAX else 20
        await conv.post(messages.audit_entries(self.services.store.audit_entries(count)))

    async def _over_limit(self, user: str, conv: Conversation) -> bool:
        """Count the request; say so once when the user goes over the per-minute limit."""
        policy = self.services.policy
        if not policy.over_rate_limit(user):
            return False
        limit = policy.rules.rate_limit if policy.rules else 30
        if policy.requests_in_window(user) == limit + 1:
            await conv.post(messages.SLOW_DOWN.format(limit=limit))
        return True

    async def _guarded(self, conv: Conversation, work: Callable[[], Awaitable[None]], *, kind: str,
                       look: Callable[[str], Awaitable[bool]] | None = None) -> bool:
        """Run the work; when the state database fails, a request that is only a look is answered without it
        (``look``), and anything else is told in the thread that nothing was run. False when the work failed."""
        metrics = self.services.metrics
        try:
            await work()
            return True
        except StateError as exc:
            log.error("state failure: %s", exc)
            metrics.state_errors.labels(self.services.store.engine).inc()
            if look is not None and await look(str(exc)):
                metrics.request(kind, None, "done")
                return True
            metrics.request(kind, None, "failed")
            await conv.post(messages.state_failed(str(exc)))
        except Exception:  # a bug must not cost the person their answer, nor the front end its ack
            log.exception("a request failed")
            metrics.request(kind, None, "failed")
            await conv.post(messages.GENERIC_FAILURE)
        return False

    # -- buttons --------------------------------------------------------------------------------------------
    async def _pressed(self, press: Pressed) -> None:
        if press.parsed is None:  # not a value rigops put on a button: a forged or garbled click
            log.warning("refused a %s press with a value rigops did not make", press.kind)
            await Conversation(self.reply, press.place.channel, press.place.thread).private(
                press.user, messages.FORGED_PRESS)
            return
        match press.kind:
            case "run":
                await self._run(press)
            case "cancel":
                await self._cancel(press)
            case "pick":
                if not await self.questions.pick(press):
                    await self._stale(press, self._plan_id(press))
            case "retry" | "retry_half":
                await self._retry(press)
            case "show_log":
                await self._show_log(press)
            case "oom_restart" | "oom_pause" | "oom_ignore" | "oom_resume":
                await self._memory(press)

    def _plan_id(self, press: Pressed) -> int:
        parsed = press.parsed
        return parsed.ref if parsed is not None else 0

    async def _run(self, press: Pressed) -> None:
        plan_id = self._plan_id(press)
        store, policy = self.services.store, self.services.policy
        pending = store.plan(plan_id)
        if pending is None or pending.state != "pending":
            await self._stale(press, plan_id)
            return
        conv = Conversation(self.reply, pending.channel, pending.thread_id)
        if time.time() - pending.created_at > policy.confirm_timeout():
            await self._expire(conv, pending.id, pending.message_id, user=press.user, plan=pending.plan)
            return
        if not await policy.may_press_run(press.user, host=pending.plan.host, channel=pending.channel):
            await audit.record(self.services, conv, "denied", user=press.user, plan=pending.plan,
                               detail={"why": "pressed Run without the operator role"})
            await conv.private(press.user, messages.NOT_YOURS.format(host=pending.plan.host))
            return
        if store.claim_plan(plan_id, "running") is None:
            await self._stale(press, plan_id)
            return
        await audit.record(self.services, conv, "approved", user=press.user, plan=pending.plan,
                           detail={"requested_by": pending.user})
        await self.executor.execute(conv, pending.plan, requester=Requester(user=pending.user),
                                    request_id=pending.request_id, status_id=pending.message_id,
                                    note=messages.approved_by(press.user), plan_id=plan_id)
        store.finish_plan(plan_id)

    async def _expire(self, conv: Conversation, plan_id: int, message_id: str | None, *, user: str,
                      plan: Plan) -> None:
        if self.services.store.claim_plan(plan_id, "expired") is None:
            return
        await audit.record(self.services, conv, "expired", user=user, plan=plan)
        if message_id:
            await conv.update(message_id, messages.EXPIRED)
        else:
            await conv.post(messages.EXPIRED)

    async def _cancel(self, press: Pressed) -> None:
        plan_id = self._plan_id(press)
        pending = self.services.store.claim_plan(plan_id, "cancelled")
        if pending is None:
            await self._stale(press, plan_id)
            return
        if pending.message_id:
            conv = Conversation(self.reply, pending.channel, pending.thread_id)
            await conv.update(pending.message_id, messages.CANCELLED.format(user=press.user))

    async def _stale(self, press: Pressed, plan_id: int) -> None:
        known = self.services.store.plan(plan_id)
        text = messages.ALREADY_HANDLED.format(state=known.state) if known else messages.UNKNOWN_PLAN
        # in the thread the button is in: the message pressed is usually a reply, and Slack threads only under
        # top-level messages; a message without a thread (press.place.thread None) is one, and starts it
        await Conversation(self.reply, press.place.channel, press.place.thread or press.message).post(text)

    def _pressed_run(self, press: Pressed) -> BuildRun | None:
        """The run a button under a build's result or alert is about (None when the state forgot it)."""
        parsed = press.parsed
        run = self.services.store.run(parsed.ref) if parsed is not None else None
        return run if run is not None and run.channel is not None else None

    async def _retry(self, press: Pressed) -> None:
        """Retry (or Retry at half the jobs) under a build's result: start it again, in the same thread."""
        run = self._pressed_run(press)
        if run is None or run.channel is None:
            return
        jobs = _fewer(press.value, run.jobs) if press.kind == "retry_half" else run.jobs
        plan = Plan(host=run.host, build=run.build, steps=(Step("rebuild", jobs=jobs),))
        conv = Conversation(self.reply, run.channel, run.thread_id)
        if await self.admit(conv, plan, user=press.user, via="retry button") is not None:
            await self.executor.execute(conv, plan, requester=Requester(user=press.user),
                                        note=messages.retried_by(press.user))

    async def _show_log(self, press: Pressed) -> None:
        run = self._pressed_run(press)
        if run is None or run.channel is None:
            return
        plan = Plan(host=run.host, build=run.build, steps=(Step("log", lines=SHOW_LOG_LINES),))
        conv = Conversation(self.reply, run.channel, run.thread_id)
        if await self.admit(conv, plan, user=press.user, via="show log button") is not None:
            await self.executor.execute(conv, plan, requester=Requester(user=press.user))

    async def _memory(self, press: Pressed) -> None:
        """[Stop & restart at -jN] [Pause the heaviest compilers] [Ignore] under a memory-pressure alert, and
        [Resume now] under a pause: as much power as a kill, so only for operators of the host."""
        run = self._pressed_run(press)
        if run is None or run.channel is None:
            return
        conv = Conversation(self.reply, run.channel, run.thread_id)
        guard = self.guards.get(run.id)
        replicas = self.services.store.replicas
        if guard is None and run.state in ("starting", "running") and run.owner not in (None, replicas.me):
            replicas.hand_over(run.owner, run.id, press.to_json())  # another rigops follows it: that one acts
            return
        if guard is None:
            await conv.private(press.user, messages.NO_LONGER_RUNNING)
            return
        parsed = press.parsed
        jobs = parsed.jobs if parsed is not None else None
        if press.kind == "oom_restart" and jobs is None:
            return  # not a value rigops put on the button
        step = Step("rebuild", jobs=jobs) if press.kind == "oom_restart" else Step("kill")
        plan = Plan(host=run.host, build=run.build, steps=(step,))
        what = press.kind.removeprefix("oom_")
        if await self.admit(conv, plan, user=press.user, via=f"memory {what}") is None:
            return
        user = press.user
        if press.kind == "oom_restart" and step.jobs:
            await self.guards.settle_alert(guard, guard_text.chose_restart(user, step.jobs))
            self.guards.restart(guard, step.jobs, user=user)
        elif press.kind == "oom_pause":
            await self.guards.settle_alert(guard, guard_text.chose_pause(user))
            await self.guards.pause(guard, user=user)
        elif press.kind == "oom_resume":
            await self.guards.resume(guard, user=user)
        else:
            guard.ignored_by = user
            await self.guards.settle_alert(guard, guard_text.chose_ignore(user))


def _fewer(value: str, jobs: int | None) -> int:
    """The -j a pressed [Retry at -jN] (``"<run>:<N>"``) runs: N, held to the policy that offered it
    (bot.memory.policy.retry_jobs: never more than half the run's own)."""
    parsed = parse_value("retry_half", value)
    return retry_jobs(jobs, fits=parsed.jobs if parsed is not None else None)
