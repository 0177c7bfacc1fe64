"""A host, reached through the rigops agent: one long-lived process speaking JSON lines.

Subclasses say how to start the agent (a local subprocess, or one SSH channel); this class keeps it running,
matches answers to requests, restarts it when its channel dies, and turns answers into dataclasses.

Each running agent has two tasks, its pipe's: one reads answers, one drains stderr. Neither ever ends with an
exception; they end when the channel does (the reader then lets the pipe go) or when ``_drop`` cancels them,
and ``close`` waits for what is left of them.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import time
import zlib
from abc import ABC, abstractmethod
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, cast

from bot.config import HostConfig
from bot.hosts.models import (
    AgentInfo,
    GpuReport,
    KeptDir,
    KillResult,
    LogChunk,
    ProcId,
    RunRef,
    RunStatus,
    Sample,
    Signalled,
    Snapshot,
    Spawned,
    Tail,
)
from bot.util.aio import cancel
from bot.util.errors import AGENT_ERROR_CODES, ActionFailed, AgentErrorCode, AgentUnavailable, HostError, HostTimeout

log = logging.getLogger(__name__)
HELLO_TIMEOUT = 15.0
KILL_SLACK = 10.0  # beyond grace + timeout + settle
STDERR_WAIT = 2.0  # how long a dying agent gets to finish what it says on stderr
CLOSE_WAIT = 10.0  # how long close() waits for broken channels to be let go


# The bootstrap: the agent's modules as one JSON object {module name: source}, compressed, and an importer that
# serves them as the package rigops_agent (sources kept for tracebacks); then the protocol loop, given the
# build supervisor's source. Python >= 3.8, stdlib only, like the agent.
_BOOTSTRAP = """import base64,json,linecache,sys,zlib
from importlib.util import spec_from_loader
M=json.loads(zlib.decompress(base64.b64decode('{packed}')))
class L:
 @classmethod
 def find_spec(c,n,p=None,t=None):return spec_from_loader(n,c,is_package=n=='rigops_agent') if n in M else None
 @staticmethod
 def create_module(s):return None
 @staticmethod
 def exec_module(m):
  f='<'+m.__name__+'>';linecache.cache[f]=(len(M[m.__name__]),None,M[m.__name__].splitlines(True),f)
  exec(compile(M[m.__name__],f,'exec'),m.__dict__)
