"""Following a growing build log: the cost of reading what was appended, through the agent, is the new bytes,
not the file. Measured at the end of a 1 MiB and a 256 MiB log, against re-reading the whole file each time.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from bench.common import median, ms
from tests.fakes.hosts import local_config

APPEND = 64 * 1024  # what a busy build writes between two polls
ROUNDS = 30
LINE = b"[1234/5678] Building CUDA object csrc/CMakeFiles/kernels.dir/attention/flash_fwd_sm120.cu.o\n"


async def follow_cost(path: Path) -> float:
    from bot.hosts import make_host

    host = make_host(local_config())
    try:
        offset = path.stat().st_size
        times = []
        chunk = LINE * (APPEND // len(LINE))
        for _ in range(ROUNDS):
            with path.open("ab") as f:
                f.write(chunk)
            began = time.perf_counter()
            got = await host.read(str(path), offset=offset, max_bytes=4 << 20)
            times.append(time.perf_counter() - began)
            assert got.offset - offset == len(chunk), (got.offset, offset)
            offset = got.offset
        return median(times)
    finally:
        await host.close()


def whole_file_cost(path: Path) -> float:
    times = []
    for _ in range(5):
        began = time.perf_counter()
        path.read_bytes().decode("utf-8", "replace")
        times.append(time.perf_counter() - began)
    return median(times)


def main() -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="rigops-bench-tail-"))
    small, big = folder / "small.log", folder / "big.log"
    small.write_bytes(LINE * ((1 << 20) // len(LINE)))
    block = LINE * ((8 << 20) // len(LINE))
    with big.open("wb") as f:
        for _ in range(32):
            f.write(block)
    small_cost = asyncio.run(follow_cost(small))
    big_cost = asyncio.run(follow_cost(big))
    whole = whole_file_cost(big)
    for p in (small, big):
        p.unlink()
    folder.rmdir()
    print(f"new 64 KiB of a 1 MiB log: {ms(small_cost)}; of a 256 MiB log: {ms(big_cost)} "
          f"(ratio {big_cost / small_cost:.2f}: the file's size does not matter)")
    print(f"re-reading the whole 256 MiB log instead: {ms(whole)}")
    print(f"ratio: following reads {whole / big_cost:.0f}x less time than re-reading")
    return {"tail_small": small_cost, "tail_big": big_cost, "whole": whole}


if __name__ == "__main__":
    main()
