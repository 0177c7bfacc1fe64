"""Builds followed in their thread: a live card, the result with the first real error and its fix, buttons,
and picking up where the bot left off after a restart — real cmake + ninja builds, real processes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.config import Config
from slackemu import Message, SlackEmulator
from tests.harness import OPS, make_config, running_app
from tests.scenario import RETRY_ACTION, RETRY_HALF_ACTION, SHOW_LOG_ACTION, has_buttons, thread_text
from tests.waiting import wait_until

PROJECT = Path(__file__).parents[1] / "projects" / "hello"
BUILD = "cmake -S . -B out -G Ninja && cmake --build out --parallel {jobs}"
pytestmark = pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("ninja") and shutil.which("g++")),
                                reason="needs cmake, ninja and g++")


def project(tmp_path: Path, *, break_with: str | None = None) -> Path:
    src = tmp_path / "hello"
    shutil.copytree(PROJECT, src)
    if break_with is not None:
        (src / "src" / "part3.cpp").write_text(break_with)
    return src


def config(workdir: Path, *, command: str = BUILD) -> Config:
    return make_config({"b200": {"address": "local", "builds": {"hello": {
        "workdir": str(workdir), "command": command, "jobs": 2, "log_dir": str(workdir / "logs")}}}},
        confirm=False)


def result_message(emu: SlackEmulator, root: str) -> Message | None:
    return next((m for m in emu.thread(OPS, root) if "on *b200* succeeded" in m.text or "on *b200* failed" in m.text
                 or "is lost" in m.text), None)


async def start_build(emu: SlackEmulator, text: str = "rebuild -j2") -> str:
    event = await emu.send_message(text, channel=OPS)
    return str(event["ts"])


async def wait_result(emu: SlackEmulator, root: str, *, after: int = 0, timeout: float = 90) -> Message:
    def found() -> Message | None:
        results = [m for m in emu.thread(OPS, root) if "on *b200* succeeded" in m.text
                   or "on *b200* failed" in m.text or "is lost" in m.text]
        return results[after] if len(results) > after else None

    message: Message = await emu.wait_for(found, timeout=timeout)
    return message


async def test_a_build_that_succeeds_is_reported_with_its_duration(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_app(emulator, config(project(tmp_path)), state_dir) as app:
        root = await start_build(emulator)
        result = await wait_result(emulator, root)
        runs = app.core.store.runs()
    assert "succeeded in" in result.text and "<@U0HUMAN>" in result.text and not has_buttons(result)
    card = next(m for m in emulator.thread(OPS, root) if "`hello` on *b200* —" in m.text)
    assert "succeeded" in card.text and "[7/7]" in card.text
    assert runs[0].state == "succeeded" and runs[0].exit_status == 0
    assert (tmp_path / "hello" / "out" / "hello").exists()


async def test_a_failed_build_shows_the_first_real_error_and_its_fix(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    broken = project(tmp_path, break_with="#include <numa.h>\nint part3() { return 3; }\n")
    async with running_app(emulator, config(broken), state_dir) as app:
        root = await start_build(emulator)
        result = await wait_result(emulator, root)
        assert "failed after" in result.text and "(exit 1, -j2)" in result.text
        assert "missing_syshdr" in result.text and "fatal error: numa.h: No such file or directory" in result.text
        assert "libnuma-dev" in result.text and "<@U0HUMAN>" in result.text
        assert "[Retry]" in thread_text(emulator, OPS, root) and RETRY_HALF_ACTION not in str(result.blocks)
        services = app.core
        before = services.activity.finished
        await emulator.click(result.ts, SHOW_LOG_ACTION, channel=OPS)
        await services.activity.wait_finished(before + 1)
        assert "ninja: build stopped" in thread_text(emulator, OPS, root)
        await emulator.click(result.ts, RETRY_ACTION, channel=OPS, user="U0OTHER")
        second = await wait_result(emulator, root, after=1)
        assert "failed after" in second.text and "<@U0OTHER>" in second.text
        assert [r.state for r in services.store.runs()] == ["failed", "failed"]


async def test_a_compiler_killed_for_memory_offers_half_the_jobs(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    killer = tmp_path / "killer"
    killer.mkdir()
    (killer / "cc1plus").write_text("#!/bin/sh\nkill -9 $$\n")
    (killer / "cc1plus").chmod(0o755)
    command = f"CXXFLAGS=-B{killer} {BUILD}"
    async with running_app(emulator, config(project(tmp_path), command=command), state_dir) as app:
        root = await start_build(emulator, "rebuild -j4")
        result = await wait_result(emulator, root)
        assert "oom_compiler" in result.text and "Killed signal terminated program cc1plus" in result.text
        await emulator.click(result.ts, RETRY_HALF_ACTION, channel=OPS)
        await wait_result(emulator, root, after=1)
        assert [r.jobs for r in app.core.store.runs()] == [2, 4]


async def test_the_card_survives_rate_limits(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    gate = tmp_path / "go"
    command = f"echo '[1/4] Building CXX object a.o'; while [ ! -f {gate} ]; do sleep 0.05; done; echo '[4/4] Linking'"
    emulator.fail_next("chat.update", status=429, retry_after=1, count=2)
    async with running_app(emulator, config(tmp_path, command=command), state_dir):
        root = await start_build(emulator)
        await emulator.wait_for(lambda: any("[1/4]" in m.text for m in emulator.thread(OPS, root)), timeout=30)
        gate.touch()
        await wait_result(emulator, root)
    card = next(m for m in emulator.thread(OPS, root) if "`hello` on *b200* —" in m.text)
    assert "succeeded" in card.text
    assert [c.status for c in emulator.calls if c.method == "chat.update"].count(429) == 2


async def test_after_a_restart_the_bot_reports_builds_that_ended_while_it_was_away(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    gate = tmp_path / "go"
    command = f"echo started; while [ ! -f {gate} ]; do sleep 0.05; done; echo 'error: gave up'; exit 3"
    cfg = config(tmp_path, command=command)
    async with running_app(emulator, cfg, state_dir) as app:
        root = await start_build(emulator)
        await emulator.wait_for(lambda: app.core.store.runs(live=True), timeout=30)
        run = app.core.store.runs()[0]
    # the bot is down; the build goes on and ends
    assert not Path(run.exit_file).exists()
    gate.touch()
    wait_until(lambda: Path(run.exit_file).exists(), timeout=30, what="the build to end")
    async with running_app(emulator, cfg, state_dir) as app:
        result = await wait_result(emulator, root)
        again = app.core.store.run(run.id)
    assert "failed after" in result.text and "(exit 3, -j2)" in result.text and "error: gave up" in result.text
    assert again is not None and again.state == "failed" and again.exit_status == 3


async def test_a_run_that_vanished_without_an_exit_status_is_lost(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    import os
    import signal

    command = "echo started; exec sleep 600"
    cfg = config(tmp_path, command=command)
    async with running_app(emulator, cfg, state_dir) as app:
        root = await start_build(emulator)
        await emulator.wait_for(lambda: app.core.store.runs(live=True), timeout=30)
        run = app.core.store.runs()[0]
    assert run.supervisor_pid is not None
    os.kill(run.supervisor_pid, signal.SIGKILL)  # as if the host went down under the build
    os.kill(run.pid, signal.SIGKILL)
    async with running_app(emulator, cfg, state_dir):
        result = await wait_result(emulator, root)
    assert "is lost" in result.text


@pytest.mark.parametrize(("breakage", "category", "line"), [
    ({"src/part3.cpp": "int missing_fn();\nint part3() { return missing_fn(); }\n"}, "linker_error",
     "undefined reference to `missing_fn()'"),
    ({"CMakeLists.txt": "cmake_minimum_required(VERSION 99.0)\nproject(hello CXX)\n"}, "cmake_version",
     "CMake 99.0 or higher is required."),
    ({"src/part3.cpp": "int part3() { return 3 }\n"}, "compile_error", "part3.cpp:1:23: error: expected"),
])
async def test_each_failure_kind_is_diagnosed_from_the_real_log(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, breakage: dict[str, str], category: str,
        line: str) -> None:
    src = project(tmp_path)
    for name, text in breakage.items():
        (src / name).write_text(text)
    async with running_app(emulator, config(src), state_dir):
        root = await start_build(emulator)
        result = await wait_result(emulator, root)
    assert f"(`{category}`)" in result.text and line in result.text


async def test_a_missing_python_build_module_is_diagnosed(emulator: SlackEmulator, tmp_path: Path,
                                                          state_dir: Path) -> None:
    command = "python3 -c 'import scikit_build_core_not_installed'"
    async with running_app(emulator, config(tmp_path, command=command), state_dir):
        root = await start_build(emulator)
        result = await wait_result(emulator, root)
    assert "(`missing_pymodule`)" in result.text
    assert "No module named 'scikit_build_core_not_installed'" in result.text


async def test_a_run_from_before_a_host_reboot_is_lost(emulator: SlackEmulator, tmp_path: Path,
                                                       state_dir: Path) -> None:
    import sqlite3

    from tests.fakes.tools import kill_session, read_stat_fields

    cfg = config(tmp_path, command="echo started; exec sleep 600")
    async with running_app(emulator, cfg, state_dir) as app:
        root = await start_build(emulator)
        await emulator.wait_for(lambda: app.core.store.runs(live=True), timeout=30)
        run = app.core.store.runs()[0]
    try:
        with sqlite3.connect(state_dir / "rigops.sqlite3") as db:  # recorded under another boot
            db.execute("UPDATE runs SET boot_id = 'a-boot-before-the-reboot' WHERE id = ?", (run.id,))
        async with running_app(emulator, cfg, state_dir) as app:
            result = await wait_result(emulator, root)
            assert "is lost" in result.text
            assert (app.core.store.run(run.id) or run).state == "lost"
    finally:
        fields = read_stat_fields(run.pid)
        if fields is not None:
            kill_session(int(fields[3]))


async def test_a_long_log_tail_goes_up_as_a_file_with_secrets_redacted(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    command = ("echo HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz012345; "
               "for i in $(seq 1 600); do echo \"[$i/600] Building CXX object obj$i.o\"; done")
    async with running_app(emulator, config(tmp_path, command=command), state_dir) as app:
        root = await start_build(emulator)
        await wait_result(emulator, root)
        services = app.core
        before = services.activity.finished
        await emulator.send_message("show me the last 700 lines", channel=OPS, thread_ts=root)
        await services.activity.wait_finished(before + 1)
    uploads = [f for f in emulator.files.values()]
    assert len(uploads) == 1
    content = uploads[0].text
    assert "[600/600] Building CXX object obj600.o" in content and "[redacted]" in content
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in content
    assert "attached as a file" in thread_text(emulator, OPS, root)


FROM_SCRATCH_BUILD = """\
echo '*** scikit-build-core 0.10.7 using CMake 3.28.3 (wheel)'
echo '*** Configuring CMake...'
echo '-- The C compiler identification is GNU 12.2.0'
echo '-- Build files have been written to: /tmp/tmpq3c8zhz6/build'
echo '*** Building project with Ninja...'
if [ ! -f {ran} ]; then
  touch {ran}
  for i in $(seq 1 124); do echo "[$i/193] Building C object vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o"; done
  exit 1
