"""How the core talks to people: one small protocol that each front end (Slack, the console) implements.

The core says things as :class:`Message` values (text, and choices a person can press) in a :class:`Place`
(a channel and, once there is one, a thread). A front end turns them into its own shape: Block Kit for Slack,
lines on a terminal for the console. Presses come back to the core as :class:`Pressed`.

    post      a message in a place; a place without a thread gets one from its first post
    update    edit a message posted before (its buttons may give way to what was done)
    react     an emoji reaction on a person's message (:eyes:, ✓, ✗)
    upload    a file (a long log, a memory chart)
    private   an answer only one person sees (Slack's ephemeral message), also where rigops cannot post
    can_post  whether rigops may post in a channel (Slack: it was invited there)
    direct    the place to talk with one person alone (Slack: a DM), where a request that needs a thread goes
              when rigops cannot post where it was asked
    find_channel  the channel people call #name (Slack: a name typed as plain text, not picked from its list)

Every text passes :func:`bot.util.redact.redact` here, in :class:`Conversation`, whatever the front end.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bot.language.plan import MAX_JOBS, MIN_JOBS
from bot.text import messages
from bot.text.message import ChoiceKind, Message
from bot.util.redact import redact

log = logging.getLogger(__name__)
# What a choice's value holds after its id (a plan's, a question's or a run's): a name the question offered, a -j,
# or nothing. Values come back from the front end, and a front end's values are input like any other (a forged
# click carries what its sender likes): parse_value reads them strictly.
VALUE_TAILS: dict[ChoiceKind, Literal["name", "jobs", "optional jobs", "none"]] = {
    "run": "none", "cancel": "none", "pick": "name", "retry": "none", "retry_half": "optional jobs",
    "show_log": "none", "oom_restart": "jobs", "oom_pause": "none", "oom_ignore": "none", "oom_resume": "none"}
_ID_RE = re.compile(r"[1-9][0-9]{0,17}", re.ASCII)  # ASCII digits, inside a 64-bit integer
_JOBS_RE = re.compile(r"[1-9][0-9]{0,3}", re.ASCII)
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", re.ASCII)  # a config name (bot.config.NAME_RE)
MAX_VALUE = 100  # characters; rigops's own values are far shorter


@dataclass(frozen=True)
class ChoiceValue:
    """A choice's value read: the id it is about, and the name or -j it carries."""

    ref: int
    name: str | None = None
    jobs: int | None = None


def parse_value(kind: str, value: object) -> ChoiceValue | None:
    """The value of a ``kind`` choice, or None when it is not one rigops could have made."""
    tail = VALUE_TAILS.get(kind)  # type: ignore[call-overload]
    if tail is None or not isinstance(value, str) or len(value) > MAX_VALUE:
        return None
    ref, sep, rest = value.partition(":")
    if not _ID_RE.fullmatch(ref):
        return None
    if tail == "none" or (tail == "optional jobs" and not sep):
        return ChoiceValue(int(ref)) if not sep else None
    if tail == "name":
        return ChoiceValue(int(ref), name=rest) if _NAME_RE.fullmatch(rest) else None
    if not _JOBS_RE.fullmatch(rest) or not MIN_JOBS <= int(rest) <= MAX_JOBS:
        return None
    return ChoiceValue(int(ref), jobs=int(rest))


@dataclass(frozen=True)
class Place:
    """Where a conversation happens: a channel, and the thread in it (None until the first post starts one).
    ``private_route`` is how the front end reaches the person who asked even where rigops cannot post (Slack: a
    slash command's response_url)."""

    channel: str
    thread: str | None = None
    private_route: str | None = None


