"""The -j a rebuild starts at when the request names none, through the whole bot on this machine: a build with no
runs yet starts at what a conservative per-job estimate lets fit in memory (never at every core: the seed's OOM),
a configured -j far above that gets a warning, and a build whose last run ran inside a memory limit is advised
within that limit. The thread says which memory the -j was worked out for.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bot.core.app import Core
from bot.hosts import Host
from bot.memory.advisor import FIRST_NVCC_JOB, GIB, MIB, size_text
from slackemu import SlackEmulator
from tests.harness import OPS, make_config, running_bot
from tests.scenario import thread_text

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2,
                                reason="every core is one job here: a lower -j needs two cores to show")


def one_build(tmp_path: Path, name: str, **build: Any) -> dict[str, Any]:
    """b200 as this machine, with one build that prints the -j it got."""
    return {"b200": {"address": "local", "builds": {name: {
        "workdir": str(tmp_path), "command": "echo MAX_JOBS=$MAX_JOBS", "log_dir": str(tmp_path / "logs"),
        **build}}}}


async def started(emu: SlackEmulator, core: Core, text: str) -> str:
    """Say ``text``; the thread's text once the build it starts has succeeded."""
    root = str((await emu.send_message(text, channel=OPS))["ts"])
    await emu.wait_for(lambda: "succeeded in" in thread_text(emu, OPS, root), timeout=30)
    return thread_text(emu, OPS, root)


async def room_of(local_host: Host) -> tuple[int, str]:
    """What a build started here may use (the host's memory, or the limit its agent runs under, less the
    default reserve) and how the thread names it."""
    snap = await local_host.snapshot()
    if snap.limit is not None and snap.limit < snap.memory.total:
        return int(snap.limit * 0.9), f"of the build's {size_text(snap.limit)} memory limit"
    return int(snap.memory.total * 0.9), f"of {size_text(snap.memory.total)} on the host"


async def test_a_first_build_starts_at_what_memory_allows_not_at_every_core(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, local_host: Host) -> None:
    usable, where = await room_of(local_host)
    threads = max(2, usable // (2 * FIRST_NVCC_JOB) + 1)  # nvcc --threads: two jobs of 4 GiB a thread do not fit
    cfg = make_config(one_build(tmp_path, "kernels", env={"NVCC_THREADS": str(threads)}), confirm=False)
    async with running_bot(emulator, cfg, state_dir) as core:
        text = await started(emulator, core, "rebuild")
        assert "started `kernels` at -j1 " in text, text  # not at every core, as before
        per_job = size_text(threads * FIRST_NVCC_JOB)
        assert (f":bulb: no runs to learn from yet — a conservative ~4.0 GiB per compiler process × {threads} nvcc "
                f"threads = ~{per_job} per nvcc job, {size_text(usable)} usable {where} → -j1") in text, text
        assert "; rigops learns from this run" in text and "past runs" not in text
        [run] = core.store.runs(host="b200")
        assert run.jobs == 1 and "MAX_JOBS=1" in Path(run.log).read_text()


async def test_a_configured_jobs_is_kept_but_warned_about_when_far_above_the_estimate(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, local_host: Host) -> None:
    usable, _ = await room_of(local_host)
    threads = max(2, usable // (2 * FIRST_NVCC_JOB) + 1)
    cfg = make_config(one_build(tmp_path, "kernels", env={"NVCC_THREADS": str(threads)}, jobs=3), confirm=False)
    async with running_bot(emulator, cfg, state_dir) as core:
        text = await started(emulator, core, "rebuild")
        assert "started `kernels` at -j3 " in text, text  # the config's choice
        assert ":warning: -j3 from the config may not fit in memory: no runs to learn from yet — a conservative" in text
        assert ":bulb:" not in text, text


async def test_the_advice_keeps_within_the_memory_limit_the_last_run_ran_under(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, local_host: Host) -> None:
    snap = await local_host.snapshot()
    if snap.limit is not None and snap.limit < GIB:
        pytest.skip(f"builds here run inside {size_text(snap.limit)}: tighter than the limit of this test")
    cfg = make_config(one_build(tmp_path, "llama", jobs=2), confirm=False)
    async with running_bot(emulator, cfg, state_dir) as core:
        # its last run, inside `systemd-run -p MemoryMax=900M`: its compilers peaked at 420 MiB
        core.store.record_job_memory("b200", "llama", [420 * MIB] * 20, label="compile", limit=900 * MIB)
        text = await started(emulator, core, "rebuild")
        assert "started `llama` at -j1 " in text, text  # on the host's memory it would be every core
        assert (":bulb: -j from memory of past runs: ~420 MiB per compile job at p95 over 1 run, 810 MiB usable of "
                "the build's 900 MiB memory limit → -j1") in text, text
