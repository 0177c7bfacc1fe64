"""Real nvcc failures followed in their thread by the whole bot (Slack emulator, local host, real processes):
an architecture CUDA 13 does not know, and a real OOM kill of nvcc inside a memory cgroup, each reported with
its category, the error line and the fix, and for the OOM the retry at half the jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.config import Config
from slackemu import Message, SlackEmulator
from tests.cuda.test_real_nvcc import CMAKELISTS, EXAMPLE, NVCC, SOURCES, needs_cmake, needs_nvcc
from tests.harness import OPS, make_config, running_app
from tests.scenario import RETRY_HALF_ACTION

pytestmark = [needs_nvcc, needs_cmake]


def project(tmp_path: Path) -> Path:
    """The tiny CUDA project of test_real_nvcc, with examples/cuda's thrust sorts."""
    root = tmp_path / "sgl-kernel"
    heavy = {name: (EXAMPLE / name).read_text() for name in ("csrc/sort_kernels.cu", "csrc/kernels.cuh")}
    for name, text in {"CMakeLists.txt": CMAKELISTS, **SOURCES, **heavy}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def config(workdir: Path, target: str, *, cgroup: Path | None = None) -> Config:
    """The build as a ninja build of one target; in ``cgroup`` (its shell moves itself in first) when given."""
    command = (f"cmake -S . -B out -G Ninja -DCMAKE_CUDA_COMPILER={NVCC} && "
               f"cmake --build out --parallel {{jobs}} --target {target}")
    if cgroup is not None:
        command = f"echo $$ > {cgroup}/cgroup.procs && {command}"
    return make_config({"b200": {"address": "local", "builds": {"kernels": {
        "workdir": str(workdir), "command": command, "jobs": 2, "log_dir": str(workdir / "logs")}}}},
        confirm=False)


async def result_of(emu: SlackEmulator, text: str) -> Message:
    event = await emu.send_message(text, channel=OPS)
    root = str(event["ts"])

    def found() -> Message | None:
        return next((m for m in emu.thread(OPS, root) if "on *b200* failed" in m.text
                     or "on *b200* succeeded" in m.text or "is lost" in m.text), None)

    try:
        message: Message = await emu.wait_for(found, timeout=100)
    except BaseException:
        print("THREAD:", [m.text for m in emu.thread(OPS, root)])
        raise
    return message


async def test_an_unknown_architecture_is_diagnosed_in_the_thread(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_app(emulator, config(project(tmp_path), "scale_sm70"), state_dir):
        result = await result_of(emulator, "rebuild -j1")
    assert "failed after" in result.text and "(`unsupported_arch`)" in result.text
    assert "nvcc fatal   : Unsupported gpu architecture 'compute_70'" in result.text
    assert "CMAKE_CUDA_ARCHITECTURES" in result.text


async def test_a_real_nvcc_oom_kill_in_a_memory_cgroup_offers_half_the_jobs(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, cgroups: Any) -> None:
    cg = cgroups.make("nvcc-thread", 384 << 20)
    async with running_app(emulator, config(project(tmp_path), "sorts", cgroup=cg), state_dir):
        result = await result_of(emulator, "rebuild -j2")
    assert "oom_kill 1" in (cg / "memory.oom_control").read_text().splitlines(), "not the OOM killer"
    assert "failed after" in result.text and "(`oom_compiler`)" in result.text and "Killed" in result.text
    assert RETRY_HALF_ACTION in str(result.blocks)
