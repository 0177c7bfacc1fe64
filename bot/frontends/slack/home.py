"""The App Home tab: the dashboard of every host and the scheduled posts, as a Block Kit view."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from zoneinfo import ZoneInfo

from bot.frontends.slack.blocks import HOME_BLOCKS, Block, context, header, section, sections
from bot.reports import Digest
from bot.store.schedules import Schedule
from bot.text.digest import HOME_ROWS, HOME_TITLE, IN_THE_LAST_DAY, as_of, host_text, scheduled_posts
from bot.text.digest_layout import attention_section, host_rows

MORE_HOSTS = "{n} more hosts that do not fit in one view"


def home_view(digest: Digest, *, tz: ZoneInfo, schedules: Sequence[Schedule]) -> dict[str, Any]:
    """Who needs attention, then every host — in detail when a section each fits in the view, else one line
    each — then the scheduled posts."""
    top = [header(HOME_TITLE), context(as_of(digest, tz))]
    attention = attention_section(digest, tz=tz, since_last_post=False, more="below")
    top += [section(attention)] if attention else []
    tail = [{"type": "divider"}, section(scheduled_posts(schedules))]
    room = HOME_BLOCKS - len(top) - len(tail)
    details = [host_text(h, now=digest.taken_at, tz=tz, finished=IN_THE_LAST_DAY) for h in digest.hosts]
    body: list[Block]
    if len(details) <= room:
        body = [section(t) for t in details]
    else:
        body = [*sections(host_rows(digest.hosts), room=room - 1, more=MORE_HOSTS), context(HOME_ROWS)]
    return {"type": "home", "blocks": [*top, *body, *tail]}
