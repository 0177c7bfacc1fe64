"""Fake build tools for tests: copies of one tiny C program (``hog.c``) named like real build tools.

``build_fake_tools(dir)`` compiles hog once (cached by source hash under the temp dir) and hard-links it
into ``dir`` as ninja, cmake, make, cc1plus, nvcc, cicc, ptxas, ld, g++-12, x86_64-linux-gnu-g++-12...
A hog allocates and touches real memory, so its RSS is real, and it can start children, so a fake ninja
has fake compilers as its children just like a real build.

Every ``start_*`` helper starts its processes in a new session; ``stop(popen)`` / ``kill_session(sid)``
kill everything in that session (re-parented orphans included) and reap what is ours.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.fakes.users import switch_to
from tests.waiting import wait_until

HOG_SOURCE = Path(__file__).with_name("hog.c")

# The names build_fake_tools links hog under.
FAKE_TOOL_NAMES: tuple[str, ...] = (
    "hog",
    "ninja",
    "cmake",
    "make",
    "cc1plus",
    "nvcc",
    "cicc",
    "ptxas",
    "ld",
    "g++-12",
    "x86_64-linux-gnu-g++-12",
)

# Fake compiler i of a fake build runs as COMPILER_CYCLE[i % len]; TOOL_NAME_OF says what the agent
# should call it.
COMPILER_CYCLE: tuple[str, ...] = ("cc1plus", "nvcc", "x86_64-linux-gnu-g++-12", "cicc", "ptxas", "g++-12")
TOOL_NAME_OF: dict[str, str] = {
    "x86_64-linux-gnu-g++-12": "g++",
    "g++-12": "g++",
}

DECOY_WORDS: tuple[str, ...] = ("cmake", "ninja", "nvcc", "cc1plus")


def tool_name_of(binary: str) -> str:
    return TOOL_NAME_OF.get(binary, binary)


def compiler_binaries(compilers: int) -> list[str]:
    """The binary names start_fake_build uses for its ``compilers`` compilers, in order."""
    return [COMPILER_CYCLE[i % len(COMPILER_CYCLE)] for i in range(compilers)]


def hog_binary() -> Path:
    """hog compiled with ``cc``, once per source version (cached under the temp dir, safe in parallel)."""
    source = HOG_SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"rigops-hog-{os.getuid()}" / digest
    binary = cache / "hog"
    if binary.exists():
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    os.chmod(cache.parent, 0o755)
    os.chmod(cache, 0o755)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return binary
        compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if compiler is None:
            raise RuntimeError("no C compiler (cc) to build the fake build tools")
        tmp = cache / f"hog.tmp.{os.getpid()}"
        subprocess.run(
            [compiler, "-O1", "-Wall", "-o", str(tmp), str(HOG_SOURCE)],
            check=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
        os.chmod(tmp, 0o755)
        os.replace(tmp, binary)
    return binary


def build_fake_tools(dest_dir: Path, names: Sequence[str] = FAKE_TOOL_NAMES) -> Path:
    """Put copies (hard links when possible) of hog named ``names`` into ``dest_dir``; returns it."""
    hog = hog_binary()
    dest_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = dest_dir / name
        if target.exists():
            continue
        try:
            os.link(hog, target)
        except OSError:
            shutil.copy2(hog, target)
    return dest_dir


def _popen(argv: list[str], *, user: str | None, cwd: Path | None = None, **kwargs: object) -> subprocess.Popen[bytes]:
    extra = switch_to(user)
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=cwd,
        **extra,
        **kwargs,
    )


def fake_build_script(bin_dir: Path, *, compilers: int, mb: int, driver_mb: int, stubborn: int) -> str:
    """The shell text of a hand-started build: ``ninja`` (a hog) whose children are the compilers."""
    argv = [str(bin_dir / "ninja"), str(driver_mb)]
    for i, binary in enumerate(compiler_binaries(compilers)):
        argv += ["--", str(bin_dir / binary), *(["-T"] if i < stubborn else []), str(mb)]
    return shlex.join(argv) + "; echo fake-build-exited $?"


def start_fake_build(
    bin_dir: Path,
    *,
    compilers: int = 4,
    mb: int = 32,
    driver_mb: int = 4,
    stubborn: int = 0,
    user: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start a hand-started fake build: ``/bin/sh`` -> ``ninja`` -> ``compilers`` compiler processes, each
    holding ``mb`` MiB; the first ``stubborn`` compilers ignore SIGTERM. Its session id is its pid."""
    script = fake_build_script(bin_dir, compilers=compilers, mb=mb, driver_mb=driver_mb, stubborn=stubborn)
    return _popen(["/bin/sh", "-c", script], user=user)


def start_tool(bin_dir: Path, name: str, *args: str, user: str | None = None) -> subprocess.Popen[bytes]:
    """Start one fake tool ``bin_dir/name`` (a hog: ``[-T] MB [SECONDS]``) in a new session."""
    return _popen([str(bin_dir / name), *args], user=user)


def start_decoy(kind: str = "python", *, user: str | None = None, python: str | None = None) -> subprocess.Popen[bytes]:
    """A process that is no build tool but whose command line says "cmake ninja nvcc cc1plus".

    kind "python": ``python -c 'import time; time.sleep(600)' cmake ninja nvcc cc1plus`` (comm: python...;
    for another user the system's /usr/bin/python3, which that user can run);
    kind "argv0": ``/bin/sleep`` started with argv[0] "cmake ninja nvcc cc1plus" (comm: sleep).
    """
    if kind == "python":
        if python is None:
            python = "/usr/bin/python3" if user is not None else sys.executable
        return _popen([python, "-c", "import time; time.sleep(600)", *DECOY_WORDS], user=user)
    if kind == "argv0":
        return _popen([" ".join(DECOY_WORDS), "600"], user=user, executable="/bin/sleep")
    raise ValueError(f"unknown decoy kind {kind!r}")


def read_stat_fields(pid: int) -> list[str] | None:
    """Fields 3.. of /proc/<pid>/stat (index 0 = state), or None when the process is gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].decode().split()


def session_members(sid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = read_stat_fields(int(name))
            if fields is not None and int(fields[3]) == sid and fields[0] not in ("Z", "X"):
                out.append(int(name))
    return out


def kill_session(sid: int, timeout: float = 10.0) -> None:
    """SIGKILL every live process of session ``sid`` (also those re-parented away) until none is left."""

    def gone() -> bool:
        members = session_members(sid)
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
        return not members

    wait_until(gone, timeout=timeout, what=f"every process of session {sid} to die", interval=0.01)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill everything in proc's session (it was started in a new one) and reap proc."""
    kill_session(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait(timeout=10)
