"""``rigops console``: the core driven from a terminal, the second front end beside Slack.

Each input line is a message in one thread of a console channel (or ``/rigops ...``, a slash command); what the
core says comes back through :class:`ConsoleReply` and is printed. Choices are answered by typing: *yes* presses
Run, *no* presses Cancel (``--yes`` presses Run by itself).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TextIO

from bot.config import Config
from bot.core.app import Core
from bot.core.requests import Said, SlashCommand
from bot.core.talk import Place, Pressed
from bot.text.markup import to_plain
from bot.text.message import Message

CONSOLE_CHANNEL = "C0CONSOLE"
FILES_DIR = "files"  # under the state dir: what rigops attached (charts, long logs)
YES = frozenset({"y", "yes", "run", "go", "ok"})
NO = frozenset({"n", "no", "cancel", "stop"})
EMOJI = {":white_check_mark:": "✅", ":x:": "❌", ":hourglass_flowing_sand:": "⏳", ":white_small_square:": "▫️",
         ":heavy_minus_sign:": "➖", ":warning:": "⚠️", ":no_entry:": "⛔"}
ANSWER_HINT = "rigops: (say yes to run it, no to cancel)"
PICK_HINT = "rigops: (type one of them to answer)"
WELCOME = "rigops console — type a message as in the ops channel, or /rigops help. Ctrl-D quits."


def _plain(text: str, *, color: bool = False) -> str:
    """rigops' markup (bot/text/markup.py) on a terminal: people as @U…, styles in ANSI when ``color``."""
    return to_plain(text, emoji=EMOJI, color=color, channels={CONSOLE_CHANNEL: "console"})


def lines_of(message: Message, *, color: bool = False) -> list[str]:
    """A message as terminal lines: its title, its sections (or text), its choices as ``[Run] [Cancel]``, its
    footnote."""
    rows = [message.title] if message.title else []
    rows += (list(message.sections) or [message.text])
    if message.choices:
        rows.append(" ".join(f"[{c.label}]" for c in message.choices))
    if message.footnote:
        rows.append(message.footnote)
    return _plain("\n".join(rows), color=color).splitlines()


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


class ConsoleReply:
    """The core's Reply on a terminal. Remembers which messages wait for a choice."""

    def __init__(self, out: TextIO, *, files: Path) -> None:
        self.out = out
        self.files = files  # where attached files are saved
        self.color = _is_terminal(out) and "NO_COLOR" not in os.environ  # https://no-color.org
        self._ids = itertools.count(1)
        self.shown: dict[str, list[str]] = {}
        self.waiting: dict[str, Message] = {}  # message id -> a message with choices not yet answered

    def _print(self, prefix: str, lines: list[str]) -> None:
        if lines:
            print(prefix + ("\n" + " " * len(prefix)).join(lines), file=self.out, flush=True)

    async def post(self, place: Place, message: Message) -> str | None:
        message_id = f"{next(self._ids)}.000000"
        self.shown[message_id] = lines_of(message, color=self.color)
        self._print("rigops: ", self.shown[message_id])
        self._track(message_id, message)
        return message_id

    async def update(self, place: Place, message_id: str, message: Message) -> bool:
        self._track(message_id, message)
        lines, old = lines_of(message, color=self.color), self.shown.get(message_id, [])
        self.shown[message_id] = lines
        self._print("rigops (edit): ", [ln for ln in lines if ln not in old])
        return True

    async def react(self, place: Place, message_id: str, name: str) -> None:
        print(f"  [{name}]", file=self.out, flush=True)

    async def upload(self, place: Place, content: str | bytes, *, filename: str, title: str) -> None:
        """Saved under the state dir; the path is printed."""
        try:
            self.files.mkdir(parents=True, exist_ok=True)
            path = self.files / Path(filename).name
            path.write_bytes(content.encode() if isinstance(content, str) else content)
        except OSError as exc:
            print(f"rigops: (could not save {filename}: {exc.strerror})", file=self.out, flush=True)
            return
        print(f"rigops: {title}: saved to {path}", file=self.out, flush=True)

    async def private(self, place: Place, user: str, text: str) -> None:
        self._print("rigops (only you see this): ", _plain(text, color=self.color).splitlines())

    async def can_post(self, channel: str) -> bool:
        return True

    async def direct(self, user: str) -> str | None:
        return CONSOLE_CHANNEL

    async def find_channel(self, name: str) -> str | None:
        return None  # a terminal has no channels by name

    def _track(self, message_id: str, message: Message) -> None:
        if any(c.kind == "pick" for c in message.choices):
            print(PICK_HINT, file=self.out, flush=True)
        if any(c.kind in ("run", "cancel") for c in message.choices):
            self.waiting[message_id] = message
        else:
            self.waiting.pop(message_id, None)


async def _lines(prompt: bool) -> AsyncIterator[str]:
    while True:
        line = await asyncio.to_thread(_read_line, prompt)
        if line is None:
            return
        if line.strip():
            yield line.strip()


def _read_line(prompt: bool) -> str | None:
    try:
        return input("you> ") if prompt else (sys.stdin.readline() or None)
    except EOFError:
        return None


async def run_console(config: Config, state_dir: Path, *, yes: bool, user: str, out: TextIO = sys.stdout) -> int:
    """Chat until end of input; returns the exit status."""
    channels = (*config.slack.ops_channels, CONSOLE_CHANNEL)
    config = dataclasses.replace(config, slack=dataclasses.replace(config.slack, ops_channels=channels))
    interactive = sys.stdin.isatty()
    reply = ConsoleReply(out, files=state_dir / FILES_DIR)
    core = Core.open(config, state_dir, reply, console_admin=user)
    try:
        await core.start()
        if interactive:
            print(WELCOME, file=out, flush=True)
        session = Session(core, reply, user=user, yes=yes)
        async for line in _lines(interactive):
            await session.say(line)
    finally:
        await core.close()
    return 0


class Session:
    """One person at the terminal, in one thread."""

    def __init__(self, core: Core, reply: ConsoleReply, *, user: str, yes: bool) -> None:
        self.core, self.reply = core, reply
        self.user, self.yes = user, yes
        self.thread: str | None = None
        self._typed = itertools.count(1)

    async def say(self, line: str) -> None:
        word = line.lower().strip(" .!")
        if self.reply.waiting and (word in YES or word in NO):
            await self._press("run" if word in YES else "cancel")
        elif line.startswith("/rigops"):
            await self.core.command(SlashCommand(text=line.removeprefix("/rigops").strip(), user=self.user,
                                                 channel=CONSOLE_CHANNEL))
        else:
            message_id = f"{next(self._typed)}.500000"  # the person's own messages, apart from rigops' ids
            self.thread = self.thread or message_id
            await self.core.said(Said(text=line, user=self.user, channel=CONSOLE_CHANNEL, message_id=message_id,
                                      thread_id=None if self.thread == message_id else self.thread))
        await self._settle()

    async def _settle(self) -> None:
        while self.yes and self.reply.waiting:
            await self._press("run")
        if self.reply.waiting and not self.yes:
            print(ANSWER_HINT, file=self.reply.out, flush=True)

    async def _press(self, kind: str) -> None:
        message_id, message = self.reply.waiting.popitem()
        choice = next(c for c in message.choices if c.kind == kind)
        await self.core.pressed(Pressed(kind=choice.kind, value=choice.value, user=self.user,
                                        place=Place(CONSOLE_CHANNEL, self.thread), message=message_id))
