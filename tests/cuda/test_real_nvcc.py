"""The seed's failures produced for real with a real nvcc (no GPU needed), and diagnosed through `bot.builds.diagnose`.

Each log comes from real tools on this machine: a tiny CMake + Ninja CUDA project built with `-j1` (an
architecture the toolkit does not know, a missing system header, examples/cuda's thrust sorts OOM-killed inside a
memory cgroup), and `pip install --no-build-isolation` of examples/cuda in a fresh venv without scikit-build-core.
tests/data/logs/real-nvcc-*.log keep one log of each kind, taken from these runs, in the diagnosis corpus.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.builds.diagnose import diagnose
from tests.fakes.cgroups import in_cgroup
from tests.fakes.users import own_user, switch_to

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cuda"
ENV = {**os.environ, "LC_ALL": "C", "LANG": "C"}


def find_nvcc() -> str | None:
    """nvcc as CMake would find it: $CUDACXX, PATH, /usr/local/cuda, or the CUDA wheels in this venv."""
    candidates = [os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc",
                  str(Path(sysconfig.get_paths()["purelib"]) / "nvidia" / "cu13" / "bin" / "nvcc")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


NVCC = find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc here: not on PATH, not in $CUDACXX, not in "
                                                     "/usr/local/cuda, no CUDA wheels in the venv (`make cuda`)")
needs_cmake = pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("ninja")), reason="needs cmake and ninja")


CUDA_USER = "rigops-cuda"


def cuda_user() -> str | None:
    """Who runs cmake, ninja and nvcc here (see :func:`tests.fakes.users.own_user`)."""
    return own_user(CUDA_USER)


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120,
        user: str | None = None) -> str:
    """A real tool's stdout and stderr together, as a build log holds them."""
    done = subprocess.run(cmd, cwd=cwd, env=env or ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace", timeout=timeout, check=False, **switch_to(user))
    return done.stdout


def only_line(log: str, text: str) -> str:
    """The one line of ``log`` that contains ``text`` (the test's expected line, verbatim)."""
    found = [line for line in log.splitlines() if text in line]
    assert len(found) == 1, (text, log)
    return found[0]


def kernel_log() -> int | None:
    """/dev/kmsg opened at its end, so that only what the kernel logs from now on is read; None where it
    cannot be read (a regular user, a container without it)."""
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    os.lseek(fd, 0, os.SEEK_END)
    return fd


def oom_victims(fd: int, cgroup: Path) -> list[tuple[str, int]]:
    """The processes the kernel's OOM killer killed in ``cgroup`` since ``fd`` was opened, as the kernel names
    them in its ``oom-kill:`` lines: (name, pid)."""
    line = re.compile(rf"oom-kill:.*\btask_memcg=[^,]*/{re.escape(cgroup.name)},task=([^,]+),pid=(\d+)")
    victims = []
    while True:
        try:
            record = os.read(fd, 8192)
        except BlockingIOError:
            break
        except BrokenPipeError:  # the ring overwrote records we had not read: go on after them
            continue
        if found := line.search(record.decode(errors="replace")):
            victims.append((found[1], int(found[2])))
    os.close(fd)
    return victims


CMAKELISTS = """cmake_minimum_required(VERSION 3.18)
project(tiny_kernels LANGUAGES CUDA)
set(CMAKE_CUDA_ARCHITECTURES 90)
add_library(scale OBJECT csrc/scale.cu)
add_library(scale_sm70 OBJECT csrc/scale.cu)  # what an old arch list (sm_70) asks of CUDA 13
set_target_properties(scale_sm70 PROPERTIES CUDA_ARCHITECTURES 70)
add_library(numa_topo OBJECT csrc/numa_topo.cu)
add_library(sorts OBJECT csrc/sort_kernels.cu)  # examples/cuda's thrust sorts: ~0.6 GiB in cudafe++ alone
"""
SOURCES = {
    "csrc/scale.cu": "__global__ void scale(float* x, float f) { x[threadIdx.x] *= f; }\n",
    "csrc/numa_topo.cu": "#include <numa.h>\n\n__global__ void touch(int* x) { x[threadIdx.x] = 1; }\n"
                         "int nodes() { return numa_num_configured_nodes(); }\n",
}


@pytest.fixture(scope="module")
def tiny() -> Iterator[tuple[Path, str]]:
    """A tiny CMake + Ninja CUDA project, configured once with the real nvcc; its configure log. In a
    directory of its own outside pytest's (which only we may enter), owned by the user that builds it."""
    user = cuda_user()
    with tempfile.TemporaryDirectory(prefix="rigops-cuda-") as tmp:
        root = Path(tmp) / "sgl-kernel"
        heavy = {name: (EXAMPLE / name).read_text() for name in ("csrc/sort_kernels.cu", "csrc/kernels.cuh")}
        for name, text in {"CMakeLists.txt": CMAKELISTS, **SOURCES, **heavy}.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        if user is not None:
            os.chmod(tmp, 0o755)
            for path in [root, *root.rglob("*")]:
                os.chown(path, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
        log = build(root, "-S", ".", "-B", "build", "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={NVCC}")
        assert "Build files have been written" in log, log
        yield root, log


def build(root: Path, *args: str) -> str:
    """cmake with ``args`` in ``root``, as the user that owns it."""
    return run(["cmake", *args], root, {**ENV, "HOME": str(root)}, user=cuda_user())


@needs_nvcc
@needs_cmake
def test_the_tiny_project_builds_for_a_known_architecture(tiny: tuple[Path, str]) -> None:
    """The control: the same kernel builds for sm_90, so the failures below are the arch and the header."""
    root, _ = tiny
    log = build(root, "--build", "build", "-j1", "--target", "scale")
    assert "FAILED" not in log and (root / "build" / "CMakeFiles" / "scale.dir" / "csrc" / "scale.cu.o").exists(), log


@needs_nvcc
@needs_cmake
def test_an_architecture_the_toolkit_does_not_know(tiny: tuple[Path, str]) -> None:
    root, configure = tiny
    log = configure + build(root, "--build", "build", "-j1", "--target", "scale_sm70")
    line = only_line(log, "Unsupported gpu architecture")
    assert line == "nvcc fatal   : Unsupported gpu architecture 'compute_70'"
    got = diagnose(log)
    assert (got.category, got.line) == ("unsupported_arch", line)
    assert "arch" in got.fix.lower()


@needs_nvcc
@needs_cmake
def test_a_missing_system_header(tiny: tuple[Path, str]) -> None:
    if Path("/usr/include/numa.h").exists():
        pytest.skip("numa.h is installed here (libnuma-dev), so it cannot be missing")
    root, configure = tiny
    log = configure + build(root, "--build", "build", "-j1", "--target", "numa_topo")
    line = only_line(log, "numa.h: No such file or directory")
    assert line.endswith("csrc/numa_topo.cu:1:10: fatal error: numa.h: No such file or directory")
    got = diagnose(log)
    assert (got.category, got.line) == ("missing_syshdr", line)
    assert "numa" in got.fix.lower()


@needs_nvcc
@needs_cmake
def test_a_real_nvcc_killed_by_the_oom_killer_in_a_memory_cgroup(tiny: tuple[Path, str], cgroups: Any) -> None:
    """The thrust sorts of examples/cuda built by ninja inside a 384 MiB memory cgroup: the kernel's OOM killer
    kills nvcc's front end (cudafe++ needs ~0.6 GiB for them). CUDA 13's nvcc runs its steps through a shell, so
    the log says only the shell's "Killed" (CUDA 12 said "'cicc' died due to signal 9"), and nvcc exits 137."""
    root, configure = tiny
    cg = cgroups.make("nvcc-oom", 384 << 20)
    kmsg = kernel_log()
    script = f"cd {root} && exec cmake --build build -j1 --target sorts > oom.log 2>&1"
    assert in_cgroup(cg, script, user=cuda_user()).wait(timeout=120) != 0
    log = configure + (root / "oom.log").read_text(errors="replace")
    assert "oom_kill 1" in (cg / "memory.oom_control").read_text().splitlines(), "not the OOM killer"
    if kmsg is not None:  # the kernel names its victim: nvcc's cudafe++, not cicc
        assert [name for name, _ in oom_victims(kmsg, cg)] == ["cudafe++"]
    assert "FAILED: CMakeFiles/sorts.dir/csrc/sort_kernels.cu.o" in log, log
    line = only_line(log, "Killed")
    assert line == "Killed"
    got = diagnose(log)
    assert (got.category, got.line) == ("oom_compiler", line)
    assert "The build step for CMakeFiles/sorts.dir/csrc/sort_kernels.cu.o was killed" in got.fix, got.fix
    assert "rebuild -j<half>" in got.fix


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with pip and nothing else: no scikit-build-core, as on the seed's host."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    done = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot make a venv with pip here: {done.stderr.strip()[-300:]}")
    return venv


def test_the_build_backend_missing_without_build_isolation(bare_venv: Path, tmp_path: Path) -> None:
    """examples/cuda, installed as the seed was (`pip install . --no-build-isolation -v`) where
    scikit-build-core is not installed: pip cannot import the backend."""
    project = tmp_path / "sgl-kernel"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env = {**ENV, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    log = run([str(bare_venv / "bin" / "python"), "-m", "pip", "install", ".", "--no-build-isolation", "-v"],
              project, env)
    line = only_line(log, "No module named 'scikit_build_core'")
    assert line.strip().endswith("ModuleNotFoundError: No module named 'scikit_build_core'")
    got = diagnose(log)
    assert (got.category, got.line) == ("missing_pymodule", line)
    assert "scikit-build-core" in got.fix or "scikit_build_core" in got.fix
