"""The disk look (bot/actions/disk.py): which places it measures, the agent's answer read
strictly (grouped by filesystem, sized as df sizes them), how it reads, and the phrasings that ask for it."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.actions import Target
from bot.actions import disk as text
from bot.actions.disk import STATE_DIR, DiskReport, Measured, Place, Space, parse_report, places
from bot.actions.rebuild import DEFAULT_LOG_DIR
from bot.actions.registry import spec
from bot.config import Config, parse
from bot.language import intents
from bot.reports import HostResult
from bot.text import render
from bot.util.errors import ActionFailed

GIB = 1 << 30
CHAT = Path(__file__).parent / "data" / "chat"


def config() -> Config:
    return parse({"hosts": {"b200": {"address": "local", "builds": {
        "one": {"workdir": "/srv/one", "command": "true", "log_dir": "/var/log/one"},
        "two": {"workdir": "/srv/two", "command": "true"},
        "three": {"workdir": "/srv/three", "command": "true"}}}}})


def target(build: str | None = None) -> Target:
    hc = config().hosts["b200"]
    return Target(host=None, config=hc, build=hc.builds[build] if build else None)  # type: ignore[arg-type]


def test_a_build_s_places_are_its_workdir_its_logs_and_rigops_state() -> None:
    assert places(target("one")) == (Place("workdir", "/srv/one", ("one",)), Place("logs", "/var/log/one", ("one",)),
                                     Place("state", STATE_DIR))
    assert STATE_DIR == "~/.local/state/rigops" and DEFAULT_LOG_DIR.startswith(STATE_DIR + "/")


def test_without_a_build_every_build_s_places_once_each() -> None:
    found = places(target())
    assert [p.path for p in found] == ["/srv/one", "/var/log/one", "/srv/two", DEFAULT_LOG_DIR, "/srv/three",
                                       STATE_DIR]
    assert next(p for p in found if p.path == DEFAULT_LOG_DIR).builds == ("two", "three")  # logging to one dir


def answer(*places: dict[str, Any]) -> dict[str, Any]:
    return {"places": list(places)}


def measured(path: str, *, device: int = 1, mount: str = "/", total: int = 100 * GIB, used: int = 40 * GIB,
             free: int = 50 * GIB, exists: bool = True) -> dict[str, Any]:
    return {"path": path, "at": path, "exists": exists, "mount": mount, "device": device, "total": total,
            "used": used, "free": free}


def test_places_on_one_filesystem_read_as_one_space_and_errors_apart() -> None:
    asked = (Place("workdir", "/srv/one", ("one",)), Place("logs", "/data/logs", ("one",)), Place("state", STATE_DIR))
    report = parse_report("b200", asked, answer(
        measured("/srv/one"), measured("/data/logs", device=2, mount="/data", used=95 * GIB, free=5 * GIB),
        {"path": STATE_DIR, "error": "cannot measure /root: Permission denied"}))
    assert [s.mount for s in report.spaces] == ["/", "/data"]
    assert report.spaces[0].places == (Measured(asked[0], True),)
    assert report.spaces[1].percent == 95
    assert report.unmeasured == ((asked[2], "cannot measure /root: Permission denied"),)


def test_percent_is_df_s_use_rounded_up_of_what_a_user_may_use() -> None:
    assert Space("/", total=100, used=1, free=199, places=()).percent == 1  # 0.5% shows as 1%, as df shows it
    assert Space("/", total=100, used=40, free=50, places=()).percent == 45  # root's reserve is not usable
    assert Space("/proc", total=0, used=0, free=0, places=()).percent == 0


@pytest.mark.parametrize("bad", [
    {}, {"places": "x"}, {"places": [{}]}, answer(measured("/a"), measured("/b")),
    answer({**measured("/a"), "total": -1}), answer({**measured("/a"), "free": "9"}),
    answer({**measured("/a"), "used": True}), answer({**measured("/a"), "mount": None}),
    answer({**measured("/a"), "exists": 1}),
])
def test_an_answer_that_is_not_what_the_agent_sends_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ActionFailed, match="disk space"):
        parse_report("b200", (Place("workdir", "/a"),), bad)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=6),
                    max_leaves=20))
def test_any_answer_reads_or_is_refused_never_a_traceback(value: Any) -> None:
    with contextlib.suppress(ActionFailed):
        parse_report("b200", (Place("workdir", "/a"),), {"places": value} if not isinstance(value, dict) else value)


def report(percent_used: int = 40, *, exists: bool = True) -> DiskReport:
    used = percent_used * GIB
    work = Measured(Place("workdir", "/srv/one", ("one",)), exists)
    state = Measured(Place("state", STATE_DIR), True)
    return DiskReport("b200", (Space("/", 200 * GIB, 20 * GIB, 180 * GIB, (state,)),
                               Space("/srv", 100 * GIB, used, 100 * GIB - used, (work,))))


def test_the_text_names_each_filesystem_and_what_is_on_it_fullest_first() -> None:
    said = text.disk_text(report(40))
    assert said.splitlines() == [
        "*Disk on b200*",
        "• `/srv` — 60Gi free of 100Gi (40% used): workdir of `one` `/srv/one`",
        "• `/` — 180Gi free of 200Gi (10% used): rigops' state `~/.local/state/rigops`",
    ]
    assert "(not made yet)" in text.disk_text(report(40, exists=False))


def test_a_nearly_full_filesystem_is_warned_of_and_comes_first_in_a_fleet() -> None:
    said = text.disk_text(report(96))
    assert ":warning: `/srv` is 96% full" in said and "No space left on device" in said
    assert ":warning:" not in text.disk_text(report(89))
    assert text.disk_troubles(report(96)) == (text.LOW_DISK,) and text.disk_troubles(report(40)) == ()
    assert text.disk_row(report(96)) == "/srv 96% used, 4.0Gi free; / 10% used, 180Gi free"
    rows = spec("disk")
    assert rows is not None
    results = [HostResult("b200", result=report(40)), HostResult("b300", result=report(96))]
    assert render.fleet_row(results[1], rows).startswith("b300            /srv 96% used")
    assert render.fleet_summary("all", rows, results).endswith("needs a look: 1 low on disk (their rows come first)")


def test_the_spec_reads_its_report() -> None:
    found = spec("disk")
    assert found is not None and found.command.looks_everywhere and not found.command.destructive
    assert found.reads(report()).text == text.disk_text(report()) and found.reads(report()).summary == ""


CORPUS = parse({"hosts": {name: {"address": "local"} for name in ("b200", "node-3", "gpu01")}})


@pytest.mark.parametrize(("said", "host"), [
    ("df -h on gpu01", "gpu01"), ("how much disk is left on node-3", "node-3"), ("is the disk full on b200?", "b200"),
    ("how much disk space is left on b200?", "b200"), ("check disk space on gpu01", "gpu01"),
    ("disk usage on node-3", "node-3"), ("what's the disk usage on b200?", "b200"),
    ("are we out of disk space on b200?", "b200"), ("can you run `df -h` on gpu01", "gpu01"),
])
def test_phrasings_that_ask_for_disk_space(said: str, host: str) -> None:
    plan = intents.parse(said, config=CORPUS)
    assert [s.action for s in plan.steps] == ["disk"] and plan.host == host and plan.error is None


@pytest.mark.parametrize("said", [
    "the build died because the disk is full on b200", "how much space does the build need on b200?",
    "I ran df -h on b200 and it was fine", "`df -h` showed 100% on b200 yesterday",
])
def test_stories_and_other_questions_about_disks_ask_for_nothing(said: str) -> None:
    assert intents.parse(said, config=CORPUS).steps == ()


def test_the_slash_command_and_its_word() -> None:
    for said in ("disk gpu01", "df gpu01"):
        plan = intents.parse_command(said, config=CORPUS)
        assert [s.action for s in plan.steps] == ["disk"] and plan.host == "gpu01"
        assert plan.to_json()["steps"] == [{"action": "disk"}]
