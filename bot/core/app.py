"""The core: rigops' application, whatever front end people use. It owns the requests (one gate), the builds it
follows, their OOM guards and the schedules, and talks to people only through a front end's Reply.

Built whole in one place (no part patched after construction); ``start`` picks up what a previous rigops left
running, ``close`` stops everything it started.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from bot.actions import Requester
from bot.config import Config
from bot.core.audit import AuditMirror
from bot.core.execute import Executor
from bot.core.follow import CARD_INTERVAL, POLL_INTERVAL, Follower
from bot.core.guard import SAMPLE_INTERVAL, Guards
from bot.core.metrics import Metrics
from bot.core.policy import GroupMembers, no_groups
from bot.core.replicas import HEARTBEAT, Heartbeat
from bot.core.requests import Activity, Requests, Said, SlashCommand
from bot.core.schedules import Schedules
from bot.core.services import Services
from bot.core.talk import Conversation, Pressed, Reply
from bot.hosts import Hosts
from bot.language.plan import Plan
from bot.store import Store
from bot.text import messages, render
from bot.text.render import StepLine
from bot.util.aio import cancel, log_end
from bot.util.errors import StateError

log = logging.getLogger(__name__)
IDLE_CLOSE = 600.0  # seconds a host connection may sit unused before it is closed
IDLE_CHECK = 60.0


class Core:
    def __init__(self, services: Services, reply: Reply, *, poll: float = POLL_INTERVAL,
                 card_interval: float = CARD_INTERVAL, sample_interval: float = SAMPLE_INTERVAL,
                 heartbeat: float = HEARTBEAT, sharing: Callable[[int], None] | None = None) -> None:
        self.services = services
        self.reply = reply
        self.audit = AuditMirror(services, reply)  # every audit entry, whoever writes it, mirrored
        services.store.audit_listeners.append(self.audit)
        self.guards = Guards(services, restart=self._restart, interval=sample_interval)
        self.follower = Follower(services, reply, guards=self.guards, poll=poll, card_interval=card_interval)
        self.executor = Executor(services, on_build=self.follower.follow, memory=self.guards.series)
        self.schedules = Schedules(services, reply, progress=self.follower.progress)
        self.requests = Requests(services, reply, executor=self.executor, guards=self.guards,
                                 schedules=self.schedules)
        self.heartbeat = Heartbeat(services, follower=self.follower, leading=self.schedules.leading,
                                   pressed=self.requests.pressed, commanded=self.command,
                                   interrupted=self.interrupted, sharing=sharing, interval=heartbeat)
        self.activity = Activity()
        self._reaper: asyncio.Task[None] | None = None

    @classmethod
    def open(cls, config: Config, state_dir: Path, reply: Reply, *, members: GroupMembers = no_groups,
             console_admin: str | None = None, poll: float = POLL_INTERVAL, card_interval: float = CARD_INTERVAL,
             sample_interval: float = SAMPLE_INTERVAL, sharing: Callable[[int], None] | None = None,
             metrics: Metrics | None = None) -> Core:
        """The core on a state dir; ``members`` answers who is in a user group; the intervals say how often a
        followed build is polled, its card edited and its memory sampled; ``sharing`` hears how many rigops run on
        the state (the front end shares its rate budget with them)."""
        services = Services.open(config, state_dir, members=members, console_admin=console_admin, metrics=metrics)
        return cls(services, reply, poll=poll, card_interval=card_interval, sample_interval=sample_interval,
                   sharing=sharing)

    @property
    def config(self) -> Config:
        return self.services.config

    @property
    def store(self) -> Store:
        return self.services.store

    @property
    def hosts(self) -> Hosts:
        return self.services.hosts

    async def said(self, said: Said) -> None:
        await self.requests.said(said)

    async def interrupted(self) -> None:
        """The plans a rigops was running when it stopped (this one, before it was restarted, or another that
        stopped answering): their message in the thread says so, once; what became of each build is told by
        the build's own card and end. Raises StateError."""
        store = self.services.store
        for pending in store.interrupted_plans(since=store.replicas.started_at,
                                               timeout=self.follower.replica_timeout):
            if store.claim_plan(pending.id, "interrupted", waiting="running") is None:
                continue  # another rigops saw it first
            log.warning("plan %d was still running when its rigops stopped: told as interrupted", pending.id)
            if pending.message_id:
                conv = Conversation(self.reply, pending.channel, pending.thread_id)
                lines = [StepLine(s, "failed", messages.INTERRUPTED) for s in pending.plan.steps]
                await conv.update(pending.message_id, render.plan_message(pending.plan, lines,
                                                                          note=messages.interrupted_note()))

    def claim_command(self, cmd: SlashCommand) -> bool:
        """Claim a slash command in the state before the front end acknowledges it: should this rigops die before
        it is answered, another answers it. False when it was claimed already (delivered twice); raises StateError
        when the state does not answer."""
        if cmd.key is None:
            return True
        return self.services.store.replicas.claim_command(cmd.key, cmd.to_json())

    async def command(self, cmd: SlashCommand) -> None:
        """Answer a slash command, then mark its claim done (a command cancelled by a stop stays claimed: the
        next rigops on the state answers it)."""
        await self.requests.command(cmd)
        if cmd.key is not None:
            try:
                self.services.store.replicas.command_done(cmd.key)
            except StateError as exc:  # answered; another rigops may answer it again once this one is gone
                log.warning("a slash command was answered, but its claim could not be marked done: %s", exc)

    async def pressed(self, press: Pressed) -> None:
        await self.requests.pressed(press)

    async def start(self) -> None:
        """Say this rigops is here, pick up the builds nobody follows (left running by this rigops before a
        restart, or by another that stopped), start the schedules."""
        await self.heartbeat.start()
        self._reaper = asyncio.create_task(self._close_idle_hosts(), name="close-idle-hosts")
        self._reaper.add_done_callback(log_end)
        await self.schedules.start()
        await self.heartbeat.beat()  # the others see at once whether this one leads

    async def close(self) -> None:
        """Stop what the core started (nothing stays paused behind it), then the hosts and the state."""
        await cancel(self._reaper)
        await self.heartbeat.stop()
        await self.schedules.close()
        await self.follower.close()
        await self.guards.close()
        self.heartbeat.leave()  # after the guards: nothing of this rigops stays paused
        await self.audit.close()
        await self.services.close()

    async def _restart(self, conv: Conversation, plan: Plan, requester: Requester, note: str) -> None:
        """The OOM guard's Stop & restart: the same run of a plan as any request's."""
        await self.executor.execute(conv, plan, requester=requester, note=note)

    async def _close_idle_hosts(self) -> None:
        hosts = self.services.hosts
        while True:
            await asyncio.sleep(IDLE_CHECK)
            closed = await hosts.close_idle(IDLE_CLOSE)
            if closed:
                log.info("closed idle connections to %s", ", ".join(closed))
