"""Resume after a kill: real `pip install . --no-build-isolation` builds (scikit-build-core, CMake, ninja) started
from chat, killed from chat at about half way, and rebuilt from chat with rigops keeping the build directory
(`resume = "auto"`): the steps and wall time of the rebuild after the kill against a fresh build's, and whether
the installed package is the same. Projects: tests/projects/skbuild (eight slow C++ units), examples/cuda (four
thrust kernels through a real nvcc, when this machine has one) and iminuit's sdist from PyPI (Minuit2's C++, a
third-party scikit-build-core project). Goal: the rebuild after a kill at half way costs at most 55% of a fresh
build.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import ROOT

JOBS = 2
GOAL = 0.55
COUNTER = re.compile(r"^\s*\[(\d+)/(\d+)\] ", re.M)
RUNNING = " — running · "


@dataclass(frozen=True)
class Project:
    name: str
    source: Path
    env: dict[str, str]
    package: str  # the installed distribution whose files are compared
    tools: tuple[str, ...] = ("scikit-build-core", "cmake", "ninja")


def projects(where: Path, only: set[str] | None) -> list[Project]:
    found = [Project("skbuild", ROOT / "tests" / "projects" / "skbuild",
                     {"SKBUILD_CMAKE_DEFINE": f"DEMO_SRC={ROOT / 'examples' / 'demo' / 'src'}"}, "skheavy")]
    if shutil.which("nvcc"):
        found.append(Project("cuda", ROOT / "examples" / "cuda", {"CUDA_ARCHS": "90"}, "rigops-cuda-demo"))
    sdist = iminuit_sdist(where)
    if sdist is not None:
        found.append(Project("iminuit", sdist, {}, "iminuit",
                             tools=("scikit-build-core", "cmake", "ninja", "pybind11>=3")))
    return [p for p in found if only is None or p.name in only]


def iminuit_sdist(where: Path) -> Path | None:
    """iminuit's source distribution from PyPI, unpacked; None when pip cannot fetch it here."""
    done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                           "--disable-pip-version-check", "-d", str(where), "iminuit==2.33.0"],
                          capture_output=True, text=True, timeout=240, check=False)
    archives = sorted(where.glob("iminuit-*.tar.gz"))
    if done.returncode != 0 or not archives:
        print(f"iminuit: no sdist ({(done.stderr.strip().splitlines() or ['?'])[-1]})")
        return None
    with tarfile.open(archives[0]) as tar:
        tar.extractall(where, filter="data")
    return where / archives[0].name.removesuffix(".tar.gz")


def venv_with(where: Path, packages: tuple[str, ...]) -> Path:
    venv = where / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True, timeout=60)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--disable-pip-version-check", *packages], check=True, timeout=600)
    return python


def counters(log: str) -> list[tuple[int, int]]:
    return [(int(m[1]), int(m[2])) for m in COUNTER.finditer(Path(log).read_text(errors="replace"))]


def installed(python: Path, package: str) -> dict[str, str]:
    """The installed package's files (but pip's own records) and a digest of each; for a shared library, of the
    symbols it defines (nvcc names its temporary files by pid, and the names end up in the library's bytes, so
    two builds of the same CUDA source never match byte for byte)."""
    out = subprocess.run([str(python), "-c", (
        "import importlib.metadata as m, hashlib, sys\n"
        f"d = m.distribution({package!r})\n"
        "for f in d.files or []:\n"
        "    p = f.locate()\n"
        "    if p.is_file() and not str(f).endswith(('RECORD', 'INSTALLER', 'direct_url.json', '.pyc')):\n"
        "        print(f, hashlib.sha256(p.read_bytes()).hexdigest()[:16])\n")],
        capture_output=True, text=True, timeout=60, check=True).stdout
    files = dict(line.rsplit(" ", 1) for line in out.splitlines())
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    for name in files:
        if re.search(r"\.so(?:\.|$)", name) and shutil.which("nm"):
            symbols = subprocess.run(["nm", "-D", "--defined-only", str(site / name)], capture_output=True,
                                     text=True, timeout=60, check=False).stdout
            names = sorted(line.split()[-1] for line in symbols.splitlines() if line.strip())
            files[name] = "symbols " + hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
    return files


