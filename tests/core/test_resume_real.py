"""Resume, don't restart, on a real scikit-build-core project: tests/projects/skbuild (eight slow translation
units and a module, ninja counting [n/9]) installed as the seed was, ``pip install . --no-build-isolation -v``,
into a venv holding scikit-build-core, CMake and ninja from PyPI, started, killed and started again from chat.

With scikit-build-core's default temporary build directory the second run counts from [1/9] again, and its
card says so, with the last run's counter and scikit-build-core's fix. With ``-C build-dir=build/{wheel_tag}``
the second run re-runs CMake's configure, then ninja counts only what is left ([1/5] after four objects), and
the card says nothing of a restart.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bot.config import Config
from bot.frontends.slack.app import RigopsApp
from bot.store import BuildRun
from slackemu import SlackEmulator, text_of
from tests.fakes.venvs import venv_with
from tests.harness import OPS, make_config, running_app
from tests.scenario import thread_text, wait_done
from tests.waiting import eventually

PROJECT = Path(__file__).resolve().parents[1] / "projects" / "skbuild"
DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo" / "src"
STEPS = 9          # eight objects and the module
KILL_FROM = 4      # the card shows at least [4/9]: past about half of the compile time, four units still to go
INSTALL = "{pip} --python {python} install . --no-build-isolation -v"
KEPT = " -C build-dir=build/{wheel_tag}"  # scikit-build-core's placeholder: rigops replaces only {jobs}
RUNNING = " — running · "  # in a card's first line while the build runs
COUNTER = re.compile(r"^\s*\[(\d+)/(\d+)\] ", re.M)

pytestmark = [pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++"),
              pytest.mark.timeout(180)]  # a busy machine; ~35 s on an idle one


@pytest.fixture(scope="module")
def skbuild_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv's python with scikit-build-core, CMake and ninja from PyPI (this venv's pip installs them, a
    few seconds from pip's cache); skips when they cannot be installed."""
    python = venv_with(tmp_path_factory.mktemp("skbuild"), "scikit-build-core", "cmake", "ninja")
    return python


