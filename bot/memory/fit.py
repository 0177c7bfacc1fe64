"""How many compile jobs fit in memory: the one formula behind the -j the advisor recommends before a build
(from its past runs' peaks) and the -j a pressure alert suggests during one (from what its jobs reach now).

jobs = (total × (1 − reserve) − what else holds memory there) // one job's memory. The reserve is the host's
``memory_reserve`` (config), :data:`bot.config.DEFAULT_MEMORY_RESERVE` unless it says.
"""

from __future__ import annotations

from bot.config import DEFAULT_MEMORY_RESERVE


def usable(total: int, *, reserve: float = DEFAULT_MEMORY_RESERVE, held: int = 0) -> int:
    """The memory jobs may use in ``total`` bytes: less the reserve and ``held`` (what else holds memory there:
    other builds, or whatever is not the build's compilers), never below 0."""
    return max(0, int(total * (1.0 - reserve)) - held)


def jobs_fitting(room: int, per_job: int) -> int:
    """How many jobs of ``per_job`` bytes fit in ``room`` usable bytes (0: not even one)."""
    return room // per_job if per_job > 0 else 0
