"""Reading a request's arguments: each helper checks one argument's type and range and raises AgentError
(bad_request) with what was wrong.
"""

from __future__ import annotations

import os
from typing import Any

from .procs import AgentError

# ---------------------------------------------------------------------------------------------------------
# Argument helpers


def arg_int(req: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = req.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int):
        raise AgentError("bad_request", f"{key} must be an integer")
    if not lo <= value <= hi:
        raise AgentError("bad_request", f"{key} must be between {lo} and {hi}")
    return value


def arg_float(req: dict[str, Any], key: str, default: float, lo: float, hi: float) -> float:
    value = req.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AgentError("bad_request", f"{key} must be a number")
    if not lo <= value <= hi:
        raise AgentError("bad_request", f"{key} must be between {lo:g} and {hi:g}")
    return float(value)


def arg_str(req: dict[str, Any], key: str) -> str:
    value = req.get(key)
    if value is None:
        raise AgentError("bad_request", f"{key} is required")
    if not isinstance(value, str) or not value:
        raise AgentError("bad_request", f"{key} must be a non-empty string")
    return value


def arg_opt_str(req: dict[str, Any], key: str) -> str | None:
    return None if req.get(key) is None else arg_str(req, key)


def arg_names(req: dict[str, Any], key: str, default: tuple[str, ...]) -> frozenset[str]:
    value = req.get(key)
    if value is None:
        return frozenset(default)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AgentError("bad_request", f"{key} must be a list of strings")
    return frozenset(value)


def arg_path(req: dict[str, Any], key: str, base: str | None = None) -> str:
    path = os.path.expanduser(arg_str(req, key))
    if base is not None and not os.path.isabs(path):
        path = os.path.join(base, path)
    return os.path.abspath(path)


def arg_identities(req: dict[str, Any], key: str) -> list[tuple[int, int]]:
    value = req.get(key) or []
    if not isinstance(value, list):
        raise AgentError("bad_request", f"{key} must be a list of [pid, start] pairs")
    return [arg_identity(v, key) for v in value]


def arg_identity(value: Any, what: str) -> tuple[int, int]:
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return int(value[0]), int(value[1])
    raise AgentError("bad_request", f"{what} must be [pid, start] pairs of integers")
