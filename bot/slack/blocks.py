"""A core Message as Block Kit, within Slack's limits (blocks per message, characters per header and section)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.core.talk import Choice, Message

MESSAGE_BLOCKS = 50  # Slack's limits: blocks in a message, in a Home tab, characters in a section, a header
HOME_BLOCKS = 100
SECTION_TEXT = 3000
HEADER_TEXT = 150
ACTION_PREFIX = "rigops_"  # a choice's action_id is this and its kind: rigops_run, rigops_oom_pause, ...

Block = dict[str, Any]


def action_id(choice: Choice) -> str:
    return ACTION_PREFIX + choice.kind


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, SECTION_TEXT)}}


def context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(text, SECTION_TEXT)}]}


def header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": _clip(text, HEADER_TEXT)}}


def button(choice: Choice) -> Block:
    out: Block = {"type": "button", "action_id": action_id(choice), "value": choice.value,
                  "text": {"type": "plain_text", "text": choice.label}}
    if choice.style:
        out["style"] = choice.style
    return out


def sections(texts: Sequence[str], *, room: int, more: str = "{n} more that do not fit in one message") -> list[Block]:
    """A section per text within ``room`` blocks; the last one then says how many did not fit."""
    if len(texts) <= room:
        return [section(t) for t in texts]
    left = len(texts) - (room - 1)
    return [*(section(t) for t in texts[: room - 1]), context("… and " + more.format(n=left))]


def to_blocks(message: Message, *, limit: int = MESSAGE_BLOCKS, more: str | None = None) -> list[Block]:
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
    return [*head, *(sections(body, room=room, more=more) if more else sections(body, room=room)), *tail]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 20] + "\n… (cut)"
