"""The App Home tab: the dashboard of every host and the scheduled posts, as a Block Kit view."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from zoneinfo import ZoneInfo

from bot.digest import Digest
from bot.scheduler import Schedule
from bot.slack.blocks import HOME_BLOCKS, context, header, section, sections
from bot.text.digest import HOME_TITLE, IN_THE_LAST_DAY, as_of, host_text, scheduled_posts

MORE_HOSTS = "{n} more hosts that do not fit in one view"


def home_view(digest: Digest, *, tz: ZoneInfo, schedules: Sequence[Schedule]) -> dict[str, Any]:
    """The same dashboard as the digest, then the scheduled posts."""
    tail = [{"type": "divider"}, section(scheduled_posts(schedules))]
    hosts = [host_text(h, now=digest.taken_at, tz=tz, finished=IN_THE_LAST_DAY) for h in digest.hosts]
    blocks = [header(HOME_TITLE), context(as_of(digest, tz)),
              *sections(hosts, room=HOME_BLOCKS - 2 - len(tail), more=MORE_HOSTS), *tail]
    return {"type": "home", "blocks": blocks}
