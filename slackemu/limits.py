"""What Slack refuses in a message or a view, as the error code it answers with.

Block Kit is checked with slack_sdk's own models (``Block.parse(...).validate_json()`` on the block and on
every element and text object in it, ``View``), plus what they let through and Slack does not: an empty text.
Sizes are Slack's: 50 blocks in a message, 100 in a view, 40,000 characters of ``text``, and about 12,000
characters of text in a message's blocks together (``msg_blocks_too_long``: undocumented, reported at
12,000-13,300 in bolt-js issues #2509 and #2867).

:data:`TALLY` counts, for the whole process, the payloads checked and each refusal (the emulator counts those,
the test suite prints them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models import JsonObject
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

MESSAGE_BLOCKS = 50
VIEW_BLOCKS = 100
MESSAGE_TEXT = 40_000
BLOCKS_TEXT = 12_000

TALLY: Counter[str] = Counter()  # "checked", "with blocks", and one key per error code answered


def message_refusal(text: str, blocks: Any) -> str | None:
    """Slack's error for a message with this ``text`` and these ``blocks`` (parsed JSON), or None."""
    _count(blocks)
    return _message_error(text, blocks)


def view_refusal(view: Any) -> str | None:
    """Slack's error for a view (views.publish, views.open), or None."""
    _count(view)
    return _view_error(view)


def block_text(blocks: Any) -> int:
    """Characters of text in the blocks, every ``text`` of every element counted."""
    return sum(len(t) for t in _texts(blocks))


def _message_error(text: str, blocks: Any) -> str | None:
    if len(text) > MESSAGE_TEXT:
        return "msg_too_long"
    if blocks is None or blocks == []:
        return None
    if not isinstance(blocks, list):
        return "invalid_blocks_format"
    if len(blocks) > MESSAGE_BLOCKS:
        return "too_many_blocks"
    if not all(_valid_block(b) for b in blocks):
        return "invalid_blocks"
    return "msg_blocks_too_long" if block_text(blocks) > BLOCKS_TEXT else None


def _view_error(view: Any) -> str | None:
    if not isinstance(view, dict) or not isinstance(view.get("blocks", []), list):
        return "invalid_arguments"
    blocks = view.get("blocks", [])
    if len(blocks) > VIEW_BLOCKS:
        return "too_many_blocks"
    if not all(_valid_block(b) for b in blocks):
        return "invalid_blocks"
    try:
        View(**view).validate_json()
    except (SlackObjectFormationError, TypeError, ValueError, KeyError, AttributeError):
        return "invalid_arguments"
    return None


def _valid_block(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    try:
        parsed = Block.parse(block)
        if parsed is None:  # a type slack_sdk does not know
            return False
        _validate(parsed)
    except (SlackObjectFormationError, TypeError, ValueError, KeyError, AttributeError):
        return False
    return not any(t == "" for t in _texts(block))  # "must be more than 0 characters"


def _validate(value: Any) -> None:
    """validate_json() on an object and on every object in it (slack_sdk checks one level only)."""
    if isinstance(value, JsonObject):
        value.validate_json()
        for name in value.attributes:
            _validate(getattr(value, name, None))
    elif isinstance(value, (list, tuple)):
        for item in value:
            _validate(item)


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "text" and isinstance(item, str):
                yield item
            else:
                yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def _count(payload: Any) -> None:
    TALLY["checked"] += 1
    if payload:
        TALLY["with blocks"] += 1
