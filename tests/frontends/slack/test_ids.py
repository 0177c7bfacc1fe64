"""Slack's id formats are checked by the Slack front end (bot/frontends/slack/ids.py): below it a channel or a
person is an opaque id, so the config reads ``ops-room`` or ``bob``, and ``rigops run``, ``rigops check`` and the
bolt app refuse them, naming the key, before anything connects."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import parse
from bot.frontends.slack.app import create_app
from bot.frontends.slack.ids import check_ids
from bot.util.errors import ConfigError

SLACK_SHAPED = {
    "slack": {"ops_channels": ["C0123ABCD", "G0PRIVATE1"], "channels": {"C0OPS0001": {"hosts": ["b200"]}}},
    "hosts": {"b200": {}},
    "schedules": [{"cron": "hourly", "channel": "C0DIGEST1"}],
    "policy": {"operators": ["U012ABCDE", "S0GPUTEAM", "W0GRID001"], "admins": ["U0ADMIN01"],
               "audit_channel": "C0AUDIT01", "hosts": {"b200": {"operators": ["U0SOMEONE"]}},
               "channels": {"C0123ABCD": {"operators": ["U0OTHER01"]}}},
}


def with_(path: tuple[str, ...], value: object) -> dict[str, object]:
    """SLACK_SHAPED with the value at ``path`` replaced (a list's item by its index)."""
    import copy

    data = copy.deepcopy(SLACK_SHAPED)
    here: object = data
    for step in path[:-1]:
        here = here[int(step)] if isinstance(here, list) else here[step]  # type: ignore[index]
    last = path[-1]
    if isinstance(here, list):
        here[int(last)] = value
    else:
        assert isinstance(here, dict)
        if isinstance(value, tuple):  # rename a table's key
            here[value[1]] = here.pop(value[0])
        else:
            here[last] = value
    return data


def test_slack_s_own_ids_pass() -> None:
    check_ids(parse(SLACK_SHAPED))


@pytest.mark.parametrize(("path", "value", "key"), [
    (("slack", "ops_channels", "1"), "ops-room", "slack.ops_channels[1]"),
    (("slack", "channels", "x"), ("C0OPS0001", "ops"), "slack.channels.ops"),
    (("schedules", "0", "channel"), "c0digest1", "schedules[0].channel"),
    (("policy", "audit_channel"), "audit", "policy.audit_channel"),
    (("policy", "channels", "x"), ("C0123ABCD", "general"), "policy.channels.general"),
    (("policy", "operators"), ["U012ABCDE", "bob"], "policy.operators"),
    (("policy", "admins"), ["admin.ops"], "policy.admins"),
    (("policy", "hosts", "b200", "operators"), ["T0TEAM001"], "policy.hosts.b200.operators"),
])
def test_an_id_slack_never_sends_is_refused_by_its_key(path: tuple[str, ...], value: object, key: str) -> None:
    config = parse(with_(path, value))  # the config itself takes any opaque id
    with pytest.raises(ConfigError, match=re.escape(f"key {key!r}: ")):
        check_ids(config)


def test_the_bolt_app_is_not_built_on_such_a_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"key 'policy.operators': 'bob' is not a Slack user id"):
        create_app(parse(with_(("policy", "operators"), ["bob"])), tmp_path, bot_token="xoxb-test")


@pytest.mark.parametrize("command", ["check", "run"])
def test_rigops_check_and_run_say_which_key(tmp_path: Path, command: str) -> None:
    config = tmp_path / "rigops.toml"
    config.write_text('[slack]\nops_channels = ["ops-room"]\n[hosts.local]\naddress = "local"\n')
    out = subprocess.run([sys.executable, "-m", "bot", "--config", str(config), "--state-dir", str(tmp_path / "s"),
                          command], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_APP_TOKEN": "xapp-test"})
    assert out.returncode != 0 and out.stdout == ""
    assert "key 'slack.ops_channels[0]': expected a Slack channel id like C0123ABCD, got 'ops-room'" in out.stderr
