r"""What rigops says, as the core hands it to a front end: a :class:`Message` (text, and the :class:`Choice`\s a
person can press under it) and how much one may hold. The core writes them (through ``bot/text/``), a front end
lays them out (``bot/core/talk.py`` is the protocol between the two)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.util.redact import redact

# What one Message may hold, laid out, so that every front end shows it whole: Slack refuses a message whose blocks
# hold more than about 12,000 characters of text together, or more than 50 blocks (a section is one).
MESSAGE_TEXT = 10_000
MESSAGE_SECTIONS = 40

ChoiceKind = Literal["run", "cancel", "pick", "retry", "retry_half", "show_log", "oom_restart", "oom_pause",
                     "oom_ignore", "oom_resume"]
CHOICE_KINDS: tuple[ChoiceKind, ...] = ("run", "cancel", "pick", "retry", "retry_half", "show_log", "oom_restart",
                                        "oom_pause", "oom_ignore", "oom_resume")

@dataclass(frozen=True)
class Choice:
    """A button: what it says, what pressing it means (``kind``), and what it is about (``value``, e.g. a plan
    or run id). ``style`` marks the expected ("primary") or the dangerous ("danger") choice."""

    label: str
    kind: ChoiceKind
    value: str
    style: Literal["primary", "danger"] | None = None


@dataclass(frozen=True)
class Message:
    """Something rigops says. ``text`` is the whole message in Slack's mrkdwn (the fallback every front end can
    show); ``title``, ``sections`` and ``footnote`` let a front end lay out a long one (a digest); ``choices``
    are the buttons under it; ``group`` names the choices as a set (e.g. "plan-12")."""

    text: str
    choices: tuple[Choice, ...] = ()
    title: str | None = None
    sections: tuple[str, ...] = ()
    footnote: str | None = None
    group: str | None = None

    @property
    def plain(self) -> bool:
        """Just text: nothing for a front end to lay out."""
        return not (self.choices or self.title or self.sections or self.footnote)

    @property
    def size(self) -> int:
        """The characters a front end lays out: title, sections (else the text), footnote and choices."""
        body = sum(map(len, self.sections)) if self.sections else len(self.text)
        return len(self.title or "") + body + len(self.footnote or "") + sum(len(c.label) for c in self.choices)

    @property
    def fits(self) -> bool:
        """Within what one message may hold (MESSAGE_TEXT, MESSAGE_SECTIONS)."""
        return self.size <= MESSAGE_TEXT and len(self.sections) <= MESSAGE_SECTIONS

    def redacted(self) -> Message:
        return Message(text=redact(self.text), choices=self.choices,
                       title=redact(self.title) if self.title is not None else None,
                       sections=tuple(redact(s) for s in self.sections),
                       footnote=redact(self.footnote) if self.footnote is not None else None, group=self.group)
