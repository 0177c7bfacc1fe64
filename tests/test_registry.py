"""The action registry: each module in bot/actions/ exports one spec, and what switches on actions (the command
table, help, the manifest's usage hint, the steps' order and parameters, the fleet's rows) is built from it."""

from __future__ import annotations

import json
import pkgutil
from pathlib import Path

import bot.actions
from bot.actions.registry import MODULES, ActionSpec, Reading, specs
from bot.language.commands import CORE_COMMANDS, by_word, command, commands, step_names, usage_hint
from bot.language.plan import Plan, Step
from bot.text import messages

ROOT = Path(__file__).resolve().parents[1]
NOT_ACTIONS = {"registry"}  # the registry itself


def test_every_action_module_exports_its_spec_and_is_registered() -> None:
    modules = {m.name for m in pkgutil.iter_modules(bot.actions.__path__)} - NOT_ACTIONS
    assert set(MODULES) == modules  # a module left out of MODULES would never be asked for
    assert [s.name for s in specs()] == list(MODULES)
    assert all(isinstance(s, ActionSpec) and s.command.is_action for s in specs())


def test_the_command_table_is_the_actions_then_the_cores_and_each_word_means_one_command() -> None:
    assert commands() == (*(s.command for s in specs()), *CORE_COMMANDS)
    words = [w for c in commands() for w in (c.name, *c.words)]
    assert len(words) == len(set(words))
    assert all(by_word(w) is not None for w in words) and by_word("bogus") is None
    assert set(step_names()) == {c.name for c in commands() if c.is_action}
    assert step_names()[:7] == ("kill", "mem", "rebuild", "status", "log", "gpu", "chart")  # the order steps run


def test_help_and_the_manifest_hint_come_from_the_table() -> None:
    text = messages.help_text()
    assert all(f"`{c.name}" in text and c.help in text for c in commands())
    manifest = json.loads((ROOT / "manifests" / "rigops.json").read_text())
    [rigops] = manifest["features"]["slash_commands"]
    assert rigops["usage_hint"] == usage_hint()
    assert usage_hint().startswith("status | mem | gpu")


def test_a_step_carries_and_shows_only_its_action_s_parameters() -> None:
    assert Step("rebuild", jobs=8, clean=True).to_json() == {"action": "rebuild", "jobs": 8, "clean": True}
    assert Step("rebuild").to_json() == {"action": "rebuild", "jobs": None}
    assert Step("log", lines=5).to_json() == {"action": "log", "lines": 5}
    assert Step("mem", jobs=8).to_json() == {"action": "mem"}
    assert Plan(steps=(Step("kill"), Step("mem"))).destructive and not Plan(steps=(Step("mem"),)).destructive
    assert command("rebuild").describe is not None


def test_looks_for_every_host_have_rows_of_their_own() -> None:
    looks = [s for s in specs() if s.command.looks_everywhere]
    assert {s.name for s in looks} >= {"mem", "status", "gpu"}
    assert all(s.row.__name__ != "_done" for s in looks)  # a fleet's row says more than "done"
    assert not any(s.command.looks_everywhere for s in specs() if s.command.destructive)


def test_a_reading_is_plain_data() -> None:
    assert Reading() == Reading(text=None, files=(), summary="")