async def measure(project: Project, where: Path) -> dict[str, Any]:
    from slackemu import SlackEmulator, text_of
    from tests.harness import OPS, make_config, running_app
    from tests.scenario import wait_done

    python = venv_with(where, project.tools)

    def config(copy: str) -> Any:
        workdir = where / copy
        shutil.copytree(project.source, workdir, ignore=shutil.ignore_patterns("build", "*.egg-info"))
        command = f"{sys.executable} -m pip --python {python} install . --no-build-isolation --no-deps -v"
        env = {**project.env, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        return make_config({"b200": {"address": "local", "builds": {project.name: {
            "workdir": str(workdir), "command": command, "env": env, "jobs": JOBS,
            "log_dir": str(where / "logs")}}}}, confirm=False)

    async with SlackEmulator() as emu:
        def card(root: str, run: int) -> str:
            return next((text_of(m) for m in emu.thread(OPS, root) if f"· run {run}" in text_of(m)), "")

        async def ended(app: Any, run: int, timeout: float) -> Any:
            while (r := app.core.store.run(run)) is None or r.state in ("starting", "running"):
                await asyncio.sleep(0.5)
                timeout -= 0.5
                if timeout < 0:
                    raise TimeoutError(f"run {run} of {project.name} did not end")
            return r

        async with running_app(emu, config("fresh"), Path(tempfile.mkdtemp(dir=where))) as app:
            root = str((await emu.send_message(f"rebuild -j{JOBS}", channel=OPS))["ts"])
            fresh = await ended(app, 1, 3600)
        assert fresh.state == "succeeded", Path(fresh.log).read_text(errors="replace")[-2000:]
        fresh_files = installed(python, project.package)
        total = counters(fresh.log)[-1][1]

        async with running_app(emu, config("killed"), Path(tempfile.mkdtemp(dir=where))) as app:
            root = str((await emu.send_message(f"rebuild -j{JOBS}", channel=OPS))["ts"])

            def half_way() -> str | None:
                c = card(root, 1)
                m = re.search(rf"\[(\d+)/{total}\]", c)
                return c if (m and int(m[1]) >= total // 2) or (c and RUNNING not in c) else None

            await emu.wait_for(half_way, timeout=3600)
            said = await emu.send_message("kill it", channel=OPS, thread_ts=root)
            await wait_done(emu, OPS, str(said["ts"]), timeout=120)
            killed = await ended(app, 1, 120)
            await emu.send_message(f"rebuild -j{JOBS}", channel=OPS, thread_ts=root)
            again = await ended(app, 2, 3600)
            await asyncio.sleep(1.5)  # the card's last edit
            note = next((line for line in card(root, 2).splitlines() if "resumed" in line or "started" in line), "")
        assert again.state == "succeeded", Path(again.log).read_text(errors="replace")[-2000:]
        again_files = installed(python, project.package)
    first = counters(again.log)
    return {"project": project.name, "total": total, "fresh_s": (fresh.ended_at or 0) - fresh.started_at,
            "killed_at": counters(killed.log)[-1][0] if counters(killed.log) else 0,
            "left": first[-1][1] if first else 0, "again_s": (again.ended_at or 0) - again.started_at,
            "same": fresh_files == again_files, "files": len(fresh_files), "note": note,
            "diff": sorted(k for k in {*fresh_files, *again_files} if fresh_files.get(k) != again_files.get(k))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", action="append", help="skbuild, cuda or iminuit (repeatable)")
    args = parser.parse_args(argv)
    if shutil.which("g++") is None:
        print("needs g++")
        return
    with tempfile.TemporaryDirectory(prefix="rigops-bench-resume-") as tmp:
        for project in projects(Path(tmp), set(args.only) if args.only else None):
            where = Path(tmp) / project.name
            where.mkdir()
            r = asyncio.run(measure(project, where))
            ratio = r["again_s"] / r["fresh_s"] if r["fresh_s"] else float("nan")
            print(f"{r['project']:8}  fresh build: {r['total']} steps in {r['fresh_s']:.1f} s; killed at "
                  f"[{r['killed_at']}/{r['total']}], the rebuild did {r['left']} steps in {r['again_s']:.1f} s: "
                  f"{ratio:.0%} of fresh (goal ≤ {GOAL:.0%}) {'ok' if ratio <= GOAL else 'MISSED'}; installed "
                  f"files {'the same' if r['same'] else 'DIFFER: ' + ', '.join(r['diff'][:5])} ({r['files']})")
            if r["note"]:
                print(f"          card: {r['note'].strip()}", flush=True)


if __name__ == "__main__":
    main()
