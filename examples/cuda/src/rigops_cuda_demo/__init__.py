"""Thrust-heavy CUDA kernels built by rigops' CUDA example; the library is only compiled, never run here."""

from pathlib import Path

LIBRARY = next(Path(__file__).parent.glob("libdemo_kernels*.so"), None)
