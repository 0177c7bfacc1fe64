"""The host agent (bot/hosts/agent.py), run as a real subprocess exactly as the bot runs it:
``python -u -c <agent_bootstrap()>`` (the agent with the build supervisor's source), JSON lines on stdin/stdout.

Fake builds are copies of tests/fakes/hog.c named like real tools. Builds that a kill test stops by name run
as the user ``nobody`` (and root-owned fakes get names unique to this run), so a test never touches anybody
else's processes on a shared machine.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import os
import pwd
import queue
import re
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import typing
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bot.hosts.agent import procs, protocol
from bot.hosts.base import agent_bootstrap, agent_sources
from bot.util.errors import AgentErrorCode
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
AGENT_DIR = ROOT / "bot" / "hosts" / "agent"  # the package shipped to hosts
AGENT_FILES = sorted(AGENT_DIR.glob("*.py"))
BOOTSTRAP = agent_bootstrap()  # what `python3 -u -c` gets
MIB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fake = _load("rigops_tests_fakes_tools", ROOT / "tests" / "fakes" / "tools.py")

IS_ROOT = os.geteuid() == 0
try:
    pwd.getpwnam("nobody")
    HAVE_NOBODY = True
except KeyError:
    HAVE_NOBODY = False
needs_nobody = pytest.mark.skipif(not (IS_ROOT and HAVE_NOBODY), reason="needs root (and a 'nobody' user): runs "
                                  "processes as another user, 'nobody', to see that they are spared or reached")

# A tool name no other process on this machine has (no "-<digits>" suffix: that reads as a version).
UNIQUE = f"rgfake{os.getpid() % 100000}x"
# A second one, for tests that must not see the first.
UNIQUE2 = f"rgfake{os.getpid() % 100000}y"


# ---------------------------------------------------------------------------------------------------------
# Helpers


def proc_info(pid: int) -> dict[str, Any] | None:
    fields = fake.read_stat_fields(pid)
    if fields is None:
        return None
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().rstrip("\n")
    except OSError:
        return None
    return {
        "pid": pid,
        "state": fields[0],
        "ppid": int(fields[1]),
        "pgid": int(fields[2]),
        "sid": int(fields[3]),
        "start": int(fields[19]),
        "rss": int(fields[21]) * PAGE,
        "comm": comm,
    }


def alive(pid: int, start: int) -> bool:
    info = proc_info(pid)
    return info is not None and info["start"] == start and info["state"] not in ("Z", "X")


def start_of(pid: int) -> int:
    info = proc_info(pid)
    assert info is not None, f"process {pid} is gone"
    return int(info["start"])


def session_procs(sid: int) -> list[dict[str, Any]]:
    out = []
    for pid in fake.session_members(sid):
        info = proc_info(pid)
        if info is not None:
            out.append(info)
    return out


def wait_build_ready(sid: int, compilers: int, mb: int) -> list[dict[str, Any]]:
    """Wait until session ``sid`` has a ninja and ``compilers`` compilers each holding ``mb`` MiB."""
    comms = Counter(b[:15] for b in fake.compiler_binaries(compilers))

    def ready() -> list[dict[str, Any]] | None:
        procs = session_procs(sid)
        have = Counter(p["comm"] for p in procs if p["comm"] in comms and p["rss"] >= mb * MIB)
        if have == comms and any(p["comm"] == "ninja" for p in procs):
            return procs
        return None

    result: list[dict[str, Any]] = wait_until(ready, timeout=20,
                                              what=f"fake build in session {sid} to allocate its memory")
    return result


def wait_rss(pid: int, mb: int, comm: str | None = None) -> dict[str, Any]:
    """Wait until process pid (named ``comm``, when given) holds ``mb`` MiB."""

    def ready() -> dict[str, Any] | None:
        info = proc_info(pid)
        if info is None or info["rss"] < mb * MIB or (comm is not None and info["comm"] != comm):
            return None
        return info

    result: dict[str, Any] = wait_until(ready, timeout=20, what=f"process {pid} to allocate {mb} MiB")
    return result


class Agent:
    """The agent as a subprocess, with a reader thread that files every response by id."""

    def __init__(self, *, python: str = sys.executable, env: dict[str, str] | None = None, **popen: Any) -> None:
        argv = popen.pop("argv", None) or [python, "-u", "-c", BOOTSTRAP]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, **popen)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout = self.proc.stdout
        self.pid = self.proc.pid
        self.arrivals: list[Any] = []  # response ids in the order they arrived
        self.garbage: list[bytes] = []  # stdout lines that were not protocol responses
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stash: dict[Any, list[dict[str, Any]]] = {}
        self._next_id = 1
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                self.garbage.append(line)
                continue
            if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("ok"), bool):
                self.garbage.append(line)
                continue
            self.arrivals.append(msg["id"])
            self._queue.put(msg)
        self._queue.put(None)

    def send_raw(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def send(self, op: str, **args: Any) -> int:
        rid = self._next_id
        self._next_id += 1
        self.send_raw(json.dumps({"id": rid, "op": op, **args}).encode() + b"\n")
        return rid

    def recv(self, rid: Any, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            stashed = self._stash.get(rid)
            if stashed:
                return stashed.pop(0)
            try:
                msg = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no response to request {rid!r} within {timeout}s") from None
            if msg is None:
                self._queue.put(None)
                raise AssertionError(f"agent closed stdout before answering {rid!r}")
            self._stash.setdefault(msg["id"], []).append(msg)

    def call(self, op: str, timeout: float = 60.0, **args: Any) -> dict[str, Any]:
        msg = self.recv(self.send(op, **args), timeout)
        assert msg["ok"] is True, msg
        assert set(msg) == {"id", "ok", "result"}, msg
        result: dict[str, Any] = msg["result"]
        return result

    def call_error(self, op: str, **args: Any) -> dict[str, Any]:
        msg = self.recv(self.send(op, **args))
        assert msg["ok"] is False, msg
        error: dict[str, Any] = msg["error"]
        assert set(error) == {"type", "message"} and error["message"], msg
        return error

    def close(self, timeout: float = 30.0) -> int | None:
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        self._reader.join(timeout=10)
        self.stdout.close()
        return code


class Cleanup:
    def __init__(self) -> None:
        self.popens: list[subprocess.Popen[bytes]] = []
        self.sessions: list[int] = []

    def popen(self, proc: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
        self.popens.append(proc)
        return proc

    def session(self, sid: int) -> int:
        self.sessions.append(sid)
        return sid


@pytest.fixture(scope="session")
def fake_bin() -> Iterator[Path]:
    """Fake tools in a directory every user can reach (pytest's tmp dirs are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="rigops-fakebin-"))
    os.chmod(path, 0o755)
    fake.build_fake_tools(path, (*fake.FAKE_TOOL_NAMES, UNIQUE, UNIQUE2))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def read_meminfo() -> dict[str, int]:
    out = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        out[key] = int(parts[0]) * (1024 if len(parts) > 1 else 1)
    return out


# ---------------------------------------------------------------------------------------------------------
# Tool names (a unit test on the module itself)


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("x86_64-linux-gnu-g++-12", "g++"),
        ("gcc-12", "gcc"),
        ("clang++-17", "clang++"),
        ("cc1plus", "cc1plus"),
        ("cc1", "cc1"),
        ("g++", "g++"),
        ("aarch64-linux-gnu-gcc", "gcc"),
        ("x86_64-pc-linux-gnu-gcc-13.2.0", "gcc"),
        ("x86_64-w64-mingw32-g++", "g++"),
        ("arm-none-eabi-as", "as"),
        ("aarch64-linux-gnu-ld.gold", "ld.gold"),
        ("ld.lld-17", "ld.lld"),
        ("x86_64-linux-gnu-gcc-ar-12", "gcc-ar"),
        ("cudafe++", "cudafe++"),
        ("nvcc", "nvcc"),
        ("python3.11", "python3.11"),
        ("my-tool", "my-tool"),
        ("x86_64-foo", "x86_64-foo"),
        ("x86_64-foo-bar-gcc", "x86_64-foo-bar-gcc"),
        ("kworker/0:1-events", "kworker/0:1-events"),
        ("vim", "vim"),
    ],
)
def test_normalise_tool_name(base: str, expected: str) -> None:
    assert procs.normalise_tool_name(base) == expected


