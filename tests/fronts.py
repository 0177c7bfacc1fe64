"""The core's contract, as a person meets it, on either front end: through Slack (the real slack-bolt stack against
the Slack emulator) or in memory (``bot.frontends.memory``). A test written against :class:`Front` runs on both:
what the core says and does must not depend on which front end carries it; what only Slack does (payload shapes,
refusals, retries, rate limits) stays in the tests that drive the emulator directly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

from bot.config import Config
from bot.core.app import Core
from bot.frontends.memory import MemoryChat, MemoryReply, first_with
from bot.frontends.slack.blocks import ACTION_PREFIX
from bot.text.message import ChoiceKind
from slackemu import SlackEmulator, text_of
from tests.harness import HUMAN, OPS, running_bot
from tests.scenario import has_buttons

FRONTS = ("slack", "memory")
DONE_MARKS = frozenset({"white_check_mark", "x"})


class Front(Protocol):
    core: Core

    async def say(self, text: str, *, user: str = HUMAN, channel: str = OPS, thread: str | None = None,
                  addressed: bool = False) -> str:
        """A person's message; returns its id once the core has dealt with it."""
        ...

    def replies(self, thread: str, *, channel: str = OPS) -> list[str]:
        """rigops' messages in a thread, as they read now."""
        ...

    async def wait_choice(self, thread: str, kind: ChoiceKind, *, channel: str = OPS) -> str:
        """The id of the first message in the thread that offers a ``kind`` choice."""
        ...

    async def press(self, message: str, kind: ChoiceKind, *, user: str = HUMAN, channel: str = OPS,
                    value: str | None = None) -> None: ...

    async def wait_done(self, request: str, *, channel: str = OPS, timeout: float = 60) -> str:
        """rigops' last mark on a request: ✓ (``white_check_mark``) or ✗ (``x``)."""
        ...

    async def wait_text(self, thread: str, part: str, *, channel: str = OPS, timeout: float = 30) -> str:
        """The thread's text once it holds ``part``."""
        ...


class SlackFront:
    def __init__(self, emu: SlackEmulator, core: Core) -> None:
        self.emu, self.core = emu, core

    async def say(self, text: str, *, user: str = HUMAN, channel: str = OPS, thread: str | None = None,
                  addressed: bool = False) -> str:
        before = self.core.activity.finished
        if addressed:
            event = await self.emu.send_mention(text, channel=channel, user=user, thread_ts=thread)
            await self.core.activity.wait_finished(before + 2)  # Slack sends app_mention and message
        else:
            event = await self.emu.send_message(text, channel=channel, user=user, thread_ts=thread)
            await self.core.activity.wait_finished(before + 1)
        return str(event["ts"])

    def replies(self, thread: str, *, channel: str = OPS) -> list[str]:
        return [text_of(m) for m in self.emu.thread(channel, thread)]

    async def wait_choice(self, thread: str, kind: ChoiceKind, *, channel: str = OPS) -> str:
        action = ACTION_PREFIX + kind

        def find() -> str | None:
            return next((m.ts for m in self.emu.thread(channel, thread)
                         if has_buttons(m) and action in str(m.blocks)), None)

        found: str = await self.emu.wait_for(find, timeout=30)
        return found

    async def press(self, message: str, kind: ChoiceKind, *, user: str = HUMAN, channel: str = OPS,
                    value: str | None = None) -> None:
        await self.emu.click(message, ACTION_PREFIX + kind, channel=channel, user=user, value=value)

    async def wait_done(self, request: str, *, channel: str = OPS, timeout: float = 60) -> str:
        def reacted() -> str | None:
            return next(iter(self.emu.reactions(channel, request) & DONE_MARKS), None)

        mark: str = await self.emu.wait_for(reacted, timeout=timeout)
        return mark

    async def wait_text(self, thread: str, part: str, *, channel: str = OPS, timeout: float = 30) -> str:
        def holds() -> str | None:
            text = "\n".join(self.replies(thread, channel=channel))
            return text if part in text else None

        found: str = await self.emu.wait_for(holds, timeout=timeout)
        return found


class MemoryFront:
    def __init__(self, core: Core, reply: MemoryReply) -> None:
        self.core, self.reply = core, reply
        self.chat = MemoryChat(core, reply)

    async def say(self, text: str, *, user: str = HUMAN, channel: str = OPS, thread: str | None = None,
                  addressed: bool = False) -> str:
        return await self.chat.say(text, channel=channel, user=user, thread=thread, addressed=addressed)

    def replies(self, thread: str, *, channel: str = OPS) -> list[str]:
        return [s.text for s in self.reply.thread(channel, thread)]

    async def wait_choice(self, thread: str, kind: ChoiceKind, *, channel: str = OPS) -> str:
        found = await self.reply.wait_for(lambda: first_with(self.reply.thread(channel, thread), kind))
        return found.id

    async def press(self, message: str, kind: ChoiceKind, *, user: str = HUMAN, channel: str = OPS,
                    value: str | None = None) -> None:
        await self.chat.press(message, kind, user=user, value=value)

    async def wait_done(self, request: str, *, channel: str = OPS, timeout: float = 60) -> str:
        def reacted() -> str | None:
            return next(iter(self.reply.reactions.get(request, set()) & DONE_MARKS), None)

        return await self.reply.wait_for(reacted, timeout=timeout)

    async def wait_text(self, thread: str, part: str, *, channel: str = OPS, timeout: float = 30) -> str:
        def holds() -> str | None:
            text = "\n".join(self.replies(thread, channel=channel))
            return text if part in text else None

        return await self.reply.wait_for(holds, timeout=timeout)


@asynccontextmanager
async def running_front(kind: str, config: Config, state_dir: Path) -> AsyncIterator[Front]:
    """The whole core behind one front end, following builds quickly (as ``tests.harness.running_app``)."""
    if kind == "slack":
        async with SlackEmulator() as emu, running_bot(emu, config, state_dir) as core:
            yield SlackFront(emu, core)
        assert not emu.unescaped, f"mrkdwn with &, < or > unescaped: {emu.unescaped}"
        return
    reply = MemoryReply()
    core = Core.open(config, state_dir, reply, poll=0.2, card_interval=0.5, sample_interval=0.2)
    await core.start()
    try:
        yield MemoryFront(core, reply)
    finally:
        await core.close()
        await asyncio.sleep(0)
