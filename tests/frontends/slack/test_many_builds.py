"""Twenty builds followed at once through the real app, against an emulator that keeps Slack's rate tiers
(scaled from a minute to a second so the test takes seconds): no 429s, every result posted at once, every card
ends up showing its build's end, and chat.update stays within its tier."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bot.config import Config
from bot.frontends.slack import tiers as ours
from slackemu import ApiCall, SlackEmulator
from slackemu import Tier as SlackTier
from tests.harness import OPS, make_config, running_app

BUILDS = 20
SECOND = 1.0  # what a minute of Slack's tiers is here
# Slack's figures (Tier 3: 50/min; posts: 1/s per channel with bursts) with the minute made one second, and room
# for twenty results at once in one channel
TIERS = {"chat.update": (10, SECOND, False), "reactions.add": (10, SECOND, False),
         "chat.postMessage": (20, SECOND, True), "chat.postEphemeral": (20, SECOND, False),
         "conversations.info": (10, SECOND, False)}
RESULT_WITHIN = 2.0  # seconds from a build's end to its result in the thread


def emulator_tiers() -> dict[str, SlackTier]:
    return {m: SlackTier(calls, seconds, per_channel) for m, (calls, seconds, per_channel) in TIERS.items()}


def app_tiers() -> dict[str, ours.Tier]:
    return {m: ours.Tier(calls, seconds, per_channel) for m, (calls, seconds, per_channel) in TIERS.items()}


def config(tmp_path: Path, gate: Path) -> Config:
    # a line of progress every 0.1 s, so each card has something new at every refresh, until the gate opens
    command = (f"i=0; while [ ! -f {gate} ]; do i=$((i+1)); echo \"[$i/5000] Building CXX object o$i.o\"; "
               "sleep 0.1; done; echo '[5000/5000] Linking CXX executable app'")
    hosts: dict[str, Any] = {f"rig{n}": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": command, "jobs": 2, "log_dir": str(tmp_path / f"logs{n}")}}}
        for n in range(1, BUILDS + 1)}
    return make_config(hosts, confirm=False)


def text_of_call(call: ApiCall) -> str:
    return str(call.params.get("text", ""))


def most_in_a_window(calls: list[ApiCall], seconds: float) -> int:
    times = sorted(c.at for c in calls)
    return max((sum(1 for t in times[i:] if t < start + seconds) for i, start in enumerate(times)), default=0)


async def test_twenty_followed_builds_stay_inside_the_tiers(tmp_path: Path, state_dir: Path) -> None:
    gate = tmp_path / "go"
    async with SlackEmulator(tiers=emulator_tiers()) as emu, \
            running_app(emu, config(tmp_path, gate), state_dir, tiers=app_tiers()) as app:
        roots = {n: str((await emu.send_message(f"rebuild app on rig{n} -j2", channel=OPS))["ts"])
                 for n in range(1, BUILDS + 1)}

        def cards() -> dict[int, str]:
            found = {n: next((m.ts for m in emu.thread(OPS, root) if f"`app` on *rig{n}* —" in m.text), None)
                     for n, root in roots.items()}
            return {n: ts for n, ts in found.items() if ts is not None}

        await emu.wait_for(lambda: len(cards()) == BUILDS, timeout=60)
        storm = time.monotonic()  # cards ask for 4x the tier for 3 windows
        await emu.wait_for(lambda: time.monotonic() - storm > 3 * SECOND
                           and len(emu.calls_to("chat.update")) > 0, timeout=30)
        gate.touch()
        ended = time.monotonic()

        def results() -> dict[int, float]:
            return {n: c.at for c in emu.calls_to("chat.postMessage") if c.ok
                    for n in range(1, BUILDS + 1) if f"on *rig{n}* succeeded" in text_of_call(c)}

        await emu.wait_for(lambda: len(results()) == BUILDS, timeout=60)
        card_ts = cards()
        await emu.wait_for(lambda: all("succeeded" in emu.message(OPS, ts).text for ts in card_ts.values()),
                           timeout=30)
        runs = app.core.store.runs(limit=100)
    refused = [c for c in emu.calls if c.status == 429]
    updates = emu.calls_to("chat.update")
    late = {n: round(at - ended, 2) for n, at in results().items() if at - ended > RESULT_WITHIN}
    for method in sorted({c.method for c in emu.calls}):
        calls = emu.calls_to(method)
        print(f"{method}: {len(calls)} calls, at most {most_in_a_window(calls, SECOND)} in any {SECOND} s "
              f"(tier: {TIERS.get(method, ('none',))[0]})")
    print(f"429s: {len(refused)}; results {min(results().values()) - ended:.2f}-{max(results().values()) - ended:.2f}"
          " s after the builds ended")
    assert len(refused) == 0, [c.method for c in refused]
    assert not late, f"results later than {RESULT_WITHIN} s after their build ended: {late}"
    assert most_in_a_window(updates, SECOND) <= TIERS["chat.update"][0]
    assert len(runs) == BUILDS and all(r.state == "succeeded" for r in runs)
    edited = {str(c.params.get("ts")) for c in updates if c.ok}
    assert set(card_ts.values()) <= edited  # every card had its turn
