"""Structured logs: one JSON object a line, with the request's ids, and never a secret."""

from __future__ import annotations

import asyncio
import io
import json
import logging

from bot.builds import logs


def capture(form: logs.Format) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logs.JsonFormatter() if form == "json" else logs.RedactingFormatter(logs.TEXT_FORMAT))
    logger = logging.getLogger(f"rigops-test-{form}")
    logger.handlers = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger, out


def test_a_json_line_carries_the_request_s_ids_and_no_secret() -> None:
    logger, out = capture("json")
    with logs.ids(channel="C0OPS", thread="1700000000.000100", user="U0HUMAN", plan=7, run=None):
        logger.info("posting with token %s", "xoxb-1234567890-abcdefghij")
    logger.warning("outside a request")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["level"] == "info" and first["logger"] == "rigops-test-json"
    assert {k: first[k] for k in ("channel", "thread", "user", "plan")} == {
        "channel": "C0OPS", "thread": "1700000000.000100", "user": "U0HUMAN", "plan": "7"}
    assert "run" not in first and "xoxb" not in first["message"] and "[redacted]" in first["message"]
    assert first["time"].endswith("Z") and "channel" not in second


def test_the_ids_follow_the_tasks_a_request_starts() -> None:
    logger, out = capture("json")

    async def main() -> None:
        with logs.ids(run=42):
            task = asyncio.create_task(asyncio.sleep(0))
            logger.info("in the request")
        await task
        with logs.ids(run=42):
            async def child() -> None:
                logger.info("in a task it started")
            started = asyncio.create_task(child())
        await started

    asyncio.run(main())
    assert [json.loads(line)["run"] for line in out.getvalue().splitlines()] == ["42", "42"]


def test_text_lines_are_redacted_too() -> None:
    logger, out = capture("text")
    logger.error("state url postgresql://rigops:hunter2@db:5432/rigops failed")
    assert "hunter2" not in out.getvalue() and "[redacted]" in out.getvalue()
