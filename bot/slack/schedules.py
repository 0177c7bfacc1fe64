"""Scheduled status posts and the App Home dashboard, as an Extension.

``/rigops schedule add|list|remove`` manage schedules; each run posts one digest (memory, GPUs, builds) in
the schedule's channel. ``make_schedules`` also listens for ``app_home_opened`` and publishes the same
dashboard, probed fresh, to whoever opened the tab. start() starts the scheduler (it runs the jobs only in
the rigops that holds the state dir's scheduler lock); close() stops it.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import CHANNEL_RE as CHANNEL_ID_RE
from bot.config import DEFAULT_TIMEZONE, Config
from bot.digest import collect, fingerprint
from bot.errors import PlanError, RigopsError
from bot.schedule_text import parse_when, zone
from bot.scheduler import Posted, Schedule, ScheduleRunner
from bot.services import Services
from bot.slack.digest_render import digest_message, home_view, schedule_line, when
from bot.slack.extension import CommandContext, Subcommand
from bot.slack.thread import Thread

log = logging.getLogger(__name__)
HOME_LOOKBACK = 24 * 3600  # the Home tab lists builds finished in the last day
QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'"})  # Slack clients type curly quotes
CHANNEL_RE = re.compile(r"^<#([CG][A-Z0-9]+)(?:\|[^>]*)?>$")
UNQUOTED_RE = re.compile(r"^(every\s+\d+\s*[a-z]+|hourly|@[a-z]+|(?:daily|weekdays)\s+at\s+\d{1,2}:\d{2})(?=\s|$)",
                         re.IGNORECASE)
ONLY_CHANGES = frozenset({"only-changes", "only_changes", "changes-only", "--only-changes", "on-change"})

USAGE = """*Scheduled status posts*: a digest of memory, GPUs and builds, posted on a schedule.
• `/rigops schedule add "<cron>" [host|host,host|all] [#channel] [tz=Europe/Berlin] [only-changes]`: \
the cron line in quotes (`"0 9 * * 1-5"`), or `every 30m`, `every 2h`, `hourly`, `daily at 09:00`, \
`weekdays at 09:00`. Defaults: all hosts, this channel, UTC. `only-changes` skips a post when nothing changed.
• `/rigops schedule list`: the schedules, with their ids and next run
• `/rigops schedule remove ID`
Schedules from the config file (`[[schedules]]`) are changed there."""
ADMINS_ONLY = "only rigops admins may add or remove schedules; `/rigops schedule list` shows them"
NOT_STARTED = "schedules are not running yet; try again in a moment"
NO_SCHEDULES = "No scheduled posts yet.\n"


@dataclass(frozen=True)
class AddRequest:
    when: str
    hosts: tuple[str, ...] | None  # None: all hosts, including ones added to the config later
    channel: str
    timezone: str
    only_changes: bool


def parse_add(args: str, *, config: Config, channel: str) -> AddRequest:
    """``"<cron>" [hosts|all] [#channel] [tz=Area/City] [only-changes]``. Raises PlanError."""
    text, rest = _split_when(args.translate(QUOTES).strip())
    hosts: tuple[str, ...] | None = None
    target, timezone, only_changes = channel, DEFAULT_TIMEZONE, False
    for token in rest.split():
        low = token.lower()
        if (found := _channel(token, config)) is not None:
            target = found
        elif low.startswith(("tz=", "timezone=")):
            timezone = token.partition("=")[2]
        elif low in ONLY_CHANGES:
            only_changes = True
        elif low != "all":
            hosts = (*(hosts or ()), *_hosts(token, config))
    return AddRequest(when=text, hosts=hosts, channel=target, timezone=timezone, only_changes=only_changes)


def _split_when(text: str) -> tuple[str, str]:
    if not text:
        raise PlanError('say when: `/rigops schedule add "0 9 * * 1-5" all`, or every 30m, hourly, daily at 09:00')
    if text[0] in "\"'":
        end = text.find(text[0], 1)
        if end < 0:
            raise PlanError(f"the schedule {text!r} has no closing quote")
        return text[1:end], text[end + 1:]
    if m := UNQUOTED_RE.match(text):
        return m[1], text[m.end():]
    raise PlanError(f"cannot tell where the schedule ends in {text!r}: put a crontab line in quotes, "
                    'e.g. `/rigops schedule add "0 9 * * 1-5" all`, or say every 30m, hourly, daily at 09:00')


def _channel(token: str, config: Config) -> str | None:
    if m := CHANNEL_RE.match(token):
        return m[1]
    bare = token.removeprefix("#")
    if CHANNEL_ID_RE.match(bare) and bare not in config.hosts:
        return bare
    if token.startswith("#"):
        raise PlanError(f"I can't tell which channel {token} is; pick it from Slack's list as you type #")
    return None


def _hosts(token: str, config: Config) -> tuple[str, ...]:
    """Host names, with a group standing for its members."""
    hosts: list[str] = []
    for name in (n for n in token.split(",") if n):
        if name not in config.hosts and name not in config.groups:
            groups = f", groups {', '.join(config.groups)}" if config.groups else ""
            raise PlanError(f"unknown host {name!r} (known: {', '.join(config.hosts)}{groups}, or all)")
        hosts += config.members(name)
    return tuple(dict.fromkeys(hosts))


class Schedules:
    """The Extension: the `schedule` subcommand, the digest poster, the Home tab."""

    def __init__(self, client: AsyncWebClient, services: Services) -> None:
        self.client = client
        self.services = services
        self.runner: ScheduleRunner | None = None

    @property
    def subcommands(self) -> Mapping[str, Subcommand]:
        return {"schedule": self.on_schedule, "schedules": self.on_schedule}

    async def start(self) -> None:
        self.runner = ScheduleRunner(self.services.store.path.parent, post=self.post_digest)
        await self.runner.start(self.services.config.schedules)

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.close()
            self.runner = None

    # -- /rigops schedule ... -------------------------------------------------------------------------
    async def on_schedule(self, ctx: CommandContext) -> None:
        """`/rigops schedule add|list|remove`: scheduled status posts."""
        word, _, rest = ctx.args.strip().partition(" ")
        try:
            match word.lower():
                case "add" | "new":
                    text = await self._add(ctx, rest)
                case "list" | "ls" | "":
                    text = self._list()
                case "remove" | "rm" | "delete" | "del":
                    text = await self._remove(ctx, rest.strip())
                case _:
                    text = USAGE
        except RigopsError as exc:
            text = f":no_entry: {exc}"
        await ctx.thread.post(text)

    def _runner(self) -> ScheduleRunner:
        if self.runner is None:
            raise PlanError(NOT_STARTED)
        return self.runner

    async def _admin(self, user: str) -> None:
        if not await self.services.policy.is_admin(user):
            raise PlanError(ADMINS_ONLY)

    async def _add(self, ctx: CommandContext, args: str) -> str:
        await self._admin(ctx.user)
        req = parse_add(args, config=self.services.config, channel=ctx.channel)
        parse_when(req.when, timezone=req.timezone)  # bad text is refused before anything is written
        runner = self._runner()
        self.services.store.audit("schedule add", user=ctx.user, channel=ctx.channel,
                                  detail={"when": req.when, "hosts": req.hosts, "channel": req.channel,
                                          "timezone": req.timezone, "only_changes": req.only_changes})
        s = runner.add(when=req.when, channel=req.channel, hosts=req.hosts, timezone=req.timezone,
                       only_changes=req.only_changes, created_by=ctx.user)
        hosts = ", ".join(s.hosts) if s.hosts is not None else "all hosts"
        nxt = f"; next {when(s.next_run, zone(s.timezone))}" if s.next_run else ""
        changes = ", only when something changed" if s.only_changes else ""
        return (f":alarm_clock: Schedule `{s.id}`: a status digest of {hosts} in <#{s.channel}>, *{s.when}* "
                f"({s.timezone}){changes}{nxt}. `/rigops schedule remove {s.id}` stops it.")

    def _list(self) -> str:
        schedules = self._runner().list()
        if not schedules:
            return NO_SCHEDULES + USAGE
        return "*Scheduled status posts*\n" + "\n".join(schedule_line(s) for s in schedules)

    async def _remove(self, ctx: CommandContext, schedule_id: str) -> str:
        await self._admin(ctx.user)
        if not schedule_id:
            raise PlanError("which schedule? `/rigops schedule list` shows their ids")
        runner = self._runner()
        schedule = runner.get(schedule_id)
        if schedule is None:
            raise PlanError(f"there is no schedule `{schedule_id}`; `/rigops schedule list` shows them")
        if schedule.source == "config":
            where = self.services.config.path or "the config file"
            raise PlanError(f"schedule `{schedule_id}` comes from {where} ([[schedules]]); remove it there")
        self.services.store.audit("schedule remove", user=ctx.user, channel=ctx.channel,
                                  detail={"id": schedule_id, "when": schedule.when, "channel": schedule.channel})
        runner.remove(schedule_id)
        return f":wastebasket: Removed schedule `{schedule_id}` (*{schedule.when}* → <#{schedule.channel}>)."

    # -- posting --------------------------------------------------------------------------------------
    async def post_digest(self, schedule: Schedule) -> Posted | None:
        """One run of a schedule: the digest in its channel, unless only changes count and nothing changed."""
        digest = await collect(self.services, schedule.hosts, since=schedule.last_post_at or schedule.created_at)
        mark = fingerprint(digest)
        if schedule.only_changes and mark == schedule.last_fingerprint:
            log.info("schedule %s: nothing changed since the last post; not posting", schedule.id)
            return None
        text, blocks = digest_message(digest, tz=zone(schedule.timezone), schedule=schedule)
        ts = await Thread(self.client, schedule.channel, None).post(text, blocks=blocks)
        return Posted(at=digest.taken_at, fingerprint=mark) if ts else None

    async def on_home_opened(self, event: dict[str, Any], client: AsyncWebClient) -> None:
        """The Home tab: the dashboard of every host, fresh each time the tab opens."""
        if event.get("tab", "home") != "home" or not event.get("user"):
            return
        async with self.services.activity.track():
            digest = await collect(self.services, None, since=time.time() - HOME_LOOKBACK)
            try:
                schedules = self.runner.list() if self.runner is not None else []
            except RigopsError as exc:
                log.warning("Home tab without the schedules: %s", exc)
                schedules = []
            view = home_view(digest, tz=zone(DEFAULT_TIMEZONE), schedules=schedules)
            try:
                await client.views_publish(user_id=str(event["user"]), view=view)
            except SlackApiError as exc:
                log.error("views.publish for %s failed: %s", event["user"], exc.response.get("error"))


def make_schedules(app: AsyncApp, services: Services) -> Schedules:
    """The Extension factory for ``bot.slack.app.EXTENSIONS``."""
    schedules = Schedules(app.client, services)
    app.event("app_home_opened")(schedules.on_home_opened)
    return schedules
