"""A look across a big fleet shows every host: how many answered and what needs a look up top, the rows problems
first, the rest going on in the thread (or one file when that would be a wall of posts), every post within
Slack's limits; a small fleet's answer is the one message it always was. The bot runs whole against the Slack
emulator, with many ``address = "local"`` hosts (cheap) and hosts on closed ports (down at once)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bot.actions.mem import MemoryReport
from bot.actions.registry import ActionSpec, spec
from bot.actions.status import RunView, StatusReport
from bot.config import Config, HostConfig
from bot.frontends.slack.blocks import message_text, to_blocks
from bot.hosts.meminfo import Memory
from bot.hosts.models import Gpu, GpuReport, Snapshot
from bot.memory.policy import host_levels
from bot.reports import HostResult
from bot.store import BuildRun
from bot.text import render
from bot.text.digest import SECTION_TEXT
from bot.text.digest_layout import DETAIL_POSTS, DigestPosts, fleet_posts
from bot.text.message import MESSAGE_SECTIONS, MESSAGE_TEXT, Message
from slackemu import SlackEmulator
from slackemu.limits import message_refusal
from tests.fakes.nvidia_smi import install_nvidia_smi, path_with
from tests.fakes.users import needs_own_build_user
from tests.harness import OPS, make_config, record_run, running_bot
from tests.scenario import wait_done

GIB = 1024**3
FLEET = 128
DOWN = ("gone0", "gone1", "gone2")
FAILING = ("node010", "node100")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def down_host(known_hosts: Path) -> dict[str, Any]:
    """A host whose SSH port refuses connections: a row saying so, at once."""
    return {"address": "127.0.0.1", "port": closed_port(), "user": "root", "known_hosts": str(known_hosts),
            "connect_timeout": 5}


def fleet_config(tmp_path: Path, *, local: int, down: tuple[str, ...] = DOWN) -> Config:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    hosts: dict[str, Any] = {f"node{i:03d}": {"address": "local"} for i in range(local)}
    hosts.update({name: down_host(known_hosts) for name in down})  # last in the config: first in the answer
    groups = {"trio": ["node000", "node001", "node002"]} if local >= 3 else {}
    return make_config(hosts, confirm=False, groups=groups)


def host_rows(texts: list[str], hosts: Config | list[str]) -> list[str]:
    """The host of every line that is a host's row (it starts with the host's name), in order."""
    names = set(hosts.hosts if isinstance(hosts, Config) else hosts)
    firsts = (line.split(maxsplit=1)[0] for text in texts for line in text.splitlines() if line.strip())
    return [word for word in firsts if word in names]


async def ask(emulator: SlackEmulator, text: str) -> list[str]:
    """Say ``text`` in the ops channel; what rigops answered in the thread (files as their content)."""
    event = await emulator.send_message(text, channel=OPS)
    assert await wait_done(emulator, OPS, str(event["ts"]), timeout=90) == "white_check_mark"
    replies = emulator.thread(OPS, str(event["ts"]))
    return [m.rendered for m in replies] + [f.text for m in replies for f in m.files]


@needs_own_build_user
async def test_status_all_over_a_big_fleet_shows_every_host_problems_first(
        emulator: SlackEmulator, state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", path_with(install_nvidia_smi(tmp_path / "bin", "b200")))  # 8 GPUs a host
    config = fleet_config(tmp_path, local=FLEET - len(DOWN))
    async with running_bot(emulator, config, state_dir) as core:
        for host in FAILING:
            run = record_run(core.store, host, "sgl-kernel")
            core.store.finish_run(run.id, state="failed", exit_status=1)

        status = await ask(emulator, "status all")
        gpus = await ask(emulator, "gpu util across all?")
        small = await ask(emulator, "status on trio")

    assert "*status on all* — 125 of 128 hosts answered; needs a look: 3 did not answer, 2 with a failing build " \
           "(their rows come first)" in status[0]
    rows = host_rows(status, config)
    assert Counter(rows) == Counter(list(config.hosts))  # every host, once
    assert rows[:5] == [*DOWN, *FAILING]
    assert "node010         no rigops build running; last: sgl-kernel failed; 0 build processes" in status[0]

    assert len(gpus) > 1  # 125 hosts × 8 GPUs do not fit in one message: the rest goes on in the thread
    assert Counter(host_rows(gpus, config)) == Counter(list(config.hosts))
    assert host_rows(gpus, config)[:3] == list(DOWN)
    assert "… and " in gpus[0] and "more hosts: continued below" in gpus[0]

    [answer] = small  # a small fleet: the one message it always was
    assert answer == ("*status on trio* — 3 of 3 hosts answered\n```\n"
                      + "".join(f"node00{i}         no rigops build running; 0 build processes\n" for i in range(3))
                      + "```")
    assert emulator.refused == []


async def test_a_fleet_too_big_for_a_few_posts_comes_as_one_file(
        emulator: SlackEmulator, state_dir: Path, tmp_path: Path) -> None:
    down = tuple(f"gone{i:03d}" for i in range(600))
    config = fleet_config(tmp_path, local=2, down=down)
    async with running_bot(emulator, config, state_dir):
        event = await emulator.send_message("how's memory on all hosts?", channel=OPS)
        assert await wait_done(emulator, OPS, str(event["ts"]), timeout=90) == "white_check_mark"
        first, attached = emulator.thread(OPS, str(event["ts"]))
    assert "*mem on all* — 2 of 602 hosts answered; needs a look: 600 did not answer" in first.rendered
    assert "more hosts: every host is in the file below" in first.rendered
    [file] = attached.files
    assert file.name == "rigops-mem-all.txt"
    assert Counter(host_rows([file.text], config)) == Counter(list(config.hosts))
    assert file.text.splitlines()[2].startswith("host ") and "build tools" in file.text.splitlines()[2]
    assert emulator.refused == []


def test_the_console_shows_every_host_too(tmp_path: Path) -> None:
    hosts = [f"node{i:03d}" for i in range(64)]
    config = tmp_path / "rigops.toml"
    config.write_text("".join(f'[hosts.{h}]\naddress = "local"\n' for h in hosts))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    env["PATH"] = path_with(install_nvidia_smi(tmp_path / "bin", "b200"))
    out = subprocess.run([sys.executable, "-m", "bot", "--config", str(config), "--state-dir", str(tmp_path / "state"),
                          "console"], input="gpu util across all?\n", capture_output=True, text=True, timeout=120,
                         env=env)
    assert out.returncode == 0, out.stderr
    assert "more hosts: continued below" in out.stdout  # 64 hosts × 8 GPUs: more than one message
    assert Counter(host_rows([out.stdout], hosts)) == Counter(hosts)


# -- the layout, from dataclasses ----------------------------------------------------------------------------
def memory(total_gib: int, available_gib: int) -> Memory:
    return Memory(total=total_gib * GIB, free=available_gib * GIB, available=available_gib * GIB, shared=0,
                  buffers=0, cache=0, swap_total=0, swap_free=0)


def snapshot(host: str, *, available_gib: int = 48) -> Snapshot:
    return Snapshot(host=host, time=0.0, memory=memory(64, available_gib), loadavg=(1.0, 1.0, 1.0), cores=16, top=(),
                    tools=())


def run(host: str, build: str, state: Any, run_id: int) -> BuildRun:
    return BuildRun(id=run_id, host=host, build=build, jobs=8, pid=1, start=1, supervisor_pid=None, log="/tmp/x.log",
                    exit_file="/tmp/x.exit", boot_id=None, started_at=0.0, started_by=None, channel=None,
                    thread_id=None, state=state, exit_status=1 if state == "failed" else 0, ended_at=60.0)


def status(host: str, *runs: BuildRun, available_gib: int = 48) -> HostResult:
    report = StatusReport(host=host, runs=tuple(RunView(r, None) for r in runs),
                          snapshot=snapshot(host, available_gib=available_gib))
    return HostResult(host, result=report)


def gpus(host: str, count: int) -> HostResult:
    report = GpuReport(host=host, available=True, gpus=tuple(
        Gpu(index=str(i), name="NVIDIA B200", utilization="87", memory_used="171008", memory_total="183359",
            temperature="58", power="700") for i in range(count)))
    return HostResult(host, result=report)


def fleet(step: str, size: int) -> list[HostResult]:
    """Every kind of row: hosts down, failing builds, low memory, many GPUs."""
    out = []
    for i in range(size):
        host = f"h{i:05d}"
        if i % 17 == 5:
            out.append(HostResult(host, error=f"cannot reach 10.0.{i // 250}.{i % 250}:22: connection refused"))
        elif step == "gpu":
            out.append(gpus(host, 8 if i % 3 else 16))
        elif step == "mem":
            out.append(HostResult(host, result=MemoryReport(snapshot(host, available_gib=2 if i % 11 == 3 else 40))))
        else:
            out.append(status(host, run(host, "vllm", "failed" if i % 13 == 7 else "succeeded", i),
                              available_gib=2 if i % 11 == 3 else 40))
    return out


def rows(action: str) -> ActionSpec[Any]:
    found = spec(action)
    assert found is not None
    return found


def messages_of(posts: DigestPosts) -> list[Message]:
    return [posts.first, *posts.thread]


@pytest.mark.parametrize("step", ["status", "mem", "gpu"])
@pytest.mark.parametrize("size", [40, 128, 300, 1000, 5000])
def test_every_row_is_posted_and_every_post_is_one_slack_takes(step: str, size: int) -> None:
    results = fleet(step, size)
    posts = fleet_posts("all", rows(step), results)
    for message in messages_of(posts):
        assert message.fits and len(message.sections) <= MESSAGE_SECTIONS and message.size <= MESSAGE_TEXT
        assert all(len(s) <= SECTION_TEXT for s in message.sections)
        assert all(s.count("```") % 2 == 0 for s in message.sections)  # each section's code block is closed
        assert message_refusal(message_text(message.text), to_blocks(message)) is None
        assert message.plain or message.text == "\n".join(message.sections)  # what a front end showing text shows
    hosts = [r.host for r in results]
    shown = [posts.first.text, *(m.text for m in posts.thread)]
    if posts.attachment is not None:
        assert len(posts.thread) == 0 and posts.attachment.filename == f"rigops-{step}-all.txt"
        shown = [posts.first.text, posts.attachment.content]
        assert Counter(host_rows([posts.attachment.content], hosts)) == Counter(hosts)
    else:
        assert len(posts.thread) <= DETAIL_POSTS
        assert Counter(host_rows(shown, hosts)) == Counter(hosts)
    down = [r.host for r in results if r.error is not None]
    first = host_rows([posts.first.text], hosts)
    if not posts.first.plain:  # laid out over the thread: the hosts that did not answer come first
        assert first[:len(down)] == down[:len(first)]


def test_rows_come_problems_first_and_say_why() -> None:
    results = [status(f"h{i:03d}", run(f"h{i:03d}", "vllm", "succeeded", i)) for i in range(120)]
    results[7] = status("h007", run("h007", "vllm", "failed", 7))
    results[50] = status("h050", available_gib=3)
    results[90] = HostResult("h090", error="no answer within 35 s")
    results[110] = status("h110", run("h110", "vllm", "succeeded", 2), run("h110", "sgl", "failed", 1))
    posts = fleet_posts("all", rows("status"), results)
    first = posts.first.sections
    assert first[0] == ("*status on all* — 119 of 120 hosts answered; needs a look: 1 did not answer, 2 with a "
                        "failing build, 1 low on memory (their rows come first)")
    lines = first[1].removeprefix("```\n").splitlines()
    assert lines[:4] == [
        "h090            unavailable: no answer within 35 s",
        "h007            no rigops build running; last: vllm failed; 0 build processes",
        "h050            no rigops build running; 0 build processes; memory low: 3.0Gi available of 64Gi",
        "h110            no rigops build running; last: vllm succeeded; sgl failed; 0 build processes",
    ]
    assert lines[4].startswith("h000 ")


def test_a_host_s_memory_reads_low_by_its_own_alert_threshold() -> None:
    """As in the digest: low under twice the host's memory_alert_pct (a tenth at the default 5%)."""
    strict = host_levels(HostConfig(name="h1", memory_alert_pct=10))  # low under 20%
    lenient = status("h0", available_gib=12)  # 19% of 64 GiB
    results = [lenient, HostResult("h1", result=StatusReport(host="h1", runs=(), levels=strict,
                                                               snapshot=snapshot("h1", available_gib=12)))]
    assert [render.fleet_troubles(r, rows("status")) for r in results] == [(), (render.LOW_MEMORY,)]
    text = fleet_posts("all", rows("status"), results).first.text
    assert "h0              no rigops build running; 0 build processes\n" in text
    assert "h1              no rigops build running; 0 build processes; memory low: 12Gi available of 64Gi" in text
    mem = [HostResult("h0", result=MemoryReport(snapshot("h0", available_gib=12))),
           HostResult("h1", result=MemoryReport(snapshot("h1", available_gib=12), levels=strict))]
    assert [render.fleet_troubles(r, rows("mem")) for r in mem] == [(), (render.LOW_MEMORY,)]


def test_a_small_fleet_is_one_plain_message() -> None:
    results = [HostResult("n1", result=MemoryReport(snapshot("n1"))), HostResult("n2", error="no answer within 35 s")]
    posts = fleet_posts("a100", rows("mem"), results)
    assert posts == DigestPosts(Message(
        "*mem on a100* — 1 of 2 hosts answered\n```\n"
        "host               total    used   avail    swap   load  build tools\n"
        "n1                  64Gi    16Gi    48Gi      0B    1.0  -\n"
        "n2              unavailable: no answer within 35 s\n```"))
