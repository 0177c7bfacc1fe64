"""Fixtures the host agent's tests share: agents started as subprocesses, and cleanup of what tests start."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.hosts.test_agent import Agent, Cleanup, fake


@pytest.fixture
def start_agent() -> Iterator[Callable[..., Agent]]:
    agents: list[Agent] = []

    def start(**kwargs: Any) -> Agent:
        agent = Agent(**kwargs)
        agents.append(agent)
        return agent

    yield start
    for agent in agents:
        agent.close()
    for agent in agents:
        assert agent.garbage == [], "the agent wrote non-protocol lines on stdout"


@pytest.fixture
def agent(start_agent: Callable[..., Agent]) -> Agent:
    return start_agent()


@pytest.fixture
def cleanup() -> Iterator[Cleanup]:
    c = Cleanup()
    yield c
    for sid in c.sessions:
        fake.kill_session(sid)
    for proc in c.popens:
        fake.stop(proc)
