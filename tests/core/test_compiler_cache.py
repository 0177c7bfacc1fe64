"""A compiler cache in front of a real CMake + ninja build (``cache = "ccache"``): rigops puts ccache in as CMake's
compiler launcher for C, C++ and CUDA, ccache writes each compile's outcome beside the run's log, and the result
says what came from the cache. Built twice from chat, the build dir removed in between (CMake configures afresh
and every object is compiled again): the first run finds nothing, the second everything."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bot.actions.rebuild import build_env, cache_log
from bot.builds.progress import CacheStats, cache_stats
from bot.config import BuildConfig
from slackemu import SlackEmulator
from tests.core.test_follow import project, wait_result
from tests.harness import OPS, make_config, running_app

# ccache 4.7's stats log for two compiles of one file, the second from the cache (as ccache wrote it here)
TWO_CALLS = ("# a.c\ncache_miss\ndirect_cache_miss\nlocal_storage_miss\nlocal_storage_read_miss\n"
             "local_storage_read_miss\nlocal_storage_write\nlocal_storage_write\npreprocessed_cache_miss\n"
             "# a.c\ndirect_cache_hit\nlocal_storage_hit\nlocal_storage_read_hit\nlocal_storage_read_hit\n")


def test_the_stats_log_counts_compiles_not_calls() -> None:
    assert cache_stats(TWO_CALLS) == CacheStats(hits=1, compiles=2)
    assert cache_stats("# conftest.c\ncalled_for_link\n") is None  # a link is no compile
    assert cache_stats("") is None


def test_the_cache_goes_in_front_of_cmake_s_compilers() -> None:
    build = BuildConfig(name="hello", workdir="/src/hello", command="cmake --build out", cache="ccache")
    env = build_env(build, 4, log="~/.local/state/rigops/logs/hello-1.log", run_id=7)
    assert {env[f"CMAKE_{lang}_COMPILER_LAUNCHER"] for lang in ("C", "CXX", "CUDA")} == {"ccache"}
    assert env["CCACHE_STATSLOG"] == "~/.local/state/rigops/logs/hello-1.log.run7.ccache"  # the agent expands ~/
    assert cache_log(BuildConfig(name="h", workdir="/src", command="x"), "logs/h.log", 3) == \
        "/src/logs/h.log.run3.ccache"
    assert not any(k.startswith(("CMAKE_C", "CCACHE")) for k in build_env(BuildConfig(
        name="h", workdir="/src", command="x"), 4, log="/l.log"))  # none by default
    sccache = build_env(BuildConfig(name="h", workdir="/src", command="x", cache="sccache"), 4, log="/l.log")
    assert sccache["CMAKE_CXX_COMPILER_LAUNCHER"] == "sccache" and "CCACHE_STATSLOG" not in sccache


@pytest.mark.skipif(not all(shutil.which(t) for t in ("ccache", "cmake", "ninja", "g++")),
                    reason="needs ccache, cmake, ninja and g++ (`make test` installs ccache)")
async def test_a_rebuild_from_chat_says_what_came_from_the_cache(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    src = project(tmp_path)
    config = make_config({"b200": {"address": "local", "builds": {"hello": {
        "workdir": str(src), "command": "rm -rf out && cmake -S . -B out -G Ninja && cmake --build out",
        "env": {"CCACHE_DIR": str(tmp_path / "ccache")}, "cache": "ccache", "jobs": 2,
        "log_dir": str(src / "logs")}}}}, confirm=False)
    async with running_app(emulator, config, state_dir):
        root = str((await emulator.send_message("rebuild -j2", channel=OPS))["ts"])
        first = await wait_result(emulator, root)
        await emulator.send_message("rebuild -j2", channel=OPS, thread_ts=root)
        second = await wait_result(emulator, root, after=1)
    units = len(list((src / "src").glob("*.cpp")))  # and CMake's own compiler checks, through the launcher too
    found = re.search(r":package: ccache: 0 of (\d+) compiles came from the cache \(0%\)\.", first.text)
    assert "succeeded" in first.text and found is not None and int(found[1]) >= units, first.text
    compiles = int(found[1])
    assert f":package: ccache: {compiles} of {compiles} compiles came from the cache (100%)." in second.text, \
        second.text
