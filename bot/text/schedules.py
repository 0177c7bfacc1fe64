"""What rigops says about scheduled status posts."""

from __future__ import annotations

from collections.abc import Sequence

from bot.language.commands import SCHEDULE
from bot.language.schedule_text import zone
from bot.store.schedules import Schedule
from bot.text.digest import schedule_line, when

USAGE = f"""*Scheduled status posts*: {SCHEDULE.help}.
• `/rigops schedule add "<cron>" [host|host,host|all] [#channel] [tz=Europe/Berlin] [only-changes]`: \\
the cron line in quotes (`"0 9 * * 1-5"`), or `every 30m`, `every 2h`, `hourly`, `daily at 09:00`, \
`weekdays at 09:00`. Defaults: all hosts, this channel, UTC. `only-changes` skips a post when nothing changed.
• `/rigops schedule list`: the schedules, with their ids and next run
• `/rigops schedule remove ID`
Schedules from the config file (`[[schedules]]`) are changed there."""
ADMINS_ONLY = "only rigops admins may add or remove schedules; `/rigops schedule list` shows them"
NOT_STARTED = "schedules are not running yet; try again in a moment"
NO_SCHEDULES = "No scheduled posts yet.\n"


def added(s: Schedule) -> str:
    hosts = ", ".join(s.hosts) if s.hosts is not None else "all hosts"
    nxt = f"; next {when(s.next_run, zone(s.timezone))}" if s.next_run else ""
    changes = ", only when something changed" if s.only_changes else ""
    return (f":alarm_clock: Schedule `{s.id}`: a status digest of {hosts} in <#{s.channel}>, *{s.when}* "
            f"({s.timezone}){changes}{nxt}. `/rigops schedule remove {s.id}` stops it.")


def listed(schedules: Sequence[Schedule]) -> str:
    return "*Scheduled status posts*\n" + "\n".join(schedule_line(s) for s in schedules)


def removed(schedule: Schedule) -> str:
    return f":wastebasket: Removed schedule `{schedule.id}` (*{schedule.when}* → <#{schedule.channel}>)."


def not_a_channel(token: str) -> str:
    return f"I can't tell which channel {token} is; pick it from Slack's list as you type #"


def channel_not_found(name: str) -> str:
    return (f"I see no channel #{name}: check its name, or pick it from Slack's list as you type #; "
            f"if it is private, `/invite @rigops` there first")


def post_failed(schedule: Schedule, error: str) -> str:
    return (f":warning: Your scheduled status post `{schedule.id}` (*{schedule.when}* → <#{schedule.channel}>) could "
            f"not go out: {error}. `/rigops schedule list` shows it until a post goes out again.")
