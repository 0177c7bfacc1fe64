"""The chat corpus (tests/data/chat): real phrasings, each with its source and its label, read against a config
of its own. Checked here for shape (a label rigops could follow: its vocabulary, the config's names, bounded
numbers); how well rigops reads it is measured by bench/bench_chat.py, part by part."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from bench.bench_chat import judge, part_of
from bot import config as config_mod
from bot.language import intents

CHAT = Path(__file__).parents[1] / "data" / "chat"
ITEMS = [json.loads(line) for line in (CHAT / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line]
CONFIG = tomllib.loads((CHAT / "rigops.toml").read_text(encoding="utf-8"))
ACTIONS = {"kill", "rebuild", "mem", "status", "log", "gpu"}


def test_every_item_is_real_labelled_and_unique() -> None:
    assert len(ITEMS) >= 1000  # issue 22 asks for at least 1,000 real phrasings
    hosts = set(CONFIG["hosts"]) | set(CONFIG["groups"])
    builds = {b for host in CONFIG["hosts"].values() for b in host.get("builds", {})}
    assert len({i["id"] for i in ITEMS}) == len({i["text"] for i in ITEMS}) == len(ITEMS)
    for item in ITEMS:
        assert item["source"].startswith("http") and item["original"].strip(), item["id"]
        expect = item["expect"]
        assert all(step["action"] in ACTIONS for step in expect["steps"]), item["id"]
        if not expect["refuse"]:
            assert expect["host"] in hosts | {None} and expect["build"] in builds | {None}, item["id"]
            assert all(1 <= (s["jobs"] or 1) <= 1024 for s in expect["steps"]), item["id"]
    held = sum(part_of(i) == "held out" for i in ITEMS) / len(ITEMS)
    assert 0.2 <= held <= 0.45
    assert 0.25 <= sum(not i["expect"]["steps"] for i in ITEMS) / len(ITEMS) <= 0.75  # negatives are many


def test_the_judge_tells_a_dangerous_read() -> None:
    config = config_mod.load(CHAT / "rigops.toml")
    story = {"id": "x", "addressed": False, "expect": {"host": None, "build": None, "steps": [], "refuse": False}}
    plan = intents.parse("kill the build on node-3", config=config, channel="C0OPS")
    assert plan.steps and judge(story, plan) == (False, True)
    asked = {**story, "expect": {"host": "node-3", "build": "vllm", "steps": [{"action": "kill"}], "refuse": False}}
    assert judge(asked, plan) == (True, False)


def test_the_judge_takes_the_same_work_as_the_same() -> None:
    """A kill before a rebuild is the rebuild's; a memory look beside a kill is the kill's own report."""
    config = config_mod.load(CHAT / "rigops.toml")
    oom = intents.parse("oom-ing, kill vllm on node-3", config=config, channel="C0OPS")
    assert [s.action for s in oom.steps] == ["kill", "mem"]
    kill_only = {"id": "y", "addressed": False,
                 "expect": {"host": "node-3", "build": "vllm", "steps": [{"action": "kill"}], "refuse": False}}
    assert judge(kill_only, oom, config) == (True, False)
    retry = intents.parse("restart vllm on node-3 at -j4", config=config, channel="C0OPS")
    rebuild_only = {**kill_only, "expect": {**kill_only["expect"], "steps": [{"action": "rebuild", "jobs": 4}]}}
    assert judge(rebuild_only, retry, config) == (True, False)
    wrong_jobs = {**kill_only, "expect": {**kill_only["expect"], "steps": [{"action": "rebuild", "jobs": 8}]}}
    assert judge(wrong_jobs, retry, config) == (False, False)


def test_a_memory_look_before_a_rebuild_is_its_kill_s_report() -> None:
    """ "show mem, then restart X at 4": a rebuild stops the build first and posts the memory it gets back, so the
    look before it is read the same with or without the kill that the restart says."""
    config = config_mod.load(CHAT / "rigops.toml")
    plan = intents.parse("show mem on node-3, then restart vllm with -j4", config=config, channel="C0OPS")
    assert [s.action for s in plan.steps] == ["mem", "kill", "rebuild"]
    asked = {"id": "w", "addressed": False, "expect": {"host": "node-3", "build": "vllm", "refuse": False,
                                                       "steps": [{"action": "mem"}, {"action": "rebuild", "jobs": 4}]}}
    assert judge(asked, plan, config) == (True, False)
    without_the_look = intents.parse("restart vllm on node-3 with -j4", config=config, channel="C0OPS")
    assert judge(asked, without_the_look, config) == (True, False)


def test_a_memory_look_after_a_rebuild_is_work_of_its_own() -> None:
    """ "restart X, and how much swap is there?" asks two things: the look is not the kill's report."""
    config = config_mod.load(CHAT / "rigops.toml")
    plan = intents.parse("<@U0RIGOPS> restart vllm on node-3 and try again? how much swap is there on node-3?",
                         config=config, channel="C0OPS", addressed=True)
    assert [s.action for s in plan.steps] == ["kill", "rebuild", "mem"]
    both = {"id": "z", "addressed": True, "expect": {"host": "node-3", "build": "vllm", "refuse": False,
                                                    "steps": [{"action": "rebuild"}, {"action": "mem"}]}}
    assert judge(both, plan, config) == (True, False)
    rebuild_only = {**both, "expect": {**both["expect"], "steps": [{"action": "rebuild"}]}}
    assert judge(rebuild_only, plan, config) == (False, False)


def test_a_request_that_names_no_build_asked_back_which_is_right_where_the_label_names_none() -> None:
    """ "retry w/ -j4?" in a channel whose host has two builds: rigops asks which build, the label names none."""
    config = config_mod.load(CHAT / "rigops.toml")
    plan = intents.parse("<@U0RIGOPS> retry it with -j4", config=config, channel="C0OPS", addressed=True)
    assert plan.question is not None and plan.question.kind == "build", plan
    asked = {"id": "v", "addressed": True, "expect": {"host": "b200", "build": None, "refuse": False,
                                                     "steps": [{"action": "rebuild", "jobs": 4}]}}
    assert judge(asked, plan, config) == (True, False)
    assert judge({**asked, "expect": {**asked["expect"], "host": "node-3"}}, plan, config) == (False, False)
    assert judge({**asked, "expect": {**asked["expect"], "build": "flash-attn"}}, plan, config) == (False, False)
    assert judge({**asked, "expect": {**asked["expect"], "steps": [{"action": "rebuild", "jobs": 8}]}}, plan,
                 config) == (False, False)
