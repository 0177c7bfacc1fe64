"""The agent's sample between its full scans of /proc (bot/hosts/agent.py, see FULL_SCAN_EVERY): each sample
walks the build's trees through the children files, so what forks and exits in a tree is counted by the very
next sample; the build user's tools outside every tree come from a full scan at most FULL_SCAN_EVERY seconds old.
Nor is a big cgroup's process list read each second to tell whether the build has its cgroup to itself.

Most tests here call the agent's op_sample in this process, with the period made long enough that no full scan
comes between their samples; one runs the agent as the bot does, with its real period. The processes are real,
and run as a user of these tests alone (WALK_USER, when we are root), so that no other test's stop by name of
root's tools ends them, and no other test's compilers count as that user's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.hosts.agent import sample as agent_sample
from tests.fakes.cgroups import Cgroups, in_cgroup
from tests.fakes.users import needs_own_build_user, own_user, switch_to
from tests.hosts.test_agent import MIB, Agent, Cleanup, fake, proc_info, start_of, wait_rss
from tests.hosts.test_agent_sample import ME, root_of
from tests.waiting import wait_until

# A build root with a thread pool: each argv it reads (a JSON line) runs as the child of a thread of its own (not
# of its main thread), and the pid of that child is printed.
SPAWNER = """
import json, subprocess, sys, threading
def run(argv):
    child = subprocess.Popen(argv)
    print(child.pid, flush=True)
    child.wait()
for line in sys.stdin:
    threading.Thread(target=run, args=(json.loads(line),), daemon=True).start()
"""
WALK_USER = "rigops-walk"  # stray compilers count by user: this one's are these tests' alone


def walk_user() -> str | None:
    return own_user(WALK_USER)


class Spawner:
    def __init__(self, cleanup: Cleanup, user: str | None) -> None:
        python = sys.executable if user is None else "/usr/bin/python3"  # one that user can run
        if not os.access(python, os.X_OK):
            pytest.skip(f"no {python} to run a build root with threads")
        self.proc = cleanup.popen(subprocess.Popen([python, "-c", SPAWNER], stdin=subprocess.PIPE,
                                                   stdout=subprocess.PIPE, start_new_session=True, cwd="/",
                                                   **switch_to(user)))
        self.root = root_of(self.proc)

    def spawn(self, *argv: str | Path) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([str(a) for a in argv]).encode() + b"\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def spawner(cleanup: Cleanup) -> Iterator[Callable[[], Spawner]]:
    made: list[Spawner] = []

    def make() -> Spawner:
        made.append(Spawner(cleanup, walk_user()))
        return made[-1]

    yield make
    for s in made:
        s.close()


@pytest.fixture
def no_full_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a build's first sample scans /proc in full; the others walk the trees."""
    monkeypatch.setattr(agent_sample, "FULL_SCAN_EVERY", 3600.0)


def sample(roots: list[list[int]], **args: Any) -> dict[str, Any]:
    result: dict[str, Any] = agent_sample.op_sample({"roots": roots, "user": walk_user() or ME, "cgroup": False,
                                                     "top": 50, **args})
    return result


def compilers(s: dict[str, Any]) -> set[int]:
    return {c["pid"] for c in s["top_compilers"]}