def config(tmp_path: Path, python: Path, *, keep_build_dir: bool, resume: str = "auto") -> Config:
    """b200 is this machine; its one build is a copy of the project, installed into ``python``'s venv
    (``keep_build_dir``: the command names its own build dir; ``resume``: the build's setting)."""
    workdir = tmp_path / "skbuild"
    shutil.copytree(PROJECT, workdir)
    command = INSTALL.format(pip=f"{sys.executable} -m pip", python=python) + (KEPT if keep_build_dir else "")
    env = {"SKBUILD_CMAKE_DEFINE": f"DEMO_SRC={DEMO}", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return make_config({"b200": {"address": "local", "builds": {"skheavy": {
        "workdir": str(workdir), "command": command, "env": env, "resume": resume,
        "jobs": 2, "log_dir": str(tmp_path / "logs")}}}}, confirm=False)


def card_of(emu: SlackEmulator, root: str, run: int) -> str:
    return next((text_of(m) for m in emu.thread(OPS, root) if f"· run {run}" in text_of(m)), "")


def told_or_past(card: str) -> str | None:
    """The card once it says the build started again, or once the build is past its first steps without
    having said so (the note comes with the first counter, so it is not coming any more)."""
    m = re.search(r"\[(\d+)/\d+\]", card)
    return card if "started again" in card or (m and int(m[1]) > 2) or "running" not in card else None


def counters(log: str) -> list[tuple[int, int]]:
    """The ninja counters of a build's log, in order: (done, total)."""
    return [(int(m[1]), int(m[2])) for m in COUNTER.finditer(Path(log).read_text(errors="replace"))]


async def run_in(app: RigopsApp, run_id: int, *, states: tuple[str, ...], timeout: float) -> BuildRun:
    """Run ``run_id`` once it is in one of ``states``."""
    store = app.core.store

    def found() -> BuildRun | None:
        run = store.run(run_id)
        return run if run is not None and run.state in states else None

    got: BuildRun = await eventually(found, timeout=timeout, what=f"run {run_id} {' or '.join(states)}")
    return got


async def kill(emu: SlackEmulator, root: str) -> None:
    """Say "kill it" in the thread and wait until rigops is done stopping the build."""
    said = await emu.send_message("kill it", channel=OPS, thread_ts=root)
    assert await wait_done(emu, OPS, str(said["ts"]), timeout=60) == "white_check_mark", thread_text(emu, OPS, root)


async def kill_halfway(emu: SlackEmulator, app: RigopsApp, root: str, run: int) -> BuildRun:
    """Once run ``run``'s card shows [KILL_FROM/9] or further, "kill it" in the thread; the stopped run."""
    def far_enough_or_ended() -> str | None:
        card = card_of(emu, root, run)
        m = re.search(rf"\[(\d+)/{STEPS}\]", card)
        return card if (m and int(m[1]) >= KILL_FROM) or (card and RUNNING not in card) else None

    if RUNNING not in await emu.wait_for(far_enough_or_ended, timeout=90):
        ended = app.core.store.run(run)
        log = Path(ended.log).read_text(errors="replace").splitlines() if ended else []
        raise AssertionError(f"run {run} ended before the kill:\n{thread_text(emu, OPS, root)}\n--- its log's end ---\n"
                             + "\n".join(log[-25:]))
    await kill(emu, root)
    stopped = await run_in(app, run, states=("stopped", "succeeded", "failed"), timeout=30)
    assert stopped.state == "stopped", f"run {run} {stopped.state}:\n{thread_text(emu, OPS, root)}"
    return stopped


async def test_a_restart_of_a_real_pip_install_from_scratch_says_so_and_how_to_resume(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, skbuild_python: Path) -> None:
    """With ``resume = "never"``, scikit-build-core's own default: a new temporary build dir each run."""
    cfg = config(tmp_path, skbuild_python, keep_build_dir=False, resume="never")
    async with running_app(emulator, cfg, state_dir) as app:
        root = str((await emulator.send_message("rebuild -j2", channel=OPS))["ts"])
        first = await kill_halfway(emulator, app, root, 1)
        await emulator.send_message("rebuild -j2", channel=OPS, thread_ts=root)
        card = await emulator.wait_for(lambda: told_or_past(card_of(emulator, root, 2)), timeout=90)
        await kill(emulator, root)  # the card said what it says: no need to finish the build
        second = await run_in(app, 2, states=("stopped", "succeeded", "failed"), timeout=30)

    before, again = counters(first.log), counters(second.log)
    print(f"\nrun 1 counted {before[0]} .. {before[-1]}; run 2 began {again[:2]}\n--- card ---\n{card}")
    assert before[0] == (1, STEPS) and again[0] == (1, STEPS), (before, again)  # a fresh temporary build dir
    reached = f"[{before[-1][0]}/{STEPS}]"
    assert f":repeat: started again from [1/{STEPS}]; the last run reached {reached} — its build directory was " \
           "not kept." in card, card
    assert "`pip install . -C build-dir=build/{wheel_tag}`" in card and "[tool.scikit-build]" in card, card
    assert "started again" not in card_of(emulator, root, 1)


async def test_a_restart_of_a_real_pip_install_in_a_kept_build_dir_resumes_and_claims_no_restart(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, skbuild_python: Path) -> None:
    async with running_app(emulator, config(tmp_path, skbuild_python, keep_build_dir=True), state_dir) as app:
        root = str((await emulator.send_message("rebuild -j2", channel=OPS))["ts"])
        first = await kill_halfway(emulator, app, root, 1)
        built = sorted((tmp_path / "skbuild" / "build").glob("*/CMakeFiles/skheavy.dir/src/*.o"))
        await emulator.send_message("rebuild -j2", channel=OPS, thread_ts=root)
        second = await run_in(app, 2, states=("stopped", "succeeded", "failed"), timeout=90)
        card = await emulator.wait_for(lambda: (c := card_of(emulator, root, 2)) and "succeeded" in c and c,
                                       timeout=30)

    before, after = counters(first.log), counters(second.log)
    log = Path(second.log).read_text(errors="replace")
    print(f"\nrun 1 counted {before[0]} .. {before[-1]}, leaving {len(built)} objects; run 2 counted {after}"
          f"\n--- card ---\n{card}")
    assert second.state == "succeeded", log
    # Ninja counts only what is left: the module and the objects it had not recorded as built. It records an
    # object before pip relays its counter line, and a compiler may finish just before the kill; so what is left
    # is at most what run 1's log had not counted, and at least what is not on disk.
    left = after[0][1]
    assert after[0][0] == 1 and after[-1] == (left, left), after
    assert STEPS - len(built) <= left <= STEPS - before[-1][0] < STEPS, (before, built, after)
    assert "-- Configuring done" in log and "*** Building project with Ninja..." in log  # configure ran again
    assert f"[{left}/{left}]" in card and "started again" not in card and "build directory" not in card, card
    assert f":fast_forward: resumed: {STEPS - left} of {STEPS} steps were already built, {left} to go." in card, card


async def test_a_restart_of_a_real_pip_install_resumes_by_itself(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, skbuild_python: Path) -> None:
    """The seed's command as it was (no build dir of its own) and the build's default, ``resume = "auto"``:
    rigops keeps scikit-build-core's build directory (``SKBUILD_BUILD_DIR``), so the run after a kill builds
    only what is left, and its card says how much was already built. Measured: the steps and the wall time of
    the run after the kill, against the same run from scratch (``resume = "never"``, the test above)."""
    async with running_app(emulator, config(tmp_path, skbuild_python, keep_build_dir=False), state_dir) as app:
        root = str((await emulator.send_message("rebuild -j2", channel=OPS))["ts"])
        first = await kill_halfway(emulator, app, root, 1)
        kept = sorted((tmp_path / "skbuild" / "build" / "rigops-skheavy").glob("*/CMakeFiles/skheavy.dir/src/*.o"))
        await emulator.send_message("rebuild -j2", channel=OPS, thread_ts=root)
        second = await run_in(app, 2, states=("stopped", "succeeded", "failed"), timeout=90)
        card = await emulator.wait_for(lambda: (c := card_of(emulator, root, 2)) and "succeeded" in c and c,
                                       timeout=30)
    before, after = counters(first.log), counters(second.log)
    took = (second.ended_at or 0) - second.started_at
    print(f"\nresume=auto: run 1 counted {before[0]} .. {before[-1]}, leaving {len(kept)} objects; run 2 counted "
          f"{after[0]} .. {after[-1]} in {took:.1f} s\n--- card ---\n{card}")
    assert second.state == "succeeded", Path(second.log).read_text(errors="replace")[-3000:]
    assert kept, "the first run built nowhere rigops kept"
    left = after[0][1]
    assert after[0][0] == 1 and left < STEPS, after  # only what was left
    assert f":fast_forward: resumed: {STEPS - left} of {STEPS} steps were already built, {left} to go." in card, card
    assert "started again" not in card, card


async def test_a_clean_rebuild_and_a_changed_setup_start_a_real_pip_install_from_scratch_and_say_why(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, skbuild_python: Path) -> None:
    """"rebuild clean" removes the directory rigops kept; so does a changed CMAKE_ARGS (the kept objects were
    built another way), found by itself on the next rebuild. Each run after counts from [1/9] again, and its card
    says why instead of claiming a resume or calling it a restart that lost its work."""
    cfg = config(tmp_path, skbuild_python, keep_build_dir=False)
    kept = tmp_path / "skbuild" / "build" / "rigops-skheavy"
    async with running_app(emulator, cfg, state_dir) as app:
        root = str((await emulator.send_message("rebuild -j2", channel=OPS))["ts"])
        await kill_halfway(emulator, app, root, 1)
        assert list(kept.glob("*/CMakeFiles/skheavy.dir/src/*.o")), "the first run kept nothing"
        await emulator.send_message("rebuild clean -j2", channel=OPS, thread_ts=root)
        second = await kill_halfway(emulator, app, root, 2)
        asked = card_of(emulator, root, 2)
    build = cfg.hosts["b200"].builds["skheavy"]
    changed = replace(cfg, hosts={"b200": replace(cfg.hosts["b200"], builds={"skheavy": replace(
        build, env={**build.env, "CMAKE_ARGS": "-DRIGOPS_TEST_FLAG=1"})})})
    async with running_app(emulator, changed, state_dir) as app:
        await emulator.send_message("rebuild -j2", channel=OPS, thread_ts=root)
        told = await emulator.wait_for(lambda: (c := card_of(emulator, root, 3)) and "started clean" in c
                                       and (re.search(rf"\[\d+/{STEPS}\]", c) or RUNNING not in c) and c, timeout=90)
        await kill(emulator, root)
        third = await run_in(app, 3, states=("stopped", "succeeded", "failed"), timeout=30)

    print(f"\n--- run 2's card ---\n{asked}\n--- run 3's card ---\n{told}")
    assert counters(second.log)[0] == (1, STEPS) and counters(third.log)[0] == (1, STEPS)
    assert (":broom: started clean: a clean rebuild was asked for; the kept build directory build/rigops-skheavy "
            "was removed.") in asked, asked
    assert ":broom: started clean: CMAKE_ARGS changed since the run that built it; the kept build directory " \
           "build/rigops-skheavy was removed." in told, told
    for card in (asked, told):
        assert "resumed" not in card and "started again" not in card, card
    assert not [p for p in kept.parent.iterdir() if p.name.startswith(".rigops-removed-")]
