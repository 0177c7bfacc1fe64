"""The ``[policy]`` table: who may do what, where. Parsed loudly; a policy that does not parse stops rigops.

    [policy]
    operators = ["U012ABCDE", "S0GPUTEAM"]   # Slack user or user-group ids: may kill and rebuild
    admins = ["U0ADMIN01"]                   # also schedules and audit; everyone else is a viewer
    confirm_timeout = 600                    # seconds a Run button stays valid
    auto_approve = ["admin"]                 # roles whose destructive requests run without a Run button
    rate_limit = 30                          # requests per user per minute
    audit_channel = "C0AUDIT01"              # optional: mirror the audit log there
    [policy.hosts.b200]
    operators = ["U0SOMEONE"]                # extra operators for one host
    auto_approve = ["operator"]
    [policy.channels.C0123ABCD]
    operators = ["U0OTHER"]                  # extra operators for requests made in one channel
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

Role = Literal["viewer", "operator", "admin"]
ROLES: tuple[Role, ...] = ("viewer", "operator", "admin")
# A person, a group of people or a channel, as the front end names them: opaque here. Which forms a front end gives
# (Slack's U…/W…/S… and C…/G…/D…) it checks itself when it starts (bot.frontends.slack.ids).
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,79}$")
DEFAULT_CONFIRM_TIMEOUT = 600.0
DEFAULT_RATE_LIMIT = 30


@dataclass(frozen=True)
class Grants:
    operators: frozenset[str] = frozenset()
    auto_approve: frozenset[Role] = frozenset()


@dataclass(frozen=True)
class PolicyConfig:
    operators: frozenset[str] = frozenset()
    admins: frozenset[str] = frozenset()
    confirm_timeout: float = DEFAULT_CONFIRM_TIMEOUT
    auto_approve: frozenset[Role] = frozenset()
    rate_limit: int = DEFAULT_RATE_LIMIT
    audit_channel: str | None = None
    hosts: Mapping[str, Grants] = field(default_factory=dict)
    channels: Mapping[str, Grants] = field(default_factory=dict)


Fail = Callable[[str, str], NoReturn]


def parse_policy(raw: Mapping[str, Any], *, hosts: set[str], fail: Fail) -> PolicyConfig:
    known = {"operators", "admins", "confirm_timeout", "auto_approve", "rate_limit", "audit_channel", "hosts",
             "channels"}
    _no_unknown(raw, known, "policy", fail)
    timeout = raw.get("confirm_timeout", DEFAULT_CONFIRM_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        fail("policy.confirm_timeout", f"expected a positive number of seconds, got {timeout!r}")
    rate = raw.get("rate_limit", DEFAULT_RATE_LIMIT)
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
        fail("policy.rate_limit", f"expected a positive number of requests per minute, got {rate!r}")
    audit = raw.get("audit_channel")
    if audit is not None and (not isinstance(audit, str) or not ID_RE.match(audit)):
        fail("policy.audit_channel", f"expected a channel id like C0123ABCD, got {audit!r}")
    host_grants = {name: _grants(g, f"policy.hosts.{name}", fail) for name, g in _table(raw, "hosts", fail).items()}
    for name in host_grants:
        if name not in hosts:
            fail(f"policy.hosts.{name}", f"no such host in [hosts] (known: {', '.join(sorted(hosts))})")
    channel_grants = {}
    for ch, g in _table(raw, "channels", fail).items():
        if not ID_RE.match(ch):
            fail(f"policy.channels.{ch}", "expected a channel id like C0123ABCD")
        channel_grants[ch] = _grants(g, f"policy.channels.{ch}", fail)
    return PolicyConfig(
        operators=_principals(raw, "operators", "policy", fail), admins=_principals(raw, "admins", "policy", fail),
        confirm_timeout=float(timeout), auto_approve=_roles(raw, "policy", fail), rate_limit=rate,
        audit_channel=audit, hosts=host_grants, channels=channel_grants)


def _grants(raw: Any, key: str, fail: Fail) -> Grants:
    if not isinstance(raw, dict):
        fail(key, "expected a table")
    _no_unknown(raw, {"operators", "auto_approve"}, key, fail)
    return Grants(operators=_principals(raw, "operators", key, fail), auto_approve=_roles(raw, key, fail))


def _principals(raw: Mapping[str, Any], name: str, key: str, fail: Fail) -> frozenset[str]:
    value = raw.get(name, [])
    if not isinstance(value, list):
        fail(f"{key}.{name}", "expected a list of user or user-group ids")
    for item in value:
        if not isinstance(item, str) or not ID_RE.match(item):
            fail(f"{key}.{name}", f"{item!r} is not a user id or user-group id (U012ABCDE, S0GPUTEAM)")
    return frozenset(value)


def _roles(raw: Mapping[str, Any], key: str, fail: Fail) -> frozenset[Role]:
    value = raw.get("auto_approve", [])
    if not isinstance(value, list) or any(v not in ROLES for v in value):
        fail(f"{key}.auto_approve", f"expected a list of roles from {', '.join(ROLES)}, got {value!r}")
    return frozenset(value)


def _table(raw: Mapping[str, Any], name: str, fail: Fail) -> dict[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, dict):
        fail(f"policy.{name}", "expected a table")
    return dict(value)


def _no_unknown(raw: Mapping[str, Any], known: set[str], key: str, fail: Fail) -> None:
    for k in raw:
        if k not in known:
            fail(f"{key}.{k}", f"unknown key (expected one of: {', '.join(sorted(known))})")
