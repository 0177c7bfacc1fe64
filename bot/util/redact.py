"""Secrets out of anything posted to Slack: tokens, keys and passwords in logs and environment dumps."""

from __future__ import annotations

import re

MASK = "[redacted]"
_PATTERNS = (
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bxapp-[A-Za-z0-9-]{10,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),  # Hugging Face
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),  # AWS access key id
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"),  # OpenAI-style keys
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
)
# NAME=value / NAME: value where the name says it is secret
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)"
    r"[A-Z0-9_.-]*)(\s*[=:]\s*|\"\s*:\s*\")(\"?)([^\s\"',;]+)"
)
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)")


def redact(text: str) -> str:
    """``text`` with every secret-looking value replaced by [redacted]."""
    for pattern in _PATTERNS:
        text = pattern.sub(MASK, text)
    text = _ASSIGNMENT.sub(lambda m: f"{m[1]}{m[2]}{m[3]}{MASK}", text)
    return _URL_PASSWORD.sub(lambda m: f"{m[1]}{MASK}{m[3]}", text)
