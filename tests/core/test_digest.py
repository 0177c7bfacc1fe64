"""The status digest and the GPU view: canned nvidia-smi output of real drivers, hosts that are down or
hang, Block Kit within Slack's limits, and the App Home tab."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import signal
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.config import HostConfig
from bot.core.digest import collect, fingerprint
from bot.core.services import Services
from bot.frontends.slack.blocks import HEADER_TEXT, HOME_BLOCKS, MESSAGE_BLOCKS, SECTION_TEXT, to_blocks
from bot.frontends.slack.home import home_view
from bot.hosts.gpu import parse_gpu_report
from bot.hosts.meminfo import Memory
from bot.hosts.models import GpuReport, Snapshot
from bot.memory.policy import host_levels
from bot.reports import Digest, HostDigest, OomKillSeen
from bot.store import BuildRun
from bot.store.schedules import Schedule
from bot.text.digest import memory_bar
from bot.text.digest_layout import DigestPosts, digest_posts
from slackemu import SlackEmulator
from slackemu.limits import block_text, message_refusal, view_refusal
from tests.fakes.cgroups import Cgroups, in_cgroup, vmstat_oom_kill
from tests.fakes.nvidia_smi import DATA, install_nvidia_smi, path_with
from tests.harness import OPS, make_config, record_run, running_bot

UTC = ZoneInfo("UTC")
GIB = 1 << 30


def digest_message(digest: Any, *, tz: Any, schedule: Schedule) -> tuple[str, list[dict[str, Any]]]:
    """The digest's first post as Slack gets it: the fallback text and the blocks."""
    message = digest_posts(digest, tz=tz, schedule=schedule).first
    return message.text, to_blocks(message)


def canned(kind: str) -> GpuReport:
    return parse_gpu_report(kind, {"available": True, "gpus_csv": (DATA / kind / "query-gpu.csv").read_text(),
                                   "apps_csv": (DATA / kind / "query-compute-apps.csv").read_text()})


# -- nvidia-smi text, parsed ----------------------------------------------------------------------------------
def test_h100_and_b200_rows_parse_with_their_processes() -> None:
    h100, b200 = canned("h100"), canned("b200")
    assert [g.name for g in h100.gpus] == ["NVIDIA H100 80GB HBM3"] * 4
    first = h100.gpus[0]
    assert (first.utilization, first.memory_used, first.memory_total, first.temperature, first.power) == (
        "100", "74213", "81559", "67", "612.47")
    assert first.processes == ("/usr/bin/python3.10 (pid 48211, 74194 MiB)",)
    assert h100.gpus[2].processes == ()
    assert len(b200.gpus) == 8 and b200.gpus[7].name == "NVIDIA B200" and b200.gpus[0].memory_total == "183359"
    assert sum(len(g.processes) for g in b200.gpus) == 2


def test_missing_values_become_na_not_errors() -> None:
    rtx, mig = canned("rtx-pro-6000"), canned("a100-mig")
    assert rtx.gpus[0].name == "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
    assert rtx.gpus[0].power == "n/a" and rtx.gpus[1].temperature == "n/a"
    assert rtx.gpus[0].processes == ("n/a (pid 7719)",)  # another PID namespace; [N/A] memory
    assert [g.utilization for g in mig.gpus] == ["n/a", "n/a"]  # MIG: no whole-GPU utilisation
    assert len(mig.gpus[0].processes) == 2 and mig.gpus[1].processes == ()


# -- through the agent: a stand-in nvidia-smi first on the PATH of the bot (the local agent inherits it) ---------
@pytest.fixture
def gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(kind: str) -> None:
        monkeypatch.setenv("PATH", path_with(install_nvidia_smi(tmp_path / "gpu-bin", kind)))
    return install


EXPECTED = {"h100": ("H100 80GB HBM3", "74213/81559 MiB"), "b200": ("NVIDIA B200", "171046/183359 MiB"),
            "rtx-pro-6000": ("RTX PRO 6000 Blackwell", "23871/97887 MiB"),
            "a100-mig": ("A100-SXM4-80GB", "19807/81920 MiB")}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
