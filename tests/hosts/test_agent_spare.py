"""The agent's kill and sample when several builds run on one host (bot/hosts/agent.py, run as a real subprocess
over JSON lines, see test_agent.py): a stop reaches only its own build — its tree, the memory cgroup it moved
into, and the build user's tools by name only when its tree is gone — and never a process in the tree of a
spared root (another build); a sample counts its own build and tells the others' apart.

Fake builds run as a user of these tests alone (tests.fakes.users.SEVERAL_USER), so the stops by name here
reach nobody else's processes.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.hosts.agent import protocol
from tests.fakes.cgroups import Cgroups, in_cgroup
from tests.fakes.users import several_builds_user
from tests.hosts.test_agent import (
    IS_ROOT,
    MIB,
    UNIQUE,
    Agent,
    Cleanup,
    alive,
    fake,
    proc_info,
    start_of,
    wait_build_ready,
    wait_rss,
)
from tests.waiting import wait_until

TOOLS = list(protocol.BUILD_TOOL_NAMES)
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root: stops build tools by name, which must be those of a "
                                "user of these tests alone")


@pytest.fixture(scope="module")
def user() -> Iterator[str]:
    yield several_builds_user()


@pytest.fixture
def bin_dir(fake_bin: Path) -> Path:
    """The fake tools, with one named like no other process on this machine (UNIQUE)."""
    return fake.build_fake_tools(fake_bin, (UNIQUE,))


def root_of(proc: subprocess.Popen[bytes]) -> list[int]:
    return [proc.pid, start_of(proc.pid)]


def build(cleanup: Cleanup, fake_bin: Path, user: str, *, compilers: int) -> tuple[list[int], list[dict[str, Any]]]:
    """A fake build (sh -> ninja -> compilers) as ``user``: its root and its processes once they are up."""
    proc = cleanup.popen(fake.start_fake_build(fake_bin, compilers=compilers, mb=4, driver_mb=1, user=user))
    return root_of(proc), wait_build_ready(proc.pid, compilers, 4)


def tools_of(procs: list[dict[str, Any]]) -> set[int]:
    return {p["pid"] for p in procs if p["comm"] != "sh"}


def all_alive(procs: list[dict[str, Any]]) -> bool:
    return all(alive(p["pid"], p["start"]) for p in procs)


@needs_root
def test_a_stop_by_name_spares_the_trees_of_other_builds(agent: Agent, fake_bin: Path, cleanup: Cleanup,
                                                         user: str) -> None:
    _, by_hand = build(cleanup, fake_bin, user, compilers=2)  # a build no tree of which is known
    two, two_procs = build(cleanup, fake_bin, user, compilers=3)
    three, three_procs = build(cleanup, fake_bin, user, compilers=1)

    result = agent.call("kill", roots=[], fallback_names=TOOLS, spare=[two, three], user=user, grace=1, settle=0)

    assert {t["pid"] for t in result["targets"]} == tools_of(by_hand)
    assert all(t["via"] == "name" for t in result["targets"])
    assert (result["tree"], result["by_name"]) == (False, True)
    spared = {s["pid"]: s for s in result["skipped"] if s["reason"] == "spared"}
    assert set(spared) == tools_of(two_procs) | tools_of(three_procs)
    assert {p: s["spared_by"] for p, s in spared.items()} == {
        **{p: two for p in tools_of(two_procs)}, **{p: three for p in tools_of(three_procs)}}
    assert result["spare_alive"] == [two, three]
    assert all_alive(two_procs) and all_alive(three_procs)
    assert not any(alive(p["pid"], p["start"]) for p in by_hand if p["comm"] != "sh")


@needs_root
def test_names_count_only_when_the_tree_is_gone(agent: Agent, fake_bin: Path, cleanup: Cleanup, user: str) -> None:
    one, one_procs = build(cleanup, fake_bin, user, compilers=1)
    stray = cleanup.popen(fake.start_tool(fake_bin, "cc1plus", "1", user=user))  # the user's, in no tree
    wait_rss(stray.pid, 1)

    result = agent.call("kill", roots=[one], fallback_names=TOOLS, user=user, grace=1, settle=0)
    assert {t["pid"] for t in result["targets"]} == {p["pid"] for p in one_procs}
    assert {t["via"] for t in result["targets"]} == {"tree"}
    assert (result["tree"], result["by_name"]) == (True, False)
    assert alive(stray.pid, start_of(stray.pid))

    # The same stop once the tree is gone: now by name.
    result = agent.call("kill", roots=[one], fallback_names=TOOLS, user=user, grace=1, settle=0)
    assert [(t["pid"], t["via"]) for t in result["targets"]] == [(stray.pid, "name")]
    assert (result["tree"], result["by_name"], result["stale_roots"]) == (False, True, [one])
    assert stray.wait(timeout=10) == -15


def test_a_stop_reaches_what_left_the_tree_but_stayed_in_the_build_cgroup(
        agent: Agent, bin_dir: Path, cleanup: Cleanup, cgroups: Cgroups) -> None:
    cg = cgroups.make("own", 256 * MIB)
    # The build leaves a process behind whose parent exits at once: it is in no tree, but in the build's cgroup.
    root = cleanup.popen(in_cgroup(cg, f"({bin_dir}/{UNIQUE} 1 &); exec {bin_dir}/ninja 1 -- {bin_dir}/cc1plus 1"))

    def members() -> list[int]:
        return [int(p) for p in (cg / "cgroup.procs").read_text().split()]

    def left() -> int | None:
        return next((p for p in members() if (info := proc_info(p)) and info["comm"] == UNIQUE
                     and info["ppid"] != root.pid), None)

    escaped = wait_until(left, what="the process that left the tree")
    wait_until(lambda: len(members()) == 3, what="ninja, its compiler and the one that left")
    neighbour = cleanup.popen(fake.start_tool(bin_dir, UNIQUE, "1"))  # same name, same user, another cgroup
    wait_rss(neighbour.pid, 1)
    cgroup_path = next(line.split(":", 2)[2] for line in Path(f"/proc/{root.pid}/cgroup").read_text().splitlines()
                       if "memory" in line.split(":")[1].split(","))

    result = agent.call("kill", roots=[root_of(root)], grace=1, settle=0)

    vias = {t["pid"]: t["via"] for t in result["targets"]}
    assert vias[escaped] == "cgroup" and sorted(vias.values()) == ["cgroup", "tree", "tree"]
    assert result["cgroups"] == [cgroup_path]
    wait_until(lambda: members() == [], what="the build's cgroup to empty")
    assert alive(neighbour.pid, start_of(neighbour.pid))


def test_a_tree_in_its_parent_s_cgroup_brings_no_cgroup_into_the_stop(agent: Agent, bin_dir: Path,
                                                                        cleanup: Cleanup) -> None:
    # A tree in the cgroup of its parent (and of the agent): that cgroup is not the build's own.
    tree = cleanup.popen(fake.start_tool(bin_dir, UNIQUE, "1"))
    other = cleanup.popen(fake.start_tool(bin_dir, UNIQUE, "1"))
    wait_rss(tree.pid, 1)
    wait_rss(other.pid, 1)
    result = agent.call("kill", roots=[root_of(tree)], grace=1, settle=0)
    assert [t["pid"] for t in result["targets"]] == [tree.pid] and result["cgroups"] == []
    assert alive(other.pid, start_of(other.pid))


@needs_root
def test_a_sample_counts_its_build_and_tells_the_others_apart(agent: Agent, fake_bin: Path, cleanup: Cleanup,
                                                              user: str) -> None:
    one, one_procs = build(cleanup, fake_bin, user, compilers=2)
    two, two_procs = build(cleanup, fake_bin, user, compilers=3)

    s = agent.call("sample", roots=[one], user=user, spare=[two], cgroup=False)

    assert (s["classes"]["driver"]["count"], s["classes"]["compiler"]["count"]) == (1, 2)
    assert {t["pid"] for t in s["top_compilers"]} == tools_of(one_procs) - {
        p["pid"] for p in one_procs if p["comm"] == "ninja"}
    [other] = s["others"]
    assert (other["root"], other["tools"], other["compilers"]) == (two, 4, 3)
    assert other["rss"] >= 3 * 4 * MIB
    # Without the other build's root, its compilers (the build user's) count as this build's.
    s = agent.call("sample", roots=[one], user=user, cgroup=False)
    assert s["classes"]["compiler"]["count"] == 5 and s["others"] == []
    assert all_alive(two_procs)


@needs_root
def test_a_snapshot_says_whose_tree_each_tool_is_in(agent: Agent, fake_bin: Path, cleanup: Cleanup,
                                                    user: str) -> None:
    one, one_procs = build(cleanup, fake_bin, user, compilers=1)
    two, two_procs = build(cleanup, fake_bin, user, compilers=2)
    _, by_hand = build(cleanup, fake_bin, user, compilers=1)
    tools = agent.call("snapshot", user=user, roots=[one, two], top=0)["tools"]
    roots = {t["pid"]: t.get("root") for t in tools}
    assert {p: roots[p] for p in tools_of(one_procs)} == {p: one for p in tools_of(one_procs)}
    assert {p: roots[p] for p in tools_of(two_procs)} == {p: two for p in tools_of(two_procs)}
    assert {p: roots[p] for p in tools_of(by_hand)} == {p: None for p in tools_of(by_hand)}
