"""Groups and "all" in the config and in chat."""

from __future__ import annotations

import pytest

from bot.config import parse
from bot.language import intents
from bot.util.errors import ConfigError

CONFIG = parse({"hosts": {"n1": {"address": "local"}, "n2": {"address": "local"},
                          "b200": {"address": "local", "builds": {"sgl": {"workdir": "/w", "command": "make"}}}},
                "groups": {"a100": ["n1", "n2"]}})


@pytest.mark.parametrize(("text", "host", "action"), [
    ("status all", "all", "status"), ("how's memory on all hosts?", "all", "mem"), ("mem on a100", "a100", "mem"),
    ("nvidia-smi on every box", "all", "gpu"), ("gpu util across all?", "all", "gpu"),
    ("free -h on b200", "b200", "mem"), ("what's running on a100", "a100", "status"),
])
def test_groups_and_all_are_hosts_for_looking(text: str, host: str, action: str) -> None:
    plan = intents.parse(text, config=CONFIG)
    assert (plan.host, [s.action for s in plan.steps], plan.error) == (host, [action], None)


@pytest.mark.parametrize("text", ["kill the build on a100", "rebuild on all hosts -j8", "tail the log on a100"])
def test_destructive_or_single_host_steps_refuse_a_group(text: str) -> None:
    plan = intents.parse(text, config=CONFIG)
    assert plan.error is not None and "one host at a time" in plan.error


@pytest.mark.parametrize("text", ["all good, thanks", "we all know", "that's all folks", "all tests passed"])
def test_the_word_all_alone_is_not_a_request(text: str) -> None:
    assert intents.parse(text, config=CONFIG).steps == ()


def test_slash_commands_take_all_and_groups() -> None:
    assert intents.parse_command("status all", config=CONFIG).host == "all"
    assert intents.parse_command("mem a100", config=CONFIG).host == "a100"
    assert CONFIG.members("a100") == ("n1", "n2") and CONFIG.members("all") == ("n1", "n2", "b200")


@pytest.mark.parametrize(("groups", "message"), [
    ({"a100": ["n9"]}, "unknown host 'n9'"), ({"n1": ["n2"]}, "'n1' is already a host name"),
    ({"all": ["n1"]}, "not 'all'"), ({"a100": []}, "expected a non-empty list"),
])
def test_bad_groups_are_config_errors(groups: dict[str, list[str]], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse({"hosts": {"n1": {"address": "local"}, "n2": {"address": "local"}}, "groups": groups})


def test_a_schedule_over_a_group_posts_its_members() -> None:
    from bot.core.schedules import _hosts

    cfg = parse({"hosts": {"n1": {"address": "local"}, "n2": {"address": "local"}, "b": {"address": "local"}},
                 "groups": {"a100": ["n1", "n2"]},
                 "schedules": [{"cron": "hourly", "channel": "C0OPS", "hosts": ["a100", "b"]}]})
    assert cfg.schedules[0].hosts == ("n1", "n2", "b")
    assert _hosts("a100,n1", cfg) == ("n1", "n2")
    with pytest.raises(ConfigError, match="unknown host or group 'a200'"):
        parse({"hosts": {"n1": {"address": "local"}}, "groups": {"a100": ["n1"]},
               "schedules": [{"cron": "hourly", "channel": "C0OPS", "hosts": ["a200"]}]})