@pytest.mark.parametrize(
    ("comm", "argv0", "expected"),
    [
        ("x86_64-linux-gn", "/usr/bin/x86_64-linux-gnu-g++-12", "g++"),  # comm truncated: argv[0] decides
        ("systemd-journal", "/lib/systemd/systemd-journald", "systemd-journald"),
        ("x86_64-linux-gn", None, "x86_64-linux-gn"),  # no argv (kernel thread, zombie)
        ("sleep", "cmake ninja nvcc cc1plus", "sleep"),  # comm not truncated: argv[0] is not looked at
        ("python3", "python3", "python3"),
        ("cc1plus", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "cc1plus"),
        ("gcc-12", "gcc-12", "gcc"),
    ],
)
def test_tool_name_uses_argv0_only_for_truncated_comm(comm: str, argv0: str | None, expected: str) -> None:
    assert procs.tool_name(comm, argv0) == expected


def test_build_tool_names_are_the_documented_list() -> None:
    assert protocol.BUILD_TOOL_NAMES == (
        "cmake", "ninja", "make", "gmake", "cc1", "cc1plus", "c++", "g++", "gcc", "cc", "clang", "clang++",
        "nvcc", "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink", "ld", "ld.gold", "ld.lld", "collect2", "as",
    )  # fmt: skip


@pytest.mark.parametrize("path", AGENT_FILES, ids=[p.stem for p in AGENT_FILES])
def test_source_is_stdlib_only(path: Path) -> None:
    # On a host there is no bot package and nothing installed: each module imports the standard library and its
    # siblings, these only relatively (the package runs there as rigops_agent).
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            assert path.stem != "supervisor", "the supervisor runs as a file of its own: it imports no sibling"
            siblings = [node.module] if node.module else [alias.name for alias in node.names]
            assert node.level == 1 and all((AGENT_DIR / f"{m}.py").exists() for m in siblings), ast.unparse(node)
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported - set(sys.stdlib_module_names)


def test_the_package_ships_whole() -> None:
    # Every module of bot/hosts/agent travels in the bootstrap, under the name it runs as.
    assert set(agent_sources()) == {"rigops_agent"} | {f"rigops_agent.{p.stem}" for p in AGENT_FILES} - {
        "rigops_agent.__init__"}
    assert agent_sources()["rigops_agent.protocol"] == (AGENT_DIR / "protocol.py").read_text()


def test_bootstrap_fits_one_ssh_argument() -> None:
    # It travels as one argument of `python3 -u -c '<bootstrap>'`; Linux caps one argument at 128 KiB.
    assert len(BOOTSTRAP.encode()) < 100_000


