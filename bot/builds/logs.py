"""rigops' logs: lines for a person (the default), or one JSON object a line for Loki or Elasticsearch
(``--log-format json`` or ``RIGOPS_LOG_FORMAT=json``): time, level, logger, message and the ids of the request
being handled (channel, thread, user, plan, run) when there is one. Both forms go through the redaction Slack
posts go through, so a token, a key or a password in a message never reaches the log.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any, Literal

from bot.util.redact import redact

Format = Literal["text", "json"]
FORMATS: tuple[Format, ...] = ("text", "json")
IDS = ("channel", "thread", "user", "plan", "run")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_ids: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("rigops_log_ids", default={})  # noqa: B039


@contextlib.contextmanager
def ids(**values: str | int | None) -> Iterator[None]:
    """Within this block (and the tasks it starts), log records carry these ids."""
    merged = {**_ids.get(), **{k: str(v) for k, v in values.items() if k in IDS and v is not None}}
    token = _ids.set(merged)
    try:
        yield
    finally:
        _ids.reset(token)


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
            **_ids.get(),
        }
        if record.exc_info:
            out["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(out, ensure_ascii=False)


def setup(level: int, form: Format = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if form == "json" else RedactingFormatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
