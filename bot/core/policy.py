"""Who may do what, where: viewer (status, mem, gpu, log), operator (kill, rebuild on their hosts), admin
(also schedules and audit). Identity is the verified user id of the Slack event, never a name in the text.

Without a ``[policy]`` table everyone in Slack is a viewer; the console's own user is an admin.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.config import Config
from bot.language.commands import command
from bot.language.plan import Plan
from bot.policy_config import PolicyConfig, Role

GroupMembers = Callable[[str], Awaitable[frozenset[str]]]
RATE_WINDOW = 60.0


@dataclass(frozen=True)
class Decision:
    allowed: bool
    role: Role
    auto_approved: bool = False
    reason: str = ""


async def no_groups(group: str) -> frozenset[str]:
    return frozenset()


class Policy:
    def __init__(self, config: Config, *, members: GroupMembers = no_groups, console_admin: str | None = None) -> None:
        self.config = config
        self.rules: PolicyConfig | None = config.policy
        self.members = members
        self.console_admin = console_admin if config.policy is None else None
        self._recent: dict[str, deque[float]] = {}
        self._share = 1

    async def _matches(self, user: str, principals: frozenset[str]) -> bool:
        if user in principals:
            return True
        for group in (p for p in principals if p.startswith("S")):
            if user in await self.members(group):
                return True
        return False

    async def role(self, user: str, *, host: str | None = None, channel: str | None = None) -> Role:
        """The user's role for a request on ``host`` made in ``channel``."""
        if user == self.console_admin:
            return "admin"
        rules = self.rules
        if rules is None:
            return "viewer"
        if await self._matches(user, rules.admins):
            return "admin"
        operators = rules.operators
        if host is not None and host in rules.hosts:
            operators = operators | rules.hosts[host].operators
        if channel is not None and channel in rules.channels:
            operators = operators | rules.channels[channel].operators
        return "operator" if await self._matches(user, operators) else "viewer"

    async def decide(self, plan: Plan, user: str, *, channel: str | None) -> Decision:
        """May ``user`` run ``plan``, and does it skip the Run button?"""
        role = await self.role(user, host=plan.host, channel=channel)
        destructive = [s.action for s in plan.steps if command(s.action).role != "viewer"]
        if destructive and role == "viewer":
            where = f" on {plan.host}" if plan.host else ""
            why = ("there is no [policy] in rigops' config, so nobody may" if self.rules is None and
                   user != self.console_admin else "you are not an operator" + where + ", so you may not")
            return Decision(False, role, reason=f"{why} {' or '.join(destructive)}; ask an admin to add you")
        return Decision(True, role, auto_approved=self.auto_approved(role, plan.host))

    def auto_approved(self, role: Role, host: str | None) -> bool:
        rules = self.rules
        if rules is None:
            return False
        extra = rules.hosts[host].auto_approve if host is not None and host in rules.hosts else frozenset()
        roles = rules.auto_approve | extra
        return role in roles

    async def may_press_run(self, presser: str, *, host: str | None, channel: str | None) -> bool:
        """The requester (still an operator) or any other operator of the host may press Run; viewers may not."""
        return await self.role(presser, host=host, channel=channel) != "viewer"

    async def is_admin(self, user: str) -> bool:
        return await self.role(user) == "admin"

    def confirm_timeout(self) -> float:
        return self.rules.confirm_timeout if self.rules else 600.0

    def requests_in_window(self, user: str) -> int:
        return len(self._recent.get(user, ()))

    def set_share(self, rigops: int) -> None:
        """``rigops`` processes share the state (replicas): Slack spreads a person's requests over them, so each
        holds the person to its part of the limit."""
        self._share = max(1, rigops)

    def over_rate_limit(self, user: str, *, now: float | None = None) -> bool:
        """Count a request; True when the user made more than the limit in the last minute (with replicas, more
        than this rigops' part of it)."""
        now = time.monotonic() if now is None else now
        limit = math.ceil((self.rules.rate_limit if self.rules else 30) / self._share)
        recent = self._recent.setdefault(user, deque())
        while recent and recent[0] < now - RATE_WINDOW:
            recent.popleft()
        recent.append(now)
        return len(recent) > limit
