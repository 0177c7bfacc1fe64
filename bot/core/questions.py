"""Which host, which build: what rigops fills in when a request leaves it open (the one host where a build runs,
the one build running there, all hosts for a look), and the question it asks when it cannot tell — a button per
candidate, or an answer typed in the thread."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import Protocol

from bot.config import ALL_HOSTS
from bot.core import audit, infer
from bot.core.services import Services
from bot.core.talk import Conversation, Pressed, Reply
from bot.language import intents
from bot.language.commands import command
from bot.language.plan import Plan
from bot.store import PendingPlan
from bot.text import messages, render


class CarryOn(Protocol):
    """What goes on with a request once it is complete: the gate's ``handle``."""

    def __call__(self, conv: Conversation, plan: Plan, *, user: str, request_id: str | None) -> Awaitable[None]: ...


class Questions:
    def __init__(self, services: Services, reply: Reply, *, carry_on: CarryOn) -> None:
        self.services = services
        self.reply = reply
        self.carry_on = carry_on

    async def complete(self, plan: Plan) -> Plan:
        """Fill in what the request left open when rigops can know it: a look at all hosts when it named none,
        the one host where a build runs, the one build running there."""
        question, config = plan.question, self.services.config
        if question is None:
            return plan
        if question.kind == "host":
            if set(question.candidates) == set(config.hosts) and len(config.hosts) > 1 and all(
                    command(s.action).looks_everywhere for s in plan.steps):
                return intents.retarget(plan, host=ALL_HOSTS, build=None, config=config,
                                        guess=messages.ALL_HOSTS_GUESS)
            guess = await infer.guess_host(self.services, question.candidates)
            if guess is None:
                return plan
            plan = intents.retarget(plan, host=guess.host, build=question.build or guess.build, config=config,
                                    guess=guess.why)
            return plan if plan.question is None else await self.complete(plan)
        assert plan.host is not None
        found = infer.guess_build(self.services, plan.host, question.candidates)
        if found is None:
            return plan
        return intents.retarget(plan, host=plan.host, build=found.build, config=config,
                                guess=_joined(plan.guess, found.why))

    async def ask(self, conv: Conversation, plan: Plan, *, user: str, request_id: str | None) -> None:
        """A button per candidate; the press (or a reply in the thread naming one) carries the plan on."""
        assert plan.question is not None
        await audit.record(self.services, conv, "asked", user=user, plan=plan,
                           detail={"which": plan.question.kind, "candidates": list(plan.question.candidates)})
        store = self.services.store
        qid = store.add_plan(channel=conv.channel, thread_id=conv.thread or "", request_id=request_id, user=user,
                             plan=plan, state="asking")
        text = messages.question(plan.question.kind, render.steps_summary(plan))
        message_id = await conv.post(render.question_message(text, plan.question, qid, host=plan.host))
        if message_id is not None:
            store.set_plan_message(qid, message_id=message_id, thread_id=conv.thread or message_id)

    async def answer(self, asked: PendingPlan, text: str, *, user: str) -> bool:
        """A reply in a thread with an open question: True when it named one of the answers (and was taken)."""
        question = asked.plan.question
        if question is None:
            return False
        names = intents.names_in(text, config=self.services.config)
        named = names.hosts if question.kind == "host" else names.builds
        picks = [n for n in named if n in question.candidates]
        if len(picks) != 1:
            return False
        await self._take_answer(asked, picks[0], user=user)
        return True

    async def pick(self, press: Pressed) -> bool:
        """A button under a question; False when the question is no longer open."""
        parsed = press.parsed
        asked = self.services.store.plan(parsed.ref) if parsed is not None else None
        if asked is None or asked.state != "asking" or parsed is None:
            return False
        question = asked.plan.question
        if question is not None and parsed.name in question.candidates:  # else not a value rigops made
            await self._take_answer(asked, str(parsed.name), user=press.user)
        return True

    async def _take_answer(self, asked: PendingPlan, answer: str, *, user: str) -> None:
        store, config = self.services.store, self.services.config
        conv = Conversation(self.reply, asked.channel, asked.thread_id)
        question = asked.plan.question
        assert question is not None
        if time.time() - asked.created_at > self.services.policy.confirm_timeout():
            if store.claim_plan(asked.id, "expired", waiting="asking") is not None and asked.message_id:
                await conv.update(asked.message_id, messages.QUESTION_EXPIRED)
            return
        if store.claim_plan(asked.id, "done", waiting="asking") is None:
            return  # answered twice at once: the first answer counts
        if asked.message_id:
            await conv.update(asked.message_id, messages.answered(question.kind, answer, user))
        context = store.thread_context(asked.channel, asked.thread_id)
        if question.kind == "host":
            plan = intents.retarget(asked.plan, host=answer, build=question.build, config=config, context=context)
        else:
            assert asked.plan.host is not None
            plan = intents.retarget(asked.plan, host=asked.plan.host, build=answer, config=config, context=context)
        await self.carry_on(conv, await self.complete(plan), user=user, request_id=asked.request_id)


def _joined(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None
