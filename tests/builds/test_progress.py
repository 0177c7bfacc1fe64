"""bot/builds/progress.py: progress, phase and ETA for the live status card, from a log fed a chunk at a time.

Real output first: a small CMake project (30 sources with numbers in their names, warnings interleaved
with the progress lines, a custom command that prints bracketed noise) built here with Ninja and with
Unix Makefiles at -j4, rebuilt after its file list grew (so CMake re-runs and ninja's total changes), and
built by ninja under a pseudo-terminal (``\\r`` status lines with ANSI erase codes). Every log is fed in
random-sized chunks (also cut inside UTF-8 sequences, decoded with errors="replace" as the follower does)
and must give the same result as feeding it whole. Then canned excerpts of what this machine cannot run
(pip -v and uv -v driving scikit-build-core, Docker BuildKit, CI timestamps, setuptools), and the ETA on
synthetic timelines whose true answer is known.
"""

from __future__ import annotations

import os
import pty
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.builds.progress import BuildStart, Progress, ProgressTracker, from_scratch, resumed
from bot.text.render import restart_note, resume_note

NEEDS_BUILD_TOOLS = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("cmake", "ninja", "make", "g++")),
    reason="needs cmake, ninja, make and g++")
ENV = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "TERM": "xterm"}
for _name in ("NINJA_STATUS", "MAKEFLAGS", "CLICOLOR_FORCE", "CMAKE_GENERATOR", "CMAKE_BUILD_PARALLEL_LEVEL",
              "CMAKE_COLOR_DIAGNOSTICS", "VERBOSE"):
    ENV.pop(_name, None)

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.18)
project(demo CXX)
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} -Wall")
file(GLOB A_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/a/*.cpp)
file(GLOB B_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/b/*.cpp)
add_library(parta SHARED ${A_SRC})
add_library(partb STATIC ${B_SRC})
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/gen.h
  COMMAND ${CMAKE_COMMAND} -E echo "[ERROR] not a counter [-Wunused] x[1/2] [123] file_12_of_40.cpp"
  COMMAND ${CMAKE_COMMAND} -E echo "[7] = 3; [100/200 is not a counter either"
  COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/gen.h
  COMMENT "Generating gen.h" VERBATIM)
add_executable(app main.cpp ${CMAKE_BINARY_DIR}/gen.h)
target_include_directories(app PRIVATE ${CMAKE_BINARY_DIR})
target_link_libraries(app parta partb)
"""


def _source(name: str, number: int) -> str:
    if number % 7 == 3:    # a warning whose quoted source line holds an array subscript like a counter
        return (f"int {name}() {{ int unused_{number} = 0; int arr[4] = {{1, 2, 3, 4}}; "
                f"return arr[10 / 5]; }}\n")
    return f"int {name}(int x) {{ return x * {number}; }}\n"


def _write_project(root: Path) -> None:
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "CMakeLists.txt").write_text(CMAKELISTS)
    for i in range(1, 31):
        part = "a" if i <= 15 else "b"
        (root / part / f"part_{i:02d}_of_30.cpp").write_text(_source(f"f{i}", i))
    (root / "main.cpp").write_text('#include "gen.h"\nint f1(int);\nint main() { return f1(0); }\n')


class BuildKilled(Exception):
    """A real tool failed: other tests on this machine may kill compiler processes, so the caller retries."""


def _run(cmd: list[str], cwd: Path) -> bytes:
    """Stdout and stderr together, as the follower sees them."""
    done = subprocess.run(cmd, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
                          check=False)
    if done.returncode != 0:
        raise BuildKilled(f"{cmd} failed:\n{done.stdout.decode(errors='replace')}")
    return done.stdout


def _run_in_pty(cmd: list[str], cwd: Path) -> bytes:
    """Output of a command whose stdout is a terminal, so ninja prints its smart-terminal status lines."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    out = bytearray()
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:     # EIO once the child side is closed
            break
        if not data:
            break
        out += data
    os.close(leader)
    if proc.wait(timeout=300) != 0:
        raise BuildKilled(f"{cmd} failed:\n{out.decode(errors='replace')}")
    return bytes(out)


@dataclass(frozen=True)
class RealLogs:
    ninja: bytes            # configure + first build with Ninja, -j4
    ninja_rebuild: bytes    # the same tree after 5 more sources: CMake re-runs, a new, different total
    make: bytes             # configure + build with Unix Makefiles, -j4
    ninja_tty: bytes        # Ninja under a pseudo-terminal


def _build_all(root: Path) -> RealLogs:
    _write_project(root)

    def configure_and_build(build: str, generator: str) -> bytes:
        return (_run(["cmake", "-S", ".", "-B", build, "-G", generator], root)
                + _run(["cmake", "--build", build, "-j", "4"], root))

    ninja = configure_and_build("build-ninja", "Ninja")
    make = configure_and_build("build-make", "Unix Makefiles")
    _run(["cmake", "-S", ".", "-B", "build-tty", "-G", "Ninja"], root)
    ninja_tty = _run_in_pty(["cmake", "--build", "build-tty", "-j", "4"], root)
    for i in range(31, 36):
        (root / "b" / f"part_{i:02d}_of_30.cpp").write_text(_source(f"f{i}", i))
    ninja_rebuild = _run(["cmake", "--build", "build-ninja", "-j", "4"], root)
    return RealLogs(ninja=ninja, ninja_rebuild=ninja_rebuild, make=make, ninja_tty=ninja_tty)


@pytest.fixture(scope="module")
def real_logs(tmp_path_factory: pytest.TempPathFactory) -> RealLogs:
    """The real logs, from a fresh tree each attempt, so a build killed from outside leaves no half log."""
    for attempt in range(4):
        try:
            return _build_all(tmp_path_factory.mktemp(f"progress-project-{attempt}"))
        except BuildKilled as killed:
            error = killed
    raise AssertionError(f"real builds failed 4 times; last: {error}")


# --- helpers ------------------------------------------------------------------------------------------

def feed_all(text: str, now: float = 0.0) -> ProgressTracker:
    tracker = ProgressTracker()
    tracker.feed(text, now=now)
    return tracker


def byte_chunks(data: bytes, cuts: Iterable[int]) -> Iterator[str]:
    """The follower's view: each chunk of bytes decoded on its own with errors="replace"."""
    start = 0
    for cut in sorted(set(cuts)):
        if start < cut < len(data):
            yield data[start:cut].decode(errors="replace")
            start = cut
    yield data[start:].decode(errors="replace")


def feed_chunks(chunks: Iterable[str]) -> tuple[ProgressTracker, list[Progress]]:
    tracker = ProgressTracker()
    seen = []
    for i, chunk in enumerate(chunks):
        tracker.feed(chunk, now=float(i))
        seen.append(tracker.progress())
    return tracker, seen


def phases(lines: Iterable[str]) -> list[str]:
    """The phases the status card shows, line after line, repeats collapsed."""
    tracker = ProgressTracker()
    out: list[str] = []
    for line in lines:
        tracker.feed(line + "\n", now=0.0)
        phase = tracker.progress().phase
        if phase is not None and (not out or out[-1] != phase):
            out.append(phase)
    return out


def assert_monotonic(seen: list[Progress]) -> None:
    percents = [p.percent for p in seen if p.percent is not None]
    assert percents == sorted(percents)
    dones = [p.done for p in seen if p.done is not None]
    assert dones == sorted(dones)
    totals = [p.total for p in seen if p.total is not None]     # "[0/2] Re-checking globbed directories...",
    assert totals == sorted(totals)                             # then the build itself: "[1/35] ..."


def last_counter(text: str) -> tuple[int, int]:
    """The last ninja counter in a piped ninja log, read independently of the module under test."""
    found = re.findall(r"^\[(\d+)/(\d+)\] ", text, re.M)
    return int(found[-1][0]), int(found[-1][1])


# --- real builds ---------------------------------------------------------------------------------------

@NEEDS_BUILD_TOOLS
def test_real_ninja_build(real_logs: RealLogs) -> None:
    text = real_logs.ninja.decode(errors="replace")
    tracker = feed_all(text)
    p = tracker.progress()
    done, total = last_counter(text)
    assert done == total >= 34
    assert (p.done, p.total, p.percent) == (total, total, 100.0)
    assert p.phase == "linking"
    assert p.last_line == f"[{total}/{total}] Linking CXX executable app"
    assert tracker.lines_seen == text.count("\n")
    assert "[-Wunused-variable]" in text and "[ERROR] not a counter" in text    # the noise is really there
    assert tracker.eta(100.0) is None                                            # done


@NEEDS_BUILD_TOOLS
def test_real_make_build(real_logs: RealLogs) -> None:
    text = real_logs.make.decode(errors="replace")
    tracker = feed_all(text)
    p = tracker.progress()
    assert (p.done, p.total, p.percent) == (None, None, 100.0)
    assert p.phase == "linking"                # "[100%] Built target app" keeps the last real step's phase
    assert p.last_line == "[100%] Built target app"
    assert tracker.lines_seen == text.count("\n")
    assert "[-Wunused-variable]" in text
    assert tracker.eta(100.0) is None


@NEEDS_BUILD_TOOLS
@pytest.mark.parametrize("name", ["ninja", "make", "ninja_tty"])
def test_real_build_progress_is_monotonic_and_phases_in_order(real_logs: RealLogs, name: str) -> None:
    data: bytes = getattr(real_logs, name)
    rng = random.Random(f"monotonic-{name}")
    cuts = [rng.randrange(len(data)) for _ in range(len(data) // 40)]
    _, seen = feed_chunks(byte_chunks(data, cuts))
    assert_monotonic(seen)
    order: list[str] = []
    for p in seen:
        if p.phase is not None and (not order or order[-1] != p.phase):
            order.append(p.phase)
    assert order[0] == "configuring" or name == "ninja_tty"
    assert "compiling" in order and order[-1] == "linking"
    assert order.index("compiling") < order.index("linking")


@NEEDS_BUILD_TOOLS
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_real_logs_chunk_boundaries_never_change_the_result(real_logs: RealLogs, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(["ninja", "make", "ninja_tty", "rebuild"]))
    raw = real_logs.ninja + real_logs.ninja_rebuild if name == "rebuild" else getattr(real_logs, name)
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=400))
    whole = feed_all(raw.decode(errors="replace"))
    chunked, seen = feed_chunks(byte_chunks(raw, cuts))
    assert chunked.progress() == whole.progress()
    assert chunked.lines_seen == whole.lines_seen
    if name != "rebuild":
        assert_monotonic(seen)


@NEEDS_BUILD_TOOLS
def test_real_logs_cut_everywhere(real_logs: RealLogs) -> None:
    """Every line end, every "\\r" and "\\r\\n" pair, and every UTF-8 sequence split; also one byte at a time."""
    for raw in (real_logs.ninja_tty, real_logs.make):
        whole = feed_all(raw.decode(errors="replace"))
        hard = [i for i, b in enumerate(raw) if b in b"\r\n" or b >= 0x80] + [i + 1 for i, b in enumerate(raw)
                                                                            if b in b"\r\n"]
        for cuts in (hard, range(len(raw)) if len(raw) < 20000 else range(0, len(raw), 3)):
            chunked, _ = feed_chunks(byte_chunks(raw, cuts))
            assert chunked.progress() == whole.progress()
            assert chunked.lines_seen == whole.lines_seen
    assert "‘".encode() in real_logs.make        # gcc's UTF-8 quotes were there to be cut


@NEEDS_BUILD_TOOLS
def test_real_ninja_tty_status_lines(real_logs: RealLogs) -> None:
    raw = real_logs.ninja_tty
    text = raw.decode(errors="replace")
    assert "\r[" in text and "\x1b[K" in text
    statuses = re.findall(r"\r\[(\d+)/(\d+)\] [^\r\n\x1b]*\x1b\[K", text)
    total = int(statuses[-1][1])
    assert int(statuses[-1][0]) == total
    tracker = feed_all(text)
    assert tracker.progress() == Progress(total, total, 100.0, "linking",
                                          f"[{total}/{total}] Linking CXX executable app")
    # each status is "\r" + text + erase: the newest one has no line end yet, and still shows at once
    tracker = ProgressTracker()
    for i, status in enumerate(re.finditer(r"\r\[(\d+)/(\d+)\] [^\r\n\x1b]*\x1b\[K", text)):
        tracker.feed(status.group(0), now=float(i))
        p = tracker.progress()
        assert (p.done, p.total) == (int(status[1]), int(status[2]))
        assert p.last_line == status.group(0)[1:-len("\x1b[K")]


@NEEDS_BUILD_TOOLS
def test_real_rebuild_takes_the_latest_run(real_logs: RealLogs) -> None:
    first = real_logs.ninja.decode(errors="replace")
    again = real_logs.ninja_rebuild.decode(errors="replace")
    assert "Re-running CMake" in again
    done, total = last_counter(again)
    assert done == total and total != last_counter(first)[1]
    tracker = feed_all(first)
    tracker.feed(again, now=1.0)
    p = tracker.progress()
    assert (p.done, p.total, p.percent, p.phase) == (total, total, 100.0, "linking")
    # while CMake re-runs, the old build's counters are gone
    cut = again.index("-- Configuring done")
    tracker = feed_all(first)
    tracker.feed(again[:cut] + "-- Configuring done\n", now=1.0)
    p = tracker.progress()
    assert (p.done, p.total, p.percent, p.phase) == (None, None, None, "configuring")


# --- canned excerpts of what this machine cannot run -----------------------------------------------------

PIP_V_EDITABLE = """\
Using pip 24.2 from /root/venv/lib/python3.11/site-packages/pip (python 3.11)
Obtaining file:///root/sglang/sgl-kernel
  Checking if build backend supports build_editable: started
  Running command Checking if build backend supports build_editable
  Checking if build backend supports build_editable: finished with status 'done'
  Preparing editable metadata (pyproject.toml): started
  Running command Preparing editable metadata (pyproject.toml)
  *** scikit-build-core 0.11.5 using CMake 3.31.6 (metadata_editable)
  Preparing editable metadata (pyproject.toml): finished with status 'done'
Building wheels for collected packages: sgl-kernel
  Building editable for sgl-kernel (pyproject.toml): started
  Running command Building editable for sgl-kernel (pyproject.toml)
  *** scikit-build-core 0.11.5 using CMake 3.31.6 (editable)
  *** Configuring CMake...
  loading initial cache file /tmp/tmpk2v1a9xw/build/CMakeInit.txt
  -- The CXX compiler identification is GNU 12.2.0
  -- The CUDA compiler identification is NVIDIA 12.8.93
  -- Detecting CXX compiler ABI info
  -- Detecting CXX compiler ABI info - done
  -- Found Python: /root/venv/bin/python (found version "3.11.7") found components: Interpreter Development.Module
  -- Configuring done (14.2s)
  -- Generating done (0.3s)
  -- Build files have been written to: /tmp/tmpk2v1a9xw/build
  *** Building project with Ninja...
  [1/4] Building CXX object CMakeFiles/common_ops.dir/csrc/common_extension.cc.o
  [2/4] Building CUDA object CMakeFiles/common_ops.dir/csrc/gemm/fp8_gemm_kernel.cu.o
  /root/sglang/sgl-kernel/csrc/gemm/fp8_gemm_kernel.cu(71): warning #177-D: variable "error_count" was declared but never referenced
        int error_count = 0;
            ^
  [3/4] Building CUDA object CMakeFiles/common_ops.dir/csrc/allreduce/custom_all_reduce.cu.o
  [4/4] Linking CXX shared module common_ops.abi3.so
  *** Installing project into wheel...
  -- Install configuration: "Release"
  -- Installing: /tmp/tmpk2v1a9xw/wheel/platlib/sgl_kernel/common_ops.abi3.so
  *** Making editable...
  *** Created sgl_kernel-0.1.0-cp39-abi3-linux_x86_64.whl
  Building editable for sgl-kernel (pyproject.toml): finished with status 'done'
  Created wheel for sgl-kernel: filename=sgl_kernel-0.1.0-cp39-abi3-linux_x86_64.whl size=8123456 sha256=0f1e
  Stored in directory: /tmp/pip-ephem-wheel-cache-_3x9/wheels/5c/1a
Successfully built sgl-kernel
Installing collected packages: sgl-kernel
  Attempting uninstall: sgl-kernel
    Found existing installation: sgl-kernel 0.0.9
    Uninstalling sgl-kernel-0.0.9:
      Successfully uninstalled sgl-kernel-0.0.9
Successfully installed sgl-kernel-0.1.0
"""  # noqa: E501  (real log lines are long)

UV_V_EDITABLE = """\
DEBUG uv 0.5.11 (x86_64-unknown-linux-gnu)
Using Python 3.11.7 environment at: /root/venv
DEBUG Solving with installed Python version: 3.11.7
Resolved 1 package in 1ms
DEBUG Must revalidate requirement: sgl-kernel
   Building sgl-kernel @ file:///root/sglang/sgl-kernel
DEBUG Building: sgl-kernel @ file:///root/sglang/sgl-kernel
DEBUG Proceeding without build isolation
DEBUG *** scikit-build-core 0.11.5 using CMake 3.31.6 (editable)
DEBUG *** Configuring CMake...
DEBUG loading initial cache file /tmp/tmp55j_q0cs/build/CMakeInit.txt
DEBUG -- The CXX compiler identification is GNU 12.2.0
DEBUG -- Configuring done (0.2s)
DEBUG -- Generating done (0.0s)
DEBUG -- Build files have been written to: /tmp/tmp55j_q0cs/build
DEBUG *** Building project with Ninja...
DEBUG [1/3] Building CXX object CMakeFiles/common_ops.dir/src/ops.cpp.o
DEBUG [2/3] Building CXX object CMakeFiles/common_ops.dir/src/more_ops.cpp.o
DEBUG [3/3] Linking CXX shared module common_ops.abi3.so
DEBUG *** Installing project into wheel...
DEBUG -- Install configuration: "Release"
DEBUG -- Installing: /tmp/tmp55j_q0cs/wheel/platlib/sgl_kernel/common_ops.abi3.so
DEBUG *** Making editable...
DEBUG *** Created sgl_kernel-0.1.0-cp39-abi3-linux_x86_64.whl
DEBUG Finished building: sgl-kernel @ file:///root/sglang/sgl-kernel
      Built sgl-kernel @ file:///root/sglang/sgl-kernel
Prepared 1 package in 2.41s
Uninstalled 1 package in 1ms
Installed 1 package in 3ms
 ~ sgl-kernel==0.1.0 (from file:///root/sglang/sgl-kernel)
"""

DOCKER_PIP = """\
#15 [builder 6/9] RUN cd sgl-kernel && MAX_JOBS=96 pip install -v --no-build-isolation .
#15 0.412 Using pip 25.1.1 from /usr/local/lib/python3.12/dist-packages/pip (python 3.12)
#15 0.522 Processing /sgl-workspace/sglang/sgl-kernel
#15 0.531   Running command Building wheel for sgl-kernel (pyproject.toml)
#15 1.904   *** scikit-build-core 0.11.5 using CMake 3.31.6 (wheel)
#15 1.905   *** Configuring CMake...
#15 2.311   -- The CXX compiler identification is GNU 11.4.0
#15 31.22   -- Configuring done (29.3s)
#15 31.87   -- Generating done (0.6s)
#15 31.90   *** Building project with Ninja...
#15 32.10   [1/212] Building CUDA object CMakeFiles/common_ops.dir/csrc/allreduce/custom_all_reduce.cu.o
#15 95.44   [2/212] Building CUDA object CMakeFiles/common_ops.dir/csrc/common_extension.cc.o
#15 311.5   /sgl-workspace/sglang/sgl-kernel/csrc/gemm/per_token_group_quant_8bit.cu(71): warning #177-D: variable "error_count" was declared but never referenced
#15 311.5         int error_count = 0;
#15 311.5             ^
#15 402.8   [3/212] Building CUDA object CMakeFiles/common_ops.dir/csrc/gemm/per_token_group_quant_8bit.cu.o
#16 [builder 7/9] RUN ls
#16 DONE 0.1s
"""  # noqa: E501  (real log lines are long)

SETUPTOOLS = """\
running develop
running egg_info
writing sgl_kernel.egg-info/PKG-INFO
running build_ext
building 'sgl_kernel._C' extension
creating build/temp.linux-x86_64-cpython-311/csrc
gcc -pthread -B /root/venv/compiler_compat -fno-strict-overflow -DNDEBUG -O2 -Wall -fPIC -I/root/venv/include -c csrc/ops.cpp -o build/temp.linux-x86_64-cpython-311/csrc/ops.o
csrc/ops.cpp:12:9: warning: unused variable 'tmp' [-Wunused-variable]
/usr/local/cuda/bin/nvcc -I/usr/local/cuda/include -c csrc/kernel.cu -o build/temp.linux-x86_64-cpython-311/csrc/kernel.o -O3 --compiler-options '-fPIC'
g++ -pthread -B /root/venv/compiler_compat -shared build/temp.linux-x86_64-cpython-311/csrc/ops.o build/temp.linux-x86_64-cpython-311/csrc/kernel.o -L/usr/local/cuda/lib64 -lcudart -o build/lib.linux-x86_64-cpython-311/sgl_kernel/_C.cpython-311-x86_64-linux-gnu.so
copying build/lib.linux-x86_64-cpython-311/sgl_kernel/_C.cpython-311-x86_64-linux-gnu.so -> sgl_kernel
"""  # noqa: E501  (real log lines are long)


def test_pip_verbose_editable_with_scikit_build_core() -> None:
    assert phases(PIP_V_EDITABLE.splitlines()) == [
        "resolving", "preparing metadata", "building wheel", "building editable", "configuring",
        "configured", "building", "compiling", "linking", "building editable", "built", "installing",
        "installed"]
    p = feed_all(PIP_V_EDITABLE).progress()
    assert (p.done, p.total, p.percent) == (4, 4, 100.0)
    assert p.last_line == "Successfully installed sgl-kernel-0.1.0"


def test_uv_verbose_editable_with_scikit_build_core() -> None:
    assert phases(UV_V_EDITABLE.splitlines()) == [
        "resolved", "building wheel", "configuring", "configured", "building", "compiling", "linking",
        "building wheel", "building editable", "built", "prepared", "installing", "installed"]
    p = feed_all(UV_V_EDITABLE).progress()
    assert (p.done, p.total, p.phase) == (3, 3, "installed")


def test_docker_buildkit_prefixes() -> None:
    p = feed_all(DOCKER_PIP).progress()
    assert (p.done, p.total, p.phase) == (3, 212, "compiling")
    assert p.last_line == ("[3/212] Building CUDA object "
                           "CMakeFiles/common_ops.dir/csrc/gemm/per_token_group_quant_8bit.cu.o")
    assert phases(DOCKER_PIP.splitlines())[:3] == ["resolving", "building wheel", "configuring"]


@pytest.mark.parametrize("line", [
    "2025-06-01T12:41:17.2210341Z   [96/212] Building CXX object CMakeFiles/common_ops.dir/csrc/common_extension.cc.o",
    "[2025-06-01 10:14:03] [96/212] Building CXX object CMakeFiles/x.dir/a.cc.o",
    "[12:00:00.123] [96/212] Building CXX object CMakeFiles/x.dir/a.cc.o",
    "[build] [96/212] Building CXX object CMakeFiles/x.dir/a.cc.o",
    "DEBUG [96/212] Building CXX object CMakeFiles/x.dir/a.cc.o",
    "#12 34.5   [96/212] Building CXX object CMakeFiles/x.dir/a.cc.o",
    "2025-06-01T12:00:00.123456789Z stdout F [96/212] Building CXX object CMakeFiles/x.dir/a.cc.o",
    "Jun  1 12:00:00 gpu7 rigops-build[4242]: [96/212] Building CXX object CMakeFiles/x.dir/a.cc.o",
    "         [96/212] Building CXX object CMakeFiles/x.dir/a.cc.o",
    "\x1b[32m[96/212] Building CXX object CMakeFiles/x.dir/a.cc.o\x1b[0m",
    "[96/212 41.3s] Building CXX object CMakeFiles/x.dir/a.cc.o",
])
def test_prefixed_ninja_lines(line: str) -> None:
    p = feed_all(line + "\n").progress()
    assert (p.done, p.total, p.phase) == (96, 212, "compiling")
    assert p.percent == pytest.approx(100 * 96 / 212)
    assert p.last_line.startswith("[96/212") and p.last_line.endswith(".cc.o")


@pytest.mark.parametrize(("line", "done", "total", "percent", "phase"), [
    ("[ 45%] Building CXX object CMakeFiles/x.dir/a.cpp.o", None, None, 45.0, "compiling"),
    ("[100%] Linking CXX shared library libx.so", None, None, 100.0, "linking"),
    ("  [  3%] Building CUDA object CMakeFiles/x.dir/k.cu.o", None, None, 3.0, "compiling"),
    ("[12/40] Linking CXX shared library libfoo.so", 12, 40, 30.0, "linking"),
    ("[3/9] Generating version.h", 3, 9, 100 * 3 / 9, "generating"),
    ("[0/1] Re-running CMake...", 0, 1, 0.0, "configuring"),
    ("[5/9] /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -O3 -c /src/k.cu -o k.cu.o", 5, 9,
     100 * 5 / 9, "compiling"),
    ("[9/9] : && /usr/bin/c++ -fPIC -O3 -shared -o _C.so CMakeFiles/_C.dir/a.cpp.o && :", 9, 9, 100.0, "linking"),
    ("[7/9] Performing build step for 'fmt_ext'", 7, 9, 100 * 7 / 9, "building"),
])
def test_counter_lines(line: str, done: int | None, total: int | None, percent: float, phase: str) -> None:
    p = feed_all(line + "\n").progress()
    assert (p.done, p.total, p.phase) == (done, total, phase)
    assert p.percent == pytest.approx(percent)


@pytest.mark.parametrize("line", [
    "/src/a.cpp:12:9: warning: unused variable 'tmp' [-Wunused-variable]",
    "   12 |   x[1/2] = buf[123];",
    "[123] = 4;",
    "[1/2]x",
    "x[1/2] Building CXX object a.o",
    "[ERROR] [-Wunused] something failed in file_12_of_40.cpp",
    "[ERROR]",
    "#9 [4/9] RUN pip install -e .",
    "[4/9] RUN pip install -e .",
    " => [builder 5/9] RUN cd sgl-kernel && make build",
    "[200%] Building CXX object a.o",
    "[5/3] Building CXX object a.o",
    "[3/0] Building CXX object a.o",
    "-- [download 45% complete]",
    "Receiving objects:  45% (123/456), 1.2 MiB | 3.4 MiB/s",
    "   ━━━━━━━━━━━━━━━━━━━━━ 1.2/3.4 GB 45.6 MB/s eta 0:00:12",
    "Step 5/9 : RUN make",
])
def test_not_counters(line: str) -> None:
    p = feed_all(line + "\n").progress()
    assert (p.done, p.total, p.percent) == (None, None, None)


def test_noise_between_counters_changes_nothing() -> None:
    tracker = feed_all("[10/50] Building CXX object a.o\n")
    before = tracker.progress()
    for line in ("[ERROR] oops", "   12 |   x[1/2] = buf[123];", "a.cpp:3: warning: x [-Wunused]",
                 "[123] = 4;", "#9 [4/9] RUN ls", "x[40/50] y"):
        tracker.feed(line + "\n", now=0.0)
    assert tracker.progress() == before


@pytest.mark.parametrize(("lines", "expected"), [
    (SETUPTOOLS.splitlines(), ["installing", "preparing metadata", "compiling", "linking", "copying files"]),
    (["-- The CXX compiler identification is GNU 12.2.0", "-- Detecting CXX compiler ABI info",
      "-- Configuring done (0.3s)", "-- Generating done (0.0s)", "-- Build files have been written to: /b",
      "[1/2] Building CXX object a.o", "[2/2] Linking CXX executable app", "[0/1] Install the project...",
      "-- Install configuration: \"Release\"", "-- Installing: /usr/local/bin/app"],
     ["configuring", "configured", "compiling", "linking", "installing"]),
    (["[1/2] Building CXX object a.o", "FAILED: a.o", "a.cpp:1:1: error: x",
      "ninja: build stopped: subcommand failed."],
     ["compiling", "failed"]),
    (["  Building wheel for x (pyproject.toml): started", "  *** CMake build failed",
      "  Building wheel for x (pyproject.toml): finished with status 'error'"],
     ["building wheel", "failed"]),
    (["[ 50%] Building CXX object a.o", "make[2]: *** [a.o] Error 1", "make: *** [Makefile:136: all] Error 2"],
     ["compiling", "failed"]),
    (["-- Configuring incomplete, errors occurred!"], ["failed"]),
    (["ninja: no work to do."], ["up to date"]),
    (["Collecting torch==2.7.1", "  Downloading https://download.pytorch.org/whl/torch-2.7.1.whl (1070.1 MB)",
      "Installing collected packages: torch", "Successfully installed torch-2.7.1"],
     ["resolving", "downloading", "installing", "installed"]),
    (["[10/20] Building CXX object a.o", "-- Downloading from a script during the build", "[11/20] Linking CXX x"],
     ["compiling", "linking"]),
])
def test_phase_sequences(lines: list[str], expected: list[str]) -> None:
    assert phases(lines) == expected


def test_carriage_returns_are_line_breaks() -> None:
    log = ("Collecting torch\n  Downloading torch.whl (1070.1 MB)\n"
           "\r   \x1b[38;5;197m━━━━━━━━\x1b[0m 1.2/1070.1 MB 5.6 MB/s eta 0:03:10"
           "\r   \x1b[38;5;197m━━━━━━━━━━━━━━\x1b[0m 500.0/1070.1 MB 6.0 MB/s eta 0:01:35\r\n"
           "\r[1/3] Building CXX object a.o\x1b[K\r[2/3] Building CXX object b.o\x1b[K"
           "\r[3/3] Linking CXX executable app\x1b[K\r\n")
    tracker = feed_all(log)
    assert tracker.progress() == Progress(3, 3, 100.0, "linking", "[3/3] Linking CXX executable app")
    assert tracker.lines_seen == 9      # a status's leading "\r" right after a "\n" makes an empty line
    for size in (1, 2, 3, 7):
        chunked, _ = feed_chunks(log[i:i + size] for i in range(0, len(log), size))
        assert chunked.progress() == tracker.progress()
        assert chunked.lines_seen == tracker.lines_seen


def test_crlf_counts_once_even_when_split() -> None:
    for chunks in (["a\r\nb\r\n"], ["a\r", "\nb\r", "\n"], ["a\r", "", "\nb", "\r\n"]):
        tracker, _ = feed_chunks(chunks)
        assert tracker.lines_seen == 2


def test_partial_line_is_buffered() -> None:
    tracker = ProgressTracker()
    tracker.feed("-- Build files have been written to: /b\n[12/4", now=0.0)
    assert tracker.progress().done is None
    assert tracker.lines_seen == 1
    tracker.feed("0] Buil", now=1.0)              # the numbers are whole: they count; the text is not yet
    assert tracker.progress() == Progress(12, 40, 30.0, "configured", "-- Build files have been written to: /b")
    tracker.feed("ding CXX object a.o\n", now=2.0)
    assert tracker.progress() == Progress(12, 40, 30.0, "compiling", "[12/40] Building CXX object a.o")
    assert tracker.lines_seen == 2


def test_make_percent_is_the_maximum_within_a_run() -> None:
    tracker = ProgressTracker()
    for pct in (10, 25, 22, 30, 28):      # parallel make can print percentages slightly out of order
        tracker.feed(f"[{pct:3d}%] Building CXX object f{pct}.o\n", now=0.0)
    assert tracker.progress().percent == 30.0
    tracker.feed("[  2%] Building CXX object other.o\n", now=0.0)     # a different build starts
    assert tracker.progress().percent == 2.0


def test_last_line_is_short_and_clean() -> None:
    long = "[1/2] Building CXX object " + "x" * 500 + ".o"
    p = feed_all("2025-06-01T12:00:00Z   " + long + "   \n").progress()
    assert len(p.last_line) <= 200
    assert p.last_line.startswith("[1/2] Building CXX object xxx")
    assert feed_all("").progress() == Progress(None, None, None, None, "")


def test_memory_and_work_are_bounded() -> None:
    tracker = ProgressTracker()
    tracker.feed("[1/9] " + "y" * 3_000_000, now=0.0)              # a huge line with no end yet
    for _ in range(200):
        tracker.feed("z" * 10_000, now=0.0)
    assert len(tracker._partial) <= 4096                              # only the line's start is kept
    tracker.feed("\n[2/9] Building CXX object a.o\n", now=1.0)
    assert tracker.progress().done == 2
    for i in range(5000):                                              # samples stay bounded
        tracker.feed(f"[{i % 9}/9] Building CXX object a.o\n", now=2.0 + i)
    assert len(tracker._samples) <= 1024


def test_throughput_is_linear() -> None:
    """A 15 MB log fed in 64 KiB chunks: cost is proportional to the text, no re-scan of old text."""
    block = "".join(
        f"[{i}/100000] Building CUDA object CMakeFiles/common_ops.dir/csrc/gemm/kernel_{i}.cu.o\n"
        f"/usr/bin/c++ -DTORCH_EXTENSION_NAME=common_ops -I/root/include -O3 -DNDEBUG -fPIC -c k_{i}.cc -o k.o\n"
        f"/root/csrc/k_{i}.cu(71): warning #177-D: variable \"error_count\" was declared but never referenced\n"
        for i in range(1, 50_001))
    started = time.perf_counter()
    tracker = ProgressTracker()
    for i in range(0, len(block), 65536):
        tracker.feed(block[i:i + 65536], now=i / 1e6)
    elapsed = time.perf_counter() - started
    assert tracker.progress().done == 50_000
    assert tracker.lines_seen == 150_000
    assert elapsed < 5.0, elapsed


# --- ETA ------------------------------------------------------------------------------------------------

def ninja_line(i: int, total: int) -> str:
    return f"[{i}/{total}] Building CXX object CMakeFiles/x.dir/f{i}.cpp.o\n"


def test_eta_constant_rate_ninja() -> None:
    tracker = ProgressTracker()
    total, step = 400, 3.0
    assert tracker.eta(0.0) is None
    for i in range(1, 301):
        now = 1000.0 + i * step
        tracker.feed(ninja_line(i, total), now=now)
        eta = tracker.eta(now)
        if i <= 2:                       # one sample, then two only 3 s apart: not enough signal
            assert eta is None
        else:
            assert eta == pytest.approx((total - i) * step, rel=0.10)


def test_eta_constant_rate_make_percent() -> None:
    tracker = ProgressTracker()
    for pct in range(1, 100):
        tracker.feed(f"[{pct:3d}%] Building CXX object f{pct}.o\n", now=pct * 12.0)
        if pct >= 5:
            assert tracker.eta(pct * 12.0) == pytest.approx((100 - pct) * 12.0, rel=0.10)
    tracker.feed("[100%] Linking CXX executable app\n", now=1200.0)
    assert tracker.eta(1200.0) is None


def test_eta_with_output_arriving_in_bursts() -> None:
    """One step per 2 s, but the stream delivers 10 lines every 20 s: the ETA follows the true rate,
    at each delivery and between them."""
    tracker = ProgressTracker()
    total = 1000
    for k in range(1, 60):
        now = 20.0 * k
        tracker.feed("".join(ninja_line(i, total) for i in range(10 * k - 9, 10 * k + 1)), now=now)
        done = 10 * k
        if k >= 2:
            assert tracker.eta(now) == pytest.approx((total - done) * 2.0, rel=0.10)
            assert tracker.eta(now + 10.0) == pytest.approx((total - done) * 2.0 - 10.0, rel=0.10)


def test_eta_is_robust_to_one_burst() -> None:
    """Steady 1 step / 10 s, then 30 cached steps at once: the rest of the build is not suddenly fast."""
    tracker = ProgressTracker()
    total = 300
    for i in range(1, 61):
        tracker.feed(ninja_line(i, total), now=10.0 * i)
    tracker.feed("".join(ninja_line(i, total) for i in range(61, 91)), now=610.0)
    eta = tracker.eta(610.0)
    assert eta == pytest.approx((total - 90) * 10.0, rel=0.15)


def test_eta_grows_during_a_stall() -> None:
    tracker = ProgressTracker()
    for i in range(1, 31):
        tracker.feed(ninja_line(i, 100), now=10.0 * i)
    at_last = tracker.eta(300.0)
    assert at_last is not None and at_last == pytest.approx(700.0, rel=0.10)
    assert tracker.eta(305.0) == pytest.approx(695.0, rel=0.10)        # within the usual gap: counts down
    stalled = tracker.eta(900.0)
    assert stalled is not None and stalled > 2 * at_last


def test_eta_none_until_enough_signal_and_when_done_or_failed() -> None:
    tracker = ProgressTracker()
    tracker.feed("-- Configuring done\n", now=0.0)
    assert tracker.eta(10.0) is None                                   # no counter
    tracker.feed(ninja_line(1, 10), now=1.0)
    assert tracker.eta(100.0) is None                                  # one sample
    tracker.feed(ninja_line(2, 10), now=3.0)
    assert tracker.eta(100.0) is None                                  # two samples 2 s apart
    tracker.feed("a.cpp: warning: nothing moved\n", now=20.0)
    assert tracker.eta(20.0) is None                                   # time passed, the counter did not
    tracker.feed(ninja_line(3, 10), now=9.0)
    assert tracker.eta(9.0) == pytest.approx(7 * 4.0, rel=0.10)
    tracker.feed(ninja_line(10, 10), now=30.0)
    assert tracker.eta(30.0) is None                                   # done
    failed = ProgressTracker()
    for i in range(1, 6):
        failed.feed(ninja_line(i, 10), now=10.0 * i)
    assert failed.eta(50.0) is not None
    failed.feed("ninja: build stopped: subcommand failed.\n", now=51.0)
    assert failed.eta(51.0) is None


def test_eta_restarts_with_a_new_run() -> None:
    tracker = ProgressTracker()
    for i in range(1, 21):
        tracker.feed(ninja_line(i, 40), now=10.0 * i)
    assert tracker.eta(200.0) is not None
    tracker.feed("[0/1] Re-running CMake...\n-- Configuring done\n-- Generating done\n", now=201.0)
    assert tracker.eta(201.0) is None
    tracker.feed(ninja_line(1, 50), now=202.0)
    assert tracker.eta(202.0) is None                                  # the old run's samples are gone
    for i in range(2, 6):
        tracker.feed(ninja_line(i, 50), now=202.0 + 2 * (i - 1))
    assert tracker.eta(210.0) == pytest.approx(45 * 2.0, rel=0.10)


def test_eta_uses_a_partial_status_line() -> None:
    """ninja on a terminal: the newest status has no line end until the next one arrives."""
    tracker = ProgressTracker()
    for i in range(1, 11):
        tracker.feed(f"\r[{i}/20] Building CXX object f{i}.o\x1b[K", now=5.0 * i)
    assert tracker.progress().done == 10
    assert tracker.eta(50.0) == pytest.approx(50.0, rel=0.10)


# --- any text at all ------------------------------------------------------------------------------------

LOG_PIECES = st.sampled_from([
    "\n", "\r", "\r\n", " ", "  ", "[", "]", "/", "%", "1", "12", "345", "0", "-- ", "*** ", "#12 34.5 ", "DEBUG ",
    "[build] ", "2025-06-01T12:00:00Z ", "\x1b[K", "\x1b[32m", "Building CXX object a.o", "Linking CXX app",
    "-- Configuring done", "-- Installing: /x", "Successfully installed x", "Building wheel for x",
    "ninja: build stopped", "[12/40] ", "[ 45%] ", "[0/2] Re-checking globbed directories...", "RUN ", "é", "\ufffd",
    "/usr/bin/c++ -c a.cpp", "finished with status 'error'", "*** Configuring CMake...",
])


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(LOG_PIECES, max_size=80), cuts=st.lists(st.integers(0, 2000), max_size=30))
def test_any_text_chunking_is_invisible_and_values_are_sane(pieces: list[str], cuts: list[int]) -> None:
    text = "".join(pieces)
    whole = feed_all(text)
    points = sorted({c for c in cuts if 0 < c < len(text)})
    chunked, seen = feed_chunks(text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True))
    assert chunked.progress() == whole.progress()
    assert chunked.lines_seen == whole.lines_seen
    for p in seen:
        assert p.percent is None or 0.0 <= p.percent <= 100.0
        assert p.done is None or (p.total is not None and 0 <= p.done <= p.total)
        assert len(p.last_line) <= 200 and p.last_line == p.last_line.strip() and "\x1b" not in p.last_line
    eta = chunked.eta(1000.0)
    assert eta is None or eta >= 0.0


@pytest.mark.parametrize(("line", "source"), [
    ("[12/193] Building CXX object vendor/llama.cpp/ggml/src/CMakeFiles/ggml-cpu.dir/ggml-cpu/ggml-cpu.cpp.o",
     "ggml-cpu/ggml-cpu.cpp"),
    ("[ 45%] Building CUDA object csrc/CMakeFiles/common_ops.dir/kernels/moe/align.cu.o", "kernels/moe/align.cu"),
    ("Building C object CMakeFiles/hello.dir/main.c.o", "main.c"),
    ("/usr/bin/c++ -DGGML_BUILD -I/tmp/x/include -O3 -fPIC -c /tmp/pip-install-1/llama/vendor/llama.cpp/src/llama.cpp "
     "-o CMakeFiles/llama.dir/llama.cpp.o", "llama.cpp/src/llama.cpp"),
    ("/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DX -O3 -x cu -c "
     "/root/sglang/sgl-kernel/csrc/gemm/fp8_gemm_kernel.cu -o x.o", "csrc/gemm/fp8_gemm_kernel.cu"),
    ("gcc -pthread -B /opt/conda/compiler_compat -fPIC -I/x -c csrc/foo.cpp -o build/temp/foo.o", "csrc/foo.cpp"),
    ("ninja: build stopped: subcommand failed.", None),
    ("cc1plus: warning: command-line option '-c' is ignored", None),
    ("-- Found CUDA: /usr/local/cuda (found version 12.4)", None),
    ("tar -c -f out.tar dir", None),
])
def test_the_source_being_compiled_is_read_from_the_line(line: str, source: str | None) -> None:
    from bot.builds.progress import source_of

    assert source_of(line) == source


def test_the_card_says_what_is_compiling_not_the_whole_command_line() -> None:
    from bot.store import Store
    from bot.text.render import build_card
    from tests.harness import record_run

    tracker = ProgressTracker()
    tracker.feed("[3/10] /usr/bin/c++ -DX -I/very/long/include/path -O3 -c /src/proj/kernels/a.cpp -o a.o\n", now=1.0)
    progress = tracker.progress()
    assert progress.compiling == "proj/kernels/a.cpp"
    store = Store.open(Path(tempfile.mkdtemp()))
    run = record_run(store, "b200", "app", jobs=4)
    card = build_card(run, progress, eta=None, peak_used=0, peak_tools=0, total_memory=0, final=None)
    assert "compiling `proj/kernels/a.cpp`" in card and "-DX" not in card
    store.close()


# --- a restart that starts from scratch ------------------------------------------------------------------

TORCH_EXTENSION = """\
running build_ext
/root/venv/lib/python3.11/site-packages/torch/utils/cpp_extension.py:424: UserWarning: There are no g++ version bounds defined for CUDA version 12.1
building 'flash_attn_2_cuda' extension
creating /root/flash-attention/build/temp.linux-x86_64-cpython-311/csrc/flash_attn/src
Emitting ninja build file /root/flash-attention/build/temp.linux-x86_64-cpython-311/build.ninja...
Compiling objects...
Allowing ninja to set a default number of workers... (overridable by setting the environment variable MAX_JOBS=N)
[1/73] /usr/local/cuda/bin/nvcc  -I/root/flash-attention/csrc/flash_attn -I/root/venv/lib/python3.11/site-packages/torch/include -c -c /root/flash-attention/csrc/flash_attn/src/flash_fwd_hdim128_fp16_sm80.cu -o /root/flash-attention/build/temp.linux-x86_64-cpython-311/csrc/flash_attn/src/flash_fwd_hdim128_fp16_sm80.o -O3 -std=c++17 --use_fast_math -gencode arch=compute_80,code=sm_80
"""  # noqa: E501  (real log lines are long)

CMAKE_ALONE = """\
-- The CXX compiler identification is GNU 12.2.0
-- Configuring done (0.4s)
-- Generating done (0.0s)
-- Build files have been written to: /root/llama.cpp/build
[1/193] Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o
"""


@pytest.mark.parametrize(("log", "start"), [
    (PIP_V_EDITABLE, BuildStart(1, 4, 25.0, "scikit-build-core")),
    (UV_V_EDITABLE, BuildStart(1, 3, 100 / 3, "scikit-build-core")),
    (DOCKER_PIP, BuildStart(1, 212, 100 / 212, "scikit-build-core")),
    (TORCH_EXTENSION, BuildStart(1, 73, 100 / 73, "setuptools")),
    (CMAKE_ALONE, BuildStart(1, 193, 100 / 193, "cmake")),
    (SETUPTOOLS, None),  # no counter: no start to compare
])
def test_where_a_build_started_and_what_drives_it(log: str, start: BuildStart | None) -> None:
    assert feed_all(log).start() == start


def cut_at(text: str, fraction: float) -> str:
    """The log of a build killed once its counter passed ``fraction`` of the way."""
    for m in re.finditer(r"^\[(?:(\d+)/(\d+)|\s*(\d+)%)\] .*\n", text, re.M):
        done = int(m[1]) / int(m[2]) if m[1] else int(m[3]) / 100
        if done >= fraction:
            return text[:m.end()]
    raise AssertionError(f"no counter past {fraction}")


@NEEDS_BUILD_TOOLS
@pytest.mark.parametrize("name", ["ninja", "make"])
def test_a_restart_that_starts_over_is_told_from_one_that_resumes(real_logs: RealLogs, name: str) -> None:
    text = getattr(real_logs, name).decode(errors="replace")
    killed = feed_all(cut_at(text, 0.7)).progress()
    if name == "ninja":  # "[0/2] Re-checking globbed directories..." is not the build yet
        assert feed_all(cut_at(text, 0.0)).start() is None
    again = feed_all(cut_at(text, 0.01)).start()   # a fresh build directory: the same build from its first step
    assert again is not None and again.system == "cmake"
    assert from_scratch(again, killed)
    assert not from_scratch(again, feed_all(cut_at(text, 0.05)).progress())  # the last run had not got far
    if name == "ninja":  # the kept build directory: ninja counts only what is left
        again_kept = feed_all(real_logs.ninja_rebuild.decode(errors="replace")).start()
        assert again_kept is not None and not from_scratch(again_kept, killed)
        assert again_kept.total is not None and killed.total is not None
        assert resumed(again_kept, killed) == killed.total - again_kept.total > 0
    assert resumed(again, killed) is None  # the same total again: nothing was kept


def test_the_llama_cpp_restart_from_the_issue() -> None:
    """Killed at [124/193], the -j1 restart of a pip install of a scikit-build-core project began at [4/193]."""
    first = DOCKER_PIP.replace("/212]", "/193]").replace("[3/193]", "[124/193]")
    second = DOCKER_PIP.replace("/212]", "/193]")
    for n in (3, 2, 1):
        second = second.replace(f"[{n}/193]", f"[{n + 3}/193]")
    before, start = feed_all(first).progress(), feed_all(second).start()
    assert (before.done, before.total) == (124, 193) and start is not None and (start.done, start.total) == (4, 193)
    assert from_scratch(start, before)
    note = restart_note(start, before)
    assert note.startswith(":repeat: started again from [4/193]; the last run reached [124/193] — its build "
                           "directory was not kept.")
    assert "-C build-dir=build/{wheel_tag}" in note and "[tool.scikit-build]" in note


@pytest.mark.parametrize(("system", "fix"), [
    ("scikit-build-core", "build-dir = \"build/{wheel_tag}\""), ("setuptools", "python setup.py build_ext"),
    ("cmake", "cmake -B build"), (None, "kept between runs")])
def test_the_fix_fits_the_build_system(system: str | None, fix: str) -> None:
    note = restart_note(BuildStart(3, None, 3.0, system), Progress(None, None, 64.0, "compiling", ""))
    assert "started again from 3%; the last run reached 64%" in note and fix in note


def test_a_resumed_build_says_how_much_was_already_built() -> None:
    before = Progress(412, 690, 59.7, "compiling", "")
    assert resumed(BuildStart(1, 278, 0.4, "scikit-build-core"), before) == 412
    assert resume_note(BuildStart(1, 278, 0.4, "scikit-build-core"), 412) == (
        ":fast_forward: resumed: 412 of 690 steps were already built, 278 to go.")
    assert resumed(BuildStart(1, 690, 0.1, "cmake"), before) is None  # counted everything again
    assert resumed(BuildStart(40, 278, 14.4, "cmake"), before) is None  # not its first steps: no comparison
    assert resumed(BuildStart(None, None, 3.0, None), before) is None  # make: a percent only