async def test_gpu_command_and_nvidia_smi_in_chat_show_the_gpus(
        emulator: SlackEmulator, state_dir: Path, gpus: Any, kind: str) -> None:
    gpus(kind)
    name, memory = EXPECTED[kind]
    async with running_bot(emulator, make_config({"rig": {"address": "local"}}), state_dir) as services:
        before = services.activity.finished
        await emulator.send_slash("gpu")
        event = await emulator.send_message("nvidia-smi")
        await services.activity.wait_finished(before + 2)
        replies = [m.rendered for m in emulator.messages(OPS) if "GPUs on rig" in m.rendered]
        assert len(replies) == 2
        assert all(name in text and memory in text for text in replies)
        assert "GPUs on rig" in "\n".join(m.rendered for m in emulator.thread(OPS, str(event["ts"])))


async def test_a_host_whose_driver_is_not_loaded_says_so(emulator: SlackEmulator, state_dir: Path, gpus: Any) -> None:
    gpus("no-driver")
    async with running_bot(emulator, make_config({"rig": {"address": "local"}}), state_dir) as services:
        before = services.activity.finished
        await emulator.send_slash("gpu")
        await services.activity.wait_finished(before + 1)
        text = emulator.messages(OPS)[-1].rendered
        assert "none seen" in text and "nvidia-smi exited with 9: NVIDIA-SMI has failed" in text


# -- collecting ----------------------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def silent_server() -> AsyncIterator[int]:
    """A TCP port that accepts connections and never says a word (a host whose sshd hangs)."""
    held: list[tuple[asyncio.StreamWriter, asyncio.Task[Any]]] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        held.append((writer, task))
        await reader.read()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for writer, _ in held:
            writer.close()
        await asyncio.gather(*(task for _, task in held), return_exceptions=True)
        await server.wait_closed()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def add_run(services: Services, host: str, build: str, *, state: str | None, user: str = "U0HUMAN") -> BuildRun:
    run = record_run(services.store, host, build, started_by=user)
    if state is not None:
        services.store.finish_run(run.id, state=state, exit_status=0 if state == "succeeded" else 1)  # type: ignore[arg-type]
    return services.store.run(run.id) or run


async def test_down_and_hanging_hosts_are_rows_not_a_failed_digest(tmp_path: Path, state_dir: Path,
                                                                   gpus: Any) -> None:
    gpus("b200")
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    ssh = {"address": "127.0.0.1", "user": "root", "known_hosts": str(known_hosts), "connect_timeout": 30}
    async with silent_server() as hung_port:
        config = make_config({"rig": {"address": "local", "memory_alert_pct": 8},
                              "gone": {**ssh, "port": closed_port()}, "stuck": {**ssh, "port": hung_port}})
        services = Services.open(config, state_dir)
        try:
            since = time.time() - 60
            add_run(services, "rig", "sgl-kernel", state=None)
            add_run(services, "rig", "flash-attn", state="failed")
            add_run(services, "gone", "sgl-kernel", state="succeeded")
            digest = await collect(services, None, since=since, timeout=1.0)
        finally:
            await services.close()
    rig, gone, stuck = digest.hosts
    assert rig.snapshot is not None and rig.gpus is not None and len(rig.gpus.gpus) == 8
    assert (rig.levels.low_pct, rig.levels.tight_pct) == (16, 40)  # its memory_alert_pct's, not the default's
    assert [r.build for r in rig.running] == ["sgl-kernel"] and [r.build for r in rig.finished] == ["flash-attn"]
    assert gone.snapshot is None and (gone.problem or "").startswith("cannot reach 127.0.0.1")
    assert [r.state for r in gone.finished] == ["succeeded"]
    assert stuck.snapshot is None and stuck.problem == "no answer within 1 s"
    text = "\n".join(b["text"]["text"] for b in digest_message(digest, tz=UTC, schedule=SCHEDULE)[1]
                     if b["type"] == "section")
    assert ":red_circle: *gone* — down:" in text and ":red_circle: *stuck* — down: no answer within 1 s" in text
    assert "`0` B200 · 87% · 167.0/179.1 GiB · 58°C · python3 (pid 90311, 171008 MiB)" in text
    assert "`2` B200 · 0% · 0.0/179.1 GiB · 29°C · idle" in text
    assert ":hourglass_flowing_sand: `sgl-kernel` running for" in text and "started by <@U0HUMAN>" in text
    assert "Finished since the last post:\n:x: `flash-attn` failed at" in text


