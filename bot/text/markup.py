"""rigops' own markup: what the core and ``bot/text/`` write in a :class:`~bot.text.message.Message`, and how a
front end shows it.

The spans: ``*bold*``, ``_italic_``, ``~struck~``, ```code```, a code block between three backticks, ``:emoji:``,
``<@U…>`` a person, ``<#C…>`` or ``<#C…|name>`` a channel, ``<https://…|label>`` or ``<https://…>`` a link. The
syntax is the part of Slack's mrkdwn that rigops uses, so that a message reads the same in both; but everything
outside those spans is text, taken literally — a build log's ``#include <cuda.h>``, ``a && b``, a user's
``<!channel>`` — and a front end must show it as it is: Slack as ``&lt;``, ``&gt;``, ``&amp;`` (its formatting
would otherwise take it for a link, a mention or an entity, and ``<!channel>`` would notify everyone),
a terminal as plain text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# rigops' own tokens between angle brackets: a person, a channel, a web link (nothing else: "<!here>" from chat is text)
TOKEN_RE = re.compile(r"<(?:@[UW][A-Z0-9]{2,20}|#[CG][A-Z0-9]{2,20}(?:\|[^<>|\n]{1,80})?"
                      r"|https?://[^\s<>|]{1,2000}(?:\|[^<>\n]{1,300})?)>")
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_CODE_RE = re.compile(r"```.*?```|`[^`\n]+`", re.S)
_STYLE_RE = re.compile(r"(?<![\w*_~])([*_~])(?=\S)([^\n]*?\S)\1(?![\w*_~])")
_ANSI = {"*": ("\x1b[1m", "\x1b[22m"), "_": ("\x1b[3m", "\x1b[23m"), "~": ("\x1b[9m", "\x1b[29m")}


def to_mrkdwn(text: str) -> str:
    """The text as Slack's mrkdwn: rigops' tokens kept, every other ``&``, ``<`` and ``>`` escaped."""
    out, at = [], 0
    for m in TOKEN_RE.finditer(text):
        out.append(_escape(text[at:m.start()]))
        out.append(m.group(0))
        at = m.end()
    out.append(_escape(text[at:]))
    return "".join(out)


def fit_mrkdwn(text: str, limit: int, *, cut: str = "\n… (cut)") -> str:
    """``to_mrkdwn(text)`` within ``limit`` characters, cut (with ``cut`` said) where it is longer: never inside
    an escape or a token."""
    shown = to_mrkdwn(text)
    if len(shown) <= limit:
        return shown
    lo, hi = 0, len(text)  # the longest start of the text that fits with the cut said
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(to_mrkdwn(text[:mid] + cut)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return to_mrkdwn(text[:lo] + cut)


def _escape(text: str) -> str:
    return "".join(_ESCAPES.get(c, c) for c in text) if any(c in text for c in "&<>") else text


def to_plain(text: str, *, emoji: Mapping[str, str] | None = None, color: bool = False,
             channels: Mapping[str, str] | None = None) -> str:
    """The text for a terminal or a plain-text field: people as ``@U…``, channels as ``#name`` (the link's label,
    else ``channels``' name for the id, else ``#C…``),
    links as ``label (url)``, styles dropped (or, with ``color``, as ANSI bold, italic, struck), code and code
    blocks kept as written, ``:emoji:`` by ``emoji``'s glyphs where it has one."""
    out, at = [], 0
    for m in _CODE_RE.finditer(text):
        out.append(_plain_prose(text[at:m.start()], emoji or {}, color, channels or {}))
        out.append(m.group(0))  # as written, fences too: a block's lines stay lines of their own
        at = m.end()
    out.append(_plain_prose(text[at:], emoji or {}, color, channels or {}))
    return "".join(out)


def _plain_prose(text: str, emoji: Mapping[str, str], color: bool, channels: Mapping[str, str]) -> str:
    text = TOKEN_RE.sub(lambda m: _plain_token(m, channels), text)
    text = _STYLE_RE.sub(lambda m: (_ANSI[m.group(1)][0] + m.group(2) + _ANSI[m.group(1)][1]) if color
                         else m.group(2), text)
    for code, glyph in emoji.items():
        text = text.replace(code, glyph)
    return text


def _plain_token(m: re.Match[str], channels: Mapping[str, str]) -> str:
    inner = m.group(0)[1:-1]
    target, _, label = inner.partition("|")
    if target.startswith("@"):
        return target
    if target.startswith("#"):
        return f"#{label or channels.get(target[1:], target[1:])}"
    return f"{label} ({target})" if label and label != target else target
