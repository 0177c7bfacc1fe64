"""Every failure rigops expects, as one tree.

    RigopsError
    ├── ConfigError            the TOML is missing a key, has a wrong type, or names nothing
    ├── PlanError              chat text asks for something rigops refuses (bad -j, unknown host)
    ├── StateError             the state (SQLite or PostgreSQL) could not be read or written
    └── HostError              anything that went wrong talking to a host
        ├── HostUnreachable    connect refused, timed out, DNS, auth failed
        ├── HostKeyError       unknown or changed host key (never accepted)
        ├── HostTimeout        a request to the agent took longer than its timeout
        ├── AgentUnavailable   the agent could not start (no python3, crashed)
        └── ActionFailed       the agent ran the request and reported an error; ``code`` says which:
                bad_json        the request line was not JSON (a bot bug)
                bad_request     an argument is missing or malformed (a bot bug)
                unknown_op      the agent has no such operation (a bot bug)
                unknown_user    the request names a user the host does not have
                forbidden       the agent's user may not do that (signal another user's processes)
                bad_workdir     spawn: the workdir is missing or not accessible
                bad_path        spawn: the log or exit file cannot be created
                spawn_failed    spawn: the build supervisor could not start the command
                not_found       tail, read: no such file
                not_a_file      tail, read: a directory, FIFO or device
                unreadable      tail, read: the file exists but cannot be opened
                internal        the agent failed unexpectedly (its stderr has the traceback); an op may
                                have been half done

Expected errors become a clear chat reply; their ``str()`` is written for people.
"""

from __future__ import annotations

from typing import Literal, get_args

# What the agent says went wrong (the "type" of its error answers): bot/hosts/agent/protocol.py's ERROR_CODES, which
# runs on hosts and cannot import this (tests/hosts/test_agent.py checks that the two lists agree).
AgentErrorCode = Literal["bad_json", "bad_request", "unknown_op", "unknown_user", "forbidden", "bad_workdir",
                         "bad_path", "spawn_failed", "not_found", "not_a_file", "unreadable", "internal"]
AGENT_ERROR_CODES: frozenset[str] = frozenset(get_args(AgentErrorCode))


class RigopsError(Exception):
    """Root of every error rigops raises on purpose."""


class ConfigError(RigopsError):
    def __init__(self, message: str, *, path: str | None = None, key: str | None = None) -> None:
        where = ", ".join(p for p in (path, f"key {key!r}" if key else None) if p)
        super().__init__(f"{where}: {message}" if where else message)
        self.path = path
        self.key = key


class PlanError(RigopsError):
    """Chat text that rigops understood but refuses."""


class StateError(RigopsError):
    """The state database failed."""


class HostError(RigopsError):
    def __init__(self, message: str, *, host: str) -> None:
        super().__init__(f"{host}: {message}")
        self.host = host
        self.reason = message


class HostUnreachable(HostError):
    pass


class HostKeyError(HostError):
    pass


class HostTimeout(HostError):
    def __init__(self, message: str, *, host: str, op: str, timeout: float) -> None:
        super().__init__(message, host=host)
        self.op = op
        self.timeout = timeout


class AgentUnavailable(HostError):
    def __init__(self, message: str, *, host: str, stderr: str = "") -> None:
        super().__init__(message, host=host)
        self.stderr = stderr


class ActionFailed(HostError):
    def __init__(self, message: str, *, host: str, op: str, code: AgentErrorCode) -> None:
        super().__init__(message, host=host)
        self.op = op
        self.code = code
