"""Small asyncio helpers rigops needs in more than one place."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)


async def cancel(task: asyncio.Task[Any] | None) -> None:
    """Cancel a task and wait until it is done. Unlike ``suppress(CancelledError): await task``, a cancellation
    of the caller itself still reaches the caller; the task's own failure is logged, not raised."""
    if task is None or task is asyncio.current_task():
        return
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled() and task.exception() is not None:
        log.error("task %s failed", task.get_name(), exc_info=task.exception())
