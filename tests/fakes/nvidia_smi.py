"""A stand-in ``nvidia-smi`` that prints a real driver's canned output (tests/data/nvidia-smi/<kind>/).

It answers the two queries the agent sends, in the format asked for (``csv,noheader,nounits``); any other
query field fails the way nvidia-smi does. Put its directory first on PATH before a host's agent starts.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "nvidia-smi"
KINDS = ("h100", "b200", "rtx-pro-6000", "a100-mig")
GPU_FIELDS = "index,name,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw"
APP_FIELDS = "gpu_uuid,pid,process_name,used_memory"

SCRIPT = """#!/bin/sh
# stand-in nvidia-smi for rigops tests: canned output of {kind}
data={data}
if [ -f "$data/failure.txt" ]; then cat "$data/failure.txt"; exit 9; fi
format=no
query=
for arg in "$@"; do
  case "$arg" in
    --format=csv,noheader,nounits) format=yes ;;
    --query-gpu={gpu_fields}) query="$data/query-gpu.csv" ;;
    --query-compute-apps={app_fields}) query="$data/query-compute-apps.csv" ;;
    --query-*) echo "Field \\"${{arg#*=}}\\" is not a valid field to query." >&2; exit 2 ;;
  esac
done
if [ -z "$query" ] || [ "$format" != yes ]; then
  echo "stand-in nvidia-smi answers only rigops' two queries with --format=csv,noheader,nounits" >&2; exit 2
fi
cat "$query"
"""


def install_nvidia_smi(bin_dir: Path, kind: str) -> Path:
    """Write ``bin_dir/nvidia-smi`` printing ``kind``'s canned output; returns ``bin_dir`` (for PATH)."""
    data = DATA / kind
    if not data.is_dir():
        raise ValueError(f"no canned nvidia-smi output for {kind!r} in {DATA}")
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "nvidia-smi"
    script.write_text(SCRIPT.format(kind=kind, data=shlex.quote(str(data)), gpu_fields=GPU_FIELDS,
                                    app_fields=APP_FIELDS))
    script.chmod(0o755)
    return bin_dir


def path_with(bin_dir: Path) -> str:
    """PATH with ``bin_dir`` first, for monkeypatch.setenv before the host's agent starts."""
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
