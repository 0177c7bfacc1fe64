"""A clean rebuild asked for in chat or by slash command: read as a rebuild that removes the build directory rigops
keeps for the build first, shown so in the plan, refused for a build that names its own build directory, and only
a warning for one whose runs keep nothing. What the removal does on a host is tests/hosts/test_agent.py's; the
whole of it on a real scikit-build-core project is tests/core/test_resume_real.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot import config
from bot.actions.rebuild import build_env, kept_dir, setup_of
from bot.language.intents import parse, parse_command
from bot.language.plan import Plan, Step
from bot.text.render import describe_step

CFG = config.load(Path(__file__).resolve().parent / "data" / "chat" / "rigops.toml")


def said(text: str, *, addressed: bool = False) -> Plan:
    return parse(text, config=CFG, addressed=addressed, channel="C0OPS")


def rebuilds(plan: Plan) -> list[Step]:
    return [s for s in plan.steps if s.action == "rebuild"]


@pytest.mark.parametrize("text", [
    "rebuild vllm on node-3 from scratch",
    "rebuild vllm on node-3 clean, -j8",
    "clean rebuild of vllm on node-3 please",
    "can you do a fresh build of vllm on node-3",
    "wipe the build dir and rebuild vllm on node-3",
    "nuke the build directory, then start vllm again on node-3",
    "do a make clean then rebuild vllm on node-3",
    "restart vllm on node-3 from a clean slate",
])
def test_a_clean_start_asked_for_in_chat_is_a_clean_rebuild(text: str) -> None:
    plan = said(text)
    assert (plan.host, plan.build, plan.error) == ("node-3", "vllm", None), plan
    [step] = rebuilds(plan)
    assert step.clean, plan
    assert plan.to_json()["steps"][-1]["clean"] is True


@pytest.mark.parametrize("text", [
    "rebuild vllm on node-3",
    "rebuild vllm on node-3 -j8, no need to clean anything",
    "rebuild vllm on node-3 but don't wipe the build dir",
    "retry vllm on node-3 at -j4",
])
def test_a_rebuild_that_does_not_ask_for_it_keeps_the_work(text: str) -> None:
    plan = said(text)
    [step] = rebuilds(plan)
    assert not step.clean, plan
    assert "clean" not in plan.to_json()["steps"][-1]  # the JSON contract's step, as before


@pytest.mark.parametrize("text", [
    "the clean build of vllm finally succeeded on node-3",
    "fresh build of vllm failed again on node-3",
    "did a clean rebuild of vllm on node-3 yesterday, took an hour",
    "wipe the build dir on node-3",  # removes nothing by itself: a clean start comes only with a rebuild
])
def test_a_clean_build_told_of_is_not_asked_for(text: str) -> None:
    assert not rebuilds(said(text)), said(text)


@pytest.mark.parametrize("text", ["rebuild --clean vllm node-3 -j8", "rebuild node-3 vllm clean", "retry --fresh"])
def test_the_slash_command_takes_clean(text: str) -> None:
    plan = parse_command(text, config=CFG)
    [step] = plan.steps
    assert step.action == "rebuild" and step.clean, plan
    assert parse_command("rebuild node-3 vllm -j8", config=CFG).steps[0].clean is False
    # only a rebuild is clean: to other commands the word is a bad argument
    assert parse_command("status node-3 --clean", config=CFG).error


def test_the_plan_says_the_kept_directory_goes_first() -> None:
    plan = said("rebuild vllm on node-3 from scratch at -j8")
    line = describe_step(rebuilds(plan)[0], plan)
    assert line == "start `vllm` at -j8, clean: the build directory rigops keeps for it is removed first", line
    assert Plan.from_json(plan.to_json()).steps == plan.steps  # a plan kept in the state keeps its clean


def cfg_with(build: dict[str, Any]) -> config.Config:
    return config.parse({"hosts": {"b200": {"builds": {"skb": {"workdir": "/srv/skb", "command": "pip install .",
                                                                **build}}}}})


def test_a_build_that_names_its_own_build_directory_is_refused_a_clean_rebuild() -> None:
    for build in ({"command": "pip install . -C build-dir=build/{wheel_tag}"},
                  {"env": {"SKBUILD_BUILD_DIR": "/scratch/skb"}}):
        cfg = cfg_with(build)
        plan = parse_command("rebuild --clean", config=cfg)
        assert plan.error and "names its own build directory" in plan.error, plan
        assert parse_command("rebuild", config=cfg).error is None
        own = cfg.hosts["b200"].builds["skb"]
        assert kept_dir(own, clean=True) is None  # nothing of its own is touched
        assert build_env(own, 4).get("SKBUILD_BUILD_DIR") == own.env.get("SKBUILD_BUILD_DIR")


def test_a_build_that_keeps_nothing_rebuilds_as_always_with_a_warning() -> None:
    cfg = cfg_with({"resume": "never"})
    plan = parse_command("rebuild --clean -j4", config=cfg)
    assert plan.error is None and plan.steps[0].clean
    assert any('resume = "never"' in w for w in plan.warnings), plan.warnings
    assert kept_dir(cfg.hosts["b200"].builds["skb"], clean=True) is None


def test_the_setup_the_kept_work_depends_on_ignores_the_jobs_and_hides_the_values() -> None:
    build = cfg_with({"command": "pip install . -v -j{jobs}", "env": {"CMAKE_ARGS": "-DX=1", "HF_TOKEN": "hf_secret",
                                                                        "MAX_JOBS": "8"}}).hosts["b200"].builds["skb"]
    setup = setup_of(build)
    assert set(setup) == {"command", "cache", "CMAKE_ARGS", "HF_TOKEN"}  # MAX_JOBS says how fast, not what
    assert "hf_secret" not in repr(setup) and "-DX=1" not in repr(setup)
    other = cfg_with({"command": "pip install . -v -j{jobs}", "env": {"CMAKE_ARGS": "-DX=2", "HF_TOKEN": "hf_secret",
                                                                        "MAX_JOBS": "32"}}).hosts["b200"].builds["skb"]
    changed = {k for k in setup if setup[k] != setup_of(other)[k]}
    assert changed == {"CMAKE_ARGS"}
    kept = kept_dir(build, clean=False)
    assert kept is not None and kept.dir == "build/rigops-skb" and not kept.clean
    assert kept.setup_file == "~/.local/state/rigops/logs/skb.setup.json"
    assert build_env(build, 4)["SKBUILD_BUILD_DIR"] == "build/rigops-skb/{wheel_tag}"