async def test_a_host_without_gpus_says_so(tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin") + ":/usr/bin:/bin")  # no nvidia-smi anywhere
    services = Services.open(make_config({"rig": {"address": "local"}}), state_dir)
    try:
        digest = await collect(services, ["rig"], since=None)
    finally:
        await services.close()
    text = digest_message(digest, tz=UTC, schedule=SCHEDULE)[1][1]["text"]["text"]
    assert "No GPUs: nvidia-smi not found" in text and "No builds running." in text


# -- rendering, from dataclasses -----------------------------------------------------------------------------
SCHEDULE = Schedule(id="7", when="every 30m", channel="C0DIGEST", hosts=None, timezone="UTC", only_changes=False,
                    source="slack", created_by="U0ADMIN", created_at=0.0)


def memory(total_gib: int, available_gib: int, *, swap_gib: int = 0) -> Memory:
    return Memory(total=total_gib * GIB, free=available_gib * GIB, available=available_gib * GIB, shared=0,
                  buffers=0, cache=0, swap_total=swap_gib * GIB, swap_free=swap_gib * GIB)


def snapshot(host: str, *, available_gib: int = 300) -> Snapshot:
    return Snapshot(host=host, time=0.0, memory=memory(449, available_gib, swap_gib=8), loadavg=(12.0, 10.5, 9.25),
                    cores=128, top=(), tools=())


def test_the_memory_bar_is_used_then_available() -> None:
    assert memory_bar(memory(100, 25)) == "█" * 15 + "░" * 5
    assert memory_bar(memory(449, 449)) == "░" * 20
    assert memory_bar(memory(0, 0)) == "░" * 20


def test_the_digest_reads_like_a_status_report() -> None:
    digest = Digest(taken_at=1_780_300_800.0, since=None, hosts=(  # Mon 1 Jun 2026 08:00 UTC
        HostDigest(host="b200", snapshot=snapshot("b200", available_gib=100), gpus=canned("b200")),
        HostDigest(host="a100", snapshot=snapshot("a100"), gpus=canned("a100-mig")),
        HostDigest(host="h100", problem="no answer within 10 s")))
    text, blocks = digest_message(digest, tz=ZoneInfo("Europe/Berlin"), schedule=SCHEDULE)
    assert text == "rigops status: 3 hosts, 1 down, 0 builds running, needs attention: h100"
    assert blocks[0]["text"]["text"] == "Status · Mon 1 Jun 10:00 CEST"
    assert blocks[1]["text"]["text"] == ("*Needs attention: 1 of 3 hosts*\n"
                                         ":red_circle: *h100* down: no answer within 10 s")
    b200 = blocks[2]["text"]["text"]
    bar = "█" * 16 + "░" * 4
    assert b200.startswith(f"*b200* — `{bar}` 78% used · 100Gi available of 449Gi · swap 0B of 8.0Gi")
    assert "load 12.0 · 10.5 · 9.2 on 128 cores" in b200
    a100 = blocks[3]["text"]["text"]
    assert "`0` A100-SXM4-80GB · util n/a · 19.3/80.0 GiB · 36°C · /opt/conda/bin/python" in a100
    assert blocks[4]["text"]["text"] == ":red_circle: *h100* — down: no answer within 10 s"
    assert blocks[-1]["elements"][0]["text"] == "Schedule `7` · every 30m · times in Europe/Berlin"


def fleet(count: int, *, taken_at: float = 1_780_300_800.0) -> Digest:
    """``count`` hosts with 8 B200s each and a build running on each; a few of them need attention."""
    def run(i: int, state: str) -> BuildRun:
        return BuildRun(id=i, host=f"node{i:03d}", build="sgl-kernel", jobs=32, pid=1000 + i, start=1,
                        supervisor_pid=None, log="/tmp/x.log", exit_file="/tmp/x.exit", boot_id=None,
                        started_at=taken_at - 3600, started_by="U0HUMAN", channel=None, thread_id=None, state=state,  # type: ignore[arg-type]
                        exit_status=1 if state == "failed" else None,
                        ended_at=None if state == "running" else taken_at - 60)

    def host(i: int) -> HostDigest:
        name = f"node{i:03d}"
        if i == count - 3:
            return HostDigest(host=name, problem="no answer within 10 s")
        row = HostDigest(host=name, snapshot=snapshot(name, available_gib=20 if i == count - 2 else 300),
                         gpus=canned("b200"), running=(run(i, "running"),))
        if i == count - 1:
            return dataclasses.replace(row, finished=(run(10_000 + i, "failed"),),
                                       oom_kills=(OomKillSeen(at=taken_at - 30, whose="build", victim="cc1plus",
                                                              build="sgl-kernel"),))
        return row

    return Digest(taken_at=taken_at, since=taken_at - 1800, hosts=tuple(host(i) for i in range(count)))


def slack_sizes(posts: DigestPosts) -> list[tuple[int, int]]:
    """(blocks, characters of block text) of each message the digest posts, as Slack gets them."""
    sizes = []
    for message in (posts.first, *posts.thread):
        blocks = to_blocks(message)
        refused = message_refusal(message.text, blocks)
        assert refused is None, (refused, len(blocks), block_text(blocks))
        sizes.append((len(blocks), block_text(blocks)))
    return sizes


def test_a_digest_of_200_hosts_with_8_gpus_fits_and_names_the_hosts_needing_attention_first() -> None:
    posts = digest_posts(fleet(200), tz=UTC, schedule=SCHEDULE)
    sizes = slack_sizes(posts)  # every message within Slack's limits (the emulator's own check)
    first = posts.first
    attention = first.sections[0]
    assert attention.splitlines() == [
        "*Needs attention: 3 of 200 hosts*",
        ":red_circle: *node197* down: no answer within 10 s",
        ":warning: *node198* — memory low: 20Gi available of 449Gi",
        ":boom: *node199* — 1 OOM kill since the last post · `sgl-kernel` failed at 07:59 (run 10199)"]
    assert first.text.endswith("needs attention: node197, node198, node199")
    rows = "\n".join(first.sections[1:])
    assert "*node000* · mem 33% used, 300Gi free · GPUs 2/8 busy · load 12/128 · 1 running" in rows
    assert "… and " in rows and "more hosts: in the thread" in rows
    assert "every host in detail in the thread" in (first.footnote or "")
    shown = sum(1 for ln in rows.splitlines() if ln.startswith("*node"))
    continued = "\n".join(s for m in posts.thread for s in m.sections)
    assert shown + sum(1 for ln in continued.splitlines() if ln.startswith(("*node", ":"))) == 200
    assert posts.attachment is not None  # 200 hosts in detail: one file, not a dozen messages
    assert posts.attachment.content.count("B200") == 199 * 8 and "node197 — down: no answer" in posts.attachment.content
    assert sizes[0][1] <= 11_000 and len(posts.thread) == 1


@pytest.mark.parametrize(("hosts", "posts_in_thread", "file"), [(3, 0, False), (20, 2, False), (48, 0, True),
                                                                   (200, 1, True)])
def test_every_fleet_size_fits_slack(hosts: int, posts_in_thread: int, file: bool) -> None:
    posts = digest_posts(fleet(hosts), tz=UTC, schedule=SCHEDULE)
    sizes = slack_sizes(posts)
    assert (len(posts.thread), posts.attachment is not None) == (posts_in_thread, file), sizes
    view = home_view(fleet(hosts), tz=UTC, schedules=[SCHEDULE] * 80)
    assert view_refusal(view) is None, (len(view["blocks"]), [len(b.get("text", {}).get("text", ""))
                                                             for b in view["blocks"]])
    text = "\n".join(b["text"]["text"] for b in view["blocks"] if b["type"] == "section")
    assert "*Needs attention: 3 of" in text and "*node000*" in text


def test_many_hosts_stay_within_slacks_limits() -> None:
    rows = tuple(HostDigest(host=f"node{i:02d}", snapshot=snapshot(f"node{i:02d}"), gpus=canned("b200"))
                 for i in range(120))
    digest = Digest(taken_at=time.time(), since=None, hosts=rows)
    blocks = digest_message(digest, tz=UTC, schedule=SCHEDULE)[1]
    view = home_view(digest, tz=UTC, schedules=[SCHEDULE] * 80)
    assert len(blocks) <= MESSAGE_BLOCKS and len(view["blocks"]) <= HOME_BLOCKS
    for block in [*blocks, *view["blocks"]]:
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= SECTION_TEXT
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= HEADER_TEXT


def test_the_fingerprint_ignores_noise_and_sees_news() -> None:
    def digest(available_gib: int, *, down: bool = False, running: tuple[BuildRun, ...] = ()) -> Digest:
        row = HostDigest(host="b200", problem="down") if down else HostDigest(
            host="b200", snapshot=snapshot("b200", available_gib=available_gib), gpus=canned("b200"), running=running)
        return Digest(taken_at=time.time(), since=None, hosts=(row,))

    assert fingerprint(digest(300)) == fingerprint(digest(290))  # memory moved a little
    assert fingerprint(digest(100)) != fingerprint(digest(300))  # memory got tight (under a quarter)
    assert fingerprint(digest(300)) != fingerprint(digest(20))  # memory got low
    assert fingerprint(digest(300)) != fingerprint(digest(300, down=True))


def test_the_digest_calls_memory_low_and_tight_by_the_host_s_alert_threshold() -> None:
    """Low under the % that ends a pressure episode (twice memory_alert_pct), tight under five times it: a
    tenth and a quarter at the default 5%."""
    def level(available_gib: int, **config: Any) -> str:
        row = HostDigest(host="b200", snapshot=snapshot("b200", available_gib=available_gib),
                         levels=host_levels(HostConfig(name="b200", **config)))
        return row.memory_level

    assert [level(gib) for gib in (44, 45, 112, 113)] == ["low", "tight", "tight", "ok"]  # of 449 GiB
    assert [level(gib, memory_alert_pct=10) for gib in (89, 90, 224, 225)] == ["low", "tight", "tight", "ok"]
    assert level(300, memory_alert_pct=10) == "ok" and HostDigest(host="b200", problem="down").memory_level == "-"
    strict = HostDigest(host="b200", snapshot=snapshot("b200", available_gib=60),
                        levels=host_levels(HostConfig(name="b200", memory_alert_pct=10)))
    posts = digest_posts(Digest(taken_at=time.time(), since=None, hosts=(strict,)), tz=UTC, schedule=SCHEDULE)
    assert posts.first.text.endswith("needs attention: b200")  # 13% available: fine at 5%, low at 10%
    assert posts.first.sections[0] == ("*Needs attention: 1 of 1 host*\n"
                                       ":warning: *b200* — memory low: 60Gi available of 449Gi")


# -- App Home --------------------------------------------------------------------------------------------------
async def test_opening_the_home_tab_publishes_a_fresh_dashboard(emulator: SlackEmulator, state_dir: Path,
                                                                gpus: Any) -> None:
    gpus("h100")
    config = make_config({"rig": {"address": "local"}, "spare": {"address": "local"}})
    async with running_bot(emulator, config, state_dir) as services:
        for opened in (1, 2):
            before = services.activity.finished
            await emulator.send_event({"type": "app_home_opened", "user": "U0HUMAN", "channel": "D0HOME",
                                       "tab": "home", "event_ts": f"{time.time():.6f}"})
            await services.activity.wait_finished(before + 1)
            assert len(emulator.calls_to("views.publish")) == opened
        before = services.activity.finished
        await emulator.send_event({"type": "app_home_opened", "user": "U0HUMAN", "channel": "D0HOME",
                                   "tab": "messages", "event_ts": f"{time.time():.6f}"})
        await services.activity.wait_finished(before)
    view = emulator.home_views["U0HUMAN"]
    assert view["type"] == "home" and len(emulator.calls_to("views.publish")) == 2
    text = "\n".join(b["text"]["text"] for b in view["blocks"] if b["type"] in ("section", "header"))
    assert "*rig* — `" in text and "*spare* — `" in text
    assert "`0` H100 80GB HBM3 · 100% · 72.5/79.6 GiB · 67°C · /usr/bin/python3.10 (pid 48211, 74194 MiB)" in text
    assert "*Scheduled posts*\nNo scheduled posts." in text


async def test_oom_kills_since_the_last_post_are_in_the_digest(state_dir: Path, gpus: Any) -> None:
    gpus("b200")
    services = Services.open(make_config({"rig": {"address": "local"}}), state_dir)
    try:
        since = time.time() - 60
        run = add_run(services, "rig", "flash-attn", state="failed")
        services.store.add_oom_kills([
            ("rig", since - 10, run.id, "build", "kernel", "cicc", 10),  # before the last post: not again
            ("rig", since + 1, run.id, "build", "kernel", "cc1plus", 11),
            ("rig", since + 2, run.id, "build", "cgroup", "cc1plus", 12),
            ("rig", since + 3, run.id, "other", "kernel", "python3", 13),
            ("rig", since + 4, None, "unknown", "vmstat", None, None),
        ])
        digest = await collect(services, None, since=since, timeout=5.0)
        quiet = await collect(services, None, since=time.time(), timeout=5.0)
    finally:
        await services.close()
    (rig,) = digest.hosts
    assert [(k.whose, k.victim, k.build) for k in rig.oom_kills] == [
        ("build", "cc1plus", "flash-attn"), ("build", "cc1plus", "flash-attn"), ("other", "python3", None),
        ("unknown", None, None)]
    text, blocks = digest_message(digest, tz=UTC, schedule=SCHEDULE)
    body = "\n".join(b["text"]["text"] for b in blocks if b["type"] == "section")
    assert ":boom: 4 OOM kills since the last post: `cc1plus` ×2 in `flash-attn`, 2 elsewhere (`python3`)" in body
    assert text.endswith("4 OOM kills, needs attention: rig")
    assert quiet.hosts[0].oom_kills == () and "OOM" not in digest_message(quiet, tz=UTC, schedule=SCHEDULE)[0]
    assert fingerprint(digest) != fingerprint(dataclasses.replace(digest, hosts=(
        dataclasses.replace(rig, oom_kills=rig.oom_kills[:1]),)))


async def test_a_running_build_shows_its_progress_in_the_digest(emulator: SlackEmulator, tmp_path: Path,
                                                               state_dir: Path, gpus: Any) -> None:
    gpus("b200")
    gate = tmp_path / "go"
    command = (f"printf '[3/10] Building CXX object a.o\\n'; while [ ! -f {gate} ]; do sleep 0.05; done")
    config = make_config({"rig": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": command, "jobs": 2, "log_dir": str(tmp_path / "logs")}}}},
        confirm=False)
    async with running_bot(emulator, config, state_dir) as core:
        progress = core.follower.progress
        await emulator.send_message("rebuild on rig", channel=OPS)
        run = (await emulator.wait_for(lambda: core.store.runs(live=True), timeout=30))[0]
        await emulator.wait_for(lambda: run.id in progress and progress[run.id][0].done == 3, timeout=30)
        digest = await collect(core.services, None, since=time.time() - 60, progress=progress, timeout=5.0)
        gate.touch()
        await emulator.wait_for(lambda: not core.store.runs(live=True), timeout=30)
        await emulator.wait_for(lambda: run.id not in progress, timeout=10)
    body = "\n".join(b["text"]["text"] for b in digest_message(digest, tz=UTC, schedule=SCHEDULE)[1]
                     if b["type"] == "section")
    assert re.search(r"`app` running for [^(]* · \[3/10\]", body), body


async def test_the_host_s_own_oom_count_covers_kills_outside_followed_builds(
        state_dir: Path, gpus: Any, cgroups: Cgroups, fake_bin: Path) -> None:
    if vmstat_oom_kill() is None:
        pytest.skip("this kernel keeps no oom_kill counter in /proc/vmstat")
    gpus("b200")
    services = Services.open(make_config({"rig": {"address": "local"}}), state_dir)
    try:
        first = await collect(services, None, since=time.time() - 60, timeout=5.0)
        assert first.hosts[0].oom_counted is None  # nothing earlier to compare with
        victim = in_cgroup(cgroups.make("digest", 32 * 1024 * 1024), f"exec {fake_bin}/hog 64")
        assert victim.wait(timeout=30) == -signal.SIGKILL  # the kernel's OOM killer, for real
        second = await collect(services, None, since=first.taken_at, timeout=5.0)
        third = await collect(services, None, since=second.taken_at, timeout=5.0)
    finally:
        await services.close()
    (rig,) = second.hosts
    assert rig.oom_kills == () and rig.oom_counted is not None and rig.oom_counted >= 1
    body = "\n".join(b["text"]["text"] for b in digest_message(second, tz=UTC, schedule=SCHEDULE)[1]
                     if b["type"] == "section")
    assert f":boom: {rig.oom_counted} OOM kill" in body and f"{rig.oom_counted} elsewhere" in body
    assert third.hosts[0].oom_counted == 0 and "OOM" not in digest_message(third, tz=UTC, schedule=SCHEDULE)[0]
