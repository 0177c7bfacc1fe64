"""Staying inside Slack's rate tiers: one budget per Web API method for the whole app (``chat.postMessage`` per
channel), shared by every build, host and schedule, so that Slack never needs to answer 429.

Slack allows each method so many calls a minute per app per workspace (https://api.slack.com/docs/rate-limits:
Tier 2 20+/min, Tier 3 50+/min, Tier 4 100+/min; posting about one message a second per channel, short bursts
allowed; each method's page names its tier). The floor of each tier is kept; a burst of posts is held to ten in
ten seconds per channel, as Slack does not say how long a tolerated burst may be. Several rigops on one state
(replicas) split each tier between them: the limits are the app's, whichever connection a call comes from.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, replace

from bot.core.talk import Place
from bot.text.message import Message
from bot.util.aio import cancel

log = logging.getLogger(__name__)
MINUTE = 60.0
EDITS_KEPT = 1000  # messages whose last edit is remembered, for who goes first


@dataclass(frozen=True)
class Tier:
    """At most ``calls`` calls in any ``seconds``; counted per channel when ``per_channel``."""

    calls: int
    seconds: float = MINUTE
    per_channel: bool = False


TIER_2 = Tier(20)
TIER_3 = Tier(50)
TIER_4 = Tier(100)
SLACK_TIERS: Mapping[str, Tier] = {
    "chat.postMessage": Tier(10, 10.0, per_channel=True),
    "chat.update": TIER_3,
    "chat.postEphemeral": TIER_4,
    "reactions.add": TIER_3,
    "files.getUploadURLExternal": TIER_4,
    "files.completeUploadExternal": TIER_4,
    "conversations.info": TIER_3,
    "conversations.open": TIER_3,
    "conversations.list": TIER_2,
}


class Window:
    """The calls of one method (or one channel's posts): at most ``tier.calls`` in any ``tier.seconds``. A call
    holds its place from when it is sent until ``tier.seconds`` after its answer came, so that Slack, which
    counts a call when it arrives, never sees more than the tier in any window."""

    def __init__(self, tier: Tier, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.tier = tier
        self.clock = clock
        self.sending = 0
        self._answered: deque[float] = deque()
        self._changed = asyncio.Condition()

    def delay(self) -> float:
        """Seconds until one more call may be sent (0: now; inf: when a call being sent is answered)."""
        now = self.clock()
        while self._answered and self._answered[0] <= now - self.tier.seconds:
            self._answered.popleft()
        if self.sending + len(self._answered) < self.tier.calls:
            return 0.0
        if not self._answered:
            return math.inf
        return self._answered[0] + self.tier.seconds - now

    def try_take(self) -> bool:
        """Take a place for a call if one is free now."""
        if self.delay() > 0:
            return False
        self.sending += 1
        return True

    async def take(self) -> None:
        """Wait for a place, then take it."""
        async with self._changed:
            while (wait := self.delay()) > 0:
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), None if wait == math.inf else wait)
            self.sending += 1

    async def sent(self, *, called: bool = True) -> None:
        """The call was answered (or, ``called=False``, never made: its place is free at once)."""
        self.sending -= 1
        if called:
            self._answered.append(self.clock())
        async with self._changed:
            self._changed.notify_all()


class Budget:
    """A :class:`Window` per method, and per channel where the tier counts per channel; methods without a tier
    are not held back."""

    def __init__(self, tiers: Mapping[str, Tier] = SLACK_TIERS, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.tiers = dict(tiers)
        self.clock = clock
        self.share = 1  # how many rigops share the app's budget (replicas on one state)
        self._windows: dict[tuple[str, str | None], Window] = {}

    def set_share(self, rigops: int) -> None:
        """``rigops`` processes of the app are running (replicas, each with its own connection): Slack's limits
        are the app's, so each keeps to its part of every tier (at least one call per window)."""
        self.share = max(1, rigops)
        for (method, _), window in self._windows.items():
            window.tier = self._part(self.tiers[method])

    def window(self, method: str, channel: str | None = None) -> Window | None:
        tier = self.tiers.get(method)
        if tier is None:
            return None
        key = (method, channel if tier.per_channel else None)
        if key not in self._windows:
            self._windows[key] = Window(self._part(tier), clock=self.clock)
        return self._windows[key]

    def _part(self, tier: Tier) -> Tier:
        return replace(tier, calls=max(1, tier.calls // self.share))

    @asynccontextmanager
    async def call(self, *methods: str, channel: str | None = None) -> AsyncIterator[None]:
        """Wait until each of ``methods`` may be called, and hold their places while the calls are made."""
        windows = [w for w in (self.window(m, channel) for m in methods) if w is not None]
        taken: list[Window] = []
        try:
            for window in windows:
                await window.take()
                taken.append(window)
            yield
        finally:
            for window in taken:
                await window.sent()


EditKey = tuple[str, str]  # channel, message ts
SendEdit = Callable[[Place, str, Message], Awaitable[bool]]


class Edits:
    """Edits of posted messages through chat.update's window. Edits of one message coalesce: only its newest
    waiting text is sent. With room in the window and nothing waiting, an edit is sent at once and its answer
    returned; otherwise it waits its turn (the message edited longest ago goes first) and ``update`` answers
    True at once, so whoever edits (a build's card, every few seconds) is never held up, and what it posts next
    (an alert, a result) goes out at once, through the posts' own window."""

    def __init__(self, window: Window | None, send: SendEdit, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self.send = send
        self.clock = clock
        self._waiting: dict[EditKey, tuple[Place, Message]] = {}
        self._sending: set[EditKey] = set()
        self._last: dict[EditKey, float] = {}
        self._wake = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def update(self, place: Place, message_id: str, message: Message) -> bool:
        """Edit now and say whether Slack took it, or queue the edit and say True."""
        if self.window is None:
            return await self.send(place, message_id, message)
        key = (place.channel, message_id)
        if key in self._sending or self._waiting or not self.window.try_take():
            self._waiting[key] = (place, message)
            if self._worker is None:
                self._worker = asyncio.create_task(self._drain(), name="slack-edits")
            return True
        return await self._send(key, place, message)

    async def close(self, *, wait: float) -> None:
        """Send what waits for up to ``wait`` seconds, then give up on the rest."""
        worker = self._worker
        if worker is not None:
            await asyncio.wait({worker}, timeout=wait)
            if self._waiting:
                log.warning("%d message edits not sent: rigops is stopping", len(self._waiting))
            await cancel(worker)

    async def _send(self, key: EditKey, place: Place, message: Message) -> bool:
        """Send one edit whose place in the window is taken."""
        assert self.window is not None
        self._sending.add(key)
        try:
            return await self.send(place, key[1], message)
        finally:
            self._sending.discard(key)
            self._remember(key)
            await self.window.sent()
            self._wake.set()

    async def _drain(self) -> None:
        assert self.window is not None
        try:
            while self._waiting:
                await self.window.take()
                key = self._next()
                if key is None:  # each waiting message is being edited already: wait for one to be done
                    self._wake.clear()
                    await self.window.sent(called=False)
                    await self._wake.wait()
                    continue
                place, message = self._waiting.pop(key)
                try:
                    await self._send(key, place, message)
                except Exception:
                    log.exception("editing message %s in %s failed", key[1], key[0])
        finally:
            self._worker = None

    def _next(self) -> EditKey | None:
        ready = [key for key in self._waiting if key not in self._sending]
        return min(ready, key=lambda key: self._last.get(key, -math.inf), default=None)

    def _remember(self, key: EditKey) -> None:
        self._last.pop(key, None)
        self._last[key] = self.clock()
        if len(self._last) > EDITS_KEPT:  # the oldest go first (dicts keep the order of insertion)
            for old in list(self._last)[: EDITS_KEPT // 2]:
                del self._last[old]
