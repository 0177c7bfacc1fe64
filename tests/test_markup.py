"""rigops' markup (bot/text/markup.py) as each front end shows it: Slack's mrkdwn, escaped; plain text."""

from __future__ import annotations

import pytest

from bot.frontends.slack.blocks import SECTION_TEXT, message_text, section, to_blocks
from bot.text.markup import fit_mrkdwn, to_mrkdwn, to_plain
from bot.text.message import Message
from slackemu.payloads import read_mrkdwn, unescaped

OURS = "*b200* · `sgl-kernel` for <@U0HUMAN> in <#C0OPS|ops>: <https://example.invalid/log|the log> :warning:"


def test_rigops_own_markup_goes_to_slack_as_written() -> None:
    assert to_mrkdwn(OURS) == OURS and unescaped(OURS) is None


@pytest.mark.parametrize("literal", [
    "#include <cuda_runtime.h>", "make && make install", "<!channel> look", "a -> b, c <= d", "&amp; stays &amp;",
    "<https://not.ours", "`x<y>` in code", "```\nT<int> a;\n```",
])
def test_literal_text_is_escaped_and_reads_as_written(literal: str) -> None:
    sent = to_mrkdwn(f"{OURS} {literal}")
    assert unescaped(sent) is None, sent
    assert read_mrkdwn(sent) == f"{OURS} {literal}"


def test_a_cut_never_splits_an_escape() -> None:
    for limit in range(10, 60):
        cut = fit_mrkdwn("<&>" * 40, limit)
        assert len(cut) <= limit and unescaped(cut) is None and cut.endswith("(cut)"), (limit, cut)


def test_slack_blocks_measure_the_escaped_text() -> None:
    text = "<" * SECTION_TEXT
    assert len(section(text)["text"]["text"]) <= SECTION_TEXT
    blocks = to_blocks(Message(text="x", title="*Memory* on <b200>", sections=("a < b", "c & d")))
    assert blocks[0]["text"] == {"type": "plain_text", "text": "Memory on <b200>"}
    assert [b["text"]["text"] for b in blocks[1:]] == ["a &lt; b", "c &amp; d"]
    assert message_text("a && b") == "a &amp;&amp; b"


def test_plain_text_for_a_terminal() -> None:
    assert to_plain(OURS, emoji={":warning:": "!"}) == (
        "b200 · `sgl-kernel` for @U0HUMAN in #ops: the log (https://example.invalid/log) !")
    assert to_plain("*bold* and _it_", color=True) == "\x1b[1mbold\x1b[22m and \x1b[3mit\x1b[23m"
    assert to_plain("```\nT<int> *a*;\n``` then *b*") == "```\nT<int> *a*;\n``` then b"  # code is left as it is
    assert to_plain("a*b*c 2*3*4 snake_case_name") == "a*b*c 2*3*4 snake_case_name"
