"""A real build inside a memory limit smaller than the host (as in a container's ``--memory``, a Slurm job or
``systemd-run -p MemoryMax=``): the card, the alerts, ``mem`` in the thread, the chart and what rigops learns
speak of that limit, not of the host's memory; and the alert comes before the kernel's OOM kill, from the
headroom each running compile job still needs rather than from a share of memory left.

The build is real: g++ compiling examples/demo's template-heavy code (~200 MiB and ~8 s per translation unit
at -O2) with make, inside a cgroup v1 memory cgroup of 560 MiB: -j2 fits (two jobs at their ~195 MiB peak, with
make, the drivers and the assembler beside them, would still fit), -j4 does not (and overshoots far enough for
the kernel to kill).

The compiler, its libraries and the headers are read into the page cache from here first, outside the limit,
as on a build host that has compiled before. A cgroup v1 limit is charged for a file page by whoever reads it
first: had the build read them itself, the limit would hold them too, and four jobs over the limit would evict
and fault back the compiler's own code for minutes (reclaim always frees a little) before the kernel kills.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.config import Config
from slackemu import SlackEmulator, text_of
from tests.core.test_guard import alert_message, start, wait_text
from tests.fakes.cgroups import Cgroups
from tests.harness import OPS, make_config, running_app
from tests.scenario import thread_text

MIB = 1 << 20
LIMIT = 560 * MIB
DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo" / "src"
UNITS = 4

pytestmark = [pytest.mark.skipif(shutil.which("g++") is None or shutil.which("make") is None,
                                 reason="needs g++ and make"),
              pytest.mark.timeout(600)]  # three real builds of ~30 s each on two busy cores


def project(where: Path) -> Path:
    """Four translation units of examples/demo's heavy code and a Makefile that always compiles them all."""
    where.mkdir()
    for i in range(1, UNITS + 1):
        (where / f"unit{i}.cpp").write_text(
            f'#include "heavy.hpp"\nstd::uint64_t unit{i}() {{ return demo::sweep<{i}>('
            'std::make_index_sequence<220>{}); }\n')
    objects = " ".join(f"unit{i}.o" for i in range(1, UNITS + 1))
    (where / "Makefile").write_text(
        f"all: {objects}\n%.o: %.cpp\n\tg++ -O2 -I{DEMO} -c $< -o $@\n.PHONY: all\n")
    return where


def warm_page_cache() -> None:
    """Read g++, cc1plus, as and make with their shared libraries, and the demo's headers, from this process."""
    cc1plus = subprocess.run(["g++", "-print-prog-name=cc1plus"], capture_output=True, text=True, check=True)
    files = {Path(cc1plus.stdout.strip()).resolve()}
    files |= {Path(found).resolve() for name in ("g++", "as", "make") if (found := shutil.which(name))}
    for binary in list(files):
        ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
        files |= {Path(fields[2]).resolve() for line in ldd.stdout.splitlines()
                  if len(fields := line.split()) >= 3 and fields[1] == "=>" and fields[2].startswith("/")}
    for path in files:
        with path.open("rb") as f:
            while f.read(1 << 20):
                pass
    subprocess.run(["g++", "-x", "c++", f"-I{DEMO}", "-fsyntax-only", "-"], input=b'#include "heavy.hpp"\n',
                   check=True)


def config(workdir: Path, cg: Path) -> Config:
    """b200 is this machine, with the default alert threshold (5% left); its build moves into ``cg`` first."""
    command = f"echo $$ > {cg}/cgroup.procs || exit 99\nrm -f *.o\nexec make"
    return make_config({"b200": {"address": "local", "builds": {"hello": {
        "workdir": str(workdir), "command": command, "jobs": 2, "log_dir": str(workdir / "logs")}}}}, confirm=False)


async def test_a_real_build_in_a_memory_limit_is_told_in_that_limit(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, cgroups: Cgroups) -> None:
    cg = cgroups.make("limit", LIMIT)
    workdir = project(tmp_path / "src")
    warm_page_cache()
    async with running_app(emulator, config(workdir, cg), state_dir) as app:
        store = app.core.store

        # 1. -j2 fits in the limit: the card and `mem` speak of the limit, and no alert comes.
        first, run = await start(emulator, app, "rebuild -j2")
        await wait_text(emulator, first, "compiling `unit", timeout=30)  # the card, once the compilers run
        await emulator.send_message("mem", channel=OPS, thread_ts=first)
        mem = await wait_text(emulator, first, "runs inside a 560Mi memory limit", timeout=30)
        assert f"`hello` (run {run.id})" in text_of(mem) and "is what it can run out of" in text_of(mem)
        await wait_text(emulator, first, "succeeded in", timeout=120)
        text = thread_text(emulator, OPS, first)
        assert "Memory pressure" not in text, text
        card = next(m for m in emulator.thread(OPS, first) if "peak memory used" in text_of(m))
        assert "of its 560Mi memory limit" in text_of(card), text_of(card)
        await emulator.wait_for(lambda: store.job_memory_runs("b200", "hello"), timeout=20)  # kept after the post
        peaks = store.job_memory("b200", "hello")
        # a cc1plus per unit; the rest are g++ drivers (and a g++ child seen before it exec'd its assembler)
        assert len([p for p in peaks if p > 100 * MIB]) == UNITS, peaks
        assert all(p < 20 * MIB for p in peaks if p <= 100 * MIB), peaks
        kinds = store.job_memory_by_name("b200", "hello")
        assert kinds.keys() == {"g++", "cc1plus"} and kinds["g++"] < 20 * MIB < 100 * MIB < kinds["cc1plus"]
        assert store.job_memory_limit("b200", "hello") == LIMIT
        series = store.run_memory(run.id)
        assert series is not None and series["limited"] is True
        assert {p[1] for p in series["points"]} == {LIMIT}  # the chart's top line is the limit, not 23 GiB

        # 2. -j4 cannot fit: four compile jobs of what the first run learned need more than the limit, so
        #    the alert comes when they start, before the kernel kills one of them.
        second, run = await start(emulator, app, "rebuild -j4")
        alert = await alert_message(emulator, second, timeout=60)
        assert "of the build's memory limit left" in alert.text and "of 560 MiB" in alert.text, alert.text
        assert "less than the running compilers still need" in alert.text, alert.text
        assert "suggest -j2" in alert.text, alert.text
        boom = await wait_text(emulator, second, "OOM killer killed", timeout=120)
        assert float(alert.ts) < float(boom.ts), "the alert came after the kill"
        assert "of `hello` on *b200*" in boom.text
        failed = await wait_text(emulator, second, "failed after", timeout=60)
        assert "`oom_compiler`" in text_of(failed) and "Retry at -j2" in str(failed.blocks)
        assert float(boom.ts) < float(failed.ts)  # the kill is told before the result, which names the victim
        victim = "`cc1plus`" if os.access("/dev/kmsg", os.R_OK) else "a process"
        assert f"The kernel's OOM killer killed* {victim}" in text_of(failed), text_of(failed)

        # 3. Asked again with no -j, the advisor budgets for the limit the build ran in, not the host's memory.
        await emulator.wait_for(lambda: store.job_memory_runs("b200", "hello") == 2, timeout=20)
        await emulator.send_message("rebuild", channel=OPS, thread_ts=second)
        advised = await wait_text(emulator, second, "-j from memory of past runs", timeout=60)
        assert "usable of the build's 560 MiB memory limit → -j2" in advised.text, advised.text
        assert "started `hello` at -j2" in advised.text
