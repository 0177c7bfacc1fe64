"""A core Message as Block Kit, within Slack's limits: blocks per message, characters per header and section, and
the text of a message's blocks together. The core keeps its messages within these (bot/core/talk.py); cutting here
is the last resort that keeps Slack from refusing a message whole. rigops' markup (bot/text/markup.py) becomes
mrkdwn here: its text escaped (``&lt;`` for a log's ``<``), plain text in headers; lengths are the escaped ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.text.markup import fit_mrkdwn, to_mrkdwn, to_plain
from bot.text.message import Choice, Message

MESSAGE_BLOCKS = 50  # Slack's limits: blocks in a message, in a Home tab, characters in a section, a header
HOME_BLOCKS = 100
SECTION_TEXT = 3000
HEADER_TEXT = 150
BLOCKS_TEXT = 11_500  # Slack refuses a message whose blocks hold more (msg_blocks_too_long; about 12,000)
MESSAGE_TEXT = 40_000  # Slack refuses a longer ``text`` (msg_too_long)
MORE_ROOM = 100  # characters kept for the "… and N more" line
ACTION_PREFIX = "rigops_"  # a choice's action_id is this and its kind: rigops_run, rigops_oom_pause, ...

Block = dict[str, Any]


def action_id(choice: Choice) -> str:
    return ACTION_PREFIX + choice.kind


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": fit_mrkdwn(text, SECTION_TEXT)}}


def context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": fit_mrkdwn(text, SECTION_TEXT)}]}


def header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": _clip(to_plain(text), HEADER_TEXT)}}


def button(choice: Choice) -> Block:
    out: Block = {"type": "button", "action_id": action_id(choice), "value": choice.value,
                  "text": {"type": "plain_text", "text": choice.label}}
    if choice.style:
        out["style"] = choice.style
    return out


def sections(texts: Sequence[str], *, room: int, more: str = "{n} more that do not fit in one message",
             chars: int | None = None) -> list[Block]:
    """A section per text within ``room`` blocks (and ``chars`` characters); the last one then says how many
    did not fit."""
    if _fitting(texts, room=room, chars=chars) == len(texts):
        return [section(t) for t in texts]
    keep = _fitting(texts, room=room - 1, chars=None if chars is None else chars - MORE_ROOM)
    return [*(section(t) for t in texts[:keep]), context("… and " + more.format(n=len(texts) - keep))]


def _fitting(texts: Sequence[str], *, room: int, chars: int | None) -> int:
    """How many of the first texts fit in ``room`` sections and ``chars`` characters."""
    used = 0
    for i, text in enumerate(texts[:room]):
        used += min(len(to_mrkdwn(text)), SECTION_TEXT)
        if chars is not None and used > chars:
            return i
    return min(len(texts), room)


def to_blocks(message: Message, *, limit: int = MESSAGE_BLOCKS) -> list[Block]:
    """The message's blocks: its title, its sections (or its text), its choices, its footnote."""
    head = [header(message.title)] if message.title else []
    tail: list[Block] = []
    if message.choices:
        actions: Block = {"type": "actions", "elements": [button(c) for c in message.choices]}
        if message.group:
            actions["block_id"] = message.group
        tail.append(actions)
    if message.footnote:
        tail.append(context(message.footnote))
    body = list(message.sections) or [message.text]
    room = limit - len(head) - len(tail)
    chars = BLOCKS_TEXT - len(message.title or "") - len(to_mrkdwn(message.footnote or "")) - sum(
        len(c.label) for c in message.choices)
    return [*head, *sections(body, room=room, chars=chars), *tail]


def message_text(text: str) -> str:
    """A message's ``text`` as mrkdwn within what Slack takes."""
    return fit_mrkdwn(text, MESSAGE_TEXT)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 20] + "\n… (cut)"
