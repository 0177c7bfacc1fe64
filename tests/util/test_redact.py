"""Secrets never reach Slack: what the redactor hides and what it leaves alone."""

from __future__ import annotations

import pytest

from bot.util.redact import redact


@pytest.mark.parametrize(("text", "secret"), [
    ("SLACK_BOT_TOKEN=xoxb-1234-5678-abcdefghijkl", "xoxb-1234"),
    ("export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz", "hf_abcdef"),
    ("password: hunter2", "hunter2"),
    ("git clone https://user:s3cret@github.com/org/repo", "s3cret"),
    ('{"api_key": "abc123"}', "abc123"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI"),
    ("GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdef"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----", "b3Blbn"),
])
def test_secrets_are_hidden(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and "[redacted]" in out


@pytest.mark.parametrize("text", [
    "MAX_JOBS=20 MAKEFLAGS=-j20", "[123/456] Building CUDA object foo.cu.o", "error: token expected before ';'",
    "CMAKE_POLICY_VERSION_MINIMUM=3.5",
])
def test_ordinary_build_output_is_left_alone(text: str) -> None:
    assert redact(text) == text
