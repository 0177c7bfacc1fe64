"""The action registry: every action on hosts is one module in ``bot/actions/`` exporting ``SPEC``, an ActionSpec
— its command row (words, usage, help, role, destructive, step line, step parameters), ``run(ctx, step)``, and how
its result reads (the reply, the status line's summary, a host's row when it answers for many hosts).

Everything that switches on actions is built from here: the command table (``bot.language.commands``),
``run_step``, what the core posts of a result (``bot.core.execute``), the fleet's rows and columns
(``bot.text.render``). The modules are imported on first use, so that the language layer can read the table
without importing hosts at its own import (an action's module imports those).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, TypeVar

from bot.actions import ActionContext
from bot.language.commands import Command
from bot.language.plan import Step

MODULES = ("status", "mem", "gpu", "disk", "kill", "rebuild", "log", "chart")  # in help's order
R = TypeVar("R")


@dataclass(frozen=True)
class File:
    """A file posted with a result (a long log, a chart)."""

    content: bytes | str
    filename: str
    title: str


@dataclass(frozen=True)
class Reading:
    """How a step's result reads: a message of its own in the thread, files, and the one line the plan's status
    message shows beside the step."""

    text: str | None = None
    files: tuple[File, ...] = ()
    summary: str = ""


def _done(result: object) -> str:
    return "done"


def _no_troubles(result: object) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class ActionSpec(Generic[R]):
    """One action: its command row, what it does on a host and how its result reads."""

    command: Command
    run: Callable[[ActionContext, Step], Awaitable[R]]
    reads: Callable[[R], Reading]
    row: Callable[[R], str] = _done  # a host's row (after its name) when the step runs on many hosts
    troubles: Callable[[R], tuple[str, ...]] = _no_troubles  # what puts that row first (bot.text.render)
    columns: str | None = None  # the line naming the rows' columns, where they have columns

    @property
    def name(self) -> str:
        return self.command.name


@cache
def specs() -> tuple[ActionSpec[Any], ...]:
    """Every action's spec, in help's order."""
    found = tuple(importlib.import_module(f"{__package__}.{name}").SPEC for name in MODULES)
    assert all(isinstance(s, ActionSpec) for s in found)
    return found


@cache
def _by_name() -> dict[str, ActionSpec[Any]]:
    return {s.name: s for s in specs()}


def spec(action: str) -> ActionSpec[Any] | None:
    """The spec of an action run on hosts; None for a command the core answers itself (hosts, help)."""
    return _by_name().get(action)


async def run_step(ctx: ActionContext, step: Step) -> object:
    """Run one step on the context's target. Raises RigopsError subclasses for expected failures."""
    found = spec(step.action)
    if found is None:
        raise ValueError(f"{step.action} is not a host action")
    return await found.run(ctx, step)


def reading(step: Step, result: object) -> Reading:
    """How the result of ``step`` reads."""
    found = spec(step.action)
    assert found is not None, f"{step.action} has no result"
    return found.reads(result)
