"""Schedule text -> APScheduler 3 trigger: a crontab line (read as crontab reads it) or a few words.

Words: ``every 30m`` / ``every 2h`` / ``every 1d``, ``hourly``, ``daily at 09:00``, ``weekdays at 09:00``, and
crontab's ``@hourly``, ``@daily``, ``@weekly``, ``@monthly``. Everything here raises PlanError with a sentence
for the person who typed it (or ConfigError's message, for a ``[[schedules]]`` entry).
"""

from __future__ import annotations

import re
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]
from apscheduler.triggers.interval import IntervalTrigger  # type: ignore[import-untyped]

from bot.util.errors import PlanError

MIN_INTERVAL = 60  # seconds: a digest at most every minute
WHEN_HELP = 'a crontab line in quotes ("0 9 * * 1-5"), every 30m, every 2h, hourly, daily at 09:00, weekdays at 09:00'
EVERY_RE = re.compile(r"^every\s+(\d+)\s*(m|mins?|minutes?|h|hrs?|hours?|d|days?)$")
AT_RE = re.compile(r"^(daily|weekdays)\s+at\s+(\d{1,2}):(\d{2})$")
NICKNAMES = {"hourly": "0 * * * *", "@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
             "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *"}
UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400}
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # crontab's numbering: 0 (and 7) is Sunday


def zone(name: str) -> ZoneInfo:
    """The IANA timezone ``name``. Raises PlanError."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise PlanError(f"unknown timezone {name!r} (use an IANA name like Europe/Berlin or UTC)") from None


def parse_when(text: str, *, timezone: str) -> Any:
    """An APScheduler trigger for ``text``: a crontab line or one of the words in WHEN_HELP. Raises PlanError."""
    tz = zone(timezone)
    words = " ".join(text.lower().split())
    words = NICKNAMES.get(words, words)
    if m := EVERY_RE.match(words):
        seconds = int(m[1]) * UNIT_SECONDS[m[2][0]]
        if seconds < MIN_INTERVAL:
            raise PlanError(f"{text!r} is too often: a digest at most every minute")
        return IntervalTrigger(seconds=seconds, timezone=tz)
    if m := AT_RE.match(words):
        if int(m[2]) > 23 or int(m[3]) > 59:
            raise PlanError(f"{text!r}: there is no {m[2]}:{m[3]} on a clock")
        days = "mon-fri" if m[1] == "weekdays" else "*"
        return CronTrigger(day_of_week=days, hour=int(m[2]), minute=int(m[3]), timezone=tz)
    return _crontab(text, words, tz)


def _crontab(text: str, words: str, tz: ZoneInfo) -> Any:
    fields = words.split()
    if len(fields) != 5:
        raise PlanError(f"cannot read {text!r} as a schedule; use {WHEN_HELP}")
    minute, hour, day, month, weekdays = fields
    if day != "*" and weekdays != "*":
        raise PlanError(f"{text!r} names both days of the month and weekdays; crontab would run on either, "
                        "rigops would need both: use two schedules")
    try:
        return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=cron_weekdays(weekdays),
                           timezone=tz)
    except ValueError as exc:
        raise PlanError(f"{text!r} is not a valid crontab line ({exc}); use {WHEN_HELP}") from None


def cron_weekdays(field: str) -> str:
    """Crontab's day-of-week field (0 or 7 is Sunday) as APScheduler 3 day names (where 0 is Monday).

    Raises ValueError.
    """
    if field == "*":
        return field
    days: set[int] = set()
    for item in field.split(","):
        span, _, step = item.partition("/")
        if step and (not step.isdigit() or int(step) == 0):
            raise ValueError(f"bad step in {item!r}")
        first, _, last = ("0", "-", "6") if span == "*" else span.partition("-")
        start = _weekday(first)
        end = _weekday(last, sunday=7) if last else 6 if step else start
        if end < start:
            raise ValueError(f"bad day-of-week range {item!r}")
        days.update(d % 7 for d in range(start, end + 1, int(step or 1)))
    return ",".join(WEEKDAYS[d] for d in sorted(days, key=lambda d: (d + 6) % 7))


def _weekday(token: str, *, sunday: int = 0) -> int:
    """0-7 (as written) or a day name; a range may end on Sunday as 7 or "sun"."""
    if token.isdigit() and int(token) <= 7:
        return int(token)
    if token[:3] in WEEKDAYS:
        return WEEKDAYS.index(token[:3]) or sunday
    raise ValueError(f"bad day of week {token!r}")
