"""Telling a build that was stopped (SIGINT/SIGTERM) from one that failed: the signal, the shell's 128+n, and
what real tools print at the end of the log when they are interrupted."""

from __future__ import annotations

import pytest

from bot.builds.stops import interruption

NINJA = """[12/40] Building CXX object CMakeFiles/x.dir/a.cu.o
ninja: build stopped: interrupted by user.
"""
MAKE = """sleep 600
make: *** [Makefile:2: all] Interrupt
"""
MAKE_TERM = "make[1]: *** [CMakeFiles/x.dir/build.make:76: a.o] Terminated\n"
GCC = "g++: internal compiler error: Terminated signal terminated program cc1plus\n"
FAILED = """FAILED: CMakeFiles/x.dir/a.cpp.o
a.cpp:1:10: fatal error: numa.h: No such file or directory
ninja: build stopped: subcommand failed.
"""
OOM = "g++: fatal error: Killed signal terminated program cc1plus\nninja: build stopped: subcommand failed.\n"


@pytest.mark.parametrize(("exit_status", "signal_number", "log", "expected"), [
    (None, 15, "", "SIGTERM"),
    (None, 2, NINJA, "SIGINT"),
    (143, None, "", "SIGTERM (exit 143)"),
    (130, None, "", "SIGINT (exit 130)"),
    (2, None, NINJA, "ninja: build stopped: interrupted by user."),
    (2, None, MAKE, "make: *** [Makefile:2: all] Interrupt"),
    (2, None, MAKE_TERM, "make[1]: *** [CMakeFiles/x.dir/build.make:76: a.o] Terminated"),
    (1, None, GCC, "g++: internal compiler error: Terminated signal terminated program cc1plus"),
])
def test_a_stop_is_told_by_its_signal_or_its_log(exit_status: int | None, signal_number: int | None, log: str,
                                                 expected: str) -> None:
    assert interruption(exit_status=exit_status, signal_number=signal_number, log_tail=log) == expected


@pytest.mark.parametrize(("exit_status", "signal_number", "log"), [
    (1, None, FAILED),
    (1, None, OOM),  # SIGKILL from the OOM killer is a failure to diagnose, not a stop
    (None, 9, ""),
    (137, None, ""),
    (2, None, NINJA + "\n".join(f"[{i}/40] later output" for i in range(60))),  # not at the end: not the end
])
def test_a_failure_is_not_a_stop(exit_status: int | None, signal_number: int | None, log: str) -> None:
    assert interruption(exit_status=exit_status, signal_number=signal_number, log_tail=log) is None
