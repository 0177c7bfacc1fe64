"""Memory cgroups with a limit for tests (cgroup v1, below our own), so that OOM kills are real."""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import signal
import subprocess
from pathlib import Path

from tests.fakes.users import popen_as
from tests.waiting import wait_until


def own_memory_cgroup() -> Path | None:
    """This process's cgroup v1 memory directory, if there is one."""
    return _own_cgroup("memory")


def own_cpu_cgroup() -> Path | None:
    """This process's cgroup v1 cpu directory (CFS quota), if there is one and we may make children there."""
    found = _own_cgroup("cpu")
    return found if found is not None and (found / "cpu.cfs_quota_us").exists() and os.access(found, os.W_OK) \
        else None


def _own_cgroup(controller: str) -> Path | None:
    mount = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields = right.split()
        if len(fields) >= 3 and fields[0] == "cgroup" and controller in fields[2].split(","):
            mount = left.split()[4]
    if mount is None:
        return None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return Path(mount) / path.lstrip("/")
    return None


def cpu_limited(name: str, share: float) -> Path | None:
    """A cgroup v1 cpu cgroup that gives what runs in it ``share`` of one core in all (a busy host, or a
    Slurm job's CPU limit: compilers then grow over seconds, as on a big build box); None where there is no
    writable cpu controller. Remove it with :func:`remove_cpu`."""
    parent = own_cpu_cgroup()
    if parent is None:
        return None
    path = parent / f"rigops-test-{os.getpid()}-{name}"
    try:
        path.mkdir()
        (path / "cpu.cfs_period_us").write_text("100000")
        (path / "cpu.cfs_quota_us").write_text(str(int(100000 * share)))
    except OSError:
        return None
    return path


def remove_cpu(path: Path) -> None:
    wait_until(functools.partial(Cgroups._remove, path), timeout=20, what=f"{path} to empty and go")


class Cgroups:
    """Child memory cgroups with a limit, below our own; everything in them is killed at the end."""

    def __init__(self, parent: Path) -> None:
        self.parent = parent
        self.made: list[Path] = []

    def make(self, name: str, limit: int) -> Path:
        path = self.parent / f"rigops-test-{os.getpid()}-{name}"
        path.mkdir()
        self.made.append(path)
        (path / "memory.limit_in_bytes").write_text(str(limit))
        with contextlib.suppress(OSError):  # no swapping our way out of the limit
            (path / "memory.memsw.limit_in_bytes").write_text(str(limit))
        return path

    def close(self) -> None:
        for path in self.made:
            wait_until(functools.partial(self._remove, path), timeout=20,
                       what=f"everything in {path} to die and {path} to go")

    @staticmethod
    def _remove(path: Path) -> bool:
        """SIGKILL what is in the cgroup, then remove it; False while it still holds something."""
        for pid in (int(p) for p in (path / "cgroup.procs").read_text().split()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            path.rmdir()
        except OSError:
            return False
        return True


def in_cgroup(cg: Path, script: str, *, user: str | None = None) -> subprocess.Popen[bytes]:
    """``script`` run (as ``user``) by a shell that first moves itself into ``cg``, so that everything it
    starts is in there too."""
    if user is not None:  # cgroup v1 lets the owner of cgroup.procs move their own processes in
        entry = pwd.getpwnam(user)
        os.chown(cg / "cgroup.procs", entry.pw_uid, entry.pw_gid)
    return popen_as(user, ["/bin/sh", "-c", f"echo $$ > {cg}/cgroup.procs || exit 99\n{script}"])


def vmstat_oom_kill() -> int | None:
    for line in Path("/proc/vmstat").read_text().splitlines():
        if line.startswith("oom_kill "):
            return int(line.split()[1])
    return None