def test_every_error_the_agent_sends_has_a_code_the_bot_knows() -> None:
    assert set(protocol.ERROR_CODES) == set(typing.get_args(AgentErrorCode))
    codes = []
    nodes = [node for path in AGENT_FILES for node in ast.walk(ast.parse(path.read_text()))]
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "AgentError":
            codes.append(node.args[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "error":
            codes.append(node.args[1])  # Server.error(rid, code, message)
        elif isinstance(node, ast.Dict):  # an error answer built by hand: {"type": ..., "message": ...}
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if keys == ["type", "message"]:
                codes.append(node.values[0])
    assert len(codes) > 20
    literal = [c.value for c in codes if isinstance(c, ast.Constant)]
    assert set(literal) <= set(protocol.ERROR_CODES)
    # The rest pass a code along: AgentError.code (Server.handle) or Server.error's parameter.
    assert {ast.unparse(c) for c in codes if not isinstance(c, ast.Constant)} == {"e.code", "code"}


def test_spawn_needs_the_supervisor_from_the_bootstrap(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    without = BOOTSTRAP.replace("main(M['rigops_agent.supervisor'])", "main()")
    assert without != BOOTSTRAP
    agent = start_agent(argv=[sys.executable, "-u", "-c", without])  # the agent given no supervisor
    assert agent.call("ping")["time"] > 0
    error = agent.call_error("spawn", workdir=str(tmp_path), command="true", log="b.log", exit_file="b.exit")
    assert error["type"] == "spawn_failed" and "supervisor" in error["message"]
    assert list(tmp_path.iterdir()) == []


def test_spawn_runs_the_supervisor_from_a_file(start_agent: Callable[..., Agent], tmp_path: Path,
                                               cleanup: Cleanup) -> None:
    # A `ps` on the build host shows the supervisor's path, not its source; the file is the user's alone, named by
    # its content, written again when it is gone or changed.
    cache = tmp_path / "cache"
    for name in ("w1", "w2", "w3"):
        (tmp_path / name).mkdir()
    agent = start_agent(env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    run = spawn(agent, cleanup, tmp_path / "w1", "sleep 2; echo one")  # alive while its /proc entry is read
    argv = Path(f"/proc/{run['supervisor_pid']}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
    assert argv[1:3] == ["-I", "-S"] and argv[4] == "sleep 2; echo one", argv
    script = Path(argv[3])
    assert script.parent == cache / "rigops" and re.fullmatch(r"supervisor-[0-9a-f]{16}\.py", script.name)
    assert script.read_text() == (AGENT_DIR / "supervisor.py").read_text()
    assert len(Path(f"/proc/{run['supervisor_pid']}/cmdline").read_bytes()) < 300 + len(str(tmp_path)) * 2
    assert stat.S_IMODE(script.stat().st_mode) == 0o600 and stat.S_IMODE(script.parent.stat().st_mode) == 0o700
    assert wait_exit(agent, run)["exit"]["exit_status"] == 0
    script.write_text("raise SystemExit(7)\n")  # changed under it: the agent writes it again
    run2 = spawn(agent, cleanup, tmp_path / "w2", "echo two")
    assert wait_exit(agent, run2)["exit"]["exit_status"] == 0 and script.read_text().startswith('"""')
    script.unlink()
    run3 = spawn(agent, cleanup, tmp_path / "w3", "echo three")
    assert wait_exit(agent, run3)["exit"]["exit_status"] == 0 and script.exists()
    assert Path(run3["log"]).read_text() == "three\n"


def test_spawn_leaves_a_cache_dir_others_can_write(start_agent: Callable[..., Agent], tmp_path: Path,
                                                    cleanup: Cleanup) -> None:
    # A cache directory another user could write is not used: the supervisor goes to the private one under
    # the temp directory instead.
    cache = tmp_path / "cache"
    (cache / "rigops").mkdir(parents=True)
    (cache / "rigops").chmod(0o777)
    temp = tmp_path / "tmp"
    temp.mkdir()
    (tmp_path / "w").mkdir()
    agent = start_agent(env={**os.environ, "XDG_CACHE_HOME": str(cache), "TMPDIR": str(temp)})
    run = spawn(agent, cleanup, tmp_path / "w", "sleep 2; echo ok")  # alive while its /proc entry is read
    script = Path(Path(f"/proc/{run['supervisor_pid']}/cmdline").read_bytes().split(b"\0")[3].decode())
    assert script.parent == temp / f"rigops-{os.geteuid()}"
    assert list((cache / "rigops").iterdir()) == []
    assert wait_exit(agent, run)["exit"]["exit_status"] == 0


# ---------------------------------------------------------------------------------------------------------
# hello, ping, snapshot


def test_hello(agent: Agent) -> None:
    hello = agent.call("hello")
    assert hello["agent_version"] == 1
    assert hello["pid"] == agent.pid
    assert hello["python"] == "{}.{}.{}".format(*sys.version_info[:3])
    assert isinstance(hello["psutil"], bool)
    assert hello["hostname"] == os.uname().nodename
    assert hello["cores"] == os.cpu_count()
    assert hello["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert hello["uid"] == os.getuid()
    assert hello["user"] == pwd.getpwuid(os.getuid()).pw_name
    assert hello["clock_ticks"] == os.sysconf("SC_CLK_TCK")
    assert hello["free_used"] in ("available", "classic")
    assert agent.call("ping")["time"] == pytest.approx(time.time(), abs=5)


@pytest.mark.parametrize(
    ("free_output", "expected"),
    [
        ("free from procps-ng 3.3.17", "classic"),
        ("free from procps-ng 4.0.2", "available"),
        (None, "available"),  # no free at all
    ],
)
def test_hello_free_used_from_free_version(
    start_agent: Callable[..., Agent], tmp_path: Path, free_output: str | None, expected: str
) -> None:
    if free_output is not None:
        free = tmp_path / "free"
        free.write_text(f"#!/bin/sh\necho '{free_output}'\n")
        free.chmod(0o755)
    agent = start_agent(env={**os.environ, "PATH": str(tmp_path)})
    assert agent.call("hello")["free_used"] == expected


def test_snapshot_meminfo_loadavg_top(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    hog = cleanup.popen(fake.start_tool(fake_bin, UNIQUE, "96"))
    wait_rss(hog.pid, 96)
    snap = agent.call("snapshot", top=10000)
    fresh = read_meminfo()
    meminfo = snap["meminfo"]
    assert set(meminfo) == set(fresh)
    assert meminfo["MemTotal"] == fresh["MemTotal"]
    assert meminfo["SwapTotal"] == fresh["SwapTotal"]
    assert abs(meminfo["MemAvailable"] - fresh["MemAvailable"]) < 0.02 * fresh["MemTotal"]
    assert all(isinstance(v, int) for v in meminfo.values())
    assert snap["time"] == pytest.approx(time.time(), abs=5)
    assert len(snap["loadavg"]) == 3 and all(isinstance(x, float) for x in snap["loadavg"])
    assert snap["cores"] == os.cpu_count()

    top = snap["top"]
    rss = [p["rss"] for p in top]
    assert rss == sorted(rss, reverse=True) and rss[-1] > 0
    mine = [p for p in top if p["pid"] == hog.pid]
    assert len(mine) == 1
    assert mine[0]["name"] == UNIQUE
    assert mine[0]["rss"] >= 96 * MIB
    assert mine[0]["start"] == start_of(hog.pid)
    assert mine[0]["ppid"] == os.getpid()
    assert mine[0]["user"] == pwd.getpwuid(os.getuid()).pw_name
    assert set(mine[0]) == {"pid", "ppid", "name", "user", "rss", "start"}
    assert len(agent.call("snapshot", top=3)["top"]) == 3
    assert agent.call("snapshot", top=0)["top"] == []


@needs_nobody
def test_snapshot_reports_fake_build_tools_by_name_only(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    build = cleanup.popen(fake.start_fake_build(fake_bin, compilers=4, mb=32, user="nobody"))
    decoys = [cleanup.popen(fake.start_decoy(kind, user="nobody")) for kind in ("python", "argv0")]
    procs = wait_build_ready(build.pid, 4, 32)
    ninja = next(p for p in procs if p["comm"] == "ninja")
    wait_until(lambda: all(proc_info(d.pid) for d in decoys), timeout=20, what="decoys")
    # The decoys' command lines do name the tools.
    for d in decoys:
        assert "cmake ninja nvcc cc1plus" in Path(f"/proc/{d.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()

    snap = agent.call("snapshot", user="nobody")
    members = set(fake.session_members(build.pid))
    tools = [t for t in snap["tools"] if t["pid"] in members]
    expected = Counter(["ninja", *(fake.tool_name_of(b) for b in fake.compiler_binaries(4))])
    assert Counter(t["name"] for t in tools) == expected == Counter(["ninja", "cc1plus", "nvcc", "g++", "cicc"])
    decoy_pids = {d.pid for d in decoys}
    assert not decoy_pids & {t["pid"] for t in snap["tools"]}
    for t in tools:
        assert set(t) >= {"pid", "ppid", "name", "user", "rss", "start", "cmd"}
        assert t["user"] == "nobody"
        assert t["start"] == start_of(t["pid"])
        assert len(t["cmd"]) <= 200
        if t["name"] == "ninja":
            assert t["pid"] == ninja["pid"] and t["ppid"] == build.pid
        else:
            assert t["ppid"] == ninja["pid"]
            assert t["rss"] >= 32 * MIB
            assert t["cmd"].startswith(str(fake_bin))
    gxx = next(t for t in tools if t["name"] == "g++")
    assert gxx["cmd"] == f"{fake_bin}/x86_64-linux-gnu-g++-12 32"

    # names narrows; another user's tools are not reported under root's name.
    only = agent.call("snapshot", user="nobody", names=["cc1plus"])["tools"]
    assert [t["name"] for t in only if t["pid"] in fake.session_members(build.pid)] == ["cc1plus"]
    as_root = agent.call("snapshot", user="root", names=["cc1plus", "ninja", "nvcc"])["tools"]
    assert not {t["pid"] for t in as_root} & {p["pid"] for p in procs}
    # No user filter: everybody's tools, the fake build's among them.
    everyone = agent.call("snapshot", names=["nvcc"])["tools"]
    assert any(t["pid"] in {p["pid"] for p in procs} for t in everyone)


def test_warm_snapshots_follow_exec_and_exit(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    # A shell that becomes a tool by exec: same pid and start, new comm and command line.
    proc = cleanup.popen(
        subprocess.Popen(
            ["/bin/sh", "-c", 'read line; exec "$0" 2', str(fake_bin / UNIQUE)],
            stdin=subprocess.PIPE,
            start_new_session=True,
        )
    )
    wait_until(lambda: proc_info(proc.pid), timeout=20, what="the shell")
    start = start_of(proc.pid)

    def mine(names: list[str]) -> list[dict[str, Any]]:
        return [t for t in agent.call("snapshot", names=names)["tools"] if t["pid"] == proc.pid]

    before = mine(["sh", UNIQUE])
    assert [(t["name"], t["start"]) for t in before] == [("sh", start)]
    assert mine(["sh", UNIQUE]) == before  # warm: the same answer
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    proc.stdin.close()
    wait_rss(proc.pid, 2, comm=UNIQUE)
    after = mine(["sh", UNIQUE])
    assert [(t["name"], t["start"], t["cmd"]) for t in after] == [(UNIQUE, start, f"{fake_bin / UNIQUE} 2")]
    assert after[0]["rss"] >= 2 * MIB
    proc.kill()
    proc.wait()
    assert mine(["sh", UNIQUE]) == []


def test_warm_snapshot_sees_a_new_parent(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    shell = cleanup.popen(
        subprocess.Popen(["/bin/sh", "-c", '"$0" 1 & wait', str(fake_bin / UNIQUE)], start_new_session=True)
    )

    def child() -> dict[str, Any] | None:
        tools = agent.call("snapshot", names=[UNIQUE])["tools"]
        mine = [t for t in tools if t["pid"] in fake.session_members(shell.pid)]
        return mine[0] if mine and proc_info(mine[0]["pid"]) else None

    before = wait_until(child, timeout=20, what="the tool under its shell")
    assert before["ppid"] == shell.pid
    wait_rss(before["pid"], 1)
    agent.call("snapshot", names=[UNIQUE])  # warm: its memory no longer changes
    shell.kill()
    shell.wait()
    after = child()
    assert after is not None and after["pid"] == before["pid"]
    info = proc_info(before["pid"])
    assert info is not None and after["ppid"] == info["ppid"] != shell.pid


def test_snapshot_cmd_is_cut_at_200_characters(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    # A tool whose child is `sleep 600 1 1 1 ...`: its own command line is long.
    proc = cleanup.popen(fake.start_tool(fake_bin, UNIQUE, "1", "--", "/bin/sleep", "600", *["1"] * 150))
    wait_rss(proc.pid, 1)
    argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
    tools = [t for t in agent.call("snapshot", names=[UNIQUE])["tools"] if t["pid"] == proc.pid]
    assert len(tools) == 1
    assert tools[0]["cmd"] == " ".join(argv)[:200] and len(" ".join(argv)) > 200


# ---------------------------------------------------------------------------------------------------------
# kill


@needs_nobody
def test_kill_by_names_stops_the_build_and_spares_the_decoys(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    build = cleanup.popen(fake.start_fake_build(fake_bin, compilers=4, mb=32, stubborn=1, user="nobody"))
    decoys = [cleanup.popen(fake.start_decoy(kind, user="nobody")) for kind in ("python", "argv0")]
    procs = wait_build_ready(build.pid, 4, 32)
    wait_until(lambda: all(proc_info(d.pid) for d in decoys), timeout=20, what="decoys")
    build_tools = {p["pid"]: p for p in procs if p["comm"] != "sh"}
    stubborn = next(p for p in procs if p["comm"] == "cc1plus")

    result = agent.call(
        "kill", names=list(protocol.BUILD_TOOL_NAMES), user="nobody", grace=0.5, timeout=20, settle=2
    )

    targets = {t["pid"]: t for t in result["targets"]}
    assert set(targets) == set(build_tools)
    assert result["counts"] == {"ninja": 1, "cc1plus": 1, "nvcc": 1, "g++": 1, "cicc": 1}
    assert targets[stubborn["pid"]]["signal"] == "KILL"  # ignored SIGTERM: SIGKILL after the grace period
    assert all(t["signal"] == "TERM" for pid, t in targets.items() if pid != stubborn["pid"])
    assert (result["termed"], result["killed"]) == (4, 1)
    assert result["survivors"] == [] and result["denied"] == [] and result["stale_roots"] == []
    for t in targets.values():
        assert t["start"] == build_tools[t["pid"]]["start"]
        assert t["user"] == "nobody"
        assert not alive(t["pid"], t["start"])
    assert sum(t["rss"] for t in targets.values()) >= 4 * 32 * MIB
    assert 0.5 <= result["stop_elapsed"] < 20
    assert result["stop_elapsed"] <= result["elapsed"] <= result["stop_elapsed"] + 2 + 0.5
    assert result["meminfo_before"]["MemTotal"] == result["meminfo_after"]["MemTotal"] > 0
    assert "MemAvailable" in result["meminfo_after"]
    # The decoys say "cmake ninja nvcc cc1plus" on their command lines and live on.
    for d in decoys:
        assert d.poll() is None
        info = proc_info(d.pid)
        assert info is not None and info["state"] not in ("Z", "X")
    # The shell that started ninja is no build tool: not a target; it finishes on its own.
    assert build.pid not in targets
    assert build.wait(timeout=20) == 0


def test_kill_by_names_spares_other_users(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    mine = cleanup.popen(fake.start_tool(fake_bin, UNIQUE, "1"))
    others = None
    if IS_ROOT and HAVE_NOBODY:
        others = cleanup.popen(fake.start_tool(fake_bin, UNIQUE, "1", user="nobody"))
        wait_rss(others.pid, 1)
    wait_rss(mine.pid, 1)
    # user null = the agent's own user.
    result = agent.call("kill", names=[UNIQUE], grace=1, settle=0)
    assert [(t["pid"], t["signal"], t["via"]) for t in result["targets"]] == [(mine.pid, "TERM", "name")]
    assert result["counts"] == {UNIQUE: 1}
    assert mine.wait(timeout=10) == -15
    if others is not None:
        assert [(s["pid"], s["reason"]) for s in result["skipped"]] == [(others.pid, "other_user")]
        assert others.poll() is None
        # Named explicitly (the agent is root), the other user's process is a target.
        result = agent.call("kill", names=[UNIQUE], user="nobody", grace=1, settle=0)
        assert [t["pid"] for t in result["targets"]] == [others.pid]
        assert others.wait(timeout=10) == -15


def test_kill_refuses_stale_identities(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    live = cleanup.popen(fake.start_tool(fake_bin, UNIQUE, "1"))
    gone = cleanup.popen(fake.start_tool(fake_bin, UNIQUE, "1"))
    wait_rss(live.pid, 1)
    wait_rss(gone.pid, 1)
    live_start, gone_start = start_of(live.pid), start_of(gone.pid)
    gone.kill()
    gone.wait()
    roots = [[live.pid, live_start + 1], [live.pid, live_start - 1], [gone.pid, gone_start]]
    result = agent.call("kill", roots=roots, settle=0)
    assert result["targets"] == [] and result["counts"] == {}
    assert result["stale_roots"] == roots
    assert alive(live.pid, live_start)
    status = agent.call("status", runs=[{"pid": live.pid, "start": live_start + 1}])["runs"]
    assert status[0]["alive"] is False
    # The right identity does stop it.
    result = agent.call("kill", roots=[[live.pid, live_start]], settle=0)
    assert [t["pid"] for t in result["targets"]] == [live.pid]
    assert live.wait(timeout=10) == -15


def test_kill_never_stops_the_agent_or_its_parents(start_agent: Callable[..., Agent], fake_bin: Path) -> None:
    # The agent under a shell that stays its parent: a root tree that holds the agent kills nothing.
    agent = start_agent(argv=["/bin/sh", "-c", '"$0" -u -c "$1"; exit $?', sys.executable, BOOTSTRAP])
    hello = agent.call("hello")
    assert hello["pid"] != agent.pid  # the shell did not exec: it is the agent's parent
    shell = (agent.pid, start_of(agent.pid))
    me = (hello["pid"], start_of(hello["pid"]))
    result = agent.call("kill", roots=[list(shell), list(me)], settle=0)
    assert result["targets"] == []
    assert {(s["pid"], s["reason"]) for s in result["skipped"]} == {(shell[0], "protected"), (me[0], "protected")}
    assert alive(*shell) and alive(*me)
    assert agent.call("ping")


def test_slow_kill_does_not_delay_snapshot(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    stubborn = cleanup.popen(fake.start_tool(fake_bin, UNIQUE2, "-T", "1"))
    wait_rss(stubborn.pid, 1)
    kill_id = agent.send("kill", names=[UNIQUE2], grace=2.0, timeout=20, settle=0)
    snap_id = agent.send("snapshot")
    ping_id = agent.send("ping")
    kill = agent.recv(kill_id)
    assert agent.recv(snap_id)["ok"] and agent.recv(ping_id)["ok"]
    assert kill["ok"] and kill["result"]["killed"] == 1 and kill["result"]["stop_elapsed"] >= 2.0
    order = agent.arrivals
    assert order.index(snap_id) < order.index(kill_id)
    assert order.index(ping_id) < order.index(kill_id)
    assert stubborn.wait(timeout=10) == -9


def test_kill_bad_requests(agent: Agent) -> None:
    assert agent.call_error("kill")["type"] == "bad_request"
    assert agent.call_error("kill", roots=[[1]])["type"] == "bad_request"
    assert agent.call_error("kill", roots="1", names=["x"])["type"] == "bad_request"
    assert agent.call_error("kill", names=["x"], user="no-such-user-rigops")["type"] == "unknown_user"
    assert agent.call_error("kill", names=["x"], grace=-1)["type"] == "bad_request"


def test_disk_measures_each_path_or_says_why_not(agent: Agent, tmp_path: Path) -> None:
    places = agent.call("disk", paths=[str(tmp_path), str(tmp_path / "a" / "b"), "/proc/self"])["places"]
    assert [p["at"] for p in places] == [str(tmp_path), str(tmp_path), "/proc/self"]
    assert [p["exists"] for p in places] == [True, False, True]
    assert places[0]["device"] == os.stat(tmp_path).st_dev and places[2]["mount"] == "/proc"
    assert all(p["total"] >= p["used"] >= 0 and p["free"] >= 0 for p in places)
    for bad in ([], "x", [""], [1], ["/a\0b"], ["/"] * 65):
        assert agent.call_error("disk", paths=bad)["type"] == "bad_request"
    assert agent.call_error("disk")["type"] == "bad_request"


@needs_nobody
def test_agent_without_root_cannot_stop_other_users(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip("no system python3 that nobody can run")
    agent = start_agent(argv=[python, "-u", "-c", BOOTSTRAP], user="nobody", group="nogroup", extra_groups=[], cwd="/")
    assert agent.call("hello")["user"] == "nobody"
    error = agent.call_error("kill", names=["cc1plus"], user="root")
    assert error["type"] == "forbidden"


# ---------------------------------------------------------------------------------------------------------
# spawn, status


def spawn(agent: Agent, cleanup: Cleanup, workdir: Path, command: str, **env: str) -> dict[str, Any]:
    result = agent.call(
        "spawn",
        workdir=str(workdir),
        command=command,
        env=env,
        log=str(workdir / "logs" / "build.log"),
        exit_file=str(workdir / "state" / "exit.json"),
    )
    cleanup.session(result["supervisor_pid"])
    return result


def wait_exit(agent: Agent, run: dict[str, Any]) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        status = agent.call("status", runs=[run])["runs"][0]
        return status if status["exit"] is not None else None

    result: dict[str, Any] = wait_until(ended, timeout=20, what="the exit file")
    return result


def soft_nofile(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open-files limit")


def test_spawn_runs_detached_with_env_and_records_exit(
    start_agent: Callable[..., Agent], tmp_path: Path, cleanup: Cleanup
) -> None:
    # The agent raises its own open-files limit (it keeps /proc fds open); the build gets the original.
    agent = start_agent(argv=["/bin/sh", "-c", 'ulimit -Sn 1000 && exec "$0" -u -c "$1"', sys.executable, BOOTSTRAP])
    assert agent.call("hello")["pid"] == agent.pid
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] > 1000:
        assert soft_nofile(agent.pid) > 1000
    command = (
        'echo "MAX_JOBS=$MAX_JOBS cwd=$(pwd) nofile=$(ulimit -n)"; '
        "echo to-stderr >&2; cat; echo stdin-was-empty; exit 3"
    )
    run = spawn(agent, cleanup, tmp_path, command, MAX_JOBS="20")
    assert set(run) == {"pid", "start", "supervisor_pid", "log", "exit_file", "started"}
    assert run["log"] == str(tmp_path / "logs" / "build.log")
    assert run["exit_file"] == str(tmp_path / "state" / "exit.json")
    assert run["started"] == pytest.approx(time.time(), abs=10)
    status = wait_exit(agent, run)
    assert status["exit"]["exit_status"] == 3
    assert status["exit"]["signal"] is None
    assert status["exit"]["pid"] == run["pid"]
    assert status["exit"]["ended"] >= run["started"]
    assert status["alive"] is False
    log = Path(run["log"]).read_text()
    assert f"MAX_JOBS=20 cwd={tmp_path} nofile=1000\n" in log
    assert "to-stderr\n" in log and "stdin-was-empty\n" in log
    assert status["log_size"] == len(log.encode())
    # The exit file is whole JSON with exactly the documented keys.
    assert set(json.loads(Path(run["exit_file"]).read_text())) == {"exit_status", "signal", "ended", "pid"}
    assert sorted(p.name for p in Path(run["exit_file"]).parent.iterdir()) == ["exit.json", "exit.json.start"]
    # The start record names the build for a caller that died before the spawn's answer.
    start_record = json.loads(Path(run["exit_file"] + ".start").read_text())
    assert start_record == {"pid": run["pid"], "start": run["start"], "supervisor_pid": run["supervisor_pid"]}

    # Again in the same place: the old log is truncated and the old exit file gone before the new run.
    run2 = spawn(agent, cleanup, tmp_path, "echo second; exit 0")
    status2 = wait_exit(agent, run2)
    assert status2["exit"]["exit_status"] == 0 and status2["exit"]["pid"] == run2["pid"]
    assert Path(run2["log"]).read_text() == "second\n"


def test_spawn_bad_workdir(agent: Agent, tmp_path: Path) -> None:
    error = agent.call_error(
        "spawn",
        workdir=str(tmp_path / "missing"),
        command="true",
        log=str(tmp_path / "l.log"),
        exit_file=str(tmp_path / "e.json"),
    )
    assert error["type"] == "bad_workdir"
    assert str(tmp_path / "missing") in error["message"]
    assert agent.call_error("spawn", workdir=str(tmp_path), log="x", exit_file="y")["type"] == "bad_request"
    nul = {"workdir": str(tmp_path), "log": "x.log", "exit_file": "y.json"}
    assert agent.call_error("spawn", command="echo \0", **nul)["type"] == "bad_request"
    assert agent.call_error("spawn", command="true", env={"A": 1}, **nul)["type"] == "bad_request"


def spawn_kept(agent: Agent, cleanup: Cleanup, workdir: Path, *, setup: dict[str, str], clean: bool = False,
               command: str = "ls build/rigops-b 2>/dev/null | sort | tr '\\n' ' '; echo") -> str:
    """Spawn ``command`` with the kept build directory build/rigops-b; the log once it has ended."""
    run = agent.call("spawn", workdir=str(workdir), command=command, env={}, log=str(workdir / "logs" / "b.log"),
                     exit_file=str(workdir / "state" / "exit.json"),
                     keep={"dir": "build/rigops-b", "setup": setup, "clean": clean,
                           "setup_file": str(workdir / "logs" / "b.setup.json")})
    cleanup.session(run["supervisor_pid"])
    assert wait_exit(agent, run)["exit"]["exit_status"] == 0
    return Path(run["log"]).read_text()


def test_spawn_keeps_the_build_directory_while_the_setup_holds_and_removes_it_when_asked_or_changed(
        agent: Agent, tmp_path: Path, cleanup: Cleanup) -> None:
    kept = tmp_path / "build" / "rigops-b"
    setup = {"command": "c1", "cache": "none", "CMAKE_ARGS": "a1"}
    assert spawn_kept(agent, cleanup, tmp_path, setup=setup) == "\n"  # nothing kept yet, nothing said
    assert json.loads((tmp_path / "logs" / "b.setup.json").read_text()) == setup
    (kept / "cp311").mkdir(parents=True)
    (kept / "cp311" / "a.o").write_text("object")
    # The same setup: the kept work stays, and the log says nothing of it.
    assert spawn_kept(agent, cleanup, tmp_path, setup=dict(setup)) == "cp311 \n"
    # Another CMAKE_ARGS: the objects were built another way; removed before the command runs, and said why.
    changed = {**setup, "CMAKE_ARGS": "a2", "CXX": "x"}
    log = spawn_kept(agent, cleanup, tmp_path, setup=changed)
    assert log == ("rigops: started clean: CMAKE_ARGS, CXX changed since the run that built it; the kept build "
                   "directory build/rigops-b was removed\n\n"), log
    assert json.loads((tmp_path / "logs" / "b.setup.json").read_text()) == changed
    # Asked for clean, the same setup: removed all the same.
    (kept / "cp311").mkdir(parents=True)
    log = spawn_kept(agent, cleanup, tmp_path, setup=changed, clean=True)
    assert log.startswith("rigops: started clean: a clean rebuild was asked for; the kept build directory "
                          "build/rigops-b was removed\n"), log
    assert log.endswith("\n\n")  # the command saw no kept directory
    # Asked for clean with nothing kept: it says so.
    log = spawn_kept(agent, cleanup, tmp_path, setup=changed, clean=True)
    assert log.startswith("rigops: started clean: a clean rebuild was asked for; nothing was kept in build/rigops-b")
    wait_until(lambda: not [p for p in (tmp_path / "build").iterdir() if p.name.startswith(".rigops-removed-")],
               timeout=10, what="the moved-aside directories deleted")


def test_spawn_never_removes_what_is_not_a_kept_directory(agent: Agent, tmp_path: Path, cleanup: Cleanup) -> None:
    elsewhere = tmp_path / "precious"
    (elsewhere / "cp311").mkdir(parents=True)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "rigops-b").symlink_to(elsewhere)
    base = {"workdir": str(tmp_path), "command": "true", "log": "l.log", "exit_file": "e.json"}
    keep = {"dir": "build/rigops-b", "setup": {}, "setup_file": "s.json", "clean": True}
    error = agent.call_error("spawn", **base, keep=keep)
    assert error["type"] == "bad_path" and "leaves it alone" in error["message"], error
    assert (elsewhere / "cp311").is_dir()
    for bad in ("../precious", "/tmp/x", "build/../../x", "", "build//x"):
        error = agent.call_error("spawn", **base, keep={**keep, "dir": bad})
        assert error["type"] == "bad_request", (bad, error)
    assert agent.call_error("spawn", **base, keep={**keep, "setup": {"a": 1}})["type"] == "bad_request"
    assert agent.call_error("spawn", **base, keep="build")["type"] == "bad_request"
    assert (elsewhere / "cp311").is_dir() and not (tmp_path / "l.log").exists()


def test_spawned_build_survives_the_agent_and_is_killed_by_root(
    start_agent: Callable[..., Agent], fake_bin: Path, tmp_path: Path, cleanup: Cleanup
) -> None:
    agent = start_agent()
    script = fake.fake_build_script(fake_bin, compilers=3, mb=16, driver_mb=2, stubborn=1)
    run = spawn(agent, cleanup, tmp_path, f'echo "MAX_JOBS=$MAX_JOBS"; {script}', MAX_JOBS="20")
    pid, start, supervisor = run["pid"], run["start"], run["supervisor_pid"]
    assert start == start_of(pid)
    procs = wait_build_ready(supervisor, 3, 16)
    # Fully detached: its own session (led by the supervisor), its own process group, stdin /dev/null.
    info = proc_info(pid)
    assert info is not None
    assert info["sid"] == supervisor != os.getsid(agent.pid) and info["sid"] != os.getsid(0)
    assert info["pgid"] == pid and info["ppid"] == supervisor
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    sup = proc_info(supervisor)
    assert sup is not None and sup["ppid"] == agent.pid
    status = agent.call("status", runs=[run])
    assert status["boot_id"] == agent.call("hello")["boot_id"]
    assert status["runs"][0]["alive"] is True and status["runs"][0]["exit"] is None

    # SIGKILL the agent: the build and its supervisor live on.
    agent.proc.kill()
    agent.proc.wait(timeout=10)
    assert alive(pid, start) and alive(supervisor, start_of(supervisor))
    assert all(alive(p["pid"], p["start"]) for p in procs)
    assert wait_until(lambda: "MAX_JOBS=20\n" in Path(run["log"]).read_text(), timeout=20, what="the log")

    # A new agent stops it by its (pid, start) root; the supervisor is no part of that tree.
    agent2 = start_agent()
    assert agent2.call("status", runs=[run])["runs"][0]["alive"] is True
    result = agent2.call("kill", roots=[[pid, start]], grace=0.5, timeout=20, settle=1)
    tree = {p["pid"] for p in procs if p["pid"] != supervisor}
    assert {t["pid"] for t in result["targets"]} == tree
    assert all(t["via"] == "tree" for t in result["targets"])
    assert result["counts"] == {"sh": 1, "ninja": 1, "cc1plus": 1, "nvcc": 1, "g++": 1}
    assert (result["killed"], result["termed"]) == (1, 4), result["targets"]
    assert not any(alive(p["pid"], p["start"]) for p in procs if p["pid"] != supervisor)
    status = wait_exit(agent2, run)
    assert status["exit"] == {"exit_status": None, "signal": 15, "ended": status["exit"]["ended"], "pid": pid}
    assert status["alive"] is False
    wait_until(lambda: not fake.session_members(supervisor), timeout=20,
               what="the supervisor to exit after writing the exit file")


def test_spawned_build_killed_with_sigkill_is_recorded(
    agent: Agent, fake_bin: Path, tmp_path: Path, cleanup: Cleanup
) -> None:
    run = spawn(agent, cleanup, tmp_path, f"exec {fake_bin}/ninja -T 1")
    wait_rss(run["pid"], 1, comm="ninja")
    result = agent.call("kill", roots=[[run["pid"], run["start"]]], grace=0.2, settle=0)
    assert [t["signal"] for t in result["targets"]] == ["KILL"]
    status = wait_exit(agent, run)
    assert status["exit"]["signal"] == 9 and status["exit"]["exit_status"] is None


def test_status_of_unknown_runs(agent: Agent, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    runs = [
        {"pid": os.getpid(), "start": start_of(os.getpid()), "exit_file": str(tmp_path / "none.json")},
        {"pid": os.getpid(), "start": start_of(os.getpid()) + 1, "log": str(tmp_path / "none.log")},
        {"pid": 2**22 + 1, "start": 1, "exit_file": str(tmp_path / "bad.json")},
    ]
    result = agent.call("status", runs=runs)
    assert [(r["alive"], r["exit"], r["log_size"]) for r in result["runs"]] == [
        (True, None, None),
        (False, None, None),
        (False, None, None),
    ]
    assert agent.call_error("status", runs=[{"pid": "x"}])["type"] == "bad_request"


# ---------------------------------------------------------------------------------------------------------
# tail


def test_tail_reads_only_the_end_of_a_large_file(agent: Agent, tmp_path: Path) -> None:
    path = tmp_path / "build.log"
    lines = [f"[{i}/150000] Building CXX object src/file_{i:06d}.cpp.o" for i in range(150_000)]
    path.write_text("\n".join(lines) + "\n")
    size = path.stat().st_size
    assert size > 5 * MIB
    result = agent.call("tail", path=str(path), lines=40)
    assert result["lines"] == lines[-40:]
    assert result["size"] == size
    assert result["truncated"] is False
    assert result["bytes_read"] <= 128 * 1024  # the end only, not the whole file
    assert agent.call("tail", path=str(path))["lines"] == lines[-40:]  # default 40
    many = agent.call("tail", path=str(path), lines=5000)
    assert many["lines"] == lines[-5000:] and many["bytes_read"] < size / 10
    # max_bytes cuts: fewer lines, the first possibly partial, and it says so.
    cut = agent.call("tail", path=str(path), lines=1000, max_bytes=1000)
    assert cut["truncated"] is True
    assert cut["bytes_read"] == 1000
    assert 1 <= len(cut["lines"]) < 1000
    assert cut["lines"][1:] == lines[-(len(cut["lines"]) - 1) :]
    assert lines[-len(cut["lines"])].endswith(cut["lines"][0])


def test_tail_edges(agent: Agent, tmp_path: Path) -> None:
    def tail(content: bytes, **args: Any) -> list[str]:
        path = tmp_path / "f.log"
        path.write_bytes(content)
        result: list[str] = agent.call("tail", path=str(path), **args)["lines"]
        return result

    assert tail(b"") == []
    assert tail(b"\n") == [""]
    assert tail(b"a\nb\nc", lines=2) == ["b", "c"]  # no newline at the end
    assert tail(b"a\nb\nc\n", lines=10) == ["a", "b", "c"]
    assert tail(b"a\n\n", lines=5) == ["a", ""]
    assert tail(b"a\r\nb\r\n", lines=5) == ["a", "b"]
    assert tail(b"a\nb\n", lines=0) == []
    assert tail("ü ok\n".encode() + b"bad \xff\xfe byte\n", lines=2) == ["ü ok", "bad \ufffd\ufffd byte"]
    # A block boundary (64 KiB) falling inside a line and inside a multi-byte character.
    long_line = "é" * 40_000
    assert tail(f"first\n{long_line}\nlast\n".encode(), lines=2) == [long_line, "last"]
    assert agent.call_error("tail", path=str(tmp_path / "missing.log"))["type"] == "not_found"
    assert agent.call_error("tail", path=str(tmp_path))["type"] == "not_a_file"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert agent.call_error("tail", path=str(fifo))["type"] == "not_a_file"  # and does not hang


# ---------------------------------------------------------------------------------------------------------
# gpu


def test_gpu_not_found(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(env={**os.environ, "PATH": str(tmp_path)})
    assert agent.call("gpu") == {"available": False, "reason": "nvidia-smi not found"}


def test_gpu_with_fake_nvidia_smi(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  --query-gpu=index,name,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw)\n"
        '    [ "$2" = --format=csv,noheader,nounits ] || exit 2\n'
        '    echo "0, NVIDIA A100-SXM4-80GB, GPU-aaaa, 97, 70000, 81920, 65, 300.12";;\n'
        "  --query-compute-apps=gpu_uuid,pid,process_name,used_memory)\n"
        '    echo "GPU-aaaa, 4242, python3, 69000";;\n'
        "  *) exit 2;;\n"
        "esac\n"
    )
    smi.chmod(0o755)
    agent = start_agent(env={**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert agent.call("gpu") == {
        "available": True,
        "gpus_csv": "0, NVIDIA A100-SXM4-80GB, GPU-aaaa, 97, 70000, 81920, 65, 300.12\n",
        "apps_csv": "GPU-aaaa, 4242, python3, 69000\n",
    }
    smi.write_text(
        '#!/bin/sh\necho "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver."\nexit 9\n'
    )
    result = agent.call("gpu")
    assert result["available"] is False
    assert "exited with 9" in result["reason"] and "NVIDIA driver" in result["reason"]


# ---------------------------------------------------------------------------------------------------------
# The protocol itself


def test_malformed_input_gets_errors_and_the_agent_keeps_serving(agent: Agent) -> None:
    agent.send_raw(b"not json\n")
    assert agent.recv(None)["error"]["type"] == "bad_json"
    agent.send_raw(b"\xff\xfe\n")
    assert agent.recv(None)["error"]["type"] == "bad_json"
    agent.send_raw(b"[1, 2]\n")
    assert agent.recv(None)["error"]["type"] == "bad_request"
    agent.send_raw(b"\n   \n")  # blank lines are no requests
    agent.send_raw(b'{"id": 7}\n')
    assert agent.recv(7)["error"]["type"] == "bad_request"
    agent.send_raw(b'{"id": 8, "op": "nope"}\n')
    error = agent.recv(8)
    assert error == {"id": 8, "ok": False, "error": error["error"]}
    assert error["error"]["type"] == "unknown_op"
    assert agent.call_error("snapshot", top="x")["type"] == "bad_request"
    assert agent.call_error("snapshot", user="no-such-user-rigops")["type"] == "unknown_user"
    assert agent.call_error("tail")["type"] == "bad_request"
    assert agent.call("ping")["time"] > 0
    assert agent.call("hello")["pid"] == agent.pid
    assert agent.arrivals.count(None) == 3


def test_eof_exits_zero_after_answering_requests_in_flight(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    stubborn = cleanup.popen(fake.start_tool(fake_bin, UNIQUE2, "-T", "1"))
    wait_rss(stubborn.pid, 1)
    kill_id = agent.send("kill", names=[UNIQUE2], grace=0.3, settle=0)
    agent.stdin.close()
    assert agent.proc.wait(timeout=30) == 0
    agent._reader.join(timeout=10)
    assert agent.recv(kill_id)["result"]["killed"] == 1


def test_eof_leaves_spawned_builds_running(agent: Agent, fake_bin: Path, tmp_path: Path, cleanup: Cleanup) -> None:
    run = spawn(agent, cleanup, tmp_path, f"exec {fake_bin}/cmake 1")
    wait_rss(run["pid"], 1, comm="cmake")
    assert agent.close() == 0
    assert alive(run["pid"], run["start"])


def test_runs_on_python38(start_agent: Callable[..., Agent], fake_bin: Path, tmp_path: Path, cleanup: Cleanup) -> None:
    candidates = sorted(Path.home().glob(".pyenv/versions/3.8*/bin/python3.8"))
    which = shutil.which("python3.8")
    python = str(candidates[-1]) if candidates else which
    if python is None:
        pytest.skip("no python3.8 on this machine")
    agent = start_agent(python=python)
    hello = agent.call("hello")
    assert hello["python"].startswith("3.8.")
    assert hello["pidfd"] is False  # the check-then-signal path
    assert agent.call("snapshot")["meminfo"]["MemTotal"] > 0
    run = spawn(agent, cleanup, tmp_path, f"echo hi; exec {fake_bin}/make -T 1")
    wait_rss(run["pid"], 1, comm="make")
    result = agent.call("kill", roots=[[run["pid"], run["start"]]], grace=0.2, settle=0.5)
    assert [(t["name"], t["signal"]) for t in result["targets"]] == [("make", "KILL")]
    assert wait_exit(agent, run)["exit"]["signal"] == 9
    assert agent.call("tail", path=run["log"], lines=1)["lines"] == ["hi"]
