"""This rigops among the others on one state: a heartbeat that says it is alive, and, on each beat, the runs it
adopts from a rigops that stopped answering (``bot.store.replicas`` says how the database decides who wins) and
the presses other rigops handed to it (a button of an OOM guard that runs here).

With one rigops on SQLite the same beat picks up, on start, the builds a previous run of rigops left running.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from bot.core.follow import Follower
from bot.core.requests import SlashCommand
from bot.core.services import Services
from bot.core.talk import Pressed
from bot.util.aio import Tasks, cancel, log_end
from bot.util.errors import StateError

log = logging.getLogger(__name__)
HEARTBEAT = 2.0  # seconds between two beats; a rigops is taken for dead after Follower.replica_timeout
FORGET_AFTER = 7 * 24 * 3600  # the row of a replica silent this long is dropped (rigops check lists the rest)


class Heartbeat:
    """Beats every ``interval`` seconds: the replica's row, then adoption of orphaned runs."""

    def __init__(self, services: Services, *, follower: Follower, leading: Callable[[], bool],
                 pressed: Callable[[Pressed], Awaitable[None]],
                 commanded: Callable[[SlashCommand], Coroutine[Any, Any, None]] | None = None,
                 interrupted: Callable[[], Awaitable[None]] | None = None,
                 sharing: Callable[[int], None] | None = None, interval: float = HEARTBEAT) -> None:
        self.services = services
        self.follower = follower
        self.leading = leading
        self.pressed = pressed  # acts on a press another rigops handed over
        self.commanded = commanded  # answers a slash command a rigops that died had claimed
        self._commands = Tasks()
        self.interrupted = interrupted  # tells the plans a rigops that stopped was running
        self._down: tuple[float, str] | None = None  # since when (time.time()) the state does not answer, and why
        self.sharing = sharing  # hears how many rigops run on the state (the front end's rate budget is shared)
        self.rigops = 1  # how many did at the last beat
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """The first beat now (so the runs left behind are followed before anything else), then on a timer."""
        await self.beat()
        self._task = asyncio.create_task(self._beat_forever(), name="replica-heartbeat")
        self._task.add_done_callback(log_end)

    async def beat(self) -> None:
        replicas = self.services.store.replicas
        try:
            replicas.beat(leader=self.leading(), following=len(self.follower.following))
            await self.follower.adopt()
            replicas.forget_dead(older_than=FORGET_AFTER)
            handed = replicas.handed_over()
            alive = sum(1 for _, up in replicas.all(timeout=self.follower.replica_timeout) if up)
            self._take_commands()
            if self.interrupted is not None:
                await self.interrupted()
            if self._down is not None:
                began, problem = self._down
                lasted = time.time() - began
                replicas.record_outage(began, lasted, problem)
                log.warning("the state answers this rigops' heartbeat again, after %.0f s without it", lasted)
                self._down = None
        except StateError as exc:
            log.warning("heartbeat: %s", exc)
            if self._down is None:
                self._down = (time.time(), str(exc))
            return
        if alive and alive != self.rigops:
            log.info("%d rigops run on this state now (were %d): each takes its part of the rate limits",
                     alive, self.rigops)
            self.rigops = alive
            self.services.policy.set_share(alive)
            if self.sharing is not None:
                self.sharing(alive)
        for press in handed:
            try:
                await self.pressed(Pressed.from_json(press))
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("a press handed over by another rigops cannot be read (%s): %s", exc, press)

    def _take_commands(self) -> None:
        """Answer the slash commands that a rigops which stopped answering had claimed and not answered."""
        if self.commanded is None:
            return
        replicas = self.services.store.replicas
        for key, body in replicas.orphan_commands(timeout=self.follower.replica_timeout):
            try:
                cmd = SlashCommand.from_json(body)
            except (KeyError, TypeError) as exc:
                log.warning("a slash command claimed by another rigops cannot be read (%s): %s", exc, key)
                continue
            owner = replicas.take_command(key, timeout=self.follower.replica_timeout)
            if owner is not None:
                log.info("answering a slash command of %s in %s that rigops %s claimed and did not answer "
                         "(it stopped answering)", cmd.user, cmd.channel, owner)
                self._commands.start(self.commanded(cmd), name="taken-over-command")

    async def stop(self) -> None:
        """No more beats (the runs are still this rigops' until :meth:`leave`); the commands taken over and still
        being answered are cancelled (claimed still: the next rigops answers them)."""
        await cancel(self._task)
        self._task = None
        await self._commands.close()

    def leave(self) -> None:
        """This rigops is gone: the others may adopt its runs at once."""
        try:
            self.services.store.replicas.leave()
        except StateError as exc:
            log.warning("could not say this rigops is leaving (the others adopt its runs after the timeout): %s",
                        exc)

    async def _beat_forever(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.beat()