def children_file(pid: int) -> set[int]:
    return {int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


needs_children_files = pytest.mark.skipif(not agent_sample.HAVE_CHILDREN_FILES,
                                          reason="needs /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)")


@needs_children_files
def test_what_forks_and_exits_in_a_tree_is_counted_by_the_next_sample(
        spawner: Callable[[], Spawner], fake_bin: Path, no_full_scan: None) -> None:
    build = spawner()
    first = sample([build.root])
    assert (first["scan_age"], first["tree"], first["classes"]["compiler"]["count"]) == (0.0, 1, 0)

    one = build.spawn(fake_bin / "cc1plus", 4)
    wait_rss(one, 4, "cc1plus")
    assert one not in children_file(build.proc.pid)  # a thread's child: listed under that thread alone
    s = sample([build.root])
    assert s["scan_age"] > 0  # no full scan: the walk found it
    assert (s["tree"], s["classes"]["compiler"]["count"], compilers(s)) == (2, 1, {one})
    assert s["classes"]["compiler"]["max_rss"] >= 4 * MIB and s["top_compilers"][0]["job"] == one

    os.kill(one, signal.SIGKILL)
    wait_until(lambda: proc_info(one) is None, what="the compiler to go")
    two = build.spawn(fake_bin / "cicc", 2)
    wait_rss(two, 2, "cicc")
    s = sample([build.root])
    assert s["scan_age"] > 0
    assert [(e["pid"], e["name"]) for e in s["ended"]] == [(one, "cc1plus")] and s["ended"][0]["peak_rss"] >= 4 * MIB
    assert (s["tree"], s["classes"]["compiler"]["count"], compilers(s)) == (2, 1, {two})


@needs_children_files
@needs_own_build_user
def test_a_tool_that_leaves_its_tree_still_counts_as_the_build_user_s(
        spawner: Callable[[], Spawner], fake_bin: Path, no_full_scan: None) -> None:
    """Its driver died and it was re-parented away: no longer in the tree, still the build user's compiler,
    counted by the next sample though no full scan has seen it."""
    build = spawner()
    assert sample([build.root])["scan_age"] == 0.0
    ninja = build.spawn(fake_bin / "ninja", 1, "--", fake_bin / "cc1plus", 4)
    compiler = wait_until(lambda: next((p for p in children_file(ninja) if (info := proc_info(p))
                                        and info["comm"] == "cc1plus" and info["rss"] >= 4 * MIB), None),
                          what="ninja's compiler")
    s = sample([build.root])
    assert (s["tree"], compilers(s), s["classes"]["driver"]["count"]) == (3, {compiler}, 1)

    os.kill(ninja, signal.SIGKILL)
    wait_until(lambda: (info := proc_info(compiler)) is not None and info["ppid"] != ninja,
               what="the compiler to be re-parented")
    wait_until(lambda: proc_info(ninja) is None, what="ninja to be reaped")  # till then its zombie is in the tree
    s = sample([build.root])
    assert s["scan_age"] > 0
    assert (s["tree"], compilers(s), s["ended"]) == (1, {compiler}, [])
    assert (s["classes"]["compiler"]["count"], s["classes"]["driver"]["count"]) == (1, 0)
    assert sample([build.root], user=None)["classes"]["compiler"]["count"] == 0  # the user's, not the tree's


# A compiler that grows by the MiB it reads on each line (run through a link named cc1plus: that is its comm).
GROWER = """
import sys
held = []
for line in sys.stdin:
    held.append(b"x" * (int(line) << 20))
    print(len(held), flush=True)
"""


@needs_children_files
def test_a_stray_found_by_a_full_scan_is_read_again_by_each_sample(
        spawner: Callable[[], Spawner], public_tmp: Path, cleanup: Cleanup, no_full_scan: None) -> None:
    """Between full scans the build user's compilers outside the tree are the ones the last scan found, as they are
    now: their RSS read again, the gone ones ended."""
    user = walk_user()
    (public_tmp / "cc1plus").symlink_to(sys.executable if user is None else "/usr/bin/python3")
    stray = cleanup.popen(subprocess.Popen([str(public_tmp / "cc1plus"), "-c", GROWER], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, start_new_session=True, cwd="/",
                                           **switch_to(user)))
    assert stray.stdin is not None and stray.stdout is not None
    try:
        wait_until(lambda: (info := proc_info(stray.pid)) is not None and info["comm"] == "cc1plus",
                   what="the stray compiler to start")
        build = spawner()  # a build of the same user, the stray outside its tree
        first = sample([build.root])
        assert first["scan_age"] == 0.0 and compilers(first) == {stray.pid}
        assert first["top_compilers"][0]["rss"] < 32 * MIB

        stray.stdin.write(b"32\n")
        stray.stdin.flush()
        assert stray.stdout.readline() == b"1\n"
        s = sample([build.root])
        assert s["scan_age"] > 0 and compilers(s) == {stray.pid}
        assert s["top_compilers"][0]["rss"] >= 32 * MIB and s["classes"]["compiler"]["max_rss"] >= 32 * MIB

        stray.kill()
        stray.wait()
        s = sample([build.root])
        assert s["scan_age"] > 0 and compilers(s) == set() and s["classes"]["compiler"]["count"] == 0
        assert [(e["pid"], e["name"]) for e in s["ended"]] == [(stray.pid, "cc1plus")]
        assert s["ended"][0]["peak_rss"] >= 32 * MIB
    finally:
        stray.stdin.close()
        stray.stdout.close()


def test_the_tree_walk_and_the_full_scan_agree(spawner: Callable[[], Spawner], fake_bin: Path, cleanup: Cleanup,
                                               no_full_scan: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same answer from the children files as from a whole /proc scan (what a kernel without them gets):
    the tree, the classes, the compile jobs, the other build's tools, the build user's stray compiler."""
    user = walk_user()
    build = spawner()
    nvcc = build.spawn(fake_bin / "nvcc", 1, "--", "/bin/sh", "-c", f"{fake_bin}/cicc 6; :")
    gxx = build.spawn(fake_bin / "g++-12", 1, "--", fake_bin / "cc1plus", 5)
    build.spawn(fake_bin / "ninja", 2, "--", fake_bin / "ptxas", 3, "--", fake_bin / "ld", 3)
    other = cleanup.popen(fake.start_fake_build(fake_bin, compilers=2, mb=2, driver_mb=1, user=user))
    stray = cleanup.popen(fake.start_tool(fake_bin, "cc1plus", "3", user=user))
    wait_rss(stray.pid, 3)
    spare = [root_of(other)]

    def full() -> dict[str, Any]:
        with monkeypatch.context() as m:
            m.setattr(agent_sample, "HAVE_CHILDREN_FILES", False)
            return sample([build.root], spare=spare)

    def ready() -> dict[str, Any] | None:
        s = full()
        done = (s["classes"]["compiler"]["count"] == 6 and s["classes"]["linker"]["count"] == 1
                and s["others"] and s["others"][0]["compilers"] == 2 and s["classes"]["compiler"]["max_rss"] >= 6 * MIB)
        return s if done else None

    scanned = wait_until(ready, timeout=20, what="the build, the other build and the stray to allocate")
    assert scanned["scan_age"] == 0.0
    walked = sample([build.root], spare=spare)  # not a first sample: the trees walked, the stray from that scan
    assert walked["scan_age"] > 0 or not agent_sample.HAVE_CHILDREN_FILES

    def summary(s: dict[str, Any]) -> Any:
        return (s["tree"], s["stale_roots"], {k: v["count"] for k, v in s["classes"].items()},
                sorted((c["pid"], c["name"], c["job"], c["ppid"]) for c in s["top_compilers"]),
                [(o["root"], o["tools"], o["compilers"]) for o in s["others"]])

    assert summary(walked) == summary(scanned)
    for cls in ("driver", "compiler", "linker"):
        assert abs(walked["classes"][cls]["rss"] - scanned["classes"][cls]["rss"]) < MIB
    jobs = {c["pid"]: c["job"] for c in walked["top_compilers"]}
    assert jobs[nvcc] == nvcc and jobs[gxx] == gxx and jobs[stray.pid] == stray.pid
    assert set(jobs.values()) >= {nvcc, gxx} and stray.pid in jobs
    assert sum(1 for job in jobs.values() if job == nvcc) == 2  # nvcc and its cicc (through nvcc's shell)


def test_a_stray_compiler_of_the_build_user_is_counted_within_the_full_scan_period(
        agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    """The agent as the bot runs it, sampling a build: a compiler of the build user outside the build's tree
    (started by hand, say) is counted at the latest by a sample sent FULL_SCAN_EVERY seconds after it started."""
    user = walk_user()
    build = cleanup.popen(fake.start_fake_build(fake_bin, compilers=1, mb=2, driver_mb=1, user=user))
    roots = [root_of(build)]
    args = {"roots": roots, "user": user or ME, "cgroup": False, "top": 256}
    assert agent.call("sample", **args)["scan_age"] == 0.0  # the build's first sample
    stray = cleanup.popen(fake.start_tool(fake_bin, "cc1plus", "3", user=user))
    wait_rss(stray.pid, 3, "cc1plus")
    due = time.monotonic() + agent_sample.FULL_SCAN_EVERY  # the agent's clock too (CLOCK_MONOTONIC)

    def counted() -> dict[str, Any] | None:
        sent = time.monotonic()
        s = agent.call("sample", **args)
        assert 0 <= s["scan_age"] < agent_sample.FULL_SCAN_EVERY
        if stray.pid in compilers(s):
            return s
        assert sent < due, f"not counted by a sample sent {sent - due + agent_sample.FULL_SCAN_EVERY:.1f} s later"
        return None

    s = wait_until(counted, timeout=agent_sample.FULL_SCAN_EVERY + 30, what="the stray compiler to be counted",
                   interval=0.2)
    entry = next(c for c in s["top_compilers"] if c["pid"] == stray.pid)
    assert (entry["start"], entry["name"], entry["job"]) == (start_of(stray.pid), "cc1plus", stray.pid)
    assert entry["rss"] >= 3 * MIB and s["tree"] == 3


def test_a_cgroup_is_the_build_s_alone_once_the_outsider_has_left(agent: Agent, fake_bin: Path, cleanup: Cleanup,
                                                                   cgroups: Cgroups) -> None:
    """A process outside the build's tree in the build's cgroup: not exclusive, as long as it stays (the agent
    keeps that one in mind rather than list the cgroup each second); exclusive once it has gone; not again when
    another one joins."""
    user = walk_user()
    cg = cgroups.make("shared", 256 * MIB)
    build = cleanup.popen(in_cgroup(cg, f"exec {fake_bin}/cc1plus 2", user=user))
    outsider = cleanup.popen(in_cgroup(cg, f"exec {fake_bin}/ld 1", user=user))
    wait_rss(build.pid, 2, "cc1plus")
    wait_rss(outsider.pid, 1, "ld")
    roots = [root_of(build)]

    def exclusive() -> bool:
        found = agent.call("sample", roots=roots)["cgroup"]
        assert found is not None and found["path"].endswith(cg.name)
        return bool(found["exclusive"])

    assert (exclusive(), exclusive()) == (False, False)
    outsider.kill()
    outsider.wait()
    assert exclusive() is True
    another = cleanup.popen(in_cgroup(cg, f"exec {fake_bin}/ld 1", user=user))
    wait_rss(another.pid, 1, "ld")
    assert exclusive() is False
