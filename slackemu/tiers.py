"""Slack's rate tiers, enforced: each Web API method allows so many calls in a window, per app per workspace
(``chat.postMessage`` per channel); a call past its tier is answered HTTP 429 with ``Retry-After``, as Slack does.

Figures from https://api.slack.com/docs/rate-limits (Tier 2 20+/min, Tier 3 50+/min, Tier 4 100+/min; posting
"1 per second" per channel, "short bursts >1 allowed") and each method's page for its tier. Slack gives the floor
of each tier ("50+"), so the floor is what is enforced; how long a tolerated burst may be is not documented, so a
post's window is ten seconds (ten posts at once, one a second on average)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

MINUTE = 60.0


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
    "chat.delete": TIER_3,
    "chat.postEphemeral": TIER_4,
    "reactions.add": TIER_3,
    "reactions.remove": TIER_2,
    "files.getUploadURLExternal": TIER_4,
    "files.completeUploadExternal": TIER_4,
    "conversations.info": TIER_3,
    "conversations.open": TIER_3,
    "conversations.list": TIER_2,
    "users.info": TIER_4,
    "usergroups.users.list": TIER_2,
    "views.publish": TIER_4,
    "views.open": TIER_4,
}


class RateTiers:
    """The calls each method (and channel) was allowed lately; ``admit`` says whether one more is, and if not,
    after how many whole seconds (Slack's ``Retry-After``)."""

    def __init__(self, tiers: Mapping[str, Tier]) -> None:
        self.tiers = dict(tiers)
        self._seen: dict[tuple[str, str | None], deque[float]] = {}

    def admit(self, method: str, channel: str | None, now: float) -> int | None:
        """None when the call is allowed (and counted), else the seconds to wait before trying again."""
        tier = self.tiers.get(method)
        if tier is None:
            return None
        seen = self._seen.setdefault((method, channel if tier.per_channel else None), deque())
        while seen and seen[0] <= now - tier.seconds:
            seen.popleft()
        if len(seen) >= tier.calls:
            return max(1, math.ceil(seen[0] + tier.seconds - now))
        seen.append(now)
        return None
