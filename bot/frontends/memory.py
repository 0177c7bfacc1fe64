"""An in-memory front end: the core's :class:`~bot.core.talk.Reply` kept in lists, and people who say, type and
press through :class:`MemoryChat` — the whole protocol between the core and a front end, with nothing of Slack.

The core's contract tests run on it (as on errbot's test backend) besides running through bolt and the Slack
emulator, which stays for what only Slack does (its payloads, refusals, retries and rate limits). It keeps every
message rigops posted, with its edits, its reactions and its choices; what only one person was told; the files.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from bot.core.app import Core
from bot.core.requests import Said, SlashCommand
from bot.core.talk import Place, Pressed
from bot.text.message import ChoiceKind, Message

T = TypeVar("T")
DM_PREFIX = "D0MEM"  # the channel of a conversation with one person: D0MEM<user>


@dataclass
class Shown:
    """A message rigops posted: where, as it reads now (``message``), and what it read before each edit."""

    id: str
    place: Place
    message: Message
    earlier: list[Message] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.message.text


@dataclass(frozen=True)
class Told:
    """What only ``user`` was told (Slack's ephemeral message), in ``place``."""

    place: Place
    user: str
    text: str


@dataclass(frozen=True)
class Attached:
    place: Place
    filename: str
    title: str
    content: str | bytes


class MemoryReply:
    """The core's Reply, in memory. ``member_of``: the channels rigops may post in (None: every one)."""

    def __init__(self, *, member_of: Iterable[str] | None = None, channels: dict[str, str] | None = None) -> None:
        self.member_of = set(member_of) if member_of is not None else None
        self.channels = dict(channels or {})  # name -> id, for find_channel
        self.shown: dict[str, Shown] = {}  # by id, in the order posted
        self.told: list[Told] = []
        self.files: list[Attached] = []
        self.reactions: dict[str, set[str]] = {}  # message id (rigops' or a person's) -> emoji names
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()

    async def post(self, place: Place, message: Message) -> str | None:
        if not await self.can_post(place.channel):
            return None
        message_id = f"{next(self._ids)}.000100"
        self.shown[message_id] = Shown(message_id, place, message)
        await self._notify()
        return message_id

    async def update(self, place: Place, message_id: str, message: Message) -> bool:
        shown = self.shown.get(message_id)
        if shown is None or shown.place.channel != place.channel:
            return False
        shown.earlier.append(shown.message)
        shown.message = message
        await self._notify()
        return True

    async def react(self, place: Place, message_id: str, name: str) -> None:
        self.reactions.setdefault(message_id, set()).add(name)
        await self._notify()

    async def upload(self, place: Place, content: str | bytes, *, filename: str, title: str) -> None:
        self.files.append(Attached(place, filename, title, content))
        await self._notify()

    async def private(self, place: Place, user: str, text: str) -> None:
        self.told.append(Told(place, user, text))
        await self._notify()

    async def can_post(self, channel: str) -> bool:
        return self.member_of is None or channel in self.member_of or channel.startswith(DM_PREFIX)

    async def direct(self, user: str) -> str | None:
        return DM_PREFIX + user

    async def find_channel(self, name: str) -> str | None:
        return self.channels.get(name)

    # -- what a test reads ------------------------------------------------------------------------------
    def thread(self, channel: str, thread: str) -> list[Shown]:
        """rigops' messages in one thread (those that started it included), oldest first."""
        return [s for s in self.shown.values()
                if s.place.channel == channel and thread in (s.place.thread, s.id)]

    async def wait_for(self, found: Callable[[], T | None], *, timeout: float = 30.0) -> T:
        """What ``found`` returns once it returns something (it is asked again after every change)."""
        async with asyncio.timeout(timeout), self._changed:
            while (value := found()) is None:
                await self._changed.wait()
            return value

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()


class MemoryChat:
    """People in the channels of a :class:`MemoryReply`, talking to a running core."""

    def __init__(self, core: Core, reply: MemoryReply) -> None:
        self.core, self.reply = core, reply
        self._ids = itertools.count(1)

    async def say(self, text: str, *, channel: str, user: str, thread: str | None = None,
                  addressed: bool = False) -> str:
        """A person's message; returns its id once the core has dealt with it (replied, or stayed silent)."""
        message_id = f"{next(self._ids)}.000200"
        async with self.core.activity.track():
            await self.core.said(Said(text=text, user=user, channel=channel, message_id=message_id, thread_id=thread,
                                      addressed=addressed))
        return message_id

    async def command(self, text: str, *, channel: str, user: str) -> None:
        """``/rigops <text>``."""
        await self.core.command(SlashCommand(text=text, user=user, channel=channel, key=None))

    async def press(self, message_id: str, kind: ChoiceKind, *, user: str, value: str | None = None) -> None:
        """Press the ``kind`` choice under a message rigops posted (``value``: one it did not offer)."""
        shown = self.reply.shown[message_id]
        choice = next((c for c in shown.message.choices if c.kind == kind), None)
        if value is None:
            if choice is None:
                raise LookupError(f"no {kind} choice under message {message_id}: {choices(shown.message)}")
            value = choice.value
        await self.core.pressed(Pressed(kind=kind, value=value, user=user, place=shown.place, message=message_id))


def choices(message: Message) -> list[str]:
    return [f"{c.kind}:{c.label}" for c in message.choices]


def first_with(choices_of: Iterable[Shown], kind: ChoiceKind) -> Shown | None:
    """The first message offering a ``kind`` choice."""
    return next((s for s in choices_of if any(c.kind == kind for c in s.message.choices)), None)