@dataclass(frozen=True)
class Pressed:
    """A person pressed a choice under a message rigops posted at ``message`` in ``place``."""

    kind: ChoiceKind
    value: str
    user: str
    place: Place
    message: str | None = None

    @property
    def parsed(self) -> ChoiceValue | None:
        """The value read strictly (:func:`parse_value`); None when rigops could not have made it."""
        return parse_value(self.kind, self.value)

    def to_json(self) -> dict[str, Any]:
        """As JSON, to hand to another rigops (the one following the run the press is about)."""
        return {"kind": self.kind, "value": self.value, "user": self.user, "message": self.message,
                "place": {"channel": self.place.channel, "thread": self.place.thread,
                          "private_route": self.place.private_route}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Pressed:
        place = data["place"]
        return cls(kind=data["kind"], value=str(data["value"]), user=str(data["user"]), message=data["message"],
                   place=Place(str(place["channel"]), place["thread"], place["private_route"]))


class Reply(Protocol):
    """A front end's side of the conversation. Failures of the front end (Slack refused a post) are logged and
    answered with None/False, never raised: the core goes on with what it was doing."""

    async def post(self, place: Place, message: Message) -> str | None:
        """Post; return the new message's id (the front end's own: Slack's ts), or None when it could not be posted."""
        ...

    async def update(self, place: Place, message_id: str, message: Message) -> bool: ...

    async def react(self, place: Place, message_id: str, name: str) -> None: ...

    async def upload(self, place: Place, content: str | bytes, *, filename: str, title: str) -> None: ...

    async def private(self, place: Place, user: str, text: str) -> None: ...

    async def can_post(self, channel: str) -> bool: ...

    async def direct(self, user: str) -> str | None:
        """The channel of a conversation with ``user`` alone, or None when there is none to be had."""
        ...

    async def find_channel(self, name: str) -> str | None:
        """The channel called ``name`` (without the #) among those rigops can see, or None."""
        ...


class Conversation:
    """One place the core answers in, through a front end's :class:`Reply`. The first post in a place without a
    thread starts the thread (a slash command's answer); later posts go into it. Every text is redacted here.

    A conversation ``private_to`` a person (rigops may not post in the channel) says everything privately to
    them: posts have no id to edit or thread under, and files become a line saying where to get them."""

    def __init__(self, reply: Reply, channel: str, thread: str | None, *, private_route: str | None = None,
                 private_to: str | None = None) -> None:
        self.reply = reply
        self.channel = channel
        self.thread = thread
        self.private_route = private_route
        self.private_to = private_to
        self.lost = 0  # posts the front end could not deliver (Slack refused them, even after its retries)

    @property
    def place(self) -> Place:
        return Place(self.channel, self.thread, self.private_route)

    async def post(self, message: Message | str) -> str | None:
        message = _message(message)
        if self.private_to is not None:
            await self.reply.private(self.place, self.private_to, message.redacted().text)
            return None
        message_id = await self.reply.post(self.place, message.redacted())
        if message_id is None:
            self.lost += 1
        elif self.thread is None:
            self.thread = message_id
        return message_id

    async def update(self, message_id: str, message: Message | str) -> bool:
        return await self.reply.update(self.place, message_id, _message(message).redacted())

    async def react(self, message_id: str | None, name: str) -> None:
        if message_id is not None and self.private_to is None:
            await self.reply.react(self.place, message_id, name)

    async def upload(self, content: str | bytes, *, filename: str, title: str) -> None:
        """Attach a file: text is redacted first; bytes (a chart) hold no text to redact."""
        if self.private_to is not None:
            await self.private(self.private_to, messages.no_files_here(filename))
            return
        await self.reply.upload(self.place, redact(content) if isinstance(content, str) else content,
                                filename=filename, title=title)

    async def private(self, user: str, text: str) -> None:
        await self.reply.private(self.place, user, redact(text))

    async def can_post(self) -> bool:
        return await self.reply.can_post(self.channel)

    def elsewhere(self, channel: str) -> Conversation:
        """A new conversation in another channel, through the same front end (the audit channel)."""
        return Conversation(self.reply, channel, None)


def _message(message: Message | str) -> Message:
    return Message(text=message) if isinstance(message, str) else message
