"""GPU data from nvidia-smi CSV (``--format=csv,noheader,nounits``), as the agent returns it raw."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from bot.hosts.models import Gpu, GpuReport

MISSING = ("[N/A]", "[Not Supported]", "[Not Found]", "[Unknown Error]", "N/A", "")


def _field(value: str) -> str:
    value = value.strip()
    return "n/a" if value in MISSING else value


def _rows(text: str) -> list[list[str]]:
    return [row for row in csv.reader(io.StringIO(text), skipinitialspace=True) if row]


def parse_gpu_report(host: str, d: Mapping[str, Any]) -> GpuReport:
    """Turn the agent's gpu answer into a GpuReport; unparseable rows are skipped."""
    if not d.get("available"):
        return GpuReport(host=host, available=False, reason=str(d.get("reason", "no nvidia-smi")))
    apps: dict[str, list[str]] = {}
    for row in _rows(str(d.get("apps_csv", ""))):
        if len(row) >= 4:
            used = _field(row[3])
            memory = f", {used} MiB" if used != "n/a" else ""
            apps.setdefault(row[0].strip(), []).append(f"{_field(row[2])} (pid {row[1].strip()}{memory})")
    gpus = []
    for row in _rows(str(d.get("gpus_csv", ""))):
        if len(row) < 8:
            continue
        index, name, _uuid, util, used, total, temp, power = (_field(x) for x in row[:8])
        gpus.append(Gpu(index=index, name=name, utilization=util, memory_used=used, memory_total=total,
                        temperature=temp, power=power, processes=tuple(apps.get(row[2].strip(), ()))))
    return GpuReport(host=host, available=True, gpus=tuple(gpus))
