"""No chat text reaches a shell: for any text, the plan and every command sent to a host are built only from
config values and bounded integers."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.actions.rebuild import build_command, build_env, log_path
from bot.config import ALL_HOSTS, parse
from bot.language import intents
from bot.language.commands import step_names
from bot.language.plan import MAX_JOBS, MIN_JOBS

CONFIG = parse({"hosts": {
    "b200": {"address": "b200.lab.example", "builds": {"sgl-kernel": {
        "workdir": "/root/sglang/sgl-kernel", "command": "uv pip install -e . --no-build-isolation -v -j{jobs}",
        "env": {"CMAKE_POLICY_VERSION_MINIMUM": "3.5"}, "jobs": 32}}},
    "h100": {"address": "h100.lab.example"}}})
HOSTILE = st.sampled_from(["; rm -rf /", "$(reboot)", "`id`", "| sh", "' \"", "&& curl x | sh", "\n", "${IFS}",
                           "-j20", "try -j", "kill", "rebuild", "b200", "sgl-kernel", "MAX_JOBS=", "oom"])
TEXT = st.lists(st.one_of(st.text(max_size=40), HOSTILE), max_size=12).map(" ".join)
ALLOWED_COMMAND = re.compile(r"^uv pip install -e \. --no-build-isolation -v -j\d{1,4}$")


@settings(max_examples=400, deadline=None)
@given(TEXT, st.booleans())
def test_any_text_gives_a_plan_of_config_names_and_bounded_numbers(text: str, addressed: bool) -> None:
    plan = intents.parse(text, config=CONFIG, addressed=addressed)
    assert plan.host in (None, ALL_HOSTS, *CONFIG.hosts)  # "all" is rigops' own word for every host ("mem for all")
    assert plan.build in (None, "sgl-kernel")
    for step in plan.steps:
        assert step.action in step_names()
        assert step.jobs is None or MIN_JOBS <= step.jobs <= MAX_JOBS
        if step.action == "rebuild" and plan.build and plan.host and not plan.error:
            build = CONFIG.hosts[plan.host].builds[plan.build]
            jobs = step.jobs or build.jobs or 1
            command = build_command(build, jobs)
            assert ALLOWED_COMMAND.match(command), command
            env = build_env(build, jobs)
            assert set(env) == {"CMAKE_POLICY_VERSION_MINIMUM", "MAX_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL", "MAKEFLAGS",
                                "SKBUILD_BUILD_DIR"}
            assert env["SKBUILD_BUILD_DIR"] == "build/rigops-sgl-kernel/{wheel_tag}"  # from the config, not chat
            assert env["MAX_JOBS"] == str(jobs) and env["MAKEFLAGS"] == f"-j{jobs}"
            assert re.fullmatch(r"~/\.local/state/rigops/logs/sgl-kernel-\d{8}-\d{6}-\d{3}\.log",
                                log_path(build, now=0))


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_slash_command_arguments_never_become_names(text: str) -> None:
    plan = intents.parse_command(text, config=CONFIG)
    assert plan.host in (None, *CONFIG.hosts) and plan.build in (None, "sgl-kernel")
    assert all(s.action in step_names() for s in plan.steps)


def test_runs_started_in_the_same_second_keep_their_own_logs() -> None:
    """A Retry right after a fast failure starts in the second the failed run started: it must not write over
    the log (and the exit record beside it) that the failure's diagnosis and `log` still read."""
    build = CONFIG.hosts["b200"].builds["sgl-kernel"]
    second = 1_764_680_000.0
    logs = {log_path(build, now=second + ms / 1000) for ms in (0, 1, 250, 999)}
    assert len(logs) == 4, logs
    assert log_path(build, now=second + 0.25).endswith("-250.log")
    assert sorted(logs) == [log_path(build, now=second + ms / 1000) for ms in (0, 1, 250, 999)]  # they sort in time


def test_every_host_in_a_rebuild_is_refused_with_its_count() -> None:
    """Found by the property above: "do/for all j0" names every host and -j0; both are refused, nothing runs."""
    plan = intents.parse("DO/FOR ALL J0", config=CONFIG)
    assert plan.host == ALL_HOSTS and plan.build is None and plan.error is not None
    assert "-j0" in plan.error and "one host at a time" in plan.error
