"""A first run warned before its OOM kill, through the whole bot, with real memory cgroups: a build with no
history has no learned peaks, so the headroom alert has nothing to go by; the forecast reads how fast the room
left falls and warns when, at that rate, it is gone within the horizon — and stays quiet for a build that
stops rising well under its limit.

Twice: with fake compilers that grow at a set rate (the issue's four compilers at ~10 MiB/s in 400 MiB), and
with real g++ compiling examples/demo's template code at -j4 in a cpu cgroup that gives the build 40% of one
core (its compilers then grow over seconds, as heavy translation units do on a busy build box; unthrottled
they jump to their size within one sample, before any rate can be read).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.config import Config
from slackemu import SlackEmulator
from tests.core.test_build_in_limit import project
from tests.core.test_guard import alert_message, start, wait_text
from tests.fakes.cgroups import Cgroups, cpu_limited, remove_cpu
from tests.harness import OPS, make_config, running_app
from tests.scenario import thread_text

MIB = 1 << 20
RATE = re.compile(r"memory use rising ~(\d+) MiB/s for (\d+) s: at this rate the build's memory limit is hit in "
                  r"~(\d+) s")

LEARNED = re.compile(r"less than the running compilers still need: up to ~\d+ MiB more as each reaches ~\d+ MiB, as "
                     r"this build's compile jobs do")

pytestmark = pytest.mark.timeout(300)


def config(workdir: Path, cg: Path, script: str, *, jobs: int = 4, cpu: Path | None = None) -> Config:
    """b200 is this machine with the default thresholds (alert at 5% left); the build moves into ``cg`` (and
    ``cpu``) first."""
    enter = f"echo $$ > {cg}/cgroup.procs || exit 99\n"
    if cpu is not None:
        enter += f"echo $$ > {cpu}/cgroup.procs || exit 98\n"
    return make_config({"b200": {"address": "local", "builds": {"hello": {
        "workdir": str(workdir), "command": enter + script, "jobs": jobs,
        "log_dir": str(workdir / "logs")}}}}, confirm=False)


def growers(fake_bin: Path, *, mb: int, hold: float, ok: bool) -> str:
    """A fake ninja with four compilers growing 10 MiB a second up to ``mb`` each, then holding ``hold`` seconds;
    the build exits 0 when ``ok`` (nothing was killed), else 1, as a real one whose compiler was killed would."""
    compilers = " ".join(f"-- {fake_bin}/cc1plus -g 10 {mb} {hold}" for _ in range(4))
    return f"{fake_bin}/ninja 1 {compilers}\n" + ("exit 0" if ok else "exit 1")


def throttle(share: float) -> Iterator[Path]:
    cpu = cpu_limited("forecast", share)
    if cpu is None:
        pytest.skip("no writable cgroup v1 cpu controller here")
    yield cpu
    remove_cpu(cpu)


@pytest.fixture
def throttled() -> Iterator[Path]:
    """40% of one core: four heavy units grow ~50 MiB/s together, for seconds."""
    yield from throttle(0.4)


@pytest.fixture
def less_throttled() -> Iterator[Path]:
    """80% of one core: the same units grow about twice as fast (and the build takes half the time)."""
    yield from throttle(0.8)


async def test_four_growing_compilers_of_a_first_run_are_warned_before_the_kernel_kills(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, cgroups: Cgroups, fake_bin: Path) -> None:
    cg = cgroups.make("growers", 400 * MIB)  # 4 x 120 MiB do not fit; once one is killed, the other three do
    async with running_app(emulator, config(tmp_path, cg, growers(fake_bin, mb=120, hold=2, ok=False)),
                           state_dir) as app:
        root, _ = await start(emulator, app)
        assert app.core.store.job_memory_by_name("b200", "hello") == {}  # a first run: nothing learned
        alert = await alert_message(emulator, root, timeout=60)
        found = RATE.search(alert.text)
        assert found is not None, alert.text
        rate, lasted, eta = (int(g) for g in found.groups())
        assert 30 <= rate <= 45 and eta >= 2 and lasted >= eta, alert.text  # 4 x 10 MiB/s, seconds ahead
        boom = await wait_text(emulator, root, "OOM killer killed", timeout=120)
        assert float(alert.ts) < float(boom.ts), "the alert came after the kill"
        await wait_text(emulator, root, "failed after", timeout=60)
    assert thread_text(emulator, OPS, root).count("Memory pressure on b200") == 1


async def test_growth_that_stops_well_under_the_limit_is_not_an_alert(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, cgroups: Cgroups, fake_bin: Path) -> None:
    """The same growth, stopping at 40 MiB a compiler (170 of 400 MiB), held 8 s."""
    cg = cgroups.make("fits", 400 * MIB)
    async with running_app(emulator, config(tmp_path, cg, growers(fake_bin, mb=40, hold=8, ok=True)), state_dir) as app:
        root, _ = await start(emulator, app)
        await wait_text(emulator, root, "succeeded in", timeout=90)
    assert "Memory pressure" not in thread_text(emulator, OPS, root)


real_build = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("make") is None,
                                reason="needs g++ and make")


@real_build
async def test_a_real_first_build_that_cannot_fit_is_warned_before_its_oom_kill(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, cgroups: Cgroups, throttled: Path) -> None:
    """Four cc1plus of ~180 MiB each at -j4 in 480 MiB: the room falls ~50 MiB/s for seconds, then the
    kernel kills one."""
    cg = cgroups.make("real", 480 * MIB)
    workdir = project(tmp_path / "src")
    async with running_app(emulator, config(workdir, cg, "rm -f *.o\nexec make", cpu=throttled), state_dir) as app:
        root, _ = await start(emulator, app)
        alert = await alert_message(emulator, root, timeout=90)
        # from the rate the room falls at; or, once a unit of this run has finished (a warm compiler can be that
        # quick), from the headroom the running jobs still need by what that unit peaked at
        assert RATE.search(alert.text) is not None or LEARNED.search(alert.text) is not None, alert.text
        boom = await wait_text(emulator, root, "OOM killer killed", timeout=240)
        assert float(alert.ts) < float(boom.ts), "the alert came after the kill"


@real_build
async def test_a_real_first_build_that_fits_in_its_limit_is_not_warned(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, cgroups: Cgroups, less_throttled: Path) -> None:
    """The same -j4 in 1400 MiB: it peaks near 720 MiB, rising twice as fast on the way."""
    cg = cgroups.make("roomy", 1400 * MIB)
    workdir = project(tmp_path / "src")
    async with running_app(emulator, config(workdir, cg, "rm -f *.o\nexec make", cpu=less_throttled),
                           state_dir) as app:
        root, _ = await start(emulator, app)
        await wait_text(emulator, root, "succeeded in", timeout=240)
        store = app.core.store
        await emulator.wait_for(lambda: store.job_memory_runs("b200", "hello"), timeout=20)  # kept after the post
        peak = store.job_memory("b200", "hello")
    # no warning that the room runs out (the forecast, or the headroom the jobs need); the kernel's own stall count
    # (PSI), which a tight cgroup reclaiming the compile's page cache can raise now and then on a busy machine, is told
    # as it is and is no forecast (a CI run saw "tasks stalled on memory 13% of the last 10 s" with 97% available)
    text = thread_text(emulator, OPS, root)
    assert RATE.search(text) is None and LEARNED.search(text) is None, text
    assert all("stalled on memory" in m.text and "available" in m.text
               for m in emulator.thread(OPS, root) if "Memory pressure" in m.text), text
    assert max(peak) > 150 * MIB, peak  # the compilers were real and grew
