"""Builds that ended because something stopped them, told apart from builds that failed.

A build interrupted with SIGINT or SIGTERM (by rigops, a person at a terminal, or another tool) did not fail:
it has no error to diagnose. The signal shows in how the build's shell ended (the signal, or exit 128+n), and
where a tool caught it and exited on its own terms, in the last lines of the log (ninja's "interrupted by
user", make's "Interrupt"). Pure: numbers and text in, a sentence's evidence out.
"""

from __future__ import annotations

import re
import signal

INTERRUPTS: dict[int, str] = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}
LAST_LINES = 40  # where in the log a build's tools say they were interrupted: at its very end
_INTERRUPTED = re.compile(
    r"interrupted by user"  # ninja: build stopped: interrupted by user.
    r"|\*\*\* \[[^\]]*\] (?:Interrupt|Terminated)\s*$"  # make: *** [Makefile:3: all] Interrupt
    r"|(?:Interrupt|Terminated) signal terminated program",  # gcc: a compiler stopped by the signal
    re.MULTILINE,
)


def interruption(*, exit_status: int | None, signal_number: int | None, log_tail: str = "") -> str | None:
    """How an ended build was stopped from outside: "SIGTERM" or "SIGINT" (its shell died of the signal, or
    exited 128 + it), or the line of the log's end that says the build was interrupted; None when nothing says
    it was stopped."""
    if signal_number in INTERRUPTS:
        return INTERRUPTS[signal_number]
    if exit_status is not None and exit_status - 128 in INTERRUPTS:
        return f"{INTERRUPTS[exit_status - 128]} (exit {exit_status})"
    lines = log_tail.splitlines()[-LAST_LINES:]
    found = _INTERRUPTED.search("\n".join(lines))
    if found is None:
        return None
    start = found.string.rfind("\n", 0, found.start()) + 1
    end = found.string.find("\n", found.end())
    return found.string[start:end if end >= 0 else None].strip()