sys.meta_path.insert(0,L)
import rigops_agent.server
rigops_agent.server.main(M['rigops_agent.supervisor'])"""
AGENT_PACKAGE = "rigops_agent"  # the name the agent's modules run under on a host


@cache
def agent_bootstrap() -> str:
    """A ``python -c`` program that carries the agent package (``bot/hosts/agent/``) and the build supervisor it
    writes to a file and runs, and starts the agent; built from our own files, never from chat."""
    return _BOOTSTRAP.replace("{packed}", _packed(agent_sources()))


def agent_sources() -> dict[str, str]:
    """The agent package's modules by the names they run under on a host: ``rigops_agent``,
    ``rigops_agent.server``, ..."""
    sources = {}
    for entry in sorted(resources.files("bot.hosts.agent").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".py"):
            module = entry.name.removesuffix(".py")
            name = AGENT_PACKAGE if module == "__init__" else f"{AGENT_PACKAGE}.{module}"
            sources[name] = entry.read_text(encoding="utf-8")
    return sources


def _packed(sources: dict[str, str]) -> str:
    return base64.b64encode(zlib.compress(json.dumps(sources, sort_keys=True).encode("utf-8"), 9)).decode("ascii")


STDERR_KEEP = 16 * 1024  # the end of what the agent said on stderr, for error messages


@dataclass
class AgentPipe:
    """The transport to one running agent (whatever the subclass opened), the requests waiting for its
    answers, and the two tasks that read it."""

    writer: Any  # has write(bytes)
    reader: Any  # has async readline() -> bytes
    errors: Any  # has async read(n) -> bytes; always drained, or a chatty agent would block
    handle: Any  # closed by the subclass
    stderr: bytearray = field(default_factory=bytearray)
    pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    answers: asyncio.Task[None] | None = None  # reads the answers
    drain: asyncio.Task[None] | None = None  # drains stderr

    async def drain_errors(self, host: str) -> None:
        """Keep the end of stderr until it ends; a broken channel ends it too (the reader says so)."""
        try:
            while chunk := await self.errors.read(4096):
                self.stderr += chunk
                del self.stderr[:-STDERR_KEEP]
        except Exception as exc:
            log.debug("stderr of the agent on %s ended: %r", host, exc)

    async def stderr_text(self) -> str:
        """What the agent said on stderr; waits briefly for a dying agent to finish saying it."""
        if self.drain is not None:
            await asyncio.wait({self.drain}, timeout=STDERR_WAIT)
        return self.stderr.decode(errors="replace")

    async def end_drain(self, *, wait: float) -> None:
        """Give stderr ``wait`` seconds to end by itself, then stop draining it."""
        if self.drain is not None:
            await asyncio.wait({self.drain}, timeout=wait)
            await cancel(self.drain)

    def fail_pending(self, host: str) -> None:
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(AgentUnavailable("the agent's channel closed", host=host))
        self.pending.clear()


class Host(ABC):
    """One configured host. Safe to share between tasks; requests run concurrently."""

    def __init__(self, config: HostConfig) -> None:
        self.config = config
        self.name = config.name
        self._pipe: AgentPipe | None = None
        self._info: AgentInfo | None = None
        self._ids = itertools.count(1)
        self._start_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()  # every pipe's, until done
        self.last_used = time.monotonic()
        self.reachable: bool | None = None  # did its last request reach the agent (None: none was sent yet)

    # -- transport, per subclass --------------------------------------------------------------
    @abstractmethod
    async def _open_agent(self) -> AgentPipe:
        """Start the agent and return its pipe. Raises HostError."""

    @abstractmethod
    async def _close_agent(self, pipe: AgentPipe) -> None:
        """Close the agent's channel."""

    async def _close_transport(self) -> None:  # noqa: B027 - only SSH has something below the agent
        """Close whatever is below the agent (an SSH connection)."""

    # -- the agent session --------------------------------------------------------------------
    async def info(self) -> AgentInfo:
        await self._ensure_agent()
        assert self._info is not None
        return self._info

    async def _ensure_agent(self) -> AgentPipe:
        async with self._start_lock:
            if self._pipe is not None:
                return self._pipe
            pipe = await self._open_agent()
            pipe.drain = self._start_task(pipe.drain_errors(self.name), f"agent-stderr-{self.name}")
            pipe.answers = self._start_task(self._read_answers(pipe), f"agent-reader-{self.name}")
            self._pipe = pipe
            try:
                hello = await self._send(pipe, "hello", {}, timeout=HELLO_TIMEOUT)
            except HostError:
                stderr = await pipe.stderr_text()
                await self._drop(pipe)
                raise AgentUnavailable(_agent_start_problem(stderr, self.config.python), host=self.name,
                                       stderr=stderr) from None
            self._info = AgentInfo.from_json(hello)
            return pipe

    def _start_task(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _read_answers(self, pipe: AgentPipe) -> None:
        """Hand each answer to its request until the channel ends; then let the pipe go."""
        try:
            while line := await pipe.reader.readline():
                self._answer(pipe, line)
            log.info("the agent on %s closed its channel", self.name)
        except Exception as exc:  # the channel broke: every waiter gets told below
            log.info("agent channel to %s broke: %s", self.name, exc)
        finally:
            if self._pipe is pipe:
                self._pipe = None
            pipe.fail_pending(self.name)
        # Only when the channel ended by itself (_drop cancels this task): close what is left of it.
        with contextlib.suppress(Exception):
            await self._close_agent(pipe)
        await pipe.end_drain(wait=STDERR_WAIT)

    def _answer(self, pipe: AgentPipe, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            log.warning("agent on %s said something that is not JSON: %r", self.name, line[:200])
            return
        msg_id = msg.get("id") if isinstance(msg, dict) else None
        fut = pipe.pending.pop(msg_id, None) if isinstance(msg_id, int) else None
        if fut is not None and not fut.done():
            fut.set_result(msg)

    async def _send(self, pipe: AgentPipe, op: str, args: Mapping[str, Any], *, timeout: float) -> dict[str, Any]:
        req_id = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        pipe.pending[req_id] = fut
        try:
            pipe.writer.write(json.dumps({"id": req_id, "op": op, **args}).encode() + b"\n")
            # asyncio.timeout, not wait_for: 3.11's wait_for drops a cancellation that meets the answer
            async with asyncio.timeout(timeout):
                msg = await fut
        except TimeoutError:
            raise HostTimeout(f"no answer to {op} within {timeout:g} s", host=self.name, op=op,
                              timeout=timeout) from None
        except (OSError, BrokenPipeError) as exc:
            raise AgentUnavailable(f"cannot write to the agent: {exc}", host=self.name) from exc
        finally:
            pipe.pending.pop(req_id, None)
        if not msg.get("ok"):
            err = msg.get("error")
            err = err if isinstance(err, dict) else {}
            raise ActionFailed(str(err.get("message") or "the agent reported an error"), host=self.name, op=op,
                               code=_error_code(err.get("type")))
        result = msg.get("result")
        return result if isinstance(result, dict) else {}

    async def request(self, op: str, args: Mapping[str, Any] | None = None, *,
                      timeout: float | None = None) -> dict[str, Any]:
        """Send one request; restarts a dead agent once. Raises HostError."""
        timeout = timeout or self.config.command_timeout
        self.last_used = time.monotonic()
        for attempt in (1, 2):
            try:
                pipe = await self._ensure_agent()
            except HostError:
                self.reachable = False
                raise
            try:
                answer = await self._send(pipe, op, args or {}, timeout=timeout)
                self.reachable = True
                return answer
            except HostTimeout:
                self.reachable = False
                await self._drop(pipe)  # a hung agent (or link) would hang every later request too
                await self._close_transport()
                raise
            except AgentUnavailable:
                if attempt == 2 or op in ("kill", "spawn"):  # never repeat an action that may have run
                    self.reachable = False
                    raise
                log.info("agent on %s went away; starting it again", self.name)
            except HostError:
                self.reachable = True  # the agent answered, with an error of the request's own
                raise
        raise AssertionError("unreachable")

    async def _drop(self, pipe: AgentPipe) -> None:
        """Stop using an agent: its waiting requests fail, its channel is closed, its tasks are done."""
        if self._pipe is pipe:
            self._pipe = None
        await cancel(pipe.answers)
        with contextlib.suppress(Exception):
            await self._close_agent(pipe)
        await pipe.end_drain(wait=0)

    @property
    def connected(self) -> bool:
        return self._pipe is not None

    async def close(self) -> None:
        if self._pipe is not None:
            await self._drop(self._pipe)
        if self._tasks:  # readers still letting a broken channel go
            await asyncio.wait(set(self._tasks), timeout=CLOSE_WAIT)
        for task in list(self._tasks):
            await cancel(task)
        await self._close_transport()

    # -- typed operations ---------------------------------------------------------------------
    async def snapshot(self, *, user: str | None = None, top: int = 5, roots: Sequence[ProcId] = ()) -> Snapshot:
        """Memory and the build tools running; each tool in the tree of one of ``roots`` says which
        (``Proc.root``)."""
        info = await self.info()
        d = await self.request("snapshot", {"user": user, "top": top, "roots": [list(r) for r in roots]})
        return Snapshot.from_json(self.name, d, used_formula=info.used_formula)

    async def kill(self, *, roots: Sequence[ProcId], user: str | None, names: Sequence[str] = (),
                   fallback_names: Sequence[str] = (), spare: Sequence[ProcId] = (), grace: float | None = None,
                   timeout: float = 30.0, settle: float = 5.0) -> KillResult:
        """Stop the process trees of ``roots`` (with the memory cgroups the build moved into), the processes
        named ``names``, and those named ``fallback_names`` when no root is alive (e.g. BUILD_TOOL_NAMES for a
        build rigops did not start); all of ``user``'s, never a process in the tree of a ``spare`` root (another
        build). Waits until memory settles. Raises HostError."""
        info = await self.info()
        grace = self.config.kill_grace if grace is None else grace
        args: dict[str, Any] = {"roots": [list(r) for r in roots], "user": user, "grace": grace,
                                "timeout": timeout, "settle": settle, "names": list(names),
                                "fallback_names": list(fallback_names), "spare": [list(r) for r in spare]}
        d = await self.request("kill", args, timeout=grace + timeout + settle + KILL_SLACK)
        return KillResult.from_json(self.name, d, used_formula=info.used_formula)

    async def spawn(self, *, workdir: str, command: str, env: Mapping[str, str], log_path: str,
                    exit_file: str, keep: KeptDir | None = None) -> Spawned:
        """Start ``command`` detached; ``keep``: the build directory kept between runs, removed first when asked
        to or when the setup it was built with changed (the log then opens with why)."""
        args: dict[str, Any] = {"workdir": workdir, "command": command, "env": dict(env), "log": log_path,
                                "exit_file": exit_file}
        if keep is not None:
            args["keep"] = {"dir": keep.dir, "setup": dict(keep.setup), "setup_file": keep.setup_file,
                            "clean": keep.clean}
        d = await self.request("spawn", args)
        return Spawned.from_json(d)

    async def started(self, *, workdir: str, log_path: str, exit_file: str) -> Spawned | None:
        """What a spawn of (log_path, exit_file) started, from the supervisor's start record; None when it
        started nothing. For a caller that did not hear the spawn's answer. Raises HostError, also when the
        record is there but cannot be read."""
        record = exit_file if exit_file.startswith(("/", "~")) else f"{workdir.rstrip('/')}/{exit_file}"
        try:
            d = await self.request("read", {"path": f"{record}.start", "offset": 0, "max_bytes": 4096})
        except ActionFailed as exc:
            if exc.code == "not_found":
                return None  # no start record: the supervisor never got that far
            raise
        try:
            rec = json.loads(str(d.get("data") or "null"))
            return Spawned(pid=int(rec["pid"]), start=int(rec["start"]), supervisor_pid=int(rec["supervisor_pid"]),
                           log=log_path, exit_file=exit_file, started=0.0)
        except (ValueError, TypeError, KeyError):
            return None

    async def run_status(self, runs: Sequence[RunRef]) -> tuple[list[RunStatus], str]:
        """The status of each run, in order, and the host's current boot id."""
        d = await self.request("status", {"runs": [{"pid": p, "start": s, "exit_file": e, "log": lg}
                                                   for p, s, e, lg in runs]})
        return [RunStatus.from_json(r) for r in d.get("runs", ())], str(d.get("boot_id", ""))

    async def tail(self, path: str, *, lines: int) -> Tail:
        d = await self.request("tail", {"path": path, "lines": lines})
        return Tail(path=path, lines=tuple(str(x) for x in d.get("lines", ())), size=int(d.get("size") or 0),
                    truncated=bool(d.get("truncated")))

    async def read(self, path: str, *, offset: int, max_bytes: int = 1 << 20) -> LogChunk:
        """The log's text from ``offset`` on, up to ``max_bytes``; costs the new bytes, not the file."""
        d = await self.request("read", {"path": path, "offset": offset, "max_bytes": max_bytes})
        return LogChunk(data=str(d.get("data", "")), offset=int(d.get("offset") or 0), size=int(d.get("size") or 0))

    async def gpu(self) -> GpuReport:
        from bot.hosts.gpu import parse_gpu_report  # parsing lives with its canned-text tests

        d = await self.request("gpu")
        return parse_gpu_report(self.name, d)

    async def sample(self, *, roots: Sequence[ProcId] = (), user: str | None = None, spare: Sequence[ProcId] = (),
                     cgroup: bool = True, top: int = 5) -> Sample:
        """Memory, pressure, the build's tools by class and new OOM kills; cheap enough for once a second.

        ``roots`` are the roots of the build's process trees, ``user`` the build user (their compilers count
        too, except those in the tree of a ``spare`` root: other builds', counted apart in ``Sample.others``);
        ``top``: how many of the heaviest compilers to list. The agent keeps per-build state (peaks, kernel log
        position) keyed by roots and user: one caller per build."""
        d = await self.request("sample", {"roots": [list(r) for r in roots], "user": user, "cgroup": cgroup,
                                          "top": top, "spare": [list(r) for r in spare]})
        return Sample.from_json(self.name, d)

    async def pause(self, targets: Sequence[ProcId], *, user: str | None = None) -> Signalled:
        """SIGSTOP each target owned by ``user`` (default: the agent's), never protected ones."""
        d = await self.request("pause", {"targets": [list(t) for t in targets], "user": user})
        return Signalled.from_json(d)

    async def resume(self, targets: Sequence[ProcId], *, user: str | None = None) -> Signalled:
        """SIGCONT each target, with the same identity rules as :meth:`pause`."""
        d = await self.request("resume", {"targets": [list(t) for t in targets], "user": user})
        return Signalled.from_json(d)


def _error_code(value: object) -> AgentErrorCode:
    """The code of an agent's error answer; "internal" for anything the agent should not have said."""
    return cast(AgentErrorCode, value) if value in AGENT_ERROR_CODES else "internal"


def _agent_start_problem(stderr: str, python: str) -> str:
    text = stderr.strip()
    if "not found" in text or "No such file" in text:
        return f"cannot start the rigops agent: {python!r} is not installed on the host (rigops needs python3)"
    tail = text.splitlines()[-1] if text else "it exited without a word"
    return f"cannot start the rigops agent: {tail}"
