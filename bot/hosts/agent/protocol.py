"""What the bot and the agent agree on, besides the ops themselves: the agent's version, the error types
of its answers, and the tool names it tells build processes by. The bot imports this module
(``bot.hosts.agent.protocol``); the agent's other modules import it too.
"""

from __future__ import annotations

AGENT_VERSION = 1

# The "type" of an error answer; the bot's AgentErrorCode (bot/util/errors.py) lists the same.
ERROR_CODES = (
    "bad_json", "bad_request", "unknown_op", "unknown_user", "forbidden", "bad_workdir", "bad_path",
    "spawn_failed", "not_found", "not_a_file", "unreadable", "internal",
)  # fmt: skip

# Tool names a snapshot reports as build processes when the request names none.
BUILD_TOOL_NAMES: tuple[str, ...] = (
    "cmake",
    "ninja",
    "make",
    "gmake",
    "cc1",
    "cc1plus",
    "c++",
    "g++",
    "gcc",
    "cc",
    "clang",
    "clang++",
    "nvcc",
    "cicc",
    "ptxas",
    "cudafe++",
    "fatbinary",
    "nvlink",
    "ld",
    "ld.gold",
    "ld.lld",
    "collect2",
    "as",
)


# ---------------------------------------------------------------------------------------------------------
# sample: memory, pressure, the build's tools by class, OOM kills (one call a second, so it must stay cheap)

DRIVER_NAMES = ("ninja", "make", "gmake", "cmake")
COMPILER_NAMES = (
    "cc1", "cc1plus", "cc", "gcc", "g++", "c++", "clang", "clang++",
    "nvcc", "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink",
)  # fmt: skip
LINKER_NAMES = ("ld", "ld.gold", "ld.lld", "collect2")
TOOL_CLASS: dict[str, str] = {
    **{n: "driver" for n in DRIVER_NAMES},
    **{n: "compiler" for n in COMPILER_NAMES},
    **{n: "linker" for n in LINKER_NAMES},
}
