"""Scheduled status posts: ``/rigops schedule add|list|remove``, and the digest each run posts in its channel.

start() starts the scheduler (it runs the jobs only in the rigops that leads: ``bot.scheduler`` says how);
close() stops it. :meth:`Schedules.dashboard` gives a front end the same picture, probed fresh (Slack's Home tab).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

from bot.config import DEFAULT_TIMEZONE, Config
from bot.core.digest import Progresses, collect, fingerprint
from bot.core.execute import post_thread
from bot.core.services import Services
from bot.core.talk import Conversation, Reply
from bot.language.schedule_text import parse_when, zone
from bot.reports import Digest
from bot.scheduler import ScheduleRunner
from bot.store.schedules import Posted, Schedule
from bot.text import messages
from bot.text import schedules as text
from bot.text.digest_layout import digest_posts
from bot.util.errors import PlanError, RigopsError

log = logging.getLogger(__name__)
HOME_LOOKBACK = 24 * 3600  # the Home tab lists builds finished in the last day
QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'"})  # Slack clients type curly quotes
CHANNEL_RE = re.compile(r"^<#([CG][A-Z0-9]+)(?:\|[^>]*)?>$")  # as Slack escapes it: <#C1|ops>, <#C1|>, <#C1>
CHANNEL_ID_RE = re.compile(r"^[CGD][A-Z0-9]{2,}$")  # a channel's id typed bare (C…, G…, or a DM's D…)
CHANNEL_NAME_RE = re.compile(r"^#([a-z0-9][a-z0-9._-]{0,79})$")  # as typed, when Slack does not escape it
UNQUOTED_RE = re.compile(r"^(every\s+\d+\s*[a-z]+|hourly|@[a-z]+|(?:daily|weekdays)\s+at\s+\d{1,2}:\d{2})(?=\s|$)",
                         re.IGNORECASE)
ONLY_CHANGES = frozenset({"only-changes", "only_changes", "changes-only", "--only-changes", "on-change"})

@dataclass(frozen=True)
class AddRequest:
    when: str
    hosts: tuple[str, ...] | None  # None: all hosts, including ones added to the config later
    channel: str | None  # the channel's id; None when it was named as plain text (``channel_name``)
    timezone: str
    only_changes: bool
    channel_name: str | None = None  # a #name to look up among the channels rigops can see


def parse_add(args: str, *, config: Config, channel: str) -> AddRequest:
    """``"<cron>" [hosts|all] [#channel] [tz=Area/City] [only-changes]``. Raises PlanError."""
    text, rest = _split_when(args.translate(QUOTES).strip())
    hosts: tuple[str, ...] | None = None
    target: str | None = channel
    name: str | None = None
    timezone, only_changes = DEFAULT_TIMEZONE, False
    for token in rest.split():
        low = token.lower()
        if (found := _channel(token, config)) is not None:
            target, name = found
        elif low.startswith(("tz=", "timezone=")):
            timezone = token.partition("=")[2]
        elif low in ONLY_CHANGES:
            only_changes = True
        elif low != "all":
            hosts = (*(hosts or ()), *_hosts(token, config))
    return AddRequest(when=text, hosts=hosts, channel=target, timezone=timezone, only_changes=only_changes,
                      channel_name=name)


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


def _channel(token: str, config: Config) -> tuple[str | None, str | None] | None:
    """A channel in either form Slack sends: (its id, None) from ``<#C1|ops>`` or an id, (None, its name) from
    ``#ops`` typed as plain text; None when the token is no channel."""
    if m := CHANNEL_RE.match(token):
        return m[1], None
    bare = token.removeprefix("#")
    if CHANNEL_ID_RE.match(bare) and bare not in config.hosts:
        return bare, None
    if m := CHANNEL_NAME_RE.match(token.lower()):
        return None, m[1]
    if token.startswith("#"):
        raise PlanError(text.not_a_channel(token))
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
    """The `schedule` subcommand, the digest poster and the dashboard."""

    def __init__(self, services: Services, reply: Reply, *, progress: Progresses) -> None:
        self.services = services
        self.reply = reply
        self.progress = progress
        self.runner: ScheduleRunner | None = None

    async def start(self) -> None:
        store = self.services.store
        self.runner = ScheduleRunner(store.state_dir, url=store.url, replica=store.replicas.me, post=self.post_digest)
        await self.runner.start(self.services.config.schedules)

    def leading(self) -> bool:
        """Whether this rigops runs the schedules (of the rigops sharing a state, one does)."""
        return self.runner is not None and self.runner.running

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.close()
            self.runner = None

    # -- /rigops schedule ... -------------------------------------------------------------------------
    async def command(self, args: str, *, user: str, channel: str) -> str:
        """`/rigops schedule add|list|remove`: what to answer."""
        word, _, rest = args.strip().partition(" ")
        try:
            match word.lower():
                case "add" | "new":
                    return await self._add(rest, user=user, channel=channel)
                case "list" | "ls" | "":
                    return self._list()
                case "remove" | "rm" | "delete" | "del":
                    return await self._remove(rest.strip(), user=user, channel=channel)
                case _:
                    return text.USAGE
        except RigopsError as exc:
            return f":no_entry: {exc}"

    def _runner(self) -> ScheduleRunner:
        if self.runner is None:
            raise PlanError(text.NOT_STARTED)
        return self.runner

    async def _admin(self, user: str) -> None:
        if not await self.services.policy.is_admin(user):
            raise PlanError(text.ADMINS_ONLY)

    async def _add(self, args: str, *, user: str, channel: str) -> str:
        await self._admin(user)
        req = parse_add(args, config=self.services.config, channel=channel)
        parse_when(req.when, timezone=req.timezone)  # bad text is refused before anything is written
        target = req.channel or await self._channel_named(req.channel_name or "")
        if not await self.reply.can_post(target):
            raise PlanError(messages.schedule_channel_unreachable(target))
        runner = self._runner()
        self.services.store.audit("schedule add", user=user, channel=channel,
                                  detail={"when": req.when, "hosts": req.hosts, "channel": target,
                                          "timezone": req.timezone, "only_changes": req.only_changes})
        s = runner.add(when=req.when, channel=target, hosts=req.hosts, timezone=req.timezone,
                       only_changes=req.only_changes, created_by=user)
        return text.added(s)

    async def _channel_named(self, name: str) -> str:
        """The id of the channel typed as ``#name``. Raises PlanError when rigops sees no such channel."""
        found = await self.reply.find_channel(name)
        if found is None:
            raise PlanError(text.channel_not_found(name))
        return found

    def _list(self) -> str:
        schedules = self._runner().list()
        if not schedules:
            return text.NO_SCHEDULES + text.USAGE
        return text.listed(schedules)

    async def _remove(self, schedule_id: str, *, user: str, channel: str) -> str:
        await self._admin(user)
        if not schedule_id:
            raise PlanError("which schedule? `/rigops schedule list` shows their ids")
        runner = self._runner()
        schedule = runner.get(schedule_id)
        if schedule is None:
            raise PlanError(f"there is no schedule `{schedule_id}`; `/rigops schedule list` shows them")
        if schedule.source == "config":
            where = self.services.config.path or "the config file"
            raise PlanError(f"schedule `{schedule_id}` comes from {where} ([[schedules]]); remove it there")
        self.services.store.audit("schedule remove", user=user, channel=channel,
                                  detail={"id": schedule_id, "when": schedule.when, "channel": schedule.channel})
        runner.remove(schedule_id)
        return text.removed(schedule)

    # -- posting --------------------------------------------------------------------------------------
    async def post_digest(self, schedule: Schedule) -> Posted | None:
        """One run of a schedule: the digest in its channel, unless only changes count and nothing changed."""
        digest = await collect(self.services, schedule.hosts, since=schedule.last_post_at or schedule.created_at,
                               progress=self.progress)
        mark = fingerprint(digest)
        if schedule.only_changes and mark == schedule.last_fingerprint:
            log.info("schedule %s: nothing changed since the last post; not posting", schedule.id)
            return None
        posts = digest_posts(digest, tz=zone(schedule.timezone), schedule=schedule)
        conv = Conversation(self.reply, schedule.channel, None)
        if await conv.can_post() and await conv.post(posts.first) is not None:
            await post_thread(conv, posts)  # a failure there is logged by the front end; the digest went out
            return Posted(at=digest.taken_at, fingerprint=mark)
        # a refused post may be the first sign that rigops was removed from the channel: ask again
        error = messages.POST_REFUSED if await conv.can_post() else \
            messages.schedule_channel_unreachable(schedule.channel)
        if error != schedule.last_error:  # told once, not at every run
            await self._tell_creator(schedule, error)
        return Posted(at=digest.taken_at, fingerprint=mark, error=error)

    async def _tell_creator(self, schedule: Schedule, error: str) -> None:
        """Whoever added a schedule hears, in a DM, that its post failed (the config's schedules have nobody)."""
        if schedule.created_by is None:
            log.warning("schedule %s could not post: %s", schedule.id, error)
            return
        dm = await self.reply.direct(schedule.created_by)
        if dm is not None:
            await Conversation(self.reply, dm, None).post(text.post_failed(schedule, error))

    async def dashboard(self) -> tuple[Digest, list[Schedule]]:
        """Every host, probed now (builds finished in the last day), and the schedules."""
        digest = await collect(self.services, None, since=time.time() - HOME_LOOKBACK, progress=self.progress)
        try:
            schedules = self.runner.list() if self.runner is not None else []
        except RigopsError as exc:
            log.warning("the dashboard without the schedules: %s", exc)
            schedules = []
        return digest, schedules
