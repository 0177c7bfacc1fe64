"""Slack's id formats, checked where Slack is the front end: the config names channels and people by id, and
below this package an id is an opaque name (bot.policy_config.ID_RE). A config whose ids Slack would never send
stops ``rigops run`` and ``rigops check`` before the first connection, each error naming its key."""

from __future__ import annotations

import re
from collections.abc import Iterator

from bot.config import Config
from bot.util.errors import ConfigError

CHANNEL_ID_RE = re.compile(r"^[CGD][A-Z0-9]{2,}$")  # a channel (C…), a private one of old (G…), a DM (D…)
PRINCIPAL_RE = re.compile(r"^[USW][A-Z0-9]{2,}$")  # a user (U…, or W… on Enterprise Grid) or a user group (S…)


def check_ids(config: Config) -> None:
    """Raise ConfigError on the first channel or person the config names by an id that is not Slack's."""
    path = str(config.path) if config.path else "<config>"
    for key, channel in _channels(config):
        if not CHANNEL_ID_RE.match(channel):
            raise ConfigError(f"expected a Slack channel id like C0123ABCD, got {channel!r}", path=path, key=key)
    for key, who in _principals(config):
        if not PRINCIPAL_RE.match(who):
            raise ConfigError(f"{who!r} is not a Slack user id (U…, W…) or user-group id (S…)", path=path, key=key)


def _channels(config: Config) -> Iterator[tuple[str, str]]:
    for i, channel in enumerate(config.slack.ops_channels):
        yield f"slack.ops_channels[{i}]", channel
    for channel in config.slack.channel_hosts:
        yield f"slack.channels.{channel}", channel
    for i, schedule in enumerate(config.schedules):
        yield f"schedules[{i}].channel", schedule.channel
    policy = config.policy
    if policy is not None:
        if policy.audit_channel is not None:
            yield "policy.audit_channel", policy.audit_channel
        for channel in policy.channels:
            yield f"policy.channels.{channel}", channel


def _principals(config: Config) -> Iterator[tuple[str, str]]:
    policy = config.policy
    if policy is None:
        return
    for role, people in (("operators", policy.operators), ("admins", policy.admins)):
        for who in sorted(people):
            yield f"policy.{role}", who
    for kind, grants in (("hosts", policy.hosts), ("channels", policy.channels)):
        for name, grant in grants.items():
            for who in sorted(grant.operators):
                yield f"policy.{kind}.{name}.operators", who
