"""What the bot means to do: a Plan of Steps from a fixed vocabulary.

A Plan is built from chat text by ``bot.language.intents`` and carries only config names and bounded integers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from bot.language.commands import command

Action = str  # a command's name from the table (bot.language.commands.step_names): an action's spec, or hosts or help

MIN_JOBS = 1
MAX_JOBS = 1024
DEFAULT_LOG_LINES = 40
MAX_LOG_LINES = 10_000


def half_jobs(jobs: int | None) -> int:
    """The parallelism of a retry "at half the jobs" (never below 1)."""
    return max(MIN_JOBS, (jobs or 2) // 2)


@dataclass(frozen=True)
class Step:
    action: Action
    jobs: int | None = None  # rebuild only; None = the configured default
    lines: int | None = None  # log only; None = DEFAULT_LOG_LINES
    clean: bool = False  # rebuild only: remove the build directory rigops keeps for the build first

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        params = command(self.action).params
        if "jobs" in params:
            out["jobs"] = self.jobs
        if "clean" in params and self.clean:
            out["clean"] = True
        if "lines" in params:
            out["lines"] = self.lines
        return out


@dataclass(frozen=True)
class Question:
    """What a request left open: which host, or which build on its host; ``candidates`` are the answers."""

    kind: Literal["host", "build"]
    candidates: tuple[str, ...]
    build: str | None = None  # the build the request named, when the question is only on which host


@dataclass(frozen=True)
class Plan:
    host: str | None = None
    build: str | None = None
    steps: tuple[Step, ...] = ()
    error: str | None = None
    warnings: tuple[str, ...] = field(default=())
    question: Question | None = None  # set with ``error`` when one answer would let the request go on
    guess: str | None = None  # where a host or build the request did not name came from

    @property
    def destructive(self) -> bool:
        return any(command(s.action).destructive for s in self.steps)

    def to_json(self, *, kept: bool = False) -> dict[str, Any]:
        """The plan as ``rigops explain --json`` prints it; ``kept``: also what the state keeps of it."""
        out: dict[str, Any] = {
            "host": self.host,
            "build": self.build,
            "steps": [s.to_json() for s in self.steps],
            "error": self.error,
        }
        if kept:
            out.update(warnings=list(self.warnings), guess=self.guess)
            if self.question is not None:
                out["question"] = {"kind": self.question.kind, "candidates": list(self.question.candidates),
                                   "build": self.question.build}
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        steps = tuple(
            Step(action=s["action"], jobs=s.get("jobs"), lines=s.get("lines"), clean=s.get("clean") is True)
            for s in data.get("steps", [])
        )
        asked = data.get("question")
        question = Question(kind=asked["kind"], candidates=tuple(asked["candidates"]),
                            build=asked.get("build")) if asked else None
        return cls(host=data.get("host"), build=data.get("build"), steps=steps, error=data.get("error"),
                   warnings=tuple(data.get("warnings") or ()), guess=data.get("guess"), question=question)


@dataclass(frozen=True)
class ThreadContext:
    """What a Slack thread remembers: the host and build it was last about, and the -j of the newest build of
    theirs started from the thread ("halve the jobs" halves that)."""

    host: str | None = None
    build: str | None = None
    jobs: int | None = None
