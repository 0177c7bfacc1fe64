"""Real nvcc failures followed in their thread by the whole bot (Slack emulator, local host, real processes):
an architecture CUDA 13 does not know, and a real OOM kill of nvcc inside a memory cgroup, each reported with
its category, the error line and the fix; for the OOM the guard's own message naming the process the kernel
killed and blaming the build, and the retry at half the jobs.

As root the builds run as test_real_nvcc's CUDA user, who is also b200's build user: a first start of a build
stops that user's stray build tools by name, never another test's or another person's (root's)."""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.config import Config
from slackemu import Message, SlackEmulator
from tests.cuda.test_real_nvcc import (
    CMAKELISTS,
    EXAMPLE,
    NVCC,
    SOURCES,
    cuda_user,
    kernel_log,
    needs_cmake,
    needs_nvcc,
    oom_victims,
)
from tests.harness import OPS, make_config, running_app
from tests.scenario import RETRY_HALF_ACTION

pytestmark = [needs_nvcc, needs_cmake]


@pytest.fixture
def workdir() -> Iterator[Path]:
    """Where the build runs and logs: outside pytest's directory (which only we may enter), owned by the user
    that builds in it."""
    path = Path(tempfile.mkdtemp(prefix="rigops-cuda-thread-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def project(workdir: Path) -> Path:
    """The tiny CUDA project of test_real_nvcc, with examples/cuda's thrust sorts."""
    root = workdir / "sgl-kernel"
    heavy = {name: (EXAMPLE / name).read_text() for name in ("csrc/sort_kernels.cu", "csrc/kernels.cuh")}
    for name, text in {"CMakeLists.txt": CMAKELISTS, **SOURCES, **heavy}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    if (user := cuda_user()) is not None:
        entry = pwd.getpwnam(user)
        for path in [workdir, *workdir.rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid)
    return root


def config(workdir: Path, target: str, *, cgroup: Path | None = None) -> Config:
    """The build as a ninja build of one target; in ``cgroup`` (its shell moves itself in first) when given.
    As root, the shell then becomes the CUDA user (the same process: its identity stays the run's root)."""
    command = (f"cmake -S . -B out -G Ninja -DCMAKE_CUDA_COMPILER={NVCC} && "
               f"cmake --build out --parallel {{jobs}} --target {target}")
    user = cuda_user()
    if user is not None:
        command = f"exec setpriv --reuid={user} --regid={user} --init-groups /bin/sh -c {shlex.quote(command)}"
    if cgroup is not None:
        command = f"echo $$ > {cgroup}/cgroup.procs && {command}"
    host = {"address": "local", **({"user": user} if user is not None else {})}
    return make_config({"b200": {**host, "builds": {"kernels": {
        "workdir": str(workdir), "command": command, "jobs": 2, "log_dir": str(workdir / "logs"),
        "env": {"HOME": str(workdir)}}}}}, confirm=False)


async def result_of(emu: SlackEmulator, text: str) -> tuple[str, Message]:
    """Say ``text`` in the ops channel; its thread and the build's result there."""
    event = await emu.send_message(text, channel=OPS)
    root = str(event["ts"])

    def found() -> Message | None:
        return next((m for m in emu.thread(OPS, root) if "on *b200* failed" in m.text
                     or "on *b200* succeeded" in m.text or "is lost" in m.text), None)

    return root, await said(emu, root, found)


async def said(emu: SlackEmulator, root: str, found: Callable[[], Message | None], *,
               timeout: float = 100) -> Message:
    try:
        message: Message = await emu.wait_for(found, timeout=timeout)
    except BaseException:
        print("THREAD:", [m.text for m in emu.thread(OPS, root)])
        raise
    return message


async def test_an_unknown_architecture_is_diagnosed_in_the_thread(
        emulator: SlackEmulator, workdir: Path, state_dir: Path) -> None:
    async with running_app(emulator, config(project(workdir), "scale_sm70"), state_dir):
        _, result = await result_of(emulator, "rebuild -j1")
    assert "failed after" in result.text and "(`unsupported_arch`)" in result.text
    assert "nvcc fatal   : Unsupported gpu architecture 'compute_70'" in result.text
    assert "CMAKE_CUDA_ARCHITECTURES" in result.text


async def test_a_real_nvcc_oom_kill_is_told_by_the_guard_blamed_on_the_build_and_offers_half_the_jobs(
        emulator: SlackEmulator, workdir: Path, state_dir: Path, cgroups: Any) -> None:
    """The kernel kills the heaviest of nvcc's processes (for thrust CUDA 13's cudafe++, not cicc), and nvcc
    prints only "Killed": the guard tells the thread by itself which process of the build was killed, as the
    kernel's log names it; the result says `oom_compiler`, names the ninja step, and offers half the jobs."""
    cg = cgroups.make("nvcc-thread", 384 << 20)
    kmsg = kernel_log()
    async with running_app(emulator, config(project(workdir), "sorts", cgroup=cg), state_dir):
        root, result = await result_of(emulator, "rebuild -j2")
        # A kill the guard sees only in its last look, after the build ended, is told after the result. It is
        # lost when the guard's sample that read it is still on its way as the build ends (finish cancels it).
        boom = await said(emulator, root, lambda: next(
            (m for m in emulator.thread(OPS, root) if "OOM killer killed" in m.text), None), timeout=20)
    victims = oom_victims(kmsg, cg) if kmsg is not None else None
    assert "oom_kill 1" in (cg / "memory.oom_control").read_text().splitlines(), "not the OOM killer"
    # One message blames the build (OOM kills of other people's processes on this machine are told apart).
    told = [m.text for m in emulator.thread(OPS, root) if m.text.startswith(":boom:")]
    assert told == [boom.text], told
    assert boom.text.startswith(":boom: The kernel's OOM killer killed ") and "of `kernels` on *b200*" in boom.text
    if victims is not None:  # the kernel's log is readable here, so the agent reads it too
        [(name, pid)] = victims
        assert name in ("cudafe++", "cicc", "ptxas"), f"the kernel killed {name}, not one of nvcc's steps"
        assert f"killed `{name}` (pid {pid}) of `kernels` on *b200*." in boom.text, boom.text
    assert "failed after" in result.text and "(`oom_compiler`)" in result.text and "```Killed```" in result.text
    assert "The build step for CMakeFiles/sorts.dir/csrc/sort_kernels.cu.o was killed" in result.text, result.text
    assert RETRY_HALF_ACTION in str(result.blocks)
