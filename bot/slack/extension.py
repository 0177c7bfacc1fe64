"""How a feature plugs into the bot: its own `/rigops` subcommands, its own listeners, a start and a stop.

The core listeners route `/rigops <word> ...` to the extension that owns <word> before parsing a Plan.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from bot.slack.thread import Thread


@dataclass(frozen=True)
class CommandContext:
    """A `/rigops` subcommand as an extension receives it; ``thread`` posts in the command's channel."""

    user: str
    channel: str
    args: str  # the text after the subcommand word
    thread: Thread


Subcommand = Callable[[CommandContext], Awaitable[None]]


class Extension(Protocol):
    @property
    def subcommands(self) -> Mapping[str, Subcommand]: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...
