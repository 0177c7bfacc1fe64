"""Every failure rigops expects, as one tree.

    RigopsError
    ├── ConfigError            the TOML is missing a key, has a wrong type, or names nothing
    ├── PlanError              chat text asks for something rigops refuses (bad -j, unknown host)
    ├── StateError             the SQLite state could not be read or written
    └── HostError              anything that went wrong talking to a host
        ├── HostUnreachable    connect refused, timed out, DNS, auth failed
        ├── HostKeyError       unknown or changed host key (never accepted)
        ├── HostTimeout        a request to the agent took longer than its timeout
        ├── AgentUnavailable   the agent could not start (no python3, crashed)
        └── ActionFailed       the agent ran the request and reported an error

Expected errors become a clear chat reply; their ``str()`` is written for people.
"""

from __future__ import annotations


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
    def __init__(self, message: str, *, host: str, op: str) -> None:
        super().__init__(message, host=host)
        self.op = op
