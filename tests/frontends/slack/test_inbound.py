"""Every value from Slack is input: the edge's parsers never raise, and whatever they let through is a value rigops
could have made. Property tests on the parsers, then on the whole bot in HTTP mode (arbitrary button values,
action ids and slash-command texts, each answered 2xx with a polite refusal and no traceback)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bot.core.talk import VALUE_TAILS, parse_value
from bot.frontends.slack import inbound
from bot.frontends.slack.app import RigopsApp
from bot.text import messages
from bot.text.message import CHOICE_KINDS
from slackemu import SlackEmulator
from tests.harness import HUMAN, OPS, make_config, running_http_app

T = TypeVar("T")
JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                   max_size=5), max_leaves=20)
IDS = st.sampled_from(["U0HUMAN", "C0OPS", "1700000000.000100", "", "x", "<@U1>", "U" * 41, "\n", "1.2.3"])
KINDS = st.sampled_from([*CHOICE_KINDS, "nope", "", "RUN"])


@given(kind=KINDS, value=st.one_of(st.text(max_size=120), st.integers(), st.none(), JSONISH))
def test_a_value_parses_only_into_what_rigops_could_have_made(kind: str, value: object) -> None:
    parsed = parse_value(kind, value)
    if parsed is None:
        return
    assert isinstance(value, str) and kind in VALUE_TAILS
    rebuilt = str(parsed.ref) + (f":{parsed.name}" if parsed.name else "") + (f":{parsed.jobs}" if parsed.jobs else "")
    assert rebuilt == value  # nothing was dropped, rounded or normalised on the way
    assert 0 < parsed.ref < 2**63
    assert parsed.jobs is None or 1 <= parsed.jobs <= 1024


@pytest.mark.parametrize(("kind", "value", "ok"), [
    ("run", "12", True), ("run", "²", False), ("run", "99999999999999999999", False), ("run", "0", False),
    ("run", "12:3", False), ("pick", "3:b200", True), ("pick", "3:all", True), ("pick", "3:../x", False),
    ("retry_half", "4", True), ("retry_half", "4:2", True), ("retry_half", "4:0", False),
    ("oom_restart", "4", False), ("oom_restart", "4:1024", True), ("oom_restart", "4:1025", False),
    ("show_log", "٣", False),  # an Arabic-Indic digit
])
def test_values_rigops_makes_and_ones_it_does_not(kind: str, value: str, ok: bool) -> None:
    assert (parse_value(kind, value) is not None) is ok


@given(body=st.dictionaries(st.sampled_from(["user", "channel", "container", "actions", "message", "type"]),
                            JSONISH, max_size=6))
def test_any_click_payload_is_read_without_raising(body: dict[str, Any]) -> None:
    click = inbound.click(body)
    if click is not None:
        inbound.pressed(click)


@given(payload=st.dictionaries(st.sampled_from(["user_id", "channel_id", "text", "response_url", "team_id"]),
                               st.one_of(IDS, JSONISH), max_size=5))
def test_any_command_payload_is_read_without_raising(payload: dict[str, Any]) -> None:
    cmd = inbound.command(payload)
    if cmd is not None:
        assert inbound.ID_RE.fullmatch(cmd.user) and inbound.ID_RE.fullmatch(cmd.channel)


@given(event=st.dictionaries(st.sampled_from(["user", "channel", "ts", "thread_ts", "text"]),
                             st.one_of(IDS, JSONISH), max_size=5),
       body=st.dictionaries(st.sampled_from(["team_id", "authorizations", "enterprise_id"]), JSONISH, max_size=3))
def test_any_event_is_read_without_raising(event: dict[str, Any], body: dict[str, Any]) -> None:
    said = inbound.said(event, addressed=True)
    if said is not None:
        assert said.delivery == f"{said.channel}:{said.message_id}"
    inbound.is_ours(body, inbound.Installation("T0EMULATOR", None, "UBOTRIGOPS"))


def test_authorizations_decide_whose_event_it_is() -> None:
    us = inbound.Installation("T0US", None, "U0BOT")
    ours = {"team_id": "T0US", "user_id": "U0BOT"}
    assert inbound.is_ours({"team_id": "T0PARTNER", "authorizations": [ours]}, us)  # Slack Connect
    assert not inbound.is_ours({"team_id": "T0US", "authorizations": [{"team_id": "T0THEM", "user_id": "U0X"}]}, us)
    assert not inbound.is_ours({"team_id": "T0US", "authorizations": [{"team_id": "T0US", "user_id": "U0X"}]}, us)
    assert inbound.is_ours({"team_id": "T0US"}, us)  # no authorizations: the payload's team
    assert not inbound.is_ours({"team_id": "T0THEM"}, us)
    grid = inbound.Installation(None, "E0ORG", "U0BOT")
    assert inbound.is_ours({"authorizations": [{"enterprise_id": "E0ORG", "team_id": None, "user_id": "U0BOT"}]},
                           grid)


class Loop:
    """The emulator and the bot in HTTP mode on an event loop of their own, for hypothesis's synchronous tests."""

    def __init__(self, tmp_path: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.emu = SlackEmulator()
        self.tmp_path = tmp_path
        self.app: RigopsApp | None = None
        self._stack: Any = None

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def start(self) -> None:
        await self.emu.start()
        config = make_config({"rig": {"address": "local", "builds": {"app": {
            "workdir": str(self.tmp_path), "command": "true", "log_dir": str(self.tmp_path / "logs")}}}})
        self._stack = running_http_app(self.emu, config, self.tmp_path / "state")
        self.app = await self._stack.__aenter__()

    async def stop(self) -> None:
        await self._stack.__aexit__(None, None, None)
        await self.emu.stop()

    async def answered(self, envelope_id: str, handed_over: int) -> int | None:
        """The HTTP status the bot gave, once the core has dealt with what it was handed."""
        assert self.emu.http is not None and self.app is not None
        http = self.emu.http
        await self.emu.wait_for(lambda: any(d.envelope_id == envelope_id for d in http.deliveries), timeout=20)
        await self.app.core.activity.wait_finished(handed_over)
        return next(d.status for d in http.deliveries if d.envelope_id == envelope_id)


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    loop = Loop(tmp_path_factory.mktemp("inbound"))
    loop.run(loop.start())
    try:
        yield loop
    finally:
        loop.run(loop.stop())
        loop.loop.call_soon_threadsafe(loop.loop.stop)
        loop.thread.join(10)


FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class Handed:
    count = 0


@FUZZ
@given(action_id=st.one_of(st.sampled_from([f"rigops_{k}" for k in CHOICE_KINDS]), st.text(max_size=40)),
       value=st.one_of(st.text(max_size=80), st.integers(), st.none()))
def test_any_click_gets_a_2xx_and_a_polite_answer(bot: Loop, action_id: str, value: object,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    before = len(bot.emu.ephemerals(OPS, user=HUMAN))
    Handed.count += 1
    eid = bot.run(bot.emu.send_action(action_id, value, channel=OPS))
    assert bot.run(bot.answered(eid, Handed.count)) == 200
    new = [m.text for m in bot.emu.ephemerals(OPS, user=HUMAN)[before:]]
    if parse_value(action_id.removeprefix("rigops_"), value) is None:
        assert new in ([messages.FORGED_PRESS], [messages.UNKNOWN_CHOICE])
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []


ANSWERS = ("chat.postMessage", "chat.postEphemeral", "response_url")  # a private answer may go by response_url


@FUZZ
@given(text=st.text(max_size=300))
@example(text="AUDIT")  # not an admin: told so privately, through the command's response_url
@example(text="")
def test_any_slash_command_text_gets_a_2xx_and_an_answer(bot: Loop, text: str,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    Handed.count += 1
    posted = sum(len(bot.emu.calls_to(method)) for method in ANSWERS)
    eid = bot.run(bot.emu.send_slash(text, user=f"U0FUZZ{Handed.count}"))  # each their own rate limit
    assert bot.run(bot.answered(eid, Handed.count)) == 200
    assert sum(len(bot.emu.calls_to(method)) for method in ANSWERS) > posted
    assert [r.getMessage() for r in caplog.records
            if r.exc_info or (r.levelno >= logging.ERROR and "rate" not in r.getMessage())] == []