fi
for i in 4 5; do echo "[$i/193] Building C object vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o"; done
while [ ! -f {gate} ]; do sleep 0.05; done
"""  # noqa: E501  (log lines are long)


async def test_a_retry_that_starts_from_scratch_says_so_and_how_to_resume(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    gate, script = tmp_path / "go", tmp_path / "build.sh"
    script.write_text(FROM_SCRATCH_BUILD.format(ran=tmp_path / "ran", gate=gate))
    async with running_app(emulator, config(tmp_path, command=f"sh {script}"), state_dir):
        root = await start_build(emulator)
        first = await wait_result(emulator, root)
        await emulator.click(first.ts, RETRY_ACTION, channel=OPS)

        def second_card() -> str:
            return next((m.text for m in emulator.thread(OPS, root) if "· run 2" in m.text and "[5/193]" in m.text
                         and "started again" in m.text), "")

        card = await emulator.wait_for(second_card, timeout=30)
        gate.touch()
        await wait_result(emulator, root, after=1)
    first_card = next(m.text for m in emulator.thread(OPS, root) if "· run 1" in m.text)
    assert "[124/193]" in first_card and "started again" not in first_card
    assert ":repeat: started again from [4/193]; the last run reached [124/193] — its build directory was not " \
           "kept." in card
    assert "-C build-dir=build/{wheel_tag}" in card and "[tool.scikit-build]" in card
    final = next(m.text for m in emulator.thread(OPS, root) if "· run 2" in m.text)
    assert "succeeded" in final and "started again from [4/193]" in final
    print("\n--- card ---\n" + card)
